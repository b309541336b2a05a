//! The mcpvisor supervision tree, and the handle a host uses.
//!
//! ```text
//! SupervisorActor                 one per Host; restart policy
//!  ├─ RegistryActor               route table; rejects invalid and duplicate routes
//!  └─ ServerActor (per server)    one connection: handshake, tools, its call lane
//!      └─ TransportActor          the server's process; torn down with its parent
//! ```
//!
//! A server that crashes, hangs, floods or lies ends its own connection: its
//! pending calls fail with typed errors, its routes disappear, and the supervisor
//! restarts it with backoff. Other servers and the host are not affected.
//! [`Host`] is the entry point.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

mod context;
pub mod error;
pub mod events;
pub mod fault;
mod fault_board;
mod host;
pub mod host_requests;
mod inbound;
mod lane;
mod messages;
mod nodes;
pub mod options;
mod registry;
mod registry_msg;
pub mod remote;
pub mod restart;
mod restart_replay;
pub mod routes;
mod server;
pub mod server_lists;
pub mod status;
mod supervisor;
mod task_call;
#[cfg(test)]
mod test_actors;
mod transport;
mod vitals;

pub use error::{CallError, ConnectionError, DownReason, StartError};
pub use events::HostEvent;
pub use fault::{Fault, FaultError, FaultKind};
pub use host::{
    CallCanceller, Catalog, CompletionTarget, Host, NodeLink, PendingCall, RoutedPrompt,
    ServerResource, ServerTemplate, Skipped, node_link,
};
pub use host_requests::{
    ClientHandler, FormRequest, HostAnswer, HostAsk, RootsRequest, SamplingRequest,
    SharedClientHandler, UrlRequest, round_key,
};
pub use messages::ReloadReport;
pub use options::{CallOptions, ProgressCallback, ServerSpec, SupervisorOptions, TransportSpec};
pub use remote::{NodeServers, RemoteCall, RemoteCalls, RemoteRequest, RemoteServer};
pub use restart::RestartPolicy;
pub use routes::{Refusals, RefusedRoute};
pub use status::{ServerId, ServerState, ServerStatus};
pub use vitals::Vitals;
