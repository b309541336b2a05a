//! `.mcp.json`: the server definitions hosts such as Claude Code use.
//!
//! This reads the `mcpServers` map. Stdio entries (`command`, `args`, `env`,
//! `cwd`) and Streamable HTTP entries (`"type": "http"`, `url`, `headers`)
//! become [`ServerSpec`]s; other transport types are kept as
//! [`Definition::Unsupported`] and reported for that entry alone, so one entry
//! never stops the others. Environment and header values are secrets throughout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpvisor_actors::ServerSpec;
use mcpvisor_protocol::names::validate_server_name;
use mcpvisor_transports::{
    HttpHeaders, HttpSpec, SecretString, StdioSpec, endpoint_url, redact_url,
};
use serde::Deserialize;
use serde_json::Value;

/// The file name hosts look for in a project directory.
pub const FILE_NAME: &str = ".mcp.json";

/// Why a configuration file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON, or a member has the wrong type.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// Which file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong (never a value from the file).
        message: String,
    },
}

/// One server entry as written.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Definition {
    /// A child process.
    Stdio(StdioDefinition),
    /// A Streamable HTTP endpoint.
    Http(HttpDefinition),
    /// A transport type this version does not run yet (kept, reported).
    Unsupported {
        /// The `type` as written.
        kind: String,
    },
}

/// A stdio entry. `Debug` shows environment names, never values.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioDefinition {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: BTreeMap<String, SecretString>,
    /// Working directory, resolved against the file's directory.
    pub cwd: Option<PathBuf>,
}

/// An HTTP entry. `Debug` shows header names, never values, and no URL query.
#[derive(Clone, PartialEq)]
pub struct HttpDefinition {
    /// The MCP endpoint.
    pub url: String,
    /// Headers as literal values.
    pub headers: BTreeMap<String, SecretString>,
}

impl std::fmt::Debug for HttpDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDefinition")
            .field("url", &redact_url(&self.url))
            .field("headers", &self.headers)
            .finish()
    }
}

/// One named entry and what is wrong with it, if anything.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    /// The entry's key, which becomes the route component.
    pub name: String,
    /// What it defines.
    pub definition: Definition,
    /// Problems that keep this entry from running (empty when it can run).
    pub problems: Vec<String>,
}

/// A loaded `.mcp.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// Where it was read from.
    pub path: PathBuf,
    /// Entries by name.
    pub servers: BTreeMap<String, ServerEntry>,
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, RawEntry>,
}

#[derive(Deserialize)]
struct RawEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(flatten)]
    _other: BTreeMap<String, Value>,
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

    /// Parses `text` as if read from `path` (relative `cwd`s resolve against its directory).
    pub fn parse(text: &str, path: &Path) -> Result<McpConfig, ConfigError> {
        let raw: RawFile = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            // serde's message may quote a value from the file (an env value): keep only its class.
            message: match e.classify() {
                serde_json::error::Category::Data => "a member has the wrong type".to_string(),
                _ => "invalid JSON".to_string(),
            },
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let servers = raw
            .mcp_servers
            .into_iter()
            .map(|(name, entry)| {
                let entry = ServerEntry::from_raw(&name, entry, &base);
                (name, entry)
            })
            .collect();
        Ok(McpConfig {
            path: path.to_path_buf(),
            servers,
        })
    }

    /// Specs for every entry that can run, and `(name, problem)` for every one that cannot.
    pub fn server_specs(&self) -> (Vec<ServerSpec>, Vec<(String, String)>) {
        let mut specs = Vec::new();
        let mut problems = Vec::new();
        for entry in self.servers.values() {
            match entry.to_spec() {
                Ok(spec) => specs.push(spec),
                Err(why) => problems.extend(why.into_iter().map(|p| (entry.name.clone(), p))),
            }
        }
        (specs, problems)
    }
}

impl ServerEntry {
    fn from_raw(name: &str, raw: RawEntry, base: &Path) -> ServerEntry {
        let mut problems = Vec::new();
        if let Err(e) = validate_server_name(name) {
            problems.push(format!("invalid server name: {e}"));
        }
        let kind = raw
            .kind
            .clone()
            .unwrap_or_else(|| if raw.command.is_some() { "stdio" } else { "" }.to_string());
        let definition = match kind.as_str() {
            "stdio" => {
                let command = raw.command.unwrap_or_default();
                if command.trim().is_empty() {
                    problems.push("`command` is missing or empty".into());
                }
                Definition::Stdio(StdioDefinition {
                    command,
                    args: raw.args,
                    env: raw
                        .env
                        .into_iter()
                        .map(|(k, v)| (k, SecretString::new(v)))
                        .collect(),
                    cwd: raw.cwd.map(|c| base.join(c)),
                })
            }
            "http" => {
                let url = raw.url.unwrap_or_default();
                if url.trim().is_empty() {
                    problems.push("`url` is missing or empty".into());
                } else if let Err(e) = endpoint_url(&url) {
                    problems.push(e.to_string());
                }
                let headers: Vec<(String, SecretString)> = raw
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k, SecretString::new(v)))
                    .collect();
                if let Err(e) = HttpHeaders::new(&headers) {
                    problems.push(e.to_string());
                }
                Definition::Http(HttpDefinition {
                    url,
                    headers: headers.into_iter().collect(),
                })
            }
            "" => {
                problems.push("neither `command` nor `type` is given".into());
                Definition::Unsupported { kind }
            }
            other => {
                problems.push(format!("transport type `{other}` is not supported yet"));
                Definition::Unsupported { kind }
            }
        };
        ServerEntry {
            name: name.to_string(),
            definition,
            problems,
        }
    }

    /// The spec to run this entry, or its problems.
    pub fn to_spec(&self) -> Result<ServerSpec, Vec<String>> {
        if !self.problems.is_empty() {
            return Err(self.problems.clone());
        }
        match &self.definition {
            Definition::Stdio(d) => Ok(ServerSpec::stdio(
                self.name.clone(),
                StdioSpec {
                    command: d.command.clone(),
                    args: d.args.clone(),
                    env: d.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    cwd: d.cwd.clone(),
                },
            )),
            Definition::Http(d) => Ok(ServerSpec::http(
                self.name.clone(),
                HttpSpec {
                    url: d.url.clone(),
                    headers: d
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                },
            )),
            Definition::Unsupported { kind } => Err(vec![format!(
                "transport type `{kind}` is not supported yet"
            )]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stdio_entries_and_reports_others() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "node", "args": ["server.js"], "env": {"API_TOKEN": "s3cr3t-value"}, "cwd": "sub"},
            "web": {"type": "http", "url": "https://example.invalid/mcp"},
            "bad_": {"command": "x"},
            "empty": {"command": " "}
        }}"#;
        let cfg = McpConfig::parse(text, Path::new("/proj/.mcp.json")).unwrap();
        let (specs, problems) = cfg.server_specs();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].name, "fs");
        assert_eq!(specs[1].name, "web");
        let mcpvisor_actors::TransportSpec::Stdio(s) = &specs[0].transport else {
            panic!("stdio expected")
        };
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/proj/sub")));
        let names: Vec<&str> = problems.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["bad_", "empty"]);
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("s3cr3t-value"), "{shown}");
    }

    #[test]
    fn parse_errors_carry_position_but_no_values() {
        let text = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": 12345678}}}}";
        let err = McpConfig::parse(text, Path::new(".mcp.json")).unwrap_err();
        let shown = err.to_string();
        assert!(matches!(err, ConfigError::Parse { line: 1, .. }), "{shown}");
        assert!(!shown.contains("12345678"), "{shown}");
        assert!(McpConfig::parse("{nope", Path::new(".mcp.json")).is_err());
    }
}
