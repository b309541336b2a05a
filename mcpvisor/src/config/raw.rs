//! The file as written: a structural parse of every entry, with JSON paths and
//! positions in errors, and the names of fields this version ignores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::error::ConfigError;
use super::identity_provider::RawIdentityProvider;

/// The two shapes read: Claude Code's `{"mcpServers": {...}}` and VS Code's
/// `{"servers": {...}}` (`.vscode/mcp.json`), whose entries have the same fields.
#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<BTreeMap<String, RawEntry>>,
    servers: Option<BTreeMap<String, RawEntry>>,
}

/// Which key of the file holds the entries.
pub(super) const SERVER_KEYS: [&str; 2] = ["mcpServers", "servers"];

/// One entry with every field this version understands; other fields are
/// ignored (and reported once), so a file written for another host loads.
#[derive(Deserialize, Default)]
pub(super) struct RawEntry {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) command: Option<String>,
    pub(super) args: Option<Vec<String>>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) cwd: Option<String>,
    /// Host variables this server also gets, by name.
    #[serde(rename = "envPassthrough")]
    pub(super) env_passthrough: Option<Vec<String>>,
    pub(super) url: Option<String>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) oauth: Option<RawOAuth>,
    /// Request timeout in milliseconds.
    pub(super) timeout: Option<u64>,
    /// Startup timeout in milliseconds.
    #[serde(rename = "startupTimeout")]
    pub(super) startup_timeout: Option<u64>,
    pub(super) disabled: Option<bool>,
    /// Protocol revisions to offer, first preferred.
    #[serde(rename = "protocolVersions")]
    pub(super) protocol_versions: Option<Vec<String>>,
}

/// `"oauth": {...}` of an HTTP entry.
#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawOAuth {
    pub(super) client_id: Option<String>,
    pub(super) client_secret: Option<String>,
    pub(super) scope: Option<String>,
    pub(super) callback_port: Option<u16>,
    pub(super) client_metadata_url: Option<String>,
    /// `authorization_code` (default) or `client_credentials`.
    pub(super) grant: Option<String>,
    /// A PEM private key file for `private_key_jwt`.
    pub(super) private_key_file: Option<String>,
    pub(super) signing_algorithm: Option<String>,
    /// Enterprise-managed authorization through this identity provider.
    pub(super) identity_provider: Option<RawIdentityProvider>,
}

const KNOWN_FIELDS: &[&str] = &[
    "oauth",
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "envPassthrough",
    "url",
    "headers",
    "timeout",
    "startupTimeout",
    "disabled",
    "protocolVersions",
];

/// Parses `text`; a type error anywhere fails the whole file with its path and position.
/// A file with neither key, or both, is refused: an empty result would hide a
/// file that is not an MCP configuration, or half of one that is.
pub(super) fn parse(
    text: &str,
    path: &Path,
) -> Result<(BTreeMap<String, RawEntry>, Vec<String>), ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let raw: RawFile =
        serde_path_to_error::deserialize(&mut de).map_err(|e| structural_error(e, path))?;
    de.end().map_err(|e| syntax_error(&e, path))?;
    let servers = match (raw.mcp_servers, raw.servers) {
        (Some(servers), None) | (None, Some(servers)) => servers,
        (None, None) => {
            return Err(ConfigError::NoServers {
                path: path.to_path_buf(),
            });
        }
        (Some(_), Some(_)) => {
            return Err(ConfigError::BothServerKeys {
                path: path.to_path_buf(),
            });
        }
    };
    Ok((servers, unknown_fields(text)))
}

fn structural_error(e: serde_path_to_error::Error<serde_json::Error>, path: &Path) -> ConfigError {
    let json_path = e.path().to_string();
    let inner = e.into_inner();
    if !inner.is_data() {
        return syntax_error(&inner, path);
    }
    ConfigError::Structure {
        path: path.to_path_buf(),
        json_path,
        line: inner.line(),
        column: inner.column(),
        expected: expected_of(&inner),
    }
}

fn syntax_error(e: &serde_json::Error, path: &Path) -> ConfigError {
    // serde_json's syntax messages name the token expected, never file content.
    let message = e.to_string();
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or("invalid JSON")
        .to_string();
    ConfigError::Syntax {
        path: PathBuf::from(path),
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// What the type error expected, without the value that was found (it may be a secret).
fn expected_of(e: &serde_json::Error) -> String {
    let message = e.to_string();
    // The last one: the value found comes first and may itself hold ", expected ".
    match message.rsplit_once(", expected ") {
        Some((_, expected)) => {
            let expected = expected.split(" at line ").next().unwrap_or(expected);
            format!("expected {expected}")
        }
        None => "invalid value".to_string(),
    }
}

/// `mcpServers.<name>.<field>` (or `servers.…`) for every field this version ignores.
fn unknown_fields(text: &str) -> Vec<String> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for top in SERVER_KEYS {
        let Some(Value::Object(servers)) = root.get(top) else {
            continue;
        };
        for (name, entry) in servers {
            if let Value::Object(fields) = entry {
                for key in fields
                    .keys()
                    .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
                {
                    out.push(format!("{top}.{name}.{key}"));
                }
            }
        }
    }
    out
}
