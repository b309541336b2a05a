//! A run from start to finish: the host started, the servers warmed up under
//! load, cycles until the budget is spent, then the host shut down and the
//! last checks (nothing left running, no early failure) made.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use mcpvisor::{Host, ServerSpec, ServerState, ServerStatus, SupervisorOptions};

use crate::callers::{self, Pace, Running};
use crate::error::ChaosError;
use crate::events::EventLog;
use crate::groups::Groups;
use crate::invariant::{Invariant, Violation};
use crate::load::{LoadCall, LoadError, Target};
use crate::nodes::Nodes;
use crate::options::{ChaosOptions, Progress};
use crate::panics;
use crate::plan::{FaultPlan, Wire, applies};
use crate::proc::Sample;
use crate::report::{Report, ServerLine};

/// A run under way.
pub(crate) struct Engine {
    pub(crate) chaos: ChaosOptions,
    pub(crate) supervisor: SupervisorOptions,
    pub(crate) host: Host,
    pub(crate) names: Vec<String>,
    pub(crate) wires: Vec<Wire>,
    /// Servers that did not come back: no more faults, no more load.
    pub(crate) given_up: Vec<bool>,
    pub(crate) calls: BTreeMap<String, Vec<LoadCall>>,
    pub(crate) callers: BTreeMap<String, usize>,
    pub(crate) plan: FaultPlan,
    pub(crate) report: Report,
    pub(crate) events: EventLog,
    pub(crate) groups: Groups,
    /// The cluster's other nodes, for node-kill cycles.
    pub(crate) nodes: Nodes,
    panics_before: u64,
}

/// Runs `servers` under `options` and deals them faults as `chaos` says;
/// returns what was found. Call it on a multi-threaded Tokio runtime: the
/// run measures its own process, so run one at a time.
pub async fn run(
    servers: Vec<ServerSpec>,
    options: SupervisorOptions,
    chaos: ChaosOptions,
) -> Result<Report, ChaosError> {
    let started = Instant::now();
    let mut engine = Engine::start(servers, options, chaos).await?;
    let mut index = 0;
    let mut skipped_in_a_row = 0;
    while engine.budget_left(index, started) {
        let cycled = if engine.node_turn(index) {
            engine.node_cycle(index).await
        } else {
            engine.cycle(index).await
        };
        if cycled {
            index += 1;
            skipped_in_a_row = 0;
        } else {
            // A whole deck with nowhere to go: every server that could take
            // a fault was given up.
            skipped_in_a_row += 1;
            if skipped_in_a_row >= engine.chaos.faults.len() {
                break;
            }
        }
        engine.report.cycles = index;
        if engine.report.panics > 0 {
            break;
        }
    }
    Ok(engine.finish(started).await)
}

impl Engine {
    async fn start(
        servers: Vec<ServerSpec>,
        supervisor: SupervisorOptions,
        mut chaos: ChaosOptions,
    ) -> Result<Engine, ChaosError> {
        if servers.is_empty() {
            return Err(ChaosError::NoServers);
        }
        if chaos.faults.is_empty() {
            return Err(ChaosError::NoFaults);
        }
        let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        let wires: Vec<Wire> = servers.iter().map(Wire::of).collect();
        let dealable = |f: &mcpvisor::Fault| wires.iter().any(|w| applies(f.kind(), *w));
        if !chaos.faults.iter().any(dealable) {
            let faults: Vec<String> = chaos.faults.iter().map(ToString::to_string).collect();
            return Err(ChaosError::NothingApplies {
                faults: faults.join(", "),
            });
        }
        // A fault no server can take is reported once and left out of the plan.
        let (faults, nowhere): (Vec<_>, Vec<_>) = chaos.faults.iter().partition(|f| dealable(f));
        chaos.faults = faults;
        let calls = chaos.load.per_server(&names)?;
        let callers = callers::callers_for(&calls, chaos.callers_per_server);
        let panics_before = panics::count();
        let host = Host::start(servers, supervisor.clone()).await?;
        // The first subscriber gets every event since the start: the first pids too.
        let events = EventLog::start(&host);
        let statuses = host
            .wait_ready(supervisor.startup_timeout + Duration::from_secs(5))
            .await;
        if let Err(e) = check_tools(&host, &calls, &statuses) {
            host.shutdown().await;
            return Err(e.into());
        }
        let nodes = match Nodes::start(
            &host,
            chaos.cluster.clone(),
            &chaos.nodes,
            chaos.recovery_timeout,
        )
        .await
        {
            Ok(nodes) => nodes,
            Err(e) => {
                host.shutdown().await;
                return Err(ChaosError::Cluster(e));
            }
        };
        let lines = names
            .iter()
            .zip(&wires)
            .map(|(name, wire)| ServerLine {
                name: name.clone(),
                wire: *wire,
                faults: BTreeMap::new(),
                given_up: false,
            })
            .collect();
        let plan = FaultPlan::new(chaos.seed, chaos.faults.clone());
        let mut report = Report::new(chaos.seed, lines, Sample::default());
        for fault in nowhere {
            report.skipped(fault.kind().as_str());
            chaos.tell(Progress::Skipped { fault });
        }
        let mut engine = Engine {
            given_up: vec![false; names.len()],
            report,
            chaos,
            supervisor,
            host,
            names,
            wires,
            calls,
            callers,
            plan,
            events,
            groups: Groups::default(),
            nodes,
            panics_before,
        };
        engine.warm_up(&statuses).await;
        Ok(engine)
    }

    /// Load before any fault, so lazily made buffers and threads are in the
    /// baseline, and so a load that fails on its own is told apart from a fault.
    async fn warm_up(&mut self, statuses: &[ServerStatus]) {
        for s in statuses {
            if s.state != ServerState::Ready {
                let i = self.index_of(&s.name);
                self.violate(
                    Invariant::ServersStart,
                    None,
                    Some(i),
                    format!("not ready at the start: {}", state_text(&s.state)),
                );
                self.give_up(i);
            }
        }
        let load = Running::start(
            &self.host,
            &self.open_calls(),
            &self.callers,
            self.pace(),
            self.chaos.seed,
        );
        tokio::time::sleep(self.chaos.warm_up).await;
        for (server, tally) in load.stop().await {
            if tally.failed() > 0 {
                let errors: Vec<String> = tally
                    .errors
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                let i = self.index_of(&server);
                self.violate(
                    Invariant::ServersStart,
                    None,
                    Some(i),
                    format!("the load failed before any fault: {}", errors.join(", ")),
                );
            }
        }
        let baseline = Sample::now();
        self.report.set_baseline(baseline);
        self.track_groups(&self.host.servers());
        let ready = self.given_up.iter().filter(|g| !**g).count();
        self.chaos.tell(Progress::Started {
            ready,
            servers: self.names.len(),
        });
    }

    /// Whether cycle `index` kills a node rather than dealing a server a fault.
    fn node_turn(&self, index: usize) -> bool {
        let every = self.chaos.node_kill_every;
        !self.nodes.running.is_empty() && every > 0 && (index + 1) % every == 0
    }

    fn budget_left(&self, index: usize, started: Instant) -> bool {
        let (cycles, duration) = (self.chaos.cycles, self.chaos.duration);
        let cycles_left = match (cycles, duration) {
            (Some(n), _) => index < n,
            // With no bound, one deck.
            (None, None) => index < self.chaos.faults.len(),
            (None, Some(_)) => true,
        };
        cycles_left && duration.is_none_or(|d| started.elapsed() < d)
    }

    pub(crate) fn pace(&self) -> Pace {
        Pace {
            timeout: self.chaos.call_timeout,
            slack: self.chaos.timeout_slack,
            pause: self.chaos.call_pause,
        }
    }

    /// The load's calls on the servers not given up.
    pub(crate) fn open_calls(&self) -> BTreeMap<String, Vec<LoadCall>> {
        self.calls
            .iter()
            .filter(|(server, _)| !self.given_up[self.index_of(server)])
            .map(|(s, c)| (s.clone(), c.clone()))
            .collect()
    }

    pub(crate) fn index_of(&self, name: &str) -> usize {
        self.names.iter().position(|n| n == name).unwrap_or(0)
    }

    pub(crate) fn give_up(&mut self, server: usize) {
        self.given_up[server] = true;
        if let Some(line) = self.report.servers.get_mut(server) {
            line.given_up = true;
        }
    }

    pub(crate) fn violate(
        &mut self,
        invariant: Invariant,
        cycle: Option<usize>,
        server: Option<usize>,
        detail: String,
    ) {
        let v = Violation {
            invariant,
            cycle,
            server: server.and_then(|i| self.names.get(i).cloned()),
            detail,
        };
        self.chaos.tell(Progress::Violation(v.clone()));
        self.report.violation(v);
    }

    /// Tracks the process groups of the connections running now and of those
    /// announced since the last look.
    pub(crate) fn track_groups(&mut self, statuses: &[ServerStatus]) {
        let now = statuses.iter().filter_map(|s| s.pid);
        let announced = self.events.take_pids();
        self.groups.track(now.chain(announced));
        self.report.process_groups = self.groups.seen;
    }

    /// Every group whose connection is gone must be empty.
    pub(crate) async fn check_groups(&mut self, cycle: Option<usize>, in_use: &BTreeSet<u32>) {
        for leak in self.groups.check(in_use).await {
            self.report.leaked_processes += leak.members.len() as u64;
            let detail = format!(
                "process group {} outlived its connection: {:?} (killed)",
                leak.group, leak.members
            );
            self.violate(Invariant::NoLeakedProcess, cycle, None, detail);
        }
    }

    /// Threads, fds and RSS within the band over the baseline.
    pub(crate) fn check_resources(&mut self, cycle: usize) {
        let now = Sample::now();
        self.report.add_sample(now);
        let base = self.report.resources.baseline;
        let mut over = Vec::new();
        if now.threads > base.threads + self.chaos.thread_slack {
            over.push(format!(
                "{} threads (baseline {})",
                now.threads, base.threads
            ));
        }
        if now.fds > base.fds + self.chaos.fd_slack {
            over.push(format!("{} open fds (baseline {})", now.fds, base.fds));
        }
        if now.rss_kib > base.rss_kib + self.chaos.rss_slack_kib {
            over.push(format!(
                "RSS {} KiB (baseline {})",
                now.rss_kib, base.rss_kib
            ));
        }
        for what in over {
            self.violate(Invariant::ResourcesInBand, Some(cycle), None, what);
        }
    }

    /// Panics since the run started; each new one is a violation.
    pub(crate) fn check_panics(&mut self, cycle: Option<usize>) {
        let now = panics::count().saturating_sub(self.panics_before);
        if now > self.report.panics {
            let detail = format!("{} panic(s) so far", now);
            self.report.panics = now;
            self.violate(Invariant::NoPanic, cycle, None, detail);
        }
    }

    async fn finish(mut self, started: Instant) -> Report {
        self.track_groups(&self.host.servers());
        let policy = self.supervisor.restart.clone();
        for i in 0..self.names.len() {
            for what in self.events.early_failures(&self.names[i], &policy) {
                self.violate(Invariant::FailedPerPolicy, None, Some(i), what);
            }
        }
        let (restarts, renewed) = self.events.counts();
        self.report.restarts = restarts;
        self.report.sessions_renewed = renewed;
        self.nodes.stop();
        self.host.shutdown().await;
        self.check_groups(None, &BTreeSet::new()).await;
        self.check_panics(None);
        // Give torn-down connections a moment to close before the last reading.
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.report.resources.after_shutdown = Sample::now();
        let planned: Vec<&'static str> = self
            .chaos
            .faults
            .iter()
            .map(|f| f.kind().as_str())
            .collect();
        let clustered = !self.nodes.running.is_empty();
        self.report.seal(started.elapsed(), &planned, clustered);
        self.report
    }
}

/// Every tool the load calls must be offered by its server, once that server is ready.
fn check_tools(
    host: &Host,
    calls: &BTreeMap<String, Vec<LoadCall>>,
    statuses: &[ServerStatus],
) -> Result<(), LoadError> {
    let tools: BTreeSet<String> = host
        .tools()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for call in calls.values().flatten() {
        let Target::Tool { name, .. } = &call.target else {
            continue;
        };
        let ready = statuses
            .iter()
            .any(|s| &*s.name == name.server() && s.state == ServerState::Ready);
        if ready && !tools.contains(name.as_str()) {
            return Err(LoadError::UnknownTool {
                tool: name.to_string(),
            });
        }
    }
    Ok(())
}

/// A server state in words.
pub(crate) fn state_text(state: &ServerState) -> String {
    match state {
        ServerState::Ready => "ready".into(),
        ServerState::Starting { attempt } => format!("starting (attempt {attempt})"),
        ServerState::Restarting {
            attempt, reason, ..
        } => {
            format!("restarting (attempt {attempt}): {reason}")
        }
        ServerState::Failed { reason } => format!("failed: {reason}"),
        ServerState::LoginRequired { reason } => format!("login required: {reason}"),
        ServerState::Stopped => "stopped".into(),
        other => format!("{other:?}"),
    }
}
