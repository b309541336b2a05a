//! Editing a `.mcp.json` the way a person would: one entry added or removed,
//! everything else as it was. The file is read as ordered lists of members
//! whose values stay the exact text they were (serde_json's `RawValue`), so key
//! order, the other entries and their formatting survive, and no value is ever
//! expanded or rewritten. (`preserve_order` would do it too, but would change
//! the key order of every protocol message the product sends.) Writes are
//! atomic (a temporary file renamed into place, the file's mode kept) and
//! serialized by a lock on the directory, so concurrent edits lose nothing.

use std::fmt;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mcpvisor_auth::private_file;
use nix::fcntl::{Flock, FlockArg};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::error::ConfigError;
use super::{McpConfig, read_config};

/// The key a new file's entries go under.
const SERVERS: &str = "mcpServers";
/// VS Code's key for the same thing.
const VS_CODE_SERVERS: &str = "servers";

/// Why an edit was not made. The file is unchanged in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The file does not load (its message names the place, never a value).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading, locking or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The servers member (or the file) is not a JSON object.
    #[error("{}: `{member}` is not a JSON object", path.display())]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// Which member (`(the file)` for the top level).
        member: String,
    },
    /// An entry of that name is there already.
    #[error("server `{name}` already exists in {}", path.display())]
    Exists {
        /// The name.
        name: String,
        /// The file.
        path: PathBuf,
    },
    /// No entry has that name.
    #[error("no server named `{name}` in {}", path.display())]
    Missing {
        /// The name.
        name: String,
        /// The file.
        path: PathBuf,
    },
}

/// Members of a JSON object in file order, each value as the text it was.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(InOrder)
    }
}

/// A `.mcp.json` as written, open for adding and removing entries.
pub struct McpDocument {
    path: PathBuf,
    /// Top-level members; the servers member's value is in `servers`.
    top: Vec<(String, Box<RawValue>)>,
    /// Which top-level member holds the entries, if any does yet.
    servers_key: Option<String>,
    servers: Vec<(String, Box<RawValue>)>,
    indent: String,
    trailing_newline: bool,
}

impl McpDocument {
    /// A document with no entries, for a file that does not exist yet.
    pub fn empty(path: &Path) -> McpDocument {
        McpDocument {
            path: path.to_path_buf(),
            top: Vec::new(),
            servers_key: None,
            servers: Vec::new(),
            indent: "  ".into(),
            trailing_newline: true,
        }
    }

    /// Parses `text` as read from `path`. It must load as a configuration
    /// (an object without servers yet is accepted: adding fixes it).
    pub fn parse(text: &str, path: &Path) -> Result<McpDocument, EditError> {
        match McpConfig::parse(text, path) {
            Ok(_) | Err(ConfigError::NoServers { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let not_object = |member: &str| EditError::NotAnObject {
            path: path.to_path_buf(),
            member: member.to_string(),
        };
        let Members(top) = serde_json::from_str(text).map_err(|_| not_object("(the file)"))?;
        let servers_key = [SERVERS, VS_CODE_SERVERS]
            .into_iter()
            .find(|key| top.iter().any(|(k, v)| k == key && v.get() != "null"))
            .map(String::from);
        let servers = match &servers_key {
            Some(key) => {
                let (_, raw) = top
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .expect("found above");
                let Members(servers) =
                    serde_json::from_str(raw.get()).map_err(|_| not_object(key))?;
                servers
            }
            None => Vec::new(),
        };
        Ok(McpDocument {
            path: path.to_path_buf(),
            top,
            servers_key,
            servers,
            indent: indent_of(text),
            trailing_newline: text.ends_with('\n'),
        })
    }

    /// Whether an entry is named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.servers.iter().any(|(k, _)| k == name)
    }

    /// Adds `entry` as `name`, after the others; refuses a name that exists.
    pub fn add(&mut self, name: &str, entry: &impl Serialize) -> Result<(), EditError> {
        if self.contains(name) {
            return Err(EditError::Exists {
                name: name.to_string(),
                path: self.path.clone(),
            });
        }
        let unit = self.indent.clone();
        let mut text = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut text, formatter);
        entry.serialize(&mut ser).map_err(|e| EditError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        // Written at the entries' depth, as the other entries are.
        let text = String::from_utf8_lossy(&text).replace('\n', &format!("\n{unit}{unit}"));
        let raw = RawValue::from_string(text).map_err(|e| EditError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.servers.push((name.to_string(), raw));
        Ok(())
    }

    /// Removes the entry `name` (every member of that name, should it repeat).
    pub fn remove(&mut self, name: &str) -> Result<(), EditError> {
        if !self.contains(name) {
            return Err(EditError::Missing {
                name: name.to_string(),
                path: self.path.clone(),
            });
        }
        self.servers.retain(|(k, _)| k != name);
        Ok(())
    }

    /// The file's new text.
    pub fn render(&self) -> String {
        let unit = &self.indent;
        let key = |k: &str| serde_json::to_string(k).unwrap_or_default();
        let servers_key = self.servers_key.as_deref().unwrap_or(SERVERS);
        let mut servers = String::from("{");
        for (i, (name, raw)) in self.servers.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            servers.push_str(&format!(
                "{comma}\n{unit}{unit}{}: {}",
                key(name),
                raw.get()
            ));
        }
        if !self.servers.is_empty() {
            servers.push_str(&format!("\n{unit}"));
        }
        servers.push('}');
        let mut members: Vec<(String, String)> = self
            .top
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != Some(servers_key))
            .map(|(k, v)| (k.clone(), v.get().to_string()))
            .collect();
        // The entries stay where they were; in a file without them they go first.
        let at = match self.top.iter().position(|(k, _)| k == servers_key) {
            Some(i) => self.top[..i]
                .iter()
                .filter(|(k, _)| k != servers_key)
                .count(),
            None => 0,
        };
        members.insert(at, (servers_key.to_string(), servers));
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{unit}{}: {v}", key(k)))
            .collect();
        let mut out = format!("{{\n{}\n}}", body.join(",\n"));
        if self.trailing_newline {
            out.push('\n');
        }
        out
    }
}

/// The indentation unit of `text`: that of its first indented member line.
fn indent_of(text: &str) -> String {
    text.lines()
        .skip(1)
        .find_map(|line| {
            let rest = line.trim_start_matches([' ', '\t']);
            let ws = &line[..line.len() - rest.len()];
            (!ws.is_empty() && rest.starts_with('"')).then(|| ws.to_string())
        })
        .unwrap_or_else(|| "  ".into())
}

/// Applies `change` to the `.mcp.json` at `path` and writes the result; with
/// `create`, a missing file starts empty (mode `new_mode`). Returns what
/// `change` returned. Nothing is written when `change` fails.
pub fn edit_file<T>(
    path: &Path,
    create: bool,
    new_mode: u32,
    change: impl FnOnce(&mut McpDocument) -> Result<T, EditError>,
) -> Result<T, EditError> {
    let io = |path: &Path, source: std::io::Error| EditError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Edit the file a link points to, not the link.
    let path = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            std::path::absolute(path).map_err(|e| io(path, e))?
        }
        Err(e) => return Err(io(path, e)),
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    let _lock = lock_dir(dir).map_err(|e| io(dir, e))?;
    let (mut document, mode) = match read_config(&path) {
        Ok(text) => {
            let mode = std::fs::metadata(&path)
                .map_err(|e| io(&path, e))?
                .permissions()
                .mode();
            (McpDocument::parse(&text, &path)?, mode & 0o7777)
        }
        Err(ConfigError::Io { source, .. })
            if create && source.kind() == std::io::ErrorKind::NotFound =>
        {
            (McpDocument::empty(&path), new_mode)
        }
        Err(e) => return Err(e.into()),
    };
    let out = change(&mut document)?;
    let tmp = private_file::temp_path(&path);
    private_file::replace(&path, &tmp, document.render().as_bytes())
        .map_err(|e| io(&e.path.clone(), e.source))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io(&path, e))?;
    Ok(out)
}

/// An exclusive lock on `dir` itself, so edits of a file in it take turns
/// without leaving a lock file in the project.
fn lock_dir(dir: &Path) -> std::io::Result<Flock<File>> {
    let handle = File::open(dir)?;
    Flock::lock(handle, FlockArg::LockExclusive).map_err(|(_, errno)| errno.into())
}

#[cfg(test)]
mod tests;
