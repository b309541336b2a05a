//! OAuth errors. None carries a token, a secret or a code.

use std::path::{Path, PathBuf};

/// Why authorization did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No usable token and no way to get one without the user.
    #[error("server `{server}` needs a login: run `mcpvisor login {server}`")]
    LoginRequired {
        /// Which server.
        server: String,
    },
    /// Metadata discovery failed.
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The protected-resource metadata names another resource than the server.
    #[error(
        "protected-resource metadata is for `{found}`, not for `{expected}`; refusing to authorize"
    )]
    ResourceMismatch {
        /// The server URL.
        expected: String,
        /// What the metadata says.
        found: String,
    },
    /// An endpoint is not https (and not on loopback).
    #[error("refusing the non-https {what} endpoint `{url}`")]
    InsecureEndpoint {
        /// Which endpoint.
        what: &'static str,
        /// Its URL (without query).
        url: String,
    },
    /// Dynamic client registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The authorization step failed (denied, state mismatch, no code).
    #[error("authorization failed: {0}")]
    Authorization(String),
    /// The token endpoint refused or failed.
    #[error("token request failed: {0}")]
    Token(String),
    /// The server still wants more scope after the allowed attempts.
    #[error("server `{server}` keeps asking for more scope after {attempts} authorizations")]
    InsufficientScope {
        /// Which server.
        server: String,
        /// Authorizations tried.
        attempts: u32,
    },
    /// A stored token file could not be read or written.
    #[error("token storage: {0}")]
    Storage(String),
    /// A token file exists but does not parse; it is left for the user to fix or remove.
    #[error("{}:{line}:{column}: token file of server `{server}` is corrupt; run `mcpvisor logout {server}` or remove it", path.display())]
    CorruptTokenFile {
        /// The server whose tokens it holds.
        server: String,
        /// The file.
        path: PathBuf,
        /// 1-based line (0 if not known).
        line: usize,
        /// 1-based column (0 if not known).
        column: usize,
    },
    /// The configuration cannot work (bad URL, unreadable key).
    #[error("OAuth configuration: {0}")]
    Config(String),
}

impl AuthError {
    /// True when only a person can fix this (a login, or a damaged token file):
    /// no retry or reconnection will succeed until then.
    pub fn needs_login(&self) -> bool {
        matches!(
            self,
            AuthError::LoginRequired { .. } | AuthError::CorruptTokenFile { .. }
        )
    }

    pub(crate) fn storage(path: &Path, e: std::io::Error) -> AuthError {
        AuthError::Storage(format!("{}: {e}", path.display()))
    }
}
