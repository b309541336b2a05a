//! The registry actor: builds routes from what servers report.
//!
//! Routes are built only through `QualifiedMcpToolName`. A tool whose name cannot
//! form a route is reported and left out; a name that two routes would share
//! (the same server name twice, or one server listing a tool twice) is
//! advertised for neither and reported as a conflict. A server that is down has
//! no routes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::messages::Tool;
use mcpvisor_protocol::tool_schema::SchemaNote;
use mcpvisor_protocol::{QualifiedMcpToolName, ToolDefinition};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::events::{EventBus, HostEvent};
use crate::lane::CallLane;
use crate::routes::{Route, RouteSnapshot, RouteTable};
use crate::status::{ServerId, ServerState, StatusBoard};

/// What a server tells the registry after a full tools/list.
pub(crate) struct ToolsReport {
    pub(crate) id: ServerId,
    pub(crate) name: Arc<str>,
    pub(crate) lane: Arc<CallLane>,
    pub(crate) request_timeout: Duration,
    pub(crate) tools: Vec<Tool>,
    /// Entries of the list that were not tools at all.
    pub(crate) rejected: Vec<String>,
    /// The first list of this connection: the server becomes ready with it.
    pub(crate) initial: bool,
    pub(crate) pid: Option<u32>,
}

pub(crate) enum RegistryMsg {
    Report(Box<ToolsReport>),
    /// The server's connection is gone; drop its routes.
    Remove(ServerId),
}

pub(crate) struct RegistryActor;

pub(crate) struct RegistryArgs {
    pub(crate) routes: Arc<RouteSnapshot>,
    pub(crate) bus: EventBus,
    pub(crate) status: Arc<StatusBoard>,
}

/// A server's claim on a qualified name.
type Claim<'a> = (ServerId, &'a ServerRoutes, &'a Arc<Route>);

/// One server's routes, built once per report; every rebuild shares them.
struct ServerRoutes {
    name: Arc<str>,
    /// Each route under its qualified name.
    routes: Vec<(Arc<str>, Arc<Route>)>,
}

pub(crate) struct RegistryState {
    args: RegistryArgs,
    servers: BTreeMap<ServerId, ServerRoutes>,
    conflicts: BTreeSet<QualifiedMcpToolName>,
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
        Ok(RegistryState {
            args,
            servers: BTreeMap::new(),
            conflicts: BTreeSet::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: RegistryMsg,
        state: &mut RegistryState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RegistryMsg::Report(report) => state.report(*report),
            RegistryMsg::Remove(id) => {
                if let Some(gone) = state.servers.remove(&id) {
                    state.rebuild();
                    state.args.bus.emit(HostEvent::ToolsChanged {
                        server: gone.name,
                        tools: Vec::new(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl RegistryState {
    fn report(&mut self, report: ToolsReport) {
        let bus = self.args.bus.clone();
        let mut definitions = Vec::with_capacity(report.tools.len());
        for entry in &report.rejected {
            bus.emit(HostEvent::RouteRejected {
                server: report.name.clone(),
                tool: entry.clone(),
                reason: "not a valid tool entry".into(),
            });
        }
        for tool in &report.tools {
            match ToolDefinition::from_tool(&report.name, tool) {
                Ok((def, note)) => {
                    if let Some(SchemaNote::Replaced(why)) = note {
                        tracing::debug!(server = %report.name, tool = %tool.name, "input schema replaced: {why}");
                    }
                    definitions.push(def);
                }
                Err(e) => {
                    tracing::warn!(server = %report.name, tool = %tool.name, "tool not advertised: {e}");
                    bus.emit(HostEvent::RouteRejected {
                        server: report.name.clone(),
                        tool: tool.name.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        let listed = definitions.len();
        let routes = definitions
            .into_iter()
            .map(|definition| {
                let key = Arc::from(definition.name.as_str());
                let route = Arc::new(Route {
                    definition,
                    server_id: report.id,
                    server: report.name.clone(),
                    lane: report.lane.clone(),
                    request_timeout: report.request_timeout,
                });
                (key, route)
            })
            .collect();
        self.servers.insert(
            report.id,
            ServerRoutes {
                name: report.name.clone(),
                routes,
            },
        );
        let advertised = self.rebuild();
        let mine: Vec<QualifiedMcpToolName> =
            advertised.get(&report.id).cloned().unwrap_or_default();
        if report.initial {
            self.args.status.update(report.id, &report.name, |s| {
                s.state = ServerState::Ready;
                s.pid = report.pid;
                s.tools = listed;
            });
            bus.emit(HostEvent::ServerReady {
                server: report.name.clone(),
                pid: report.pid,
                tools: listed,
            });
        } else {
            self.args
                .status
                .update(report.id, &report.name, |s| s.tools = listed);
        }
        bus.emit(HostEvent::ToolsChanged {
            server: report.name,
            tools: mine,
        });
    }

    /// Recomputes every route, stores the snapshot, reports new conflicts, and
    /// returns the names advertised per server.
    fn rebuild(&mut self) -> HashMap<ServerId, Vec<QualifiedMcpToolName>> {
        let mut claims: HashMap<&Arc<str>, Vec<Claim<'_>>> = HashMap::new();
        for (id, server) in &self.servers {
            for (key, route) in &server.routes {
                claims.entry(key).or_default().push((*id, server, route));
            }
        }
        let mut routes = HashMap::with_capacity(claims.len());
        let mut advertised: HashMap<ServerId, Vec<QualifiedMcpToolName>> = HashMap::new();
        let mut conflicts = BTreeSet::new();
        for (name, claimants) in claims {
            if let [(id, _, route)] = claimants[..] {
                advertised
                    .entry(id)
                    .or_default()
                    .push(route.definition.name.clone());
                routes.insert(name.clone(), route.clone());
                continue;
            }
            let qualified = claimants[0].2.definition.name.clone();
            if !self.conflicts.contains(&qualified) {
                let servers: Vec<Arc<str>> =
                    claimants.iter().map(|(_, s, _)| s.name.clone()).collect();
                tracing::warn!(name = %qualified, ?servers, "route conflict: not advertised");
                self.args.bus.emit(HostEvent::RouteConflict {
                    name: qualified.clone(),
                    servers,
                });
            }
            conflicts.insert(qualified);
        }
        self.conflicts = conflicts;
        for names in advertised.values_mut() {
            names.sort();
        }
        self.args.routes.store(RouteTable::new(routes));
        advertised
    }
}
