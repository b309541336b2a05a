//! The MCP messages a client sends and reads, at protocol version `2025-03-26`.
//!
//! Validation of the server's `initialize` answer lives here, at the protocol
//! boundary, so every transport gets the same typed errors.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this client speaks and asks for.
pub const PROTOCOL_VERSION: &str = "2025-03-26";

/// Method and notification names.
pub mod methods {
    /// Client → server handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// Client → server handshake completion.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// List tools (paginated).
    pub const TOOLS_LIST: &str = "tools/list";
    /// Call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Liveness check, either direction.
    pub const PING: &str = "ping";
    /// Cancel an in-flight request, either direction.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Progress for a request that carried a progress token.
    pub const PROGRESS: &str = "notifications/progress";
    /// The server's tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// A log message from the server.
    pub const LOG_MESSAGE: &str = "notifications/message";
    /// Server → client: sample the host's model.
    pub const CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server → client: ask the person for input.
    pub const ELICIT: &str = "elicitation/create";
    /// Server → client: the host's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Client → server: the roots changed.
    pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// List a server's resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// List a server's resource templates.
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Read one resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Ask to be told when a resource changes.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Stop being told.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// A subscribed resource changed.
    pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// The server's resources (or templates) changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// List a server's prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Get one prompt, filled in with arguments.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// The server's prompts changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Suggestions for a prompt's or a resource template's argument.
    pub const COMPLETE: &str = "completion/complete";
    /// Set the level of the log messages a server sends.
    pub const SET_LOG_LEVEL: &str = "logging/setLevel";
}

/// Name and version of a client or server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Program name.
    pub name: String,
    /// Program version.
    pub version: String,
}

/// Parameters of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Always [`PROTOCOL_VERSION`].
    pub protocol_version: String,
    /// What this client supports: see [`ClientCapabilities`].
    pub capabilities: Value,
    /// Who is asking.
    pub client_info: Implementation,
}

impl InitializeParams {
    /// Parameters for a client named `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        InitializeParams {
            protocol_version: PROTOCOL_VERSION.to_string(),
            capabilities: Value::Object(Map::new()),
            client_info: Implementation {
                name: name.into(),
                version: version.into(),
            },
        }
    }
}

pub use crate::mcp::client_offers::{ClientCapabilities, Root};
use crate::mcp::revision::Versions;

/// The server's capabilities that matter to a tool client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Present when the server offers tools; `listChanged` says it notifies changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Present when the server sends log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Everything else, kept as sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A validated `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose; always [`PROTOCOL_VERSION`] once validated.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Who answered.
    pub server_info: Implementation,
    /// Optional usage hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Why an `initialize` answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InitializeError {
    /// The server chose a version this client does not speak or was not set to accept.
    #[error(
        "server chose protocol version {0:?}, which this client does not accept (its protocol_versions)"
    )]
    UnsupportedVersion(String),
    /// A required member is missing or has the wrong type.
    #[error("initialize result is missing or has a malformed `{0}`")]
    MissingField(&'static str),
    /// The result is not an object.
    #[error("initialize result is not an object")]
    NotAnObject,
}

impl InitializeResult {
    /// Validates a raw `initialize` result from a server asked for the default revision.
    pub fn validate(value: Value) -> Result<InitializeResult, InitializeError> {
        Self::validate_for(value, &Versions::default())
    }

    /// Validates a raw `initialize` result: its version must be one of `accepted`.
    pub fn validate_for(
        value: Value,
        accepted: &Versions,
    ) -> Result<InitializeResult, InitializeError> {
        let Value::Object(map) = value else {
            return Err(InitializeError::NotAnObject);
        };
        let version = match map.get("protocolVersion") {
            Some(Value::String(v)) => v.clone(),
            _ => return Err(InitializeError::MissingField("protocolVersion")),
        };
        if accepted.accepts(&version).is_none() {
            let shown: String = version.chars().take(40).collect();
            return Err(InitializeError::UnsupportedVersion(shown));
        }
        let capabilities = match map.get("capabilities") {
            Some(v @ Value::Object(_)) => serde_json::from_value(v.clone())
                .map_err(|_| InitializeError::MissingField("capabilities"))?,
            _ => return Err(InitializeError::MissingField("capabilities")),
        };
        let server_info: Implementation = map
            .get("serverInfo")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or(InitializeError::MissingField("serverInfo"))?;
        let instructions = match map.get("instructions") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(InitializeError::MissingField("instructions")),
        };
        Ok(InitializeResult {
            protocol_version: version,
            capabilities,
            server_info,
            instructions,
        })
    }
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The server's name for it (not yet validated as a route component).
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; may be absent, `true`, or malformed on hostile servers.
    #[serde(default)]
    pub input_schema: Value,
    /// Behaviour hints, kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// A name for people (from 2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// JSON Schema of its results' `structuredContent` (from 2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// How it runs (from 2025-11-25: `taskSupport`), kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// Icons for people (from 2025-11-25), those that pass [`crate::mcp::icons::Icon::read`].
    #[serde(
        default,
        deserialize_with = "crate::mcp::icons::lenient",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub icons: Vec<crate::mcp::icons::Icon>,
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsPage {
    /// Tools that parsed.
    pub tools: Vec<Tool>,
    /// Entries that did not parse as tools, with the reason (reported, never fatal).
    pub rejected: Vec<String>,
    /// Cursor for the next page, if any.
    pub next_cursor: Option<String>,
}

/// Why a result could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {what} result: {detail}")]
pub struct ResultError {
    /// Which result.
    pub what: &'static str,
    /// What was wrong.
    pub detail: String,
}

impl ToolsPage {
    /// Reads a `tools/list` result; entries that are not tools are set aside, not fatal.
    pub fn parse(value: Value) -> Result<ToolsPage, ResultError> {
        let page = crate::mcp::pages::Page::<Tool>::parse(value, methods::TOOLS_LIST, "tools")?;
        Ok(ToolsPage {
            tools: page.items,
            rejected: page.rejected,
            next_cursor: page.next_cursor,
        })
    }
}

/// Parameters of `tools/list`.
pub fn list_tools_params(cursor: Option<&str>) -> Option<Value> {
    crate::mcp::pages::list_params(cursor)
}

/// Parameters of `tools/call`; `progress_token` asks the server for progress notifications.
pub fn call_tool_params(
    name: &str,
    arguments: Option<Value>,
    progress_token: Option<&Value>,
) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.to_string()));
    if let Some(args) = arguments {
        params.insert("arguments".into(), args);
    }
    if let Some(token) = progress_token {
        params.insert(
            "_meta".into(),
            serde_json::json!({ "progressToken": token }),
        );
    }
    Value::Object(params)
}

/// A whole `tools/call` request with id `id`, serialised straight from borrowed
/// parts and ended by a newline: a call's hot path builds no intermediate `Value`.
/// `progress_token`, when given, is sent as `params._meta.progressToken`.
pub fn call_tool_line(
    id: i64,
    name: &str,
    arguments: Option<&Value>,
    progress_token: Option<i64>,
) -> Vec<u8> {
    #[derive(Serialize)]
    struct Line<'a> {
        jsonrpc: &'static str,
        id: i64,
        method: &'static str,
        params: Params<'a>,
    }
    #[derive(Serialize)]
    struct Params<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a Value>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    }
    #[derive(Serialize)]
    struct Meta {
        #[serde(rename = "progressToken")]
        progress_token: i64,
    }
    let line = Line {
        jsonrpc: "2.0",
        id,
        method: methods::TOOLS_CALL,
        params: Params {
            name,
            arguments,
            meta: progress_token.map(|progress_token| Meta { progress_token }),
        },
    };
    let mut out = Vec::with_capacity(96 + name.len());
    // Serialising borrowed strings, numbers and a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &line);
    out.push(b'\n');
    out
}

/// One block of a tool result. Unknown kinds are kept whole as raw JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64 image.
    Image {
        /// Base64 data.
        data: String,
        /// e.g. `image/png`.
        mime_type: String,
    },
    /// Base64 audio.
    Audio {
        /// Base64 data.
        data: String,
        /// e.g. `audio/wav`.
        mime_type: String,
    },
    /// An embedded resource (kept as sent: text or blob contents).
    Resource {
        /// The `resource` member.
        resource: Value,
    },
    /// A kind this client does not model, kept whole.
    Unknown(Value),
}

impl ContentBlock {
    fn from_value(v: Value) -> ContentBlock {
        let kind = v.get("type").and_then(Value::as_str);
        let s = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let known = match kind {
            Some("text") => s("text").map(|text| ContentBlock::Text { text }),
            Some("image") => s("data")
                .zip(s("mimeType"))
                .map(|(data, mime_type)| ContentBlock::Image { data, mime_type }),
            Some("audio") => s("data")
                .zip(s("mimeType"))
                .map(|(data, mime_type)| ContentBlock::Audio { data, mime_type }),
            Some("resource") => {
                v.get("resource")
                    .filter(|r| r.is_object())
                    .map(|r| ContentBlock::Resource {
                        resource: r.clone(),
                    })
            }
            _ => None,
        };
        known.unwrap_or(ContentBlock::Unknown(v))
    }

    /// The block as MCP JSON.
    pub fn to_value(&self) -> Value {
        use serde_json::json;
        match self {
            ContentBlock::Text { text } => json!({"type": "text", "text": text}),
            ContentBlock::Image { data, mime_type } => {
                json!({"type": "image", "data": data, "mimeType": mime_type})
            }
            ContentBlock::Audio { data, mime_type } => {
                json!({"type": "audio", "data": data, "mimeType": mime_type})
            }
            ContentBlock::Resource { resource } => {
                json!({"type": "resource", "resource": resource})
            }
            ContentBlock::Unknown(v) => v.clone(),
        }
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult {
    /// What the tool returned.
    pub content: Vec<ContentBlock>,
    /// The tool ran but reports failure (a result for the model, not a protocol error).
    pub is_error: bool,
    /// Structured output, when the server sends it.
    pub structured_content: Option<Value>,
}

impl CallToolResult {
    /// Reads a `tools/call` result.
    pub fn parse(value: Value) -> Result<CallToolResult, ResultError> {
        let err = |detail: &str| ResultError {
            what: "tools/call",
            detail: detail.to_string(),
        };
        let Value::Object(mut map) = value else {
            return Err(err("not an object"));
        };
        let content = match map.remove("content") {
            Some(Value::Array(items)) => items.into_iter().map(ContentBlock::from_value).collect(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err(err("`content` is not an array")),
        };
        let is_error = match map.remove("isError") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(err("`isError` is not a boolean")),
        };
        let structured_content = map.remove("structuredContent").filter(|v| !v.is_null());
        Ok(CallToolResult {
            content,
            is_error,
            structured_content,
        })
    }

    /// The concatenated text blocks (a convenience for hosts and tests).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// The result as MCP JSON.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert(
            "content".into(),
            Value::Array(self.content.iter().map(ContentBlock::to_value).collect()),
        );
        if self.is_error {
            map.insert("isError".into(), Value::Bool(true));
        }
        if let Some(s) = &self.structured_content {
            map.insert("structuredContent".into(), s.clone());
        }
        Value::Object(map)
    }
}

/// `notifications/progress` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token the request carried.
    pub progress_token: Value,
    /// Progress so far (increases).
    pub progress: f64,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A human-readable note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `notifications/cancelled` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request being cancelled.
    pub request_id: crate::wire::jsonrpc::RequestId,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `notifications/message` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogMessageParams {
    /// Syslog-style level (`debug` … `emergency`).
    pub level: String,
    /// Which logger, if the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON.
    #[serde(default)]
    pub data: Value,
}

#[cfg(test)]
mod tests;
