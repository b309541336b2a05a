//! mcpvisor-chaos: crash-isolation testing of a host's real MCP servers.
//!
//! [`run`] starts a [`Host`](mcpvisor::Host) for the servers given, puts them
//! under a [`Load`] (calls a user describes, or a `ping` to every server), and
//! deals [`Fault`](mcpvisor::Fault)s from a seeded plan through
//! [`Host::inject`](mcpvisor::Host::inject), one per cycle. After each it
//! checks the isolation [`Invariant`]s: the servers with no fault did not
//! notice, every call ended in time with an answer or a typed error, the
//! faulted server came back (or was marked failed only when its restart policy
//! allowed, and came back when asked), no process outlived its connection,
//! and this process's threads, fds and RSS stayed in a band. The [`Report`]
//! counts faults, recovery times (p50/p99), calls by outcome and every broken
//! invariant; it prints for people and serializes to JSON for CI.
//!
//! `mcpvisor chaos` and the project's own chaos test and example all run this
//! one engine.
//!
//! ```no_run
//! # async fn go() -> Result<(), Box<dyn std::error::Error>> {
//! use mcpvisor::{ServerSpec, StdioSpec, SupervisorOptions};
//! use mcpvisor_chaos::{ChaosOptions, run};
//! let git = ServerSpec::stdio("git", StdioSpec::new("uvx", ["mcp-server-git"]));
//! let mut chaos = ChaosOptions::default();
//! chaos.seed = 7;
//! chaos.duration = Some(std::time::Duration::from_secs(60));
//! chaos.faults = vec!["kill".parse()?, "stop:1s".parse()?, "garbage".parse()?];
//! let report = run(vec![git], SupervisorOptions::default(), chaos).await?;
//! println!("{report}");
//! assert!(report.passed());
//! # Ok(()) }
//! ```
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

mod callers;
mod cycle;
mod engine;
mod error;
mod error_kind;
mod events;
mod explains;
mod groups;
mod invariant;
mod load;
mod nodes;
mod options;
mod panics;
mod plan;
pub mod proc;
mod project;
mod report;
mod rng;

pub use engine::run;
pub use error::ChaosError;
pub use error_kind::error_kind;
pub use explains::explains;
pub use invariant::{Invariant, Violation};
pub use load::{CALL_TOKEN, Load, LoadCall, LoadError, MAX_LOAD_CALLS, MAX_WEIGHT, Target};
pub use nodes::{ChaosNode, NODE_KILL, NodeStarter};
pub use options::{ChaosOptions, Progress, ProgressHook, brisk_supervisor_options};
pub use plan::{Wire, applies};
pub use proc::Sample;
pub use project::{ProjectRunError, run_project};
pub use report::{
    Band, Calls, FaultTally, InvariantCheck, Percentiles, Report, Resources, ServerLine,
};
pub use rng::Rng;
