//! Errors a host sees from calls and from starting a supervisor.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::human;

use mcpvisor_protocol::ErrorObject;
use mcpvisor_protocol::mcp::messages::ResultError;
use mcpvisor_protocol::mcp::param_headers::ParamValueError;
use mcpvisor_protocol::state::listing::ListingError;
use mcpvisor_protocol::state::session::InitializeFailure;
use mcpvisor_transports::TransportError;

/// Why a tool call did not return a result.
///
/// A result with `is_error: true` is not an error here: the tool ran and its
/// failure is for the model to read.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No route has this name (unknown, ambiguous, or its server is down).
    #[error("no tool is routed as `{0}`")]
    UnknownTool(String),
    /// The server listed the tool, but it has no route (see [`crate::RefusedRoute`]).
    #[error(
        "no tool is routed as `{name}`: server `{server}` lists `{tool}`, which has no route: {reason}"
    )]
    RouteRefused {
        /// The name asked for.
        name: String,
        /// The server that listed it.
        server: Arc<str>,
        /// The tool's name as the server listed it.
        tool: String,
        /// Why it has no route.
        reason: String,
    },
    /// The server is not running or not ready: starting, restarting after a
    /// failure, failed, or waiting for a login.
    #[error("server `{server}` is not available{}{}", why_suffix(.why), next_try_suffix(.next_try))]
    ServerUnavailable {
        /// Which server.
        server: Arc<str>,
        /// Where it stands and why, when known (`restarting: HTTP server
        /// unreachable: connection refused`).
        why: Option<Arc<str>>,
        /// When the supervisor next tries to start it, when it will.
        next_try: Option<std::time::SystemTime>,
    },
    /// This call ran longer than its timeout; the connection was terminated.
    #[error("call to server `{server}` timed out after {}; the connection was restarted", human::duration(*after))]
    Timeout {
        /// Which server.
        server: Arc<str>,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// Another request on the same connection timed out, which terminated the connection.
    #[error("server `{server}` connection was terminated because a request timed out")]
    ConnectionTimedOut {
        /// Which server.
        server: Arc<str>,
    },
    /// The transport failed (process exited, frame too large, I/O error).
    #[error("server `{server}` connection failed: {source}")]
    Transport {
        /// Which server.
        server: Arc<str>,
        /// What failed.
        source: TransportError,
    },
    /// The connection was closed for another reason (shutdown, restart, protocol failure).
    #[error("server `{server}` connection closed: {reason}")]
    ConnectionClosed {
        /// Which server.
        server: Arc<str>,
        /// Why.
        reason: Arc<str>,
    },
    /// The call was cancelled by the host.
    #[error("call was cancelled")]
    Cancelled,
    /// The connection has as many requests in flight as it allows.
    #[error("server `{server}` has {limit} requests in flight; try again later")]
    Overloaded {
        /// Which server.
        server: Arc<str>,
        /// The in-flight limit.
        limit: usize,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` returned error {}: {}", .error.code, .error.message)]
    Rpc {
        /// Which server.
        server: Arc<str>,
        /// The error object.
        error: ErrorObject,
    },
    /// The server's answer was not a valid tool result.
    #[error("server `{server}` sent an invalid result: {source}")]
    InvalidResult {
        /// Which server.
        server: Arc<str>,
        /// What was wrong.
        source: ResultError,
    },
    /// The supervisor has shut down.
    #[error("mcpvisor has shut down")]
    Shutdown,
    /// No server has this name.
    #[error("no server is named `{0}`")]
    UnknownServer(String),
    /// No prompt is routed under this name.
    #[error("no prompt is routed as `{0}`")]
    UnknownPrompt(String),
    /// An argument a tool mirrors into an HTTP header (MCP 2026-07-28's
    /// `x-mcp-header`) cannot be sent as its schema says: nothing was sent.
    #[error("call to server `{server}` not sent: {source}")]
    ArgumentHeader {
        /// Which server.
        server: Arc<str>,
        /// Which argument and what it must be.
        source: ParamValueError,
    },
    /// The server asked a question to go on with the request (MCP
    /// 2026-07-28 `input_required`) that the host did not answer.
    #[error("server `{server}` asked for input `{key}`, which the host did not give: {}", .error.message)]
    InputUnanswered {
        /// Which server.
        server: Arc<str>,
        /// The question's key.
        key: String,
        /// Why there is no answer.
        error: ErrorObject,
    },
    /// The server did not declare this feature in `initialize`.
    #[error("server `{server}` does not offer {feature}")]
    NotOffered {
        /// Which server.
        server: Arc<str>,
        /// The feature (`resources`, `resource subscriptions`, `prompts`, `completions`, `logging`).
        feature: &'static str,
    },
    /// A listing went past the host's bounds.
    #[error("server `{server}`: {error}")]
    Listing {
        /// Which server.
        server: Arc<str>,
        /// Which bound.
        error: ListingError,
    },
    /// The tool's result does not match its `outputSchema` (from protocol 2025-06-18).
    #[error("tool `{tool}` of server `{server}` answered outside its outputSchema: {detail}")]
    OutputMismatch {
        /// Which server.
        server: Arc<str>,
        /// Which tool.
        tool: mcpvisor_protocol::QualifiedMcpToolName,
        /// What did not match.
        detail: String,
    },
    /// The request is not one the host can send (a missing prompt argument, an unknown log level).
    #[error("{0}")]
    InvalidRequest(String),
    /// The node that supervises the server was lost (its session closed or
    /// it stopped answering heartbeats) before the call ended. Whether the
    /// call ran there is unknown.
    #[error("node `{node}` was lost before server `{server}` answered")]
    NodeLost {
        /// The lost node.
        node: Arc<str>,
        /// The server the call was for.
        server: Arc<str>,
    },
    /// Another node failed the call in a way whose cause stays on that node
    /// (a transport failure, an invalid result): its words, not its type.
    #[error("server `{server}` on node `{node}`: {message}")]
    Remote {
        /// The node that ran the call.
        node: Arc<str>,
        /// Which server.
        server: Arc<str>,
        /// What that node reported.
        message: String,
    },
}

/// Why a server went down, as events and statuses carry it: shared, typed,
/// and displayed as a sentence.
pub type DownReason = Arc<ConnectionError>;

/// Where a connection's actor records why it ends, for the supervisor to read
/// once the actor has stopped (the stop itself carries only text).
pub(crate) type FailureCell = Arc<parking_lot::Mutex<Option<ConnectionError>>>;

impl CallError {
    /// True for [`CallError::Timeout`] and [`CallError::ConnectionTimedOut`].
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            CallError::Timeout { .. } | CallError::ConnectionTimedOut { .. }
        )
    }

    /// For a server's `-32042` answer (2025-11-25): the URL elicitations it
    /// needs the person to complete before the request can succeed, each
    /// checked like an `elicitation/create` in URL mode (https, no user
    /// information, bounded). `None` for every other error.
    pub fn url_elicitations(
        &self,
    ) -> Option<
        Result<
            Vec<mcpvisor_protocol::mcp::url_elicitation::UrlElicitation>,
            mcpvisor_protocol::mcp::url_elicitation::UrlElicitationError,
        >,
    > {
        match self {
            CallError::Rpc { error, .. } => {
                mcpvisor_protocol::mcp::url_elicitation::UrlElicitation::required(error)
            }
            _ => None,
        }
    }
}

/// Why a server connection ended (reported in events and server status).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The handshake failed.
    #[error("initialize failed: {0}")]
    Initialize(#[from] InitializeFailure),
    /// Initialize plus the first full tools/list did not finish in time.
    #[error("startup did not finish within {}", human::duration(*.0))]
    StartupTimeout(Duration),
    /// A request timed out.
    #[error("a request timed out after {}", human::duration(*.0))]
    RequestTimeout(Duration),
    /// The server broke the protocol in a way the connection cannot survive.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// An actor of the connection (the server's or its transport's) failed or
    /// could not start.
    #[error("the connection's actor failed: {0}")]
    ActorFailed(String),
    /// The connection stopped without a failure of its own being recorded
    /// (an actor stopped from outside).
    #[error("the connection stopped: {0}")]
    Stopped(String),
    /// A listing passed its bounds (pages, entries, bytes, cursors).
    #[error("server `{server}` sent a tools/list that was refused: {error}")]
    Listing {
        /// Which server.
        server: Arc<str>,
        /// Which bound.
        error: ListingError,
    },
}

/// Why a supervisor could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The actor runtime refused to spawn the supervisor.
    #[error("failed to start the supervisor: {0}")]
    Spawn(String),
}

fn why_suffix(why: &Option<Arc<str>>) -> String {
    why.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()
}

fn next_try_suffix(next: &Option<std::time::SystemTime>) -> String {
    let Some(at) = next else {
        return String::new();
    };
    let left = at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or(Duration::ZERO);
    format!("; next try in {}", human::duration(left))
}
