//! `.mcp.json`: the server definitions hosts such as Claude Code use.
//!
//! Every entry is parsed structurally, enabled or not: a type error anywhere
//! fails the file with its JSON path and position. Expansion of `${VAR}` and
//! `${VAR:-default}` and the runtime checks (non-empty command, an http(s) URL,
//! valid headers) happen only for enabled entries, through
//! [`ServerEntry::resolve`], so a missing variable in a disabled entry blocks
//! nothing and a missing variable in an enabled one fails that entry alone.
//! Fields this version does not know are kept out of the way and reported once.
//! Environment and header values are secrets in every output.

mod entry;
mod error;
pub mod expand;
mod raw;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use entry::{OAuthEntry, ServerEntry, TransportKind};
pub use error::{ConfigError, EntryProblem};

/// The file name hosts look for in a project directory.
pub const FILE_NAME: &str = ".mcp.json";

/// A loaded `.mcp.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// Where it was read from.
    pub path: PathBuf,
    /// Entries by name.
    pub servers: BTreeMap<String, ServerEntry>,
    /// Fields this version ignores, as `mcpServers.<name>.<field>`.
    pub unknown_fields: Vec<String>,
}

impl McpConfig {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<McpConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        McpConfig::parse(&text, path)
    }

    /// Parses `text` as if read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<McpConfig, ConfigError> {
        let (raw, unknown_fields) = raw::parse(text, path)?;
        if !unknown_fields.is_empty() {
            tracing::warn!(file = %path.display(), fields = ?unknown_fields, "ignoring fields this version does not use");
        }
        let servers = raw
            .mcp_servers
            .into_iter()
            .map(|(name, entry)| {
                let entry = ServerEntry::from_raw(&name, entry);
                (name, entry)
            })
            .collect();
        Ok(McpConfig {
            path: path.to_path_buf(),
            servers,
            unknown_fields,
        })
    }

    /// The directory relative `cwd`s resolve against.
    pub fn base_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
}

/// Looks variables up in the process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests;
