//! The MCP client protocol without I/O.
//!
//! This crate owns everything about MCP that can be decided from values alone:
//! JSON-RPC 2.0 messages ([`jsonrpc`]), newline framing with a hard byte limit
//! ([`frame`]), Server-Sent Events parsing with a per-event byte limit
//! ([`sse`]), the MCP messages a tool client uses at protocol version
//! `2025-03-26` and the validation of the server's `initialize` answer
//! ([`messages`]), the client session state machine ([`session`]), qualified
//! tool names ([`names`]) and tool definitions for model APIs ([`tool_schema`]).
//!
//! Nothing here touches a socket, a process, a runtime or the clock, so every
//! rule is tested with plain values.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod answer_probe;
pub mod arguments_check;
pub mod calls;
pub mod client_offers;
pub mod completion;
pub mod elicitation;
pub mod frame;
pub mod human;
pub mod icons;
pub mod jsonrpc;
pub mod listing;
pub mod logging;
pub mod messages;
pub mod names;
pub mod output_schema;
pub mod pages;
pub mod prompts;
pub mod resources;
pub mod revision;
pub mod secret;
pub mod session;
pub mod sse;
pub mod tasks;
pub mod tool_schema;
pub mod url_elicitation;

pub use frame::{FrameDecoder, FrameError, STDIO_FRAME_LIMIT};
pub use jsonrpc::{ErrorObject, Incoming, Message, MessageError, RequestId};
pub use messages::{CallToolResult, ContentBlock, PROTOCOL_VERSION, Tool};
pub use names::{NameError, QualifiedMcpToolName};
pub use secret::SecretString;
pub use session::{ClientSession, SessionEvent};
pub use sse::{SseError, SseEvent, SseParser};
pub use tool_schema::ToolDefinition;
