//! `server/discover` (2026-07-28): what a stateless server says of itself in
//! place of an `initialize` answer — the revisions it speaks, its
//! capabilities, its instructions and (in `_meta`, for display) its name.
//! Read into the same [`InitializeResult`] the handshake gives, so what the
//! connection knows of a server does not depend on how it was reached.

use serde_json::Value;

use super::messages::{Implementation, InitializeError, InitializeResult};
use super::revision::Revision;

/// The method.
pub const SERVER_DISCOVER: &str = "server/discover";
/// `_meta` key of a result: the server's name and version (display only).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Reads a `server/discover` result for a connection at `revision`.
pub fn read_discovered(
    value: &Value,
    revision: Revision,
) -> Result<InitializeResult, InitializeError> {
    let Value::Object(map) = value else {
        return Err(InitializeError::NotAnObject);
    };
    let capabilities = match map.get("capabilities") {
        None | Some(Value::Null) => Default::default(),
        Some(v @ Value::Object(_)) => serde_json::from_value(v.clone())
            .map_err(|_| InitializeError::MissingField("capabilities"))?,
        Some(_) => return Err(InitializeError::MissingField("capabilities")),
    };
    // Display only, and optional: in `_meta` by the revision, in the body by
    // some servers; neither is required.
    let server_info = map
        .get("_meta")
        .and_then(|m| m.get(SERVER_INFO_KEY))
        .or_else(|| map.get("serverInfo"))
        .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok())
        .unwrap_or(Implementation {
            name: String::new(),
            version: String::new(),
        });
    let instructions = match map.get("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(InitializeError::MissingField("instructions")),
    };
    Ok(InitializeResult {
        protocol_version: revision.as_str().to_string(),
        capabilities,
        server_info,
        instructions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_discovered_server_reads_like_an_initialized_one() {
        let read = read_discovered(
            &json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}},
                "instructions": "Be brief.",
                "_meta": {SERVER_INFO_KEY: {"name": "py", "version": "2.3.0"}},
                "ttlMs": 3600000, "cacheScope": "public",
            }),
            Revision::V2026_07_28,
        )
        .unwrap();
        assert_eq!(read.protocol_version, "2026-07-28");
        assert!(read.capabilities.tools.is_some());
        assert_eq!(read.server_info.name, "py");
        assert_eq!(read.instructions.as_deref(), Some("Be brief."));

        // Nothing but the revisions: a server with no capabilities and no name.
        let bare = read_discovered(
            &json!({"supportedVersions": ["2026-07-28"]}),
            Revision::V2026_07_28,
        )
        .unwrap();
        assert!(bare.capabilities.tools.is_none());
        assert_eq!(bare.server_info.name, "");

        assert_eq!(
            read_discovered(&json!([]), Revision::V2026_07_28),
            Err(InitializeError::NotAnObject)
        );
        assert_eq!(
            read_discovered(&json!({"capabilities": 3}), Revision::V2026_07_28),
            Err(InitializeError::MissingField("capabilities"))
        );
    }
}
