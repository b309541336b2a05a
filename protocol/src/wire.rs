//! The wire: JSON-RPC 2.0 messages, newline framing with a byte limit,
//! Server-Sent Events, and the id of an answer that could not be read.

pub mod answer_probe;
pub mod frame;
pub mod jsonrpc;
pub mod sse;
