//! The route table: qualified name → the connection (its call lane) that serves it.
//!
//! Only the registry writes it; hosts read a snapshot (an `Arc` swapped under a
//! short lock), so looking a route up never waits on a mailbox.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpvisor_protocol::ToolDefinition;
use mcpvisor_protocol::mcp::param_headers::ParamHeaders;
use parking_lot::RwLock;

use crate::lane::{CallLane, ToolOutput};
use crate::remote::RemoteCalls;
use crate::server_lists::ServerLink;
use crate::status::ServerId;

/// One advertised tool and where calls to it go.
#[derive(Debug, Clone)]
pub struct Route {
    /// The definition to hand to a model, shared: handing the tool set out
    /// copies pointers, not schemas.
    pub definition: Arc<ToolDefinition>,
    /// The serving server, as the node that supervises it numbers it.
    pub server_id: ServerId,
    /// Its name.
    pub server: Arc<str>,
    /// The node that supervises the server, when it is not this host.
    pub node: Option<Arc<str>>,
    pub(crate) via: Via,
}

/// How a call to a route travels.
#[derive(Debug, Clone)]
pub(crate) enum Via {
    /// Through this host's connection to the server.
    Lane(LaneRoute),
    /// To the node that supervises the server, which runs it on its own lane.
    Node(Arc<dyn RemoteCalls>),
}

/// A route served by a connection of this host.
#[derive(Debug, Clone)]
pub(crate) struct LaneRoute {
    pub(crate) lane: Arc<CallLane>,
    pub(crate) request_timeout: Duration,
    /// Checks results against the tool's `outputSchema`, where the revision asks for it.
    pub(crate) output: Option<Arc<ToolOutput>>,
    /// The arguments mirrored into HTTP headers (MCP 2026-07-28 over HTTP).
    pub(crate) mirrored: Option<Arc<ParamHeaders>>,
    /// Calls run as tasks (2025-11-25: the tool requires it and the server offers it).
    pub(crate) task: bool,
    /// The server answers `tasks/cancel`.
    pub(crate) task_cancels: bool,
}

/// One server's routes, sorted by qualified name; built once per report and
/// shared by every table until the server reports again.
pub(crate) type RouteRun = Arc<[(Arc<str>, Arc<Route>)]>;

/// Orders servers as their tools' qualified names order: by `name__`. No
/// server name holds `__`, so one server's `name__` is never a prefix of
/// another's, and every tool of the first sorts before every tool of the second.
pub(crate) fn server_order(a: &str, b: &str) -> Ordering {
    a.bytes().chain(*b"__").cmp(b.bytes().chain(*b"__"))
}

/// A tool a ready server listed that has no route, and why (a name that
/// cannot form one, an entry that does not parse, an unusable schema, a name
/// another route claims too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRoute {
    /// The tool's name as the server listed it (or the entry that did not parse).
    pub tool: String,
    /// Why it has no route.
    pub reason: String,
}

/// The routes one server was refused: the first [`Refusals::KEPT`] of them,
/// and how many there were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refusals {
    /// The first ones, in the order the server listed them.
    pub first: Vec<RefusedRoute>,
    /// How many there were in all.
    pub total: usize,
}

impl Refusals {
    /// How many are kept with their reasons: a server listing thousands of
    /// bad entries costs no more than this.
    pub const KEPT: usize = 32;

    /// Counts one more, keeping it while there is room.
    pub(crate) fn push(&mut self, tool: impl Into<String>, reason: impl Into<String>) {
        self.total += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(RefusedRoute {
                tool: tool.into(),
                reason: reason.into(),
            });
        }
    }

    /// The refusal of the tool named `tool`, if it is among those kept.
    pub fn of(&self, tool: &str) -> Option<&RefusedRoute> {
        self.first.iter().find(|r| r.tool == tool)
    }
}

/// An immutable set of routes, and the ready servers they lead to.
#[derive(Debug, Default)]
pub struct RouteTable {
    routes: HashMap<Arc<str>, Arc<Route>>,
    /// Every ready server by name, with or without tools (resources, prompts).
    servers: HashMap<Arc<str>, Arc<ServerLink>>,
    /// Each routed server's sorted run, the servers in [`server_order`]:
    /// read in turn, every route in name order, without a sort.
    runs: Vec<RouteRun>,
    /// Names in `runs` that are not routed (claimed twice).
    unrouted: HashSet<Arc<str>>,
    /// What each ready server listed that has no route (servers with none absent).
    pub(crate) refused: HashMap<Arc<str>, Arc<Refusals>>,
    /// The routes by qualified name, made once on first use: listing a table
    /// again (every client's `tools/list`) then costs nothing more.
    sorted: OnceLock<Vec<Arc<Route>>>,
}

impl RouteTable {
    pub(crate) fn new(
        routes: HashMap<Arc<str>, Arc<Route>>,
        servers: HashMap<Arc<str>, Arc<ServerLink>>,
        runs: Vec<RouteRun>,
        unrouted: HashSet<Arc<str>>,
        refused: HashMap<Arc<str>, Arc<Refusals>>,
    ) -> Self {
        RouteTable {
            routes,
            servers,
            runs,
            unrouted,
            refused,
            sorted: OnceLock::new(),
        }
    }

    /// The ready server named `name`.
    pub(crate) fn server(&self, name: &str) -> Option<&Arc<ServerLink>> {
        self.servers.get(name)
    }

    /// Every ready server, in no particular order.
    pub(crate) fn servers(&self) -> impl Iterator<Item = &Arc<ServerLink>> {
        self.servers.values()
    }

    /// What the ready server `server` listed that has no route.
    pub fn refused(&self, server: &str) -> Option<&Refusals> {
        self.refused.get(server).map(|r| &**r)
    }

    /// The route for a qualified name.
    pub fn get(&self, name: &str) -> Option<&Arc<Route>> {
        self.routes.get(name)
    }

    /// Every route, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Route>> {
        self.routes.values()
    }

    /// Every route, sorted by qualified name: the servers' sorted runs read
    /// in turn (linear in the routes; a sort of the whole table grew worse
    /// than linearly past 10,000 tools, each comparison a cache miss).
    pub fn sorted(&self) -> &[Arc<Route>] {
        self.sorted.get_or_init(|| {
            let mut sorted = Vec::with_capacity(self.routes.len());
            for run in &self.runs {
                for (key, route) in run.iter() {
                    if !self.unrouted.contains(key) {
                        sorted.push(route.clone());
                    }
                }
            }
            // Two runs of one server name (a connection going while its
            // successor reports) interleave: only then is a sort needed.
            let shared = self
                .runs
                .windows(2)
                .any(|w| match (w[0].first(), w[1].first()) {
                    (Some(a), Some(b)) => a.1.server == b.1.server,
                    _ => false,
                });
            if shared || sorted.len() != self.routes.len() {
                sorted = self.routes.values().cloned().collect();
                sorted.sort_unstable_by(|a, b| a.definition.name.cmp(&b.definition.name));
            }
            sorted
        })
    }

    /// How many routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True when nothing is routed.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

/// The current table, shared between the registry (writer) and hosts (readers).
#[derive(Default)]
pub(crate) struct RouteSnapshot(RwLock<Arc<RouteTable>>);

impl RouteSnapshot {
    pub(crate) fn load(&self) -> Arc<RouteTable> {
        self.0.read().clone()
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<Route>> {
        self.0.read().get(name).cloned()
    }

    pub(crate) fn store(&self, table: RouteTable) {
        *self.0.write() = Arc::new(table);
    }
}
