//! The registry actor: builds routes from what servers report.
//!
//! Routes are built only through `QualifiedMcpToolName`. A tool whose name cannot
//! form a route is reported and left out; a name that two routes would share
//! (the same server name twice, or one server listing a tool twice) is
//! advertised for neither and reported as a conflict. A server that is down has
//! no routes.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor_protocol::mcp::output_schema::OutputCheck;
use mcpvisor_protocol::mcp::param_headers::ParamHeaders;
use mcpvisor_protocol::mcp::tasks::requires_task;
use mcpvisor_protocol::mcp::tool_schema::SchemaNote;
use mcpvisor_protocol::{QualifiedMcpToolName, ToolDefinition};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::events::{EventBus, HostEvent};
use crate::lane::ToolOutput;
use crate::messages::SupervisorMsg;
use crate::nodes::NodeBoard;
use crate::registry_msg::{RegistryMsg, ToolsReport};
use crate::routes::{
    LaneRoute, Refusals, Route, RouteRun, RouteSnapshot, RouteTable, Via, server_order,
};
use crate::server_lists::ServerLink;
use crate::status::{ServerId, StatusBoard};

mod nodes;
use nodes::RemoteRoutes;

pub(crate) struct RegistryActor {
    /// Counted in [`Vitals::actors`](crate::Vitals) until the actor's task drops it.
    _live: crate::vitals::Live,
}

impl RegistryActor {
    pub(crate) fn new() -> Self {
        RegistryActor {
            _live: crate::vitals::Live::actor(),
        }
    }
}

pub(crate) struct RegistryArgs {
    pub(crate) routes: Arc<RouteSnapshot>,
    pub(crate) bus: EventBus,
    /// A registry started after another died begins from the routes it published,
    /// so nothing a host can call disappears while the servers report again.
    pub(crate) resume: bool,
    /// Every server this host supervises: its names are this node's claims.
    pub(crate) status: Arc<StatusBoard>,
    /// The other nodes of the cluster this host joined, if any.
    pub(crate) nodes: Arc<NodeBoard>,
}

/// One server's routes, built once per report; every rebuild shares them.
struct ServerRoutes {
    name: Arc<str>,
    /// The connection (absent for routes resumed from an older table's tools alone).
    link: Option<Arc<ServerLink>>,
    /// Which report these routes came from (a later report replaces them).
    report: u64,
    /// Each route under its qualified name, sorted by it.
    routes: RouteRun,
    /// What the report listed that could not be routed.
    refused: Arc<Refusals>,
}

pub(crate) struct RegistryState {
    args: RegistryArgs,
    servers: BTreeMap<ServerId, ServerRoutes>,
    /// Routes to other nodes' servers, rebuilt when a node's advertisement changes.
    remote: Vec<RemoteRoutes>,
    /// Other nodes changed since the last publication.
    nodes_changed: bool,
    /// Other nodes' servers whose routes changed since the last publication.
    remote_changed: Vec<Arc<str>>,
    conflicts: BTreeSet<QualifiedMcpToolName>,
    /// Reports taken but not yet published, oldest first.
    unpublished: Vec<Unpublished>,
    /// Servers whose routes were dropped since the last publication.
    removed: Vec<Arc<str>>,
    reports: u64,
    /// A publication is queued or timed.
    publishing: bool,
    /// The earliest a publication may run at once; later ones wait until then.
    next_publication: Instant,
}

/// While servers keep reporting (a fleet starting or stopping), a publication
/// waits until this many times the last one's cost has passed since it ended.
/// Each walks every route, so publishing on every report made a fleet's start
/// quadratic (1,000 servers: a third of the host's CPU went to rebuilds); paced,
/// rebuilds take at most about 1/20 of the time. A change after a quiet spell
/// is published at once; one right after another publication waits at most
/// [`MAX_PUBLICATION_WAIT`].
const PUBLICATION_PACE: u32 = 20;

/// The longest a publication is held back by the pace: a table so large that
/// one rebuild takes long (100,000 tools) must not make the next change wait
/// twenty times that.
const MAX_PUBLICATION_WAIT: Duration = Duration::from_millis(10);

/// What is announced once a report's routes are published.
struct Unpublished {
    id: ServerId,
    name: Arc<str>,
    report: u64,
    listed: usize,
    initial: bool,
    pid: Option<u32>,
}

impl Actor for RegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = RegistryArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: RegistryArgs,
    ) -> Result<RegistryState, ActorProcessingErr> {
        let servers = if args.resume {
            published_servers(&args.routes.load())
        } else {
            BTreeMap::new()
        };
        Ok(RegistryState::new(args, servers))
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: RegistryMsg,
        state: &mut RegistryState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RegistryMsg::Report(report) => {
                state.report(*report);
                state.publish_soon(&myself);
            }
            RegistryMsg::Publish => {
                state.publishing = false;
                state.publish(&myself);
            }
            RegistryMsg::Remove(id) => {
                // What this connection reported is not announced any more.
                state.unpublished.retain(|u| u.id != id);
                if let Some(gone) = state.servers.remove(&id) {
                    state.removed.push(gone.name);
                    state.publish_soon(&myself);
                }
            }
            RegistryMsg::NodesChanged => {
                let before = nodes::names_by_server(&state.remote);
                state.remote = nodes::remote_routes(&state.args.nodes, &state.args.bus);
                let after = nodes::names_by_server(&state.remote);
                // Announced at publication, as a local server's new tools are.
                for (server, names) in &after {
                    if before.get(server) != Some(names) {
                        state.remote_changed.push(server.clone());
                    }
                }
                for server in before.keys().filter(|s| !after.contains_key(*s)) {
                    state.remote_changed.push(server.clone());
                }
                state.nodes_changed = true;
                state.publish_soon(&myself);
            }
        }
        Ok(())
    }
}

/// Each server's routes as last published (names in conflict are not in it; the
/// servers' new reports bring them back).
fn published_servers(table: &RouteTable) -> BTreeMap<ServerId, ServerRoutes> {
    type Resumed = (
        Arc<str>,
        Option<Arc<ServerLink>>,
        Vec<(Arc<str>, Arc<Route>)>,
    );
    let mut servers: BTreeMap<ServerId, Resumed> = BTreeMap::new();
    for link in table.servers() {
        servers.insert(link.id, (link.name.clone(), Some(link.clone()), Vec::new()));
    }
    // Other nodes' routes are rebuilt from what they advertise, not resumed;
    // the sorted table keeps each server's routes in order.
    for route in table.sorted().iter().filter(|r| r.node.is_none()) {
        servers
            .entry(route.server_id)
            .or_insert_with(|| (route.server.clone(), None, Vec::new()))
            .2
            .push((Arc::from(route.definition.name.as_str()), route.clone()));
    }
    servers
        .into_iter()
        .map(|(id, (name, link, routes))| {
            let refused = table.refused.get(&name).cloned().unwrap_or_default();
            let server = ServerRoutes {
                name,
                link,
                report: 0,
                routes: routes.into(),
                refused,
            };
            (id, server)
        })
        .collect()
}

impl RegistryState {
    fn new(args: RegistryArgs, servers: BTreeMap<ServerId, ServerRoutes>) -> Self {
        RegistryState {
            remote: nodes::remote_routes(&args.nodes, &args.bus),
            nodes_changed: false,
            remote_changed: Vec::new(),
            args,
            servers,
            conflicts: BTreeSet::new(),
            unpublished: Vec::new(),
            removed: Vec::new(),
            reports: 0,
            publishing: false,
            next_publication: Instant::now(),
        }
    }

    /// Queues a publication: behind the messages already queued (reports that
    /// arrive together are published with one rebuild), and no sooner than
    /// the pace allows.
    fn publish_soon(&mut self, myself: &ActorRef<RegistryMsg>) {
        if self.publishing {
            return;
        }
        self.publishing = true;
        let wait = self
            .next_publication
            .saturating_duration_since(Instant::now());
        if wait.is_zero() {
            let _ = myself.cast(RegistryMsg::Publish);
        } else {
            myself.send_after(wait, || RegistryMsg::Publish);
        }
    }

    fn report(&mut self, mut report: ToolsReport) {
        let bus = self.args.bus.clone();
        let mut definitions = Vec::with_capacity(report.tools.len());
        let mut refused = Refusals::default();
        let server = report.name.clone();
        // A tool that gets no route: kept with its reason, and told.
        let mut reject = |tool: String, reason: String| {
            refused.push(tool.clone(), reason.clone());
            bus.emit(HostEvent::RouteRejected {
                server: server.clone(),
                tool,
                reason,
            });
        };
        for entry in &report.rejected {
            reject(entry.clone(), "not a valid tool entry".into());
        }
        let check_output = report
            .link
            .revision
            .is_some_and(|r| r.rules().output_schema);
        let tasks =
            report.link.offers.task_calls && report.link.revision.is_some_and(|r| r.rules().tasks);
        // Taken, so each tool's schemas move into its definition instead of
        // being copied: the host never holds a listing twice.
        for tool in std::mem::take(&mut report.tools) {
            let name = tool.name.clone();
            let task = tasks && requires_task(tool.execution.as_ref());
            // Read from the schema as the server sent it, before any repair.
            let mirrored = if report.link.mirrors_params {
                match ParamHeaders::declared(&tool.input_schema) {
                    Ok(mirrored) => mirrored.map(Arc::new),
                    Err(why) => {
                        tracing::warn!(server = %report.name, tool = %name, "tool not advertised: {why}");
                        reject(
                            name,
                            format!("its inputSchema's x-mcp-header is invalid: {why}"),
                        );
                        continue;
                    }
                }
            } else {
                None
            };
            match ToolDefinition::from_owned_tool(&report.name, tool) {
                Ok((def, note)) => {
                    if let Some(SchemaNote::Replaced(why)) = note {
                        tracing::debug!(server = %report.name, tool = %name, "input schema replaced: {why}");
                    }
                    let output = match (&def.output_schema, check_output) {
                        (Some(schema), true) => match OutputCheck::compile(schema) {
                            Ok(check) => Some(Arc::new(ToolOutput {
                                tool: def.name.clone(),
                                check,
                            })),
                            Err(why) => {
                                // Its results could not be checked: not advertised.
                                tracing::warn!(server = %report.name, tool = %name, "tool not advertised: outputSchema: {why}");
                                reject(
                                    name,
                                    format!("its outputSchema is not a usable JSON Schema: {why}"),
                                );
                                continue;
                            }
                        },
                        _ => None,
                    };
                    definitions.push((def, output, mirrored, task));
                }
                Err(e) => {
                    tracing::warn!(server = %report.name, tool = %name, "tool not advertised: {e}");
                    reject(name, e.to_string());
                }
            }
        }
        let listed = definitions.len();
        let mut routes: Vec<(Arc<str>, Arc<Route>)> = definitions
            .into_iter()
            .map(|(definition, output, mirrored, task)| {
                let key = Arc::from(definition.name.as_str());
                let route = Arc::new(Route {
                    definition: Arc::new(definition),
                    server_id: report.id,
                    server: report.name.clone(),
                    node: None,
                    via: Via::Lane(LaneRoute {
                        lane: report.link.lane.clone(),
                        request_timeout: report.link.request_timeout,
                        output,
                        mirrored,
                        task,
                        task_cancels: report.link.offers.task_cancels,
                    }),
                });
                (key, route)
            })
            .collect();
        routes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let routes: RouteRun = routes.into();
        self.reports += 1;
        self.servers.insert(
            report.id,
            ServerRoutes {
                name: report.name.clone(),
                link: Some(report.link.clone()),
                report: self.reports,
                routes,
                refused: Arc::new(refused),
            },
        );
        // A re-list that replaces the first report before it was published
        // carries the first report's readiness.
        let initial = report.initial
            || self
                .unpublished
                .iter()
                .any(|u| u.id == report.id && u.initial);
        self.unpublished.push(Unpublished {
            id: report.id,
            name: report.name,
            report: self.reports,
            listed,
            initial,
            pid: report.pid,
        });
    }

    /// Stores the routes of every report taken so far, then announces each
    /// report whose routes are still current (ready, tools changed).
    fn publish(&mut self, myself: &ActorRef<RegistryMsg>) {
        if self.unpublished.is_empty() && self.removed.is_empty() && !self.nodes_changed {
            return;
        }
        self.nodes_changed = false;
        let started = Instant::now();
        self.rebuild();
        let ended = Instant::now();
        self.next_publication =
            ended + ((ended - started) * PUBLICATION_PACE).min(MAX_PUBLICATION_WAIT);
        let bus = self.args.bus.clone();
        for server in std::mem::take(&mut self.removed) {
            bus.emit(HostEvent::ToolsChanged {
                server,
                tools: Vec::new(),
            });
        }
        for server in std::mem::take(&mut self.remote_changed) {
            let mut tools: Vec<QualifiedMcpToolName> = self
                .remote
                .iter()
                .filter(|r| r.server == server)
                .flat_map(|r| r.routes.iter().map(|(_, route)| &route.definition.name))
                .filter(|name| !self.conflicts.contains(*name))
                .cloned()
                .collect();
            tools.sort();
            bus.emit(HostEvent::ToolsChanged { server, tools });
        }
        for done in std::mem::take(&mut self.unpublished) {
            // Gone, or replaced by a newer report that is announced itself.
            if self.servers.get(&done.id).map(|s| s.report) != Some(done.report) {
                continue;
            }
            let mine = self.advertised(done.id);
            // The supervisor owns the status board: it marks the server ready
            // (if it is still starting) and announces it.
            if let Some(supervisor) = myself.try_get_supervisor() {
                let _ = supervisor.send_message(SupervisorMsg::Published {
                    id: done.id,
                    tools: done.listed,
                    initial: done.initial,
                    pid: done.pid,
                });
            }
            bus.emit(HostEvent::ToolsChanged {
                server: done.name,
                tools: mine,
            });
        }
    }

    /// Every server's link by name; a name two connections share (one going,
    /// one coming) is left out until one of them is gone.
    fn links(&self) -> HashMap<Arc<str>, Arc<ServerLink>> {
        let mut links: HashMap<Arc<str>, Option<Arc<ServerLink>>> = HashMap::new();
        for server in self.servers.values() {
            if let Some(link) = &server.link {
                links
                    .entry(server.name.clone())
                    .and_modify(|shared| *shared = None)
                    .or_insert_with(|| Some(link.clone()));
            }
        }
        links
            .into_iter()
            .filter_map(|(name, link)| link.map(|l| (name, l)))
            .collect()
    }

    /// What each local server listed that has no route: its report's
    /// refusals, and its names in `conflicts`. Shared, not copied, for a
    /// server without conflicts.
    fn refusals(
        &self,
        conflicts: &BTreeSet<QualifiedMcpToolName>,
        claimed_by_nodes: &BTreeSet<QualifiedMcpToolName>,
    ) -> HashMap<Arc<str>, Arc<Refusals>> {
        let mut all: HashMap<Arc<str>, Arc<Refusals>> = HashMap::new();
        for server in self.servers.values() {
            if server.refused.total > 0 {
                all.insert(server.name.clone(), server.refused.clone());
            }
        }
        for name in conflicts {
            let Some(server) = self.servers.values().find(|s| *s.name == *name.server()) else {
                continue;
            };
            let reason = if claimed_by_nodes.contains(name) {
                "another node of the cluster supervises a server of the same name"
            } else {
                "another route has the same qualified name"
            };
            Arc::make_mut(all.entry(server.name.clone()).or_default()).push(name.tool(), reason);
        }
        all
    }

    /// Recomputes every route, stores the snapshot and reports new conflicts.
    /// One pass over the routes, one allocation per conflict rather than per
    /// name: a fleet's start publishes often, and each publication walks them all.
    fn rebuild(&mut self) {
        let contested = nodes::contested(&self.args.nodes, &self.args.status);
        let local = self.servers.values().map(|s| (&s.name, &s.routes));
        let remote = self.remote.iter().map(|r| (&r.server, &r.routes));
        let total = local
            .clone()
            .chain(remote.clone())
            .map(|(_, routes)| routes.len())
            .sum();
        let mut routes: HashMap<Arc<str>, Arc<Route>> = HashMap::with_capacity(total);
        // Each name claimed more than once, with every claimant's server in order.
        let mut clashes: HashMap<Arc<str>, Vec<Arc<str>>> = HashMap::new();
        // Routes of servers whose name more than one node claims, with those nodes.
        let mut withheld: Vec<(&Arc<Route>, &Vec<Arc<str>>)> = Vec::new();
        // The routed servers' sorted runs, for the table's listing in order.
        let mut runs: Vec<&RouteRun> = Vec::new();
        for (server, server_routes) in local.chain(remote) {
            if let Some(nodes) = contested.get(server) {
                withheld.extend(server_routes.iter().map(|(_, route)| (route, nodes)));
                continue;
            }
            if !server_routes.is_empty() {
                runs.push(server_routes);
            }
            for (key, route) in server_routes.iter() {
                match routes.entry(key.clone()) {
                    Entry::Occupied(first) => clashes
                        .entry(key.clone())
                        .or_insert_with(|| vec![first.get().server.clone()])
                        .push(server.clone()),
                    Entry::Vacant(slot) => {
                        slot.insert(route.clone());
                    }
                }
            }
        }
        let mut conflicts = BTreeSet::new();
        let mut unrouted = HashSet::with_capacity(clashes.len());
        for (key, servers) in clashes {
            let Some(first) = routes.remove(&key) else {
                continue;
            };
            unrouted.insert(key);
            let qualified = first.definition.name.clone();
            if !self.conflicts.contains(&qualified) {
                tracing::warn!(name = %qualified, ?servers, "route conflict: not advertised");
                self.args.bus.emit(HostEvent::RouteConflict {
                    name: qualified.clone(),
                    servers,
                    nodes: Vec::new(),
                });
            }
            conflicts.insert(qualified);
        }
        let mut claimed_by_nodes = BTreeSet::new();
        for (route, nodes) in withheld {
            let qualified = &route.definition.name;
            claimed_by_nodes.insert(qualified.clone());
            if !self.conflicts.contains(qualified) && !conflicts.contains(qualified) {
                tracing::warn!(name = %qualified, ?nodes, "route conflict: server claimed by more than one node; not advertised");
                self.args.bus.emit(HostEvent::RouteConflict {
                    name: qualified.clone(),
                    servers: vec![route.server.clone(); nodes.len()],
                    nodes: nodes.clone(),
                });
            }
            conflicts.insert(qualified.clone());
        }
        let refused = self.refusals(&conflicts, &claimed_by_nodes);
        self.conflicts = conflicts;
        runs.sort_by(|a, b| server_order(&a[0].1.server, &b[0].1.server));
        let runs = runs.into_iter().cloned().collect();
        self.args.routes.store(RouteTable::new(
            routes,
            self.links(),
            runs,
            unrouted,
            refused,
        ));
    }

    /// The names advertised for server `id` in the table last built, sorted.
    fn advertised(&self, id: ServerId) -> Vec<QualifiedMcpToolName> {
        let Some(server) = self.servers.get(&id) else {
            return Vec::new();
        };
        let mut names: Vec<QualifiedMcpToolName> = server
            .routes
            .iter()
            .map(|(_, route)| &route.definition.name)
            .filter(|name| !self.conflicts.contains(*name))
            .cloned()
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests;
