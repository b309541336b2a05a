//! The host-facing handle: start, list tools, call, watch events, shut down.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use mcpvisor_protocol::{CallToolResult, ToolDefinition};
use ractor::{Actor, ActorRef};
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

mod inject;
mod node_link;
mod ping;
mod resources_prompts;

pub use node_link::{NodeLink, node_link};

pub use resources_prompts::{
    Catalog, CompletionTarget, RoutedPrompt, ServerResource, ServerTemplate, Skipped,
};

use crate::error::{CallError, StartError};
use crate::events::{EventBus, HostEvent};
use crate::lane::{Answer, CallLane};
use crate::messages::ReloadReport;
use crate::messages::SupervisorMsg;
use crate::nodes::NodeBoard;
use crate::options::{CallOptions, ServerSpec, SupervisorOptions};
use crate::remote::{NodeServers, RemoteCalls, RemoteRequest};
use crate::restart_replay::RestartReplay;
use crate::routes::{Route, RouteSnapshot, RouteTable, Via};
use crate::status::{ServerId, ServerState, ServerStatus, StatusBoard};
use crate::supervisor::{SupervisorActor, SupervisorArgs};
use crate::task_call::{self, TaskFlow};

/// A running supervisor and everything a host needs to use it.
///
/// Reading tools and routing a call never wait on an actor's mailbox: the
/// route table is a snapshot that only the registry replaces, and a call goes
/// to its server through the connection's call lane, not the server actor.
///
/// Cheap to clone (one `Arc`): every clone is the same host. The servers stop
/// on [`Host::shutdown`] or when the last clone is dropped.
///
/// A call may be made from any thread, inside a Tokio runtime or not, and its
/// future polled by any executor: the connections' own tasks (readers,
/// deadlines) run on the runtime the host was started on, which must keep
/// running.
#[derive(Clone)]
pub struct Host(Arc<HostInner>);

struct HostInner {
    supervisor: ActorRef<SupervisorMsg>,
    roots: Arc<parking_lot::RwLock<Option<Arc<[mcpvisor_protocol::mcp::messages::Root]>>>>,
    restart_replay: Arc<RestartReplay>,
    faults: Arc<crate::fault_board::FaultBoard>,
    routes: Arc<RouteSnapshot>,
    status: Arc<StatusBoard>,
    bus: EventBus,
    shut_down: AtomicBool,
    /// Subscribed before the supervisor started, so the first `events()` misses nothing.
    first_events: parking_lot::Mutex<Option<broadcast::Receiver<HostEvent>>>,
    /// The runtime the host was started on, where task calls run.
    runtime: tokio::runtime::Handle,
    /// The other nodes of the cluster this host joined, if any.
    nodes: Arc<NodeBoard>,
}

impl Host {
    /// Starts a supervisor for `servers`. Servers start in the background; use
    /// [`Host::wait_ready`] or [`Host::events`] to know when their tools are routed.
    pub async fn start(
        servers: Vec<ServerSpec>,
        options: SupervisorOptions,
    ) -> Result<Host, StartError> {
        let bus = EventBus::new(options.event_capacity);
        let status = StatusBoard::new();
        let routes = Arc::new(RouteSnapshot::default());
        let specs: Vec<(ServerId, ServerSpec)> = servers
            .into_iter()
            .enumerate()
            .map(|(i, spec)| (ServerId(i as u64 + 1), spec))
            .collect();
        let first_events = parking_lot::Mutex::new(Some(bus.subscribe()));
        let roots = Arc::new(parking_lot::RwLock::new(
            options.roots.clone().map(Arc::from),
        ));
        let restart_replay = Arc::new(RestartReplay::new(options.log_level));
        let faults = Arc::new(crate::fault_board::FaultBoard::default());
        let nodes = Arc::new(NodeBoard::default());
        let args = SupervisorArgs {
            roots: roots.clone(),
            restart_replay: restart_replay.clone(),
            faults: faults.clone(),
            specs,
            options,
            bus: bus.clone(),
            status: status.clone(),
            routes: routes.clone(),
            nodes: nodes.clone(),
        };
        let (supervisor, _) = SupervisorActor::spawn(None, SupervisorActor::new(), args)
            .await
            .map_err(|e| {
                StartError::Spawn(match e {
                    ractor::SpawnErr::StartupFailed(inner) => inner.to_string(),
                    other => other.to_string(),
                })
            })?;
        Ok(Host(Arc::new(HostInner {
            supervisor,
            roots,
            restart_replay,
            faults,
            routes,
            status,
            bus,
            shut_down: AtomicBool::new(false),
            first_events,
            runtime: tokio::runtime::Handle::current(),
            nodes,
        })))
    }

    /// Every routed tool, sorted by qualified name.
    ///
    /// The definitions are the route table's own, shared: listing a host's
    /// tools costs a pointer per tool however large their schemas are.
    pub fn tools(&self) -> Vec<Arc<ToolDefinition>> {
        let table = self.0.routes.load();
        table
            .sorted()
            .iter()
            .map(|r| r.definition.clone())
            .collect()
    }

    /// The current route table.
    pub fn routes(&self) -> Arc<RouteTable> {
        self.0.routes.load()
    }

    /// Calls the tool routed as `name` (`mcp__server__tool`).
    ///
    /// The returned future resolves to the tool's result. Dropping it before it
    /// resolves cancels the call: the server receives `notifications/cancelled`.
    /// A call that exceeds its timeout fails with [`CallError::Timeout`] and
    /// terminates the connection, which is then restarted.
    pub fn call(&self, name: &str, arguments: Value, options: CallOptions) -> PendingCall {
        let Some(route) = self.0.routes.lookup(name) else {
            return PendingCall::failed(self.unrouted(name));
        };
        let local = match &route.via {
            Via::Lane(local) => local,
            Via::Node(node) => return remote_call(&route, node.as_ref(), arguments, options),
        };
        let timeout = options.timeout.unwrap_or(local.request_timeout);
        let arguments = (!arguments.is_null()).then_some(&arguments);
        let lane = &local.lane;
        lane.tools_accessed();
        if local.task {
            let (flow, answer) = task_call::start(
                &self.0.runtime,
                &route,
                local,
                arguments.cloned(),
                options.progress,
                timeout,
            );
            return PendingCall::waiting(
                answer,
                Cancel::Lane {
                    lane: lane.clone(),
                    id: 0,
                    task: Some(flow),
                },
            );
        }
        match lane.start(
            route.definition.name.tool(),
            arguments,
            options.progress,
            crate::lane::ToolShape {
                output: local.output.clone(),
                mirrored: local.mirrored.as_deref(),
            },
            timeout,
            options.answers,
        ) {
            Ok((id, answer)) => PendingCall::waiting(
                answer,
                Cancel::Lane {
                    lane: lane.clone(),
                    id,
                    task: None,
                },
            ),
            Err(e) => PendingCall::failed(e),
        }
    }

    /// Why no route has `name`: its server is not ready (say where it stands
    /// and when it is tried next), or no server offers it.
    fn unrouted(&self, name: &str) -> CallError {
        // Split by hand: a name the server listed may be too long or invalid
        // as a qualified name, which is why it has no route.
        let Some((server, tool)) = name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        else {
            return CallError::UnknownTool(name.to_string());
        };
        let Some(status) = self.0.status.named(server) else {
            return CallError::UnknownTool(name.to_string());
        };
        if status.state != ServerState::Ready {
            return status.unavailable();
        }
        let table = self.0.routes.load();
        match table.refused(server).and_then(|r| r.of(tool)) {
            Some(refused) => CallError::RouteRefused {
                name: name.to_string(),
                server: status.name,
                tool: refused.tool.clone(),
                reason: refused.reason.clone(),
            },
            None => CallError::UnknownTool(name.to_string()),
        }
    }

    /// This host's node name, once it joined a cluster.
    pub fn node_name(&self) -> Option<Arc<str>> {
        self.0.nodes.local().cloned()
    }

    /// What every other node advertises, as last told.
    pub fn nodes(&self) -> Vec<Arc<NodeServers>> {
        self.0.nodes.snapshot()
    }

    /// Events as a stream. The first call sees every event since [`Host::start`];
    /// later calls see events from the moment they subscribe. A subscriber that
    /// falls behind by more than the configured capacity gets
    /// [`HostEvent::EventsLost`] and continues.
    pub fn events(&self) -> impl Stream<Item = HostEvent> + Send + 'static {
        let rx = self
            .0
            .first_events
            .lock()
            .take()
            .unwrap_or_else(|| self.0.bus.subscribe());
        event_stream(rx)
    }

    /// Events from the moment of the call, whoever called [`Host::events`]
    /// before: for a part of the host (a cluster's agent) that must not take
    /// the first subscriber's replay from the embedding application.
    pub fn events_from_now(&self) -> impl Stream<Item = HostEvent> + Send + 'static {
        event_stream(self.0.bus.subscribe())
    }

    /// Every server's status, sorted by name.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.0.status.snapshot()
    }

    /// Changes whenever a server's status does (its state, tools, restarts):
    /// a cheap signal to read [`Host::servers`] again.
    pub fn watch_servers(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.status.watch()
    }

    /// Waits until every server is ready, failed, waiting for a login or stopped,
    /// or `timeout` passes.
    /// Returns the statuses either way; check them.
    pub async fn wait_ready(&self, timeout: Duration) -> Vec<ServerStatus> {
        let mut changed = self.0.status.watch();
        let settled = async {
            loop {
                changed.borrow_and_update();
                if self.0.status.all_settled() {
                    return;
                }
                if changed.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, settled).await;
        self.0.status.snapshot()
    }

    /// Restarts the servers named `name` whatever their state, at once and with
    /// a fresh restart budget: a running one is stopped first (its process and
    /// connection end as at shutdown), a down or failed one is started. Returns
    /// how many were restarted.
    pub async fn restart(&self, name: &str) -> Result<usize, CallError> {
        let (reply, rx) = oneshot::channel();
        self.0
            .supervisor
            .cast(SupervisorMsg::RestartServer {
                name: name.to_string(),
                reply,
            })
            .map_err(|_| CallError::Shutdown)?;
        rx.await.unwrap_or(Err(CallError::Shutdown))
    }

    /// Replaces the host's roots and tells every server
    /// (`notifications/roots/list_changed`), which then asks for them. Only a
    /// host started with [`SupervisorOptions::roots`] set has declared roots;
    /// for any other this returns `false` and changes nothing.
    pub fn set_roots(&self, roots: Vec<mcpvisor_protocol::mcp::messages::Root>) -> bool {
        {
            let mut current = self.0.roots.write();
            if current.is_none() {
                return false;
            }
            *current = Some(Arc::from(roots));
        }
        let _ = self.0.supervisor.cast(SupervisorMsg::RootsChanged);
        true
    }

    /// Replaces the host's set of servers with `servers`: servers are matched by
    /// name; an unchanged one keeps running untouched, a changed one is started
    /// again with its new definition, a removed one is stopped, a new one starts.
    /// Returns what was done once the stops are complete and the starts begun.
    pub async fn reload(&self, servers: Vec<ServerSpec>) -> Result<ReloadReport, CallError> {
        let (reply, rx) = oneshot::channel();
        self.0
            .supervisor
            .cast(SupervisorMsg::Reload {
                specs: servers,
                reply,
            })
            .map_err(|_| CallError::Shutdown)?;
        rx.await.map_err(|_| CallError::Shutdown)
    }

    /// Stops every server (closing stdin, then SIGTERM and SIGKILL to each process
    /// group) and the supervisor. Pending calls fail with [`CallError::Shutdown`].
    pub async fn shutdown(&self) {
        if self.0.shut_down.swap(true, Ordering::SeqCst) {
            return;
        }
        let (reply, rx) = oneshot::channel();
        if self
            .0
            .supervisor
            .cast(SupervisorMsg::Shutdown { reply: Some(reply) })
            .is_ok()
        {
            let _ = rx.await;
        }
        self.0.routes.store(RouteTable::default());
        let _ = self.0.supervisor.wait(Some(Duration::from_secs(10))).await;
    }

    /// The supervisor actor, for tests that reach into the tree.
    #[cfg(test)]
    pub(crate) fn supervisor_for_tests(&self) -> &ActorRef<SupervisorMsg> {
        &self.0.supervisor
    }

    /// True once [`Host::shutdown`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.0.shut_down.load(Ordering::SeqCst)
    }

    /// Servers in the Ready state.
    pub fn ready_servers(&self) -> usize {
        self.servers()
            .iter()
            .filter(|s| s.state == ServerState::Ready)
            .count()
    }
}

impl Drop for HostInner {
    fn drop(&mut self) {
        if !self.shut_down.load(Ordering::SeqCst) {
            // Best effort without a runtime to wait on: the supervisor tears everything down.
            let _ = self
                .supervisor
                .cast(SupervisorMsg::Shutdown { reply: None });
        }
    }
}

/// Events from `rx` as a stream; a subscriber that fell behind is told how much it missed.
fn event_stream(
    mut rx: broadcast::Receiver<HostEvent>,
) -> impl Stream<Item = HostEvent> + Send + 'static {
    async_stream::stream! {
        loop {
            match rx.recv().await {
                Ok(event) => yield event,
                Err(broadcast::error::RecvError::Lagged(count)) => yield HostEvent::EventsLost { count },
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    }
}

/// Sends a call to the node that supervises the route's server.
fn remote_call(
    route: &Route,
    node: &dyn RemoteCalls,
    arguments: Value,
    options: CallOptions,
) -> PendingCall {
    let call = node.start(RemoteRequest {
        server: route.server.clone(),
        tool: Arc::from(route.definition.name.as_str()),
        arguments: (!arguments.is_null()).then_some(arguments),
        progress: options.progress,
        timeout: options.timeout,
    });
    PendingCall::waiting(call.answer, Cancel::Node(call.cancel))
}

/// A call's side of its way to the server: its deadline is kept where it
/// runs (the connection, or the owning node), so this only waits for the
/// answer or the error that ends it.
struct Waiting {
    answer: Answer,
    cancel: Cancel,
}

/// How to cancel one call.
#[derive(Clone)]
enum Cancel {
    /// A call on one of this host's connections.
    Lane {
        lane: Arc<CallLane>,
        id: i64,
        /// A call the server runs as a task: cancelled through its flow.
        task: Option<Arc<TaskFlow>>,
    },
    /// A call another node runs.
    Node(Arc<dyn Fn() + Send + Sync>),
}

impl Cancel {
    fn cancel(&self) {
        match self {
            Cancel::Lane {
                task: Some(flow), ..
            } => flow.cancel(),
            Cancel::Lane { lane, id, .. } => lane.cancel(*id),
            Cancel::Node(cancel) => cancel(),
        }
    }

    /// Why the call ended when its answer was dropped unsent.
    fn unanswered(&self) -> CallError {
        match self {
            Cancel::Lane { lane, .. } => CallError::ConnectionClosed {
                server: lane.server().clone(),
                reason: Arc::from("the connection ended before answering"),
            },
            Cancel::Node(_) => CallError::Shutdown,
        }
    }
}

/// A call in flight. Await it for the result; drop it to cancel.
#[must_use = "a call is cancelled when its future is dropped"]
pub struct PendingCall {
    inner: Option<Waiting>,
    failed: Option<CallError>,
}

impl PendingCall {
    fn waiting(answer: Answer, cancel: Cancel) -> Self {
        PendingCall {
            inner: Some(Waiting { answer, cancel }),
            failed: None,
        }
    }

    fn failed(error: CallError) -> Self {
        PendingCall {
            inner: None,
            failed: Some(error),
        }
    }

    /// A handle that cancels this call from elsewhere (a Ctrl-C handler, another task).
    pub fn canceller(&self) -> CallCanceller {
        CallCanceller(self.inner.as_ref().map(|w| w.cancel.clone()))
    }
}

impl Future for PendingCall {
    type Output = Result<CallToolResult, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(waiting) = this.inner.as_mut() else {
            return Poll::Ready(Err(this.failed.take().unwrap_or(CallError::Cancelled)));
        };
        if let Poll::Ready(answer) = Pin::new(&mut waiting.answer).poll(cx) {
            let ended = answer.unwrap_or_else(|_| Err(waiting.cancel.unanswered()));
            this.inner = None;
            return Poll::Ready(ended);
        }
        Poll::Pending
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(waiting) = self.inner.take() {
            waiting.cancel.cancel();
        }
    }
}

/// Cancels one call; the call's future then resolves to [`CallError::Cancelled`].
#[derive(Clone)]
pub struct CallCanceller(Option<Cancel>);

impl CallCanceller {
    /// Sends the cancellation (a no-op for a call that already ended).
    pub fn cancel(&self) {
        if let Some(waiting) = &self.0 {
            waiting.cancel();
        }
    }
}
