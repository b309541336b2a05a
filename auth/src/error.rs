//! OAuth errors. None carries a token, a secret or a code.

use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// An OAuth request was answered with a redirect. None is followed: a `307`
    /// would re-send a code verifier, a refresh token or a client secret to
    /// wherever `Location` points, and a `302` could move discovery to another origin.
    #[error(
        "`{url}` answered HTTP {status} redirecting to `{location}`; OAuth requests never follow redirects"
    )]
    Redirected {
        /// The URL asked, for display (see [`crate::display_url`]).
        url: String,
        /// The 3xx status.
        status: u16,
        /// The `Location`, for display (no query, no user info), or `(none)`.
        location: String,
    },
    /// An OAuth request did not complete within its total time.
    #[error("`{url}` did not answer within {after:?}")]
    TimedOut {
        /// The URL asked, for display.
        url: String,
        /// The time allowed.
        after: Duration,
    },
    /// An issuer is not the one discovery started from: the authorization-server
    /// metadata's `issuer` (RFC 8414 §3.3) or a callback's `iss` (RFC 9207).
    #[error("the {context} names the issuer `{}`, not `{expected}`; refusing to authorize", found.as_deref().unwrap_or("(none)"))]
    IssuerMismatch {
        /// Where the issuer was read: `authorization-server metadata` or `authorization response`.
        context: &'static str,
        /// The issuer expected, for display.
        expected: String,
        /// The issuer found, for display; `None` when it is missing.
        found: Option<String>,
    },
    /// The authorization server does not advertise PKCE with `S256`, which login requires.
    #[error(
        "authorization server `{issuer}` does not advertise PKCE S256 (code_challenge_methods_supported); refusing to log in"
    )]
    PkceUnsupported {
        /// The issuer, for display.
        issuer: String,
    },
    /// A token or lock file is a symbolic link; it is never followed.
    #[error("token storage: {} is a symbolic link; refusing to follow it (remove it)", path.display())]
    SymlinkRefused {
        /// The link.
        path: PathBuf,
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

    /// A storage failure; `ELOOP` from an `O_NOFOLLOW` open means a symbolic link.
    pub(crate) fn storage(path: &Path, e: std::io::Error) -> AuthError {
        if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) {
            return AuthError::SymlinkRefused {
                path: path.to_path_buf(),
            };
        }
        AuthError::Storage(format!("{}: {e}", path.display()))
    }
}

/// A token or lock file that could not be used; a symbolic link is
/// [`AuthError::SymlinkRefused`].
impl From<crate::private_file::PrivateFileError> for AuthError {
    fn from(e: crate::private_file::PrivateFileError) -> AuthError {
        AuthError::storage(&e.path, e.source)
    }
}
