//! What every request carries at a stateless revision (2026-07-28), in place
//! of the `initialize` handshake: its revision, the client's capabilities and
//! the client's name and version, in `params._meta`, and the log level the
//! client wants messages at, if it wants any.

use serde_json::{Map, Value, json};

use super::client_offers::ClientCapabilities;
use super::revision::Revision;
use super::tasks::TASKS_EXTENSION;

/// `_meta` key: the request's revision.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: what the client answers (an object; `{}` for nothing).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the level of the log messages the client wants with this
/// request's answer (none without it).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// `capabilities` as `_meta` declares them at `revision`.
fn capabilities_at(revision: Revision, capabilities: ClientCapabilities) -> Value {
    let mut declared = capabilities.to_value_at(revision);
    if revision.rules().stateless
        && let Value::Object(map) = &mut declared
    {
        // A task the server makes of a request is followed (the lane's
        // tasks extension), so every request says it may be one.
        let extensions = map
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(extensions) = extensions {
            extensions.insert(TASKS_EXTENSION.into(), json!({}));
        }
    }
    declared
}

/// The `_meta` a client puts on each request at a stateless revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestMeta {
    revision: Revision,
    capabilities: Value,
    client_info: Value,
    log_level: Option<String>,
}

impl RequestMeta {
    /// The meta of a client called `name`, `version`, answering `capabilities`.
    pub fn new(
        revision: Revision,
        capabilities: ClientCapabilities,
        name: &str,
        version: &str,
    ) -> RequestMeta {
        RequestMeta {
            revision,
            capabilities: capabilities_at(revision, capabilities),
            client_info: json!({"name": name, "version": version}),
            log_level: None,
        }
    }

    /// The same meta, answering `capabilities` instead (for one request made
    /// for a client that answers less).
    pub fn answering(&self, capabilities: ClientCapabilities) -> RequestMeta {
        RequestMeta {
            capabilities: capabilities_at(self.revision, capabilities),
            ..self.clone()
        }
    }

    /// Asks for log messages at `level` and above with each answer.
    pub fn with_log_level(mut self, level: &str) -> RequestMeta {
        self.log_level = Some(level.to_string());
        self
    }

    /// The revision it names.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Writes these keys into `params._meta`, making `params` an object (a
    /// request at this revision always has one) and keeping what `_meta`
    /// already holds (a progress token). Params that are not an object are
    /// replaced: no MCP request takes an array or a scalar.
    pub fn stamp(&self, params: Option<Value>) -> Value {
        let mut params = match params {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(
                PROTOCOL_VERSION_KEY.into(),
                Value::String(self.revision.as_str().into()),
            );
            meta.insert(CLIENT_CAPABILITIES_KEY.into(), self.capabilities.clone());
            meta.insert(CLIENT_INFO_KEY.into(), self.client_info.clone());
            if let Some(level) = &self.log_level {
                meta.insert(LOG_LEVEL_KEY.into(), Value::String(level.clone()));
            }
        }
        Value::Object(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_names_its_revision_capabilities_and_client() {
        let meta = RequestMeta::new(
            Revision::V2026_07_28,
            ClientCapabilities {
                elicitation: true,
                ..Default::default()
            },
            "mcpvisor",
            "0.1.0",
        );
        let stamped = meta.stamp(None);
        let m = &stamped["_meta"];
        assert_eq!(m[PROTOCOL_VERSION_KEY], "2026-07-28");
        // What the host answers, and the tasks extension, which the lane follows.
        assert_eq!(
            m[CLIENT_CAPABILITIES_KEY],
            json!({"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}})
        );
        assert_eq!(
            m[CLIENT_INFO_KEY],
            json!({"name": "mcpvisor", "version": "0.1.0"})
        );
        assert!(m.get(LOG_LEVEL_KEY).is_none(), "no messages unless asked");

        // What the request had stays, a progress token in `_meta` included.
        let stamped = meta.with_log_level("warning").stamp(Some(json!({
            "name": "echo", "arguments": {"text": "x"}, "_meta": {"progressToken": 7}
        })));
        assert_eq!(stamped["name"], "echo");
        assert_eq!(stamped["arguments"]["text"], "x");
        assert_eq!(stamped["_meta"]["progressToken"], 7);
        assert_eq!(stamped["_meta"][LOG_LEVEL_KEY], "warning");
        assert_eq!(stamped["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");

        // No capabilities is an object all the same (the extension alone), never absent.
        let bare = RequestMeta::new(Revision::V2026_07_28, Default::default(), "c", "1");
        assert_eq!(
            bare.stamp(Some(json!({"_meta": "not an object"})))["_meta"][CLIENT_CAPABILITIES_KEY],
            json!({"extensions": {TASKS_EXTENSION: {}}})
        );
    }
}
