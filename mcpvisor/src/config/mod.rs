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

pub mod discover;
pub mod edit;
mod entry;
mod error;
pub mod expand;
mod identity_provider;
pub mod key_file;
mod raw;
pub mod runnable;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use entry::{OAuthEntry, ServerEntry, TransportKind};
pub use error::{ConfigError, EntryProblem};
pub use identity_provider::IdentityProviderEntry;

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
    /// Reads and parses `path`: a regular file of at most [`CONFIG_LIMIT`] bytes.
    pub fn load(path: &Path) -> Result<McpConfig, ConfigError> {
        let text = read_config(path)?;
        McpConfig::parse(&text, path)
    }

    /// Parses `text` as if read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<McpConfig, ConfigError> {
        let (entries, unknown_fields) = raw::parse(text, path)?;
        if !unknown_fields.is_empty() {
            tracing::warn!(file = %path.display(), fields = ?unknown_fields, "ignoring fields this version does not use");
        }
        let servers = entries
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

    /// The project's directory: where stdio servers run unless `cwd` says
    /// otherwise, and what a relative `cwd` resolves against. The file's own
    /// directory, or for `.cursor/mcp.json` and `.vscode/mcp.json` the one
    /// that holds `.cursor` or `.vscode`, as those editors take it.
    pub fn base_dir(&self) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        let editor = dir
            .file_name()
            .is_some_and(|n| n == ".cursor" || n == ".vscode");
        match dir.parent() {
            Some(project) if editor => project.to_path_buf(),
            _ => dir.to_path_buf(),
        }
    }
}

/// The largest `.mcp.json` read.
pub const CONFIG_LIMIT: u64 = 16 * 1024 * 1024;

pub(crate) fn read_config(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source: std::io::Error| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    };
    // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let mut bytes = Vec::new();
    file.take(CONFIG_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > CONFIG_LIMIT {
        return Err(io(std::io::Error::other(format!(
            "larger than {CONFIG_LIMIT} bytes"
        ))));
    }
    String::from_utf8(bytes).map_err(|_| io(std::io::Error::other("not UTF-8 text")))
}

/// Looks variables up in the process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests;
