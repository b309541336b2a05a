//! Transports that carry MCP messages between mcpvisor and a server.
//!
//! Every transport has the same shape: it is spawned with a [`TransportSink`]
//! that receives [`TransportEvent`]s (messages, malformed frames, and one final
//! `Closed` with a [`TransportError`]), it sends one message at a time, and it
//! has an idempotent `shutdown` that leaves nothing running. This crate knows
//! nothing of actors; the actors crate drives it.
//!
//! - [`stdio`]: a child process in its own process group, newline-delimited JSON-RPC.
//! - [`http`]: Streamable HTTP: POST with JSON or SSE answers, sessions, a
//!   best-effort GET notification stream; [`headers`] validates and redacts
//!   configured headers.
//! - [`secret`]: the redacting string type for environment and header values.
#![warn(missing_docs, unreachable_pub)]
// One audited exception: the parent-death signal of stdio children (stdio/mod.rs).
#![deny(unsafe_code)]

pub mod error;
pub mod event;
pub mod fault;
pub mod headers;
pub mod http;
pub mod stdio;

pub use error::{ExitInfo, TransportError};
pub use event::{Outbound, TransportEvent, TransportSink};
pub use fault::{Faulty, Oversized, WireFaults};
pub use headers::{HeaderError, HttpHeaders};
pub use http::{
    HttpOptions, HttpSpec, HttpTransport, StreamRuntime, endpoint_url, http_client, redact_url,
};
pub use mcpvisor_protocol::secret::{self, SecretString};
pub use stdio::{
    DEFAULT_PASSTHROUGH, GroupSignal, StdioOptions, StdioSpec, StdioTransport, StdioWriter,
    child_environment_names,
};
