//! The supervisor actor: one per host; owns the restart policy.
//!
//! It spawns the registry and one server actor per server, all linked to it.
//! When a server actor ends for any reason other than shutdown, its routes are
//! dropped and it is restarted after an exponential backoff with jitter — until
//! the restart-intensity limit marks it failed, where it stays until a host asks
//! for it again. Actors are spawned without names: ractor's names are global to
//! the process, and several supervisors may live in one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::future::join_all;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::context::HostContext;
use crate::error::{ConnectionError, DownReason, FailureCell};
use crate::events::{EventBus, HostEvent};
use crate::messages::{ServerMsg, SupervisorMsg};
use crate::nodes::NodeBoard;
use crate::options::{ServerSpec, SupervisorOptions};
use crate::registry::{RegistryActor, RegistryArgs};
use crate::registry_msg::RegistryMsg;
use crate::restart::RestartTracker;
use crate::routes::RouteSnapshot;
use crate::server::{ServerActor, ServerArgs};
use crate::status::{ServerId, ServerState, StatusBoard};

pub(crate) struct SupervisorArgs {
    pub(crate) roots:
        Arc<parking_lot::RwLock<Option<Arc<[mcpvisor_protocol::mcp::messages::Root]>>>>,
    pub(crate) restart_replay: Arc<crate::restart_replay::RestartReplay>,
    pub(crate) faults: Arc<crate::fault_board::FaultBoard>,
    pub(crate) specs: Vec<(ServerId, ServerSpec)>,
    pub(crate) options: SupervisorOptions,
    pub(crate) bus: EventBus,
    pub(crate) status: Arc<StatusBoard>,
    pub(crate) routes: Arc<RouteSnapshot>,
    pub(crate) nodes: Arc<NodeBoard>,
}

struct Slot {
    name: Arc<str>,
    spec: Arc<ServerSpec>,
    actor: Option<ActorRef<ServerMsg>>,
    tracker: RestartTracker,
    attempt: u32,
    generation: u64,
    /// Set when the connection ended for want of authorization.
    login_required: Option<DownReason>,
    /// Where the current connection records why it ends.
    failure: FailureCell,
}

pub(crate) struct SupervisorState {
    ctx: Arc<HostContext>,
    slots: BTreeMap<ServerId, Slot>,
    /// The id the next added server gets (ids are never reused).
    next_id: u64,
    /// What a restarted registry is given.
    routes: Arc<RouteSnapshot>,
    /// The cluster's other nodes, for a restarted registry too.
    nodes: Arc<NodeBoard>,
}

impl Slot {
    fn new(spec: ServerSpec) -> Slot {
        Slot {
            name: Arc::from(spec.name.as_str()),
            spec: Arc::new(spec),
            actor: None,
            tracker: RestartTracker::default(),
            attempt: 0,
            generation: 0,
            login_required: None,
            failure: FailureCell::default(),
        }
    }
}

pub(crate) struct SupervisorActor {
    /// Counted in [`Vitals::actors`](crate::Vitals) until the actor's task drops it.
    _live: crate::vitals::Live,
}

impl SupervisorActor {
    pub(crate) fn new() -> Self {
        SupervisorActor {
            _live: crate::vitals::Live::actor(),
        }
    }
}

impl Actor for SupervisorActor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let routes = args.routes.clone();
        let nodes = args.nodes.clone();
        let registry_args = RegistryArgs {
            routes: args.routes,
            bus: args.bus.clone(),
            resume: false,
            status: args.status.clone(),
            nodes: args.nodes,
        };
        let (registry, _) = RegistryActor::spawn_linked(
            None,
            RegistryActor::new(),
            registry_args,
            myself.get_cell(),
        )
        .await?;
        let ctx = Arc::new(HostContext {
            options: args.options,
            bus: args.bus,
            status: args.status,
            registry: parking_lot::RwLock::new(registry),
            shutting_down: Default::default(),
            http_client: Default::default(),
            streams: Default::default(),
            roots: args.roots,
            restart_replay: args.restart_replay,
            faults: args.faults,
        });
        // The supervisor is the status board's one writer; every server has an
        // entry from the moment the host exists.
        for (id, spec) in &args.specs {
            ctx.status
                .update(*id, &Arc::from(spec.name.as_str()), |_| {});
        }
        let next_id = args.specs.iter().map(|(id, _)| id.0).max().unwrap_or(0) + 1;
        let slots = args
            .specs
            .into_iter()
            .map(|(id, spec)| (id, Slot::new(spec)))
            .collect();
        Ok(SupervisorState {
            ctx,
            slots,
            next_id,
            routes,
            nodes,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let ids: Vec<ServerId> = state.slots.keys().copied().collect();
        state.start_servers(&myself, &ids).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Spawned { id, actor, pid } => {
                if let Some(slot) = state.current(id, &actor) {
                    state.ctx.status.update(id, &slot.name, |s| s.pid = pid);
                }
            }
            SupervisorMsg::Initialized { id, actor, init } => {
                if let Some(slot) = state.current(id, &actor) {
                    state
                        .ctx
                        .status
                        .update(id, &slot.name, |s| s.initialize = Some(init));
                }
            }
            SupervisorMsg::Published {
                id,
                tools,
                initial,
                pid,
            } => state.on_published(id, tools, initial, pid),
            SupervisorMsg::ServerReady { id } => {
                if let Some(slot) = state.slots.get_mut(&id) {
                    slot.tracker.on_ready();
                    slot.attempt = 0;
                }
            }
            SupervisorMsg::LoginRequired { id, actor, reason } => {
                state.on_login_required(id, actor, reason);
            }
            SupervisorMsg::Restart { id, generation } => {
                let due = state
                    .slots
                    .get(&id)
                    .is_some_and(|s| s.generation == generation && s.actor.is_none());
                if due && !state.ctx.shutting_down.load(Ordering::Relaxed) {
                    state.start_server(&myself, id).await;
                }
            }
            SupervisorMsg::RestartServer { name, reply } => {
                let _ = reply.send(state.restart_by_name(&myself, &name).await);
            }
            SupervisorMsg::RootsChanged => {
                for slot in state.slots.values() {
                    if let Some(actor) = &slot.actor {
                        let _ = actor.cast(ServerMsg::RootsChanged);
                    }
                }
            }
            SupervisorMsg::Reload { specs, reply } => {
                let report = state.reload(&myself, specs).await;
                let _ = reply.send(report);
            }
            SupervisorMsg::RestartRegistry { reason } => {
                if !state.ctx.shutting_down.load(Ordering::Relaxed) {
                    state.restart_registry(&myself, reason).await?;
                }
            }
            SupervisorMsg::NodesChanged => state.ctx.to_registry(RegistryMsg::NodesChanged),
            SupervisorMsg::Shutdown { reply } => {
                state.shutdown().await;
                if let Some(reply) = reply {
                    let _ = reply.send(());
                }
                myself.stop(None);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        evt: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match evt {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                let reason = reason.unwrap_or_else(|| "stopped without a reason".into());
                state.on_exit(&myself, &cell, ConnectionError::Stopped(reason));
            }
            SupervisionEvent::ActorFailed(cell, err) => state.on_exit(
                &myself,
                &cell,
                ConnectionError::ActorFailed(err.to_string()),
            ),
            _ => {}
        }
        Ok(())
    }
}

impl SupervisorState {
    /// The slot `id` if `actor` is its current connection (messages from a
    /// connection that has since been replaced are dropped).
    fn current(&self, id: ServerId, actor: &ActorId) -> Option<&Slot> {
        self.slots
            .get(&id)
            .filter(|s| s.actor.as_ref().is_some_and(|a| a.get_id() == *actor))
    }

    /// The registry published a server's routes: its tool count, and for its
    /// first list, readiness — only for a server still starting, since the
    /// supervisor may already have moved on (restarting, failed, stopped).
    fn on_published(&mut self, id: ServerId, tools: usize, initial: bool, pid: Option<u32>) {
        let Some(slot) = self.slots.get(&id) else {
            return;
        };
        let mut became_ready = None;
        self.ctx.status.update(id, &slot.name, |s| {
            if initial && matches!(s.state, ServerState::Starting { .. }) {
                s.state = ServerState::Ready;
                s.pid = pid;
                let protocol = s
                    .initialize
                    .as_ref()
                    .map(|i| Arc::from(i.protocol_version.as_str()));
                became_ready = Some(protocol);
            }
            s.tools = tools;
        });
        if let Some(protocol) = became_ready {
            self.ctx.bus.emit(HostEvent::ServerReady {
                server: slot.name.clone(),
                pid,
                tools,
                protocol,
            });
        }
    }

    async fn start_server(&mut self, myself: &ActorRef<SupervisorMsg>, id: ServerId) {
        self.start_servers(myself, &[id]).await;
    }

    /// Starts the servers `ids` side by side: each spawns its process and begins
    /// its handshake on its own actor, so a hundred servers start in about the
    /// time the slowest takes, not in the sum of their times.
    async fn start_servers(&mut self, myself: &ActorRef<SupervisorMsg>, ids: &[ServerId]) {
        let mut starts = Vec::with_capacity(ids.len());
        for &id in ids {
            let Some(slot) = self.slots.get_mut(&id) else {
                continue;
            };
            let attempt = slot.attempt;
            slot.login_required = None;
            self.ctx.status.update(id, &slot.name, |s| {
                s.state = ServerState::Starting { attempt };
                s.pid = None;
                s.next_try = None;
                s.initialize = None;
            });
            self.ctx.bus.emit(HostEvent::ServerStarting {
                server: slot.name.clone(),
                attempt,
            });
            *slot.failure.lock() = None;
            let args = ServerArgs {
                id,
                spec: slot.spec.clone(),
                ctx: self.ctx.clone(),
                failure: slot.failure.clone(),
            };
            let supervisor = myself.get_cell();
            starts.push(async move {
                let started =
                    ServerActor::spawn_linked(None, ServerActor::new(), args, supervisor).await;
                (id, started)
            });
        }
        for (id, started) in join_all(starts).await {
            match started {
                Ok((actor, _)) => {
                    if let Some(slot) = self.slots.get_mut(&id) {
                        slot.actor = Some(actor);
                    }
                }
                Err(e) => {
                    // The actor recorded the typed cause before failing its start.
                    let recorded = self.slots.get(&id).and_then(|s| s.failure.lock().take());
                    // Without one, the start's own error, not ractor's wording of it
                    // ("Actor panicked during startup" means nothing to a user).
                    let reason = recorded.unwrap_or_else(|| {
                        ConnectionError::ActorFailed(match e {
                            ractor::SpawnErr::StartupFailed(inner) => inner.to_string(),
                            other => other.to_string(),
                        })
                    });
                    if let Some(slot) = self.slots.get(&id) {
                        tracing::warn!(server = %slot.name, "server did not start: {reason}");
                    }
                    self.on_down(myself, id, reason);
                }
            }
        }
    }

    fn on_exit(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        cell: &ActorCell,
        reason: ConnectionError,
    ) {
        if cell.get_id() == self.ctx.registry().get_id() {
            if !self.ctx.shutting_down.load(Ordering::Relaxed) {
                tracing::error!("route registry stopped unexpectedly: {reason}");
                let reason = reason.to_string();
                let _ = myself.cast(SupervisorMsg::RestartRegistry { reason });
            }
            return;
        }
        let found = self.slots.iter_mut().find_map(|(id, slot)| {
            let ours = slot
                .actor
                .as_ref()
                .is_some_and(|a| a.get_id() == cell.get_id());
            ours.then(|| {
                slot.actor = None;
                // The connection's own account of its end, if it gave one.
                (*id, slot.failure.lock().take())
            })
        });
        if let Some((id, recorded)) = found {
            self.on_down(myself, id, recorded.unwrap_or(reason));
        }
    }

    /// Starts a registry in place of one that died: it begins from the routes
    /// already published, and every running server reports to it again.
    async fn restart_registry(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        reason: String,
    ) -> Result<(), ActorProcessingErr> {
        let args = RegistryArgs {
            routes: self.routes.clone(),
            bus: self.ctx.bus.clone(),
            resume: true,
            status: self.ctx.status.clone(),
            nodes: self.nodes.clone(),
        };
        let (registry, _) =
            RegistryActor::spawn_linked(None, RegistryActor::new(), args, myself.get_cell())
                .await?;
        *self.ctx.registry.write() = registry;
        // Servers that went down while there was no registry leave no routes.
        let live: Vec<ServerId> = self
            .slots
            .iter()
            .filter(|(_, s)| s.actor.is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in self.slots.keys().filter(|id| !live.contains(id)) {
            self.ctx.to_registry(RegistryMsg::Remove(*id));
        }
        for slot in self.slots.values() {
            if let Some(actor) = &slot.actor {
                let _ = actor.cast(ServerMsg::ReportAgain);
            }
        }
        tracing::warn!("route registry restarted after: {reason}");
        self.ctx.bus.emit(HostEvent::RegistryRestarted { reason });
        Ok(())
    }

    /// How long a server actor gets to close its connection and process.
    fn stop_budget(&self) -> Duration {
        let stdio = &self.ctx.options.stdio;
        stdio.grace * 2 + stdio.exit_wait + Duration::from_secs(3)
    }

    async fn shutdown(&mut self) {
        self.ctx.shutting_down.store(true, Ordering::Relaxed);
        let budget = self.stop_budget();
        let stops = self
            .slots
            .values_mut()
            .filter_map(|slot| slot.actor.take())
            .map(|actor| stop_actor(actor, budget));
        join_all(stops).await;
        for (id, slot) in &self.slots {
            self.ctx.status.update(*id, &slot.name, |s| {
                s.state = ServerState::Stopped;
                s.pid = None;
            });
            self.ctx.bus.emit(HostEvent::ServerStopped {
                server: slot.name.clone(),
            });
        }
        let _ = self
            .ctx
            .registry()
            .stop_and_wait(None, Some(Duration::from_secs(1)))
            .await;
        // Every connection is gone: the GET streams' thread ends with the host.
        let streams = self.ctx.streams.lock().take();
        if let Some(streams) = streams {
            mcpvisor_transports::StreamRuntime::close(streams, Duration::from_secs(1)).await;
        }
    }
}

/// Stops a server actor (its connection and process with it), killing it
/// when it does not stop within `budget`.
pub(super) async fn stop_actor(actor: ActorRef<ServerMsg>, budget: Duration) {
    if actor
        .stop_and_wait(Some("shutdown".into()), Some(budget))
        .await
        .is_err()
    {
        let _ = actor.kill_and_wait(Some(Duration::from_secs(1))).await;
    }
}

mod downs;
mod reload;

#[cfg(test)]
mod tests;
