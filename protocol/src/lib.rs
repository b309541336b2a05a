//! The MCP client protocol without I/O, in three parts:
//!
//! - [`wire`]: JSON-RPC 2.0 messages, newline framing with a hard byte limit,
//!   Server-Sent Events parsing with a per-event byte limit;
//! - [`state`]: the client side of a connection as state machines driven by
//!   values (the session, the call table, the bounds on a paged listing);
//! - [`mcp`]: the revisions and what each changes, the MCP types a client
//!   sends and reads, and their validation (the server's `initialize` answer, qualified tool names, tool definitions
//!   for model APIs, elicitation forms, output schemas).
//!
//! Nothing here touches a socket, a process, a runtime or the clock, so every
//! rule is tested with plain values.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod human;
pub mod mcp;
pub mod secret;
pub mod state;
pub mod wire;

pub use mcp::messages::{CallToolResult, ContentBlock, PROTOCOL_VERSION, Tool};
pub use mcp::names::{NameError, QualifiedMcpToolName};
pub use mcp::tool_schema::ToolDefinition;
pub use secret::SecretString;
pub use state::session::{ClientSession, SessionEvent};
pub use wire::frame::{FrameDecoder, FrameError, STDIO_FRAME_LIMIT};
pub use wire::jsonrpc::{ErrorObject, Incoming, Message, MessageError, RequestId};
pub use wire::sse::{SseError, SseEvent, SseParser};
