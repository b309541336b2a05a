//! What a host configures: servers, supervisor options, per-call options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::messages::ProgressParams;
use mcpvisor_protocol::mcp::revision::Versions;
use mcpvisor_transports::{HttpOptions, HttpSpec, StdioOptions, StdioSpec};

use crate::restart::RestartPolicy;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON-RPC.
    Stdio(StdioSpec),
    /// A Streamable HTTP endpoint.
    Http(HttpSpec),
}

/// One server to supervise. Built with [`ServerSpec::stdio`] or
/// [`ServerSpec::http`] and the `with_*` methods (it will grow).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerSpec {
    /// The route component: `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// Overrides [`SupervisorOptions::request_timeout`] for this server.
    pub request_timeout: Option<Duration>,
    /// Overrides [`SupervisorOptions::startup_timeout`] for this server.
    pub startup_timeout: Option<Duration>,
    /// Overrides [`SupervisorOptions::protocol_versions`] for this server.
    pub protocol_versions: Option<Versions>,
}

impl ServerSpec {
    /// This server's request timeout instead of the supervisor's.
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// This server's startup timeout instead of the supervisor's.
    pub fn with_startup_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// The protocol revisions to offer this server instead of the supervisor's.
    pub fn with_protocol_versions(mut self, versions: Option<Versions>) -> Self {
        self.protocol_versions = versions;
        self
    }

    /// A Streamable HTTP server with the supervisor's default timeouts.
    pub fn http(name: impl Into<String>, spec: HttpSpec) -> Self {
        ServerSpec {
            name: name.into(),
            transport: TransportSpec::Http(spec),
            request_timeout: None,
            startup_timeout: None,
            protocol_versions: None,
        }
    }

    /// A stdio server with the supervisor's default timeouts.
    pub fn stdio(name: impl Into<String>, spec: StdioSpec) -> Self {
        ServerSpec {
            name: name.into(),
            transport: TransportSpec::Stdio(spec),
            request_timeout: None,
            startup_timeout: None,
            protocol_versions: None,
        }
    }
}

/// Supervisor-wide settings. Start from [`SupervisorOptions::default`] and set
/// the fields you need (it will grow, so it cannot be built field by field).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SupervisorOptions {
    /// Default timeout of one call; a call that exceeds it terminates its connection.
    pub request_timeout: Duration,
    /// Time allowed for initialize plus the first full tools/list.
    pub startup_timeout: Duration,
    /// How crashed servers come back.
    pub restart: RestartPolicy,
    /// Requests one connection may have in flight.
    pub max_in_flight: usize,
    /// Messages from one server waiting for its actor; beyond this the reader stops
    /// reading, so a flooding server is slowed down instead of filling memory.
    pub inbound_queue: usize,
    /// Events buffered for slow subscribers (a subscriber that falls further behind
    /// is told how many it missed).
    pub event_capacity: usize,
    /// Name and version sent in `clientInfo`.
    pub client_name: String,
    /// See `client_name`.
    pub client_version: String,
    /// Stdio limits and teardown timings.
    pub stdio: StdioOptions,
    /// HTTP limits and timings.
    pub http: HttpOptions,
    /// Bounds on one `tools/list` (pages, tools, bytes, cursor length).
    pub listing: mcpvisor_protocol::state::listing::ListingLimits,
    /// Answers servers' sampling and elicitation requests; without one none is
    /// declared and such requests are refused (`-32601`).
    pub client_handler: Option<crate::host_requests::SharedClientHandler>,
    /// How long the handler may take to answer one request (a person may be
    /// filling a form); past it the server gets an error.
    pub host_request_timeout: Duration,
    /// Requests of one server the handler may be answering at once; more are refused.
    pub max_host_requests: usize,
    /// The host's roots. `Some` (even empty) declares the roots capability and
    /// answers `roots/list`; [`crate::Host::set_roots`] changes them later and
    /// tells every server. `None` declares nothing.
    pub roots: Option<Vec<mcpvisor_protocol::mcp::messages::Root>>,
    /// The log level asked of every server that offers logging (`logging/setLevel`
    /// once it is ready; [`crate::Host::set_log_level`] changes it per server).
    /// `None`: servers send what they send by default.
    pub log_level: Option<mcpvisor_protocol::mcp::logging::LogLevel>,
    /// The protocol revisions offered to servers, first preferred: the first
    /// is offered, and a server's answer must be one of them. Default:
    /// 2025-03-26 alone.
    pub protocol_versions: Versions,
}

impl Default for SupervisorOptions {
    fn default() -> Self {
        SupervisorOptions {
            request_timeout: Duration::from_secs(60),
            startup_timeout: Duration::from_secs(30),
            restart: RestartPolicy::default(),
            max_in_flight: 4096,
            inbound_queue: 256,
            event_capacity: 1024,
            client_name: "mcpvisor".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            stdio: StdioOptions::default(),
            http: HttpOptions::default(),
            listing: Default::default(),
            client_handler: None,
            host_request_timeout: Duration::from_secs(600),
            max_host_requests: 8,
            roots: None,
            log_level: None,
            protocol_versions: Versions::default(),
        }
    }
}

/// Receives progress of one call. Runs on the server's actor: keep it short.
pub type ProgressCallback = Arc<dyn Fn(&ProgressParams) + Send + Sync>;

/// Options of one call, built from [`CallOptions::default`] with its methods.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides the server's request timeout for this call.
    pub timeout: Option<Duration>,
    /// Asks the server for progress and receives it.
    pub progress: Option<ProgressCallback>,
    /// What the client this call is made for answers, when less than the
    /// host's handler does (a gateway's client): a 2026-07-28 server is told
    /// only that, so it asks only what will be answered. Local calls only.
    pub answers: Option<mcpvisor_protocol::mcp::messages::ClientCapabilities>,
}

impl CallOptions {
    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Declares only what `answers` answers to the server, for this call.
    pub fn answering(
        mut self,
        answers: mcpvisor_protocol::mcp::messages::ClientCapabilities,
    ) -> Self {
        self.answers = Some(answers);
        self
    }

    /// Sets the progress callback.
    pub fn on_progress(mut self, f: impl Fn(&ProgressParams) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("answers", &self.answers)
            .finish()
    }
}
