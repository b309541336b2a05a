//! `mcpvisor serve`: one long-lived supervisor served as an MCP server.
//!
//! ```text
//! MCP host ──stdio──────┐
//! MCP host ──HTTP(axum)─┼─ Session ─┐
//! mcpvisor CLI ─socket──┘           ├─ Gateway ── Host (supervisor, servers)
//!                       Session ────┘
//! ```
//!
//! A [`Gateway`] wraps a started [`mcpvisor::Host`]; every downstream
//! connection is a [`Session`] that lists the routed tools, forwards calls with
//! their cancels and progress, and tells its client when the tool set changes.
//! Sessions share nothing but the gateway. The transports are
//! [`lines::serve_lines`] (stdio, the local socket) and [`http::HttpEndpoint`].
//! The CLI attaches through [`socket::connect`] and [`client::Client`].
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

mod bridge;
pub mod client;
mod convert;
mod events;
pub mod forward;
mod gateway;
mod handshake;
pub mod http;
mod hushed;
mod in_flight;
pub mod ingress;
pub mod inject;
pub mod lines;
mod outcome;
pub mod resources_prompts;
pub mod session;
pub mod socket;
mod stateless;
pub mod subscriptions;
pub mod tools;
pub mod wire;

pub use gateway::{Gateway, GatewayOptions, Reloader};
pub use ingress::Ingress;
pub use session::Session;
pub use tools::Naming;
