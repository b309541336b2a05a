//! Benchmarks of mcpvisor against the official Rust SDK (rmcp) and the raw floor.
//!
//! The `harness` binary measures, in one run and alternating between clients
//! round by round, every figure of the benchmark issue:
//!
//! - **clients** ([`clients`]): mcpvisor through its public [`mcpvisor::Host`]
//!   API, rmcp as the peer client, and a floor: newline JSON through a pipe to
//!   `cat` for stdio, a kept-alive HTTP client posting a fixed `tools/call`
//!   for Streamable HTTP;
//! - **servers** ([`servers`]): an rmcp echo server built here, the mcpvisor
//!   demo server, `@modelcontextprotocol/server-everything` over stdio and
//!   Streamable HTTP, and the Python SDK server answering JSON;
//! - **figures** ([`figures`]): call round trip p50/p99, throughput with 64
//!   calls in flight, spawn-to-ready, 100 servers to all-ready, memory per idle
//!   connection, kill-to-ready-again, CPU time per call.
//!
//! - **gateways** ([`gateway`]): `mcpvisor serve` over Streamable HTTP against
//!   supergateway, mcp-proxy and mcp-hub fronting the same stdio server, a
//!   direct `Host::call`, and the `mcpvisor call` command line;
//! - **the cost curve** ([`figures::curve`]): 1 to 1,000 servers in one host,
//!   and one server with 100 to 100,000 tools, with SVG charts;
//! - **the soak** ([`soak`]): twenty servers under steady mixed load for
//!   minutes, resources sampled each minute.
//!
//! [`report`] turns the measurements into `docs/BENCHMARKS.md` and
//! `docs/benchmarks.json`, with the ratios mcpvisor/rmcp and mcpvisor/floor and
//! the targets checked. Speed is measured here, never in tests.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod clients;
#[cfg(feature = "cluster")]
pub mod cluster;
pub mod figures;
pub mod gateway;
pub mod profile;
pub mod report;
pub mod servers;
pub mod soak;
pub mod stats;
pub mod usage;
