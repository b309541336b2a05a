//! What nodes say to each other, and how it crosses ractor_cluster.
//!
//! Every message between nodes is one [`Wire`] value, sent as JSON in a
//! ractor_cluster cast to the receiving node's agent. The sender encodes it
//! first, so a message too large for the cluster's frame bound is caught on
//! the sending side (and a call's answer replaced by a typed error) instead of
//! making the receiver drop the session. The receiver reads another node's
//! messages as it reads a server's: every name is checked, every schema
//! normalised, and a message it cannot read is dropped and reported.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_actors::error::CallError;
use mcpvisor_actors::remote::RemoteServer;
use mcpvisor_protocol::mcp::icons::Icon;
use mcpvisor_protocol::mcp::messages::ProgressParams;
use mcpvisor_protocol::mcp::tool_schema::normalise_owned_schema;
use mcpvisor_protocol::{ErrorObject, QualifiedMcpToolName, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most servers one node may advertise.
pub(crate) const MAX_SERVERS: usize = 4096;

/// The longest event line passed to other nodes.
pub(crate) const MAX_EVENT_TEXT: usize = 4096;

/// One message from one node to another.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum Wire {
    /// Offers the receiver the key it must send to the sender with (hex, see
    /// `keys`), and asks for its advertisement (on meeting, after a silence).
    Hello { from: String, offer: String },
    /// Every server the sender supervises, with its routed tools, where it
    /// listens, and where the nodes it hears listen (so every node reaches
    /// every other).
    Advert {
        from: String,
        listen: String,
        #[serde(default)]
        peers: Vec<String>,
        servers: Vec<WireServer>,
        /// Where the sender's gateway serves MCP over HTTP, if it does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http: Option<String>,
    },
    /// The sender is alive.
    Ping { from: String },
    /// Run a call of a tool the receiver routes to its own server.
    Call {
        from: String,
        id: u64,
        tool: String,
        arguments: Option<Value>,
        timeout_ms: Option<u64>,
        progress: bool,
    },
    /// Progress of a call the sender runs for the receiver.
    Progress {
        from: String,
        id: u64,
        params: ProgressParams,
    },
    /// How a call the sender ran for the receiver ended.
    Answer {
        from: String,
        id: u64,
        outcome: Result<Value, WireError>,
    },
    /// The receiver's caller gave up on a call the receiver runs for it.
    Cancel { from: String, id: u64 },
    /// Something happened to one of the sender's servers.
    Event {
        from: String,
        kind: String,
        server: Option<String>,
        text: String,
    },
}

impl Wire {
    /// The node that sent it.
    pub(crate) fn from(&self) -> &str {
        match self {
            Wire::Hello { from, .. }
            | Wire::Advert { from, .. }
            | Wire::Ping { from }
            | Wire::Call { from, .. }
            | Wire::Progress { from, .. }
            | Wire::Answer { from, .. }
            | Wire::Cancel { from, .. }
            | Wire::Event { from, .. } => from,
        }
    }

    /// The message as it crosses the wire, if it fits in `max` bytes; else its size.
    pub(crate) fn encode(&self, max: usize) -> Result<Vec<u8>, usize> {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        if bytes.is_empty() || bytes.len() > max {
            return Err(bytes.len());
        }
        Ok(bytes)
    }
}

/// A server as its node advertises it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireServer {
    pub(crate) name: String,
    pub(crate) state: String,
    #[serde(default)]
    pub(crate) reason: Option<String>,
    #[serde(default)]
    pub(crate) tools: Vec<WireTool>,
}

/// A routed tool as its node advertises it: the server's own tool name and
/// what a model is shown.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireTool {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) input_schema: Value,
    #[serde(default)]
    pub(crate) title: Option<String>,
    #[serde(default)]
    pub(crate) output_schema: Option<Value>,
    #[serde(default)]
    pub(crate) icons: Value,
    #[serde(default)]
    pub(crate) annotations: Option<Value>,
}

impl WireTool {
    pub(crate) fn from_definition(definition: &ToolDefinition) -> Self {
        WireTool {
            name: definition.name.tool().to_string(),
            description: definition.description.clone(),
            input_schema: definition.input_schema.clone(),
            title: definition.title.clone(),
            output_schema: definition.output_schema.clone(),
            icons: serde_json::to_value(&definition.icons).unwrap_or(Value::Null),
            annotations: definition.annotations.clone(),
        }
    }

    /// The definition, checked as a server's listing is: a name that cannot
    /// form a route is refused (with why), the input schema normalised, icons checked.
    fn into_definition(self, server: &str) -> Result<ToolDefinition, String> {
        let name = QualifiedMcpToolName::new(server, &self.name).map_err(|e| e.to_string())?;
        let (input_schema, _) = normalise_owned_schema(self.input_schema);
        Ok(ToolDefinition {
            name,
            description: self.description,
            input_schema,
            title: self.title,
            output_schema: self.output_schema,
            icons: Icon::read_all(&self.icons),
            annotations: self.annotations,
        })
    }
}

impl WireServer {
    /// The server as the host routes it; tools that cannot form a route are
    /// left out and logged (the node that sent them is the one at fault).
    pub(crate) fn into_remote(self, node: &str) -> Option<RemoteServer> {
        if QualifiedMcpToolName::new(&self.name, "x").is_err() {
            tracing::warn!(node, server = %self.name, "advertised server refused: not a valid server name");
            return None;
        }
        let mut tools = Vec::with_capacity(self.tools.len());
        for tool in self.tools {
            let tool_name = tool.name.clone();
            match tool.into_definition(&self.name) {
                Ok(definition) => tools.push(Arc::new(definition)),
                Err(why) => {
                    tracing::warn!(node, server = %self.name, tool = %tool_name, "advertised tool refused: {why}")
                }
            }
        }
        Some(RemoteServer {
            name: Arc::from(self.name),
            state: Arc::from(self.state),
            reason: self.reason.map(Arc::from),
            tools,
        })
    }
}

/// Why a call another node ran did not return a result, as it crosses the
/// wire. Errors whose cause is typed on that node only (a transport failure,
/// an invalid result) cross as their words.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum WireError {
    UnknownTool { name: String },
    ServerUnavailable,
    Timeout { after_ms: u64 },
    ConnectionTimedOut,
    ConnectionClosed { reason: String },
    Cancelled,
    Overloaded { limit: usize },
    Rpc { error: ErrorObject },
    OutputMismatch { detail: String },
    Shutdown,
    InvalidRequest { message: String },
    Other { message: String },
}

impl WireError {
    pub(crate) fn from_call(error: &CallError) -> Self {
        match error {
            CallError::UnknownTool(name) => WireError::UnknownTool { name: name.clone() },
            CallError::ServerUnavailable { .. } => WireError::ServerUnavailable,
            CallError::Timeout { after, .. } => WireError::Timeout {
                after_ms: after.as_millis().min(u64::MAX as u128) as u64,
            },
            CallError::ConnectionTimedOut { .. } => WireError::ConnectionTimedOut,
            CallError::ConnectionClosed { reason, .. } => WireError::ConnectionClosed {
                reason: reason.to_string(),
            },
            CallError::Cancelled => WireError::Cancelled,
            CallError::Overloaded { limit, .. } => WireError::Overloaded { limit: *limit },
            CallError::Rpc { error, .. } => WireError::Rpc {
                error: error.clone(),
            },
            CallError::OutputMismatch { detail, .. } => WireError::OutputMismatch {
                detail: detail.clone(),
            },
            CallError::Shutdown => WireError::Shutdown,
            CallError::InvalidRequest(message) => WireError::InvalidRequest {
                message: message.clone(),
            },
            other => WireError::Other {
                message: other.to_string(),
            },
        }
    }

    /// The error as the caller's host types it: `node` ran the call of
    /// `tool` on its server `server`.
    pub(crate) fn into_call(self, node: &Arc<str>, server: &Arc<str>, tool: &str) -> CallError {
        let server = server.clone();
        match self {
            WireError::UnknownTool { .. } => CallError::UnknownTool(tool.to_string()),
            WireError::ServerUnavailable => CallError::ServerUnavailable {
                server,
                why: None,
                next_try: None,
            },
            WireError::Timeout { after_ms } => CallError::Timeout {
                server,
                after: Duration::from_millis(after_ms),
            },
            WireError::ConnectionTimedOut => CallError::ConnectionTimedOut { server },
            WireError::ConnectionClosed { reason } => CallError::ConnectionClosed {
                server,
                reason: Arc::from(reason),
            },
            WireError::Cancelled => CallError::Cancelled,
            WireError::Overloaded { limit } => CallError::Overloaded { server, limit },
            WireError::Rpc { error } => CallError::Rpc { server, error },
            WireError::OutputMismatch { detail } => match QualifiedMcpToolName::parse(tool) {
                Ok(tool) => CallError::OutputMismatch {
                    server,
                    tool,
                    detail,
                },
                Err(_) => CallError::Remote {
                    node: node.clone(),
                    server,
                    message: detail,
                },
            },
            WireError::Shutdown => CallError::Remote {
                node: node.clone(),
                server,
                message: "that node is shutting down".into(),
            },
            WireError::InvalidRequest { message } => CallError::InvalidRequest(message),
            WireError::Other { message } => CallError::Remote {
                node: node.clone(),
                server,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_over_the_bound_is_refused_with_its_size() {
        let advert = Wire::Advert {
            from: "a".into(),
            listen: "127.0.0.1:1".into(),
            peers: Vec::new(),
            http: None,
            servers: vec![WireServer {
                name: "big".into(),
                state: "ready".into(),
                reason: None,
                tools: Vec::new(),
            }],
        };
        let size = advert.encode(16).unwrap_err();
        assert!(size > 16);
        assert!(advert.encode(size).is_ok());
    }

    #[test]
    fn an_advertised_tool_under_a_bad_name_is_left_out() {
        let server = WireServer {
            name: "files".into(),
            state: "ready".into(),
            reason: None,
            tools: vec![
                serde_json::from_value(
                    serde_json::json!({"name": "read", "inputSchema": {"type": "object"}}),
                )
                .unwrap(),
                serde_json::from_value(serde_json::json!({"name": "bad__name"})).unwrap(),
            ],
        };
        let remote = server.into_remote("a").unwrap();
        let names: Vec<&str> = remote.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mcp__files__read"]);
        assert!(remote.tools[0].input_schema.get("properties").is_some());
        let bad = WireServer {
            name: "bad__server".into(),
            state: "ready".into(),
            reason: None,
            tools: Vec::new(),
        };
        assert!(bad.into_remote("a").is_none());
    }

    #[test]
    fn a_timeout_keeps_its_type_across_nodes() {
        let e = CallError::Timeout {
            server: Arc::from("slow"),
            after: Duration::from_millis(300),
        };
        let back = WireError::from_call(&e).into_call(
            &Arc::from("a"),
            &Arc::from("slow"),
            "mcp__slow__wait",
        );
        assert!(
            matches!(back, CallError::Timeout { after, .. } if after == Duration::from_millis(300))
        );
    }
}
