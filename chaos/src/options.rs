//! How a run is shaped: how long, which faults, what load, and the bounds
//! the invariants are checked against.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{Fault, FaultKind};

use crate::invariant::Violation;
use crate::load::Load;

/// Told of each step of a run as it happens (a line per cycle on a terminal).
pub type ProgressHook = Arc<dyn Fn(&Progress) + Send + Sync>;

/// One step of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Progress {
    /// The servers are ready and the baseline is taken; faults come next.
    Started {
        /// Servers ready at the start.
        ready: usize,
        /// Servers run.
        servers: usize,
    },
    /// A cycle ended.
    Cycle {
        /// Its index, from 0.
        index: usize,
        /// The fault dealt.
        fault: Fault,
        /// The server it was dealt to.
        server: String,
        /// From the fault to the server answering again; `None` if it did not.
        recovered_in: Option<Duration>,
        /// Calls made during the cycle.
        calls: u64,
    },
    /// A fault came up that no server left can take.
    Skipped {
        /// The fault.
        fault: Fault,
    },
    /// An invariant broke.
    Violation(Violation),
}

/// A chaos run's shape. Start from [`ChaosOptions::default`] and set what you
/// need (it will grow).
#[derive(Clone)]
#[non_exhaustive]
pub struct ChaosOptions {
    /// Seeds the plan (which fault, which server) and the load's picks.
    pub seed: u64,
    /// Run cycles until this much time has passed (a cycle under way finishes).
    pub duration: Option<Duration>,
    /// Run at most this many cycles. With neither bound a run is one deck:
    /// each fault once.
    pub cycles: Option<usize>,
    /// The faults to deal, each once per deck (default: every kind with its
    /// default parameters).
    pub faults: Vec<Fault>,
    /// The calls made meanwhile (default: `ping` to every server).
    pub load: Load,
    /// Timeout of each load call.
    pub call_timeout: Duration,
    /// Timeout of the pings that check a faulted server is back. A ping that
    /// times out ends the connection, as any request does.
    pub probe_timeout: Duration,
    /// How late past its timeout a call may end before it counts as hung
    /// (scheduling on a loaded machine).
    pub timeout_slack: Duration,
    /// How long a faulted server has to answer again (through restarts, and a
    /// restart on request when it was marked failed).
    pub recovery_timeout: Duration,
    /// Concurrent callers per server (shared by the servers' load weights).
    pub callers_per_server: usize,
    /// Pause between one caller's calls.
    pub call_pause: Duration,
    /// Load before the first fault, so lazily made buffers and threads are
    /// in the baseline.
    pub warm_up: Duration,
    /// How long the load goes on once the faulted server is back, before the
    /// cycle's checks.
    pub settle: Duration,
    /// Threads allowed over the baseline.
    pub thread_slack: usize,
    /// File descriptors allowed over the baseline.
    pub fd_slack: usize,
    /// RSS allowed over the baseline, KiB.
    pub rss_slack_kib: u64,
    /// Told of each step.
    pub on_progress: Option<ProgressHook>,
    /// The cluster the run's host joins, for [`ChaosOptions::nodes`].
    pub cluster: Option<mcpvisor::cluster::ClusterOptions>,
    /// Other nodes of that cluster: every [`ChaosOptions::node_kill_every`]th
    /// cycle kills one of them (the `node-kill` fault) instead of dealing a
    /// server a fault.
    pub nodes: Vec<crate::nodes::ChaosNode>,
    /// How often a cycle is a node kill, when there are nodes (0: never).
    pub node_kill_every: usize,
}

impl Default for ChaosOptions {
    fn default() -> Self {
        ChaosOptions {
            seed: 1,
            duration: None,
            cycles: None,
            faults: FaultKind::ALL.map(FaultKind::default_fault).to_vec(),
            load: Load::ping_all(),
            call_timeout: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(2),
            timeout_slack: Duration::from_secs(5),
            recovery_timeout: Duration::from_secs(30),
            callers_per_server: 2,
            call_pause: Duration::from_millis(5),
            warm_up: Duration::from_millis(500),
            settle: Duration::from_millis(200),
            thread_slack: 16,
            fd_slack: 32,
            rss_slack_kib: 256 * 1024,
            on_progress: None,
            cluster: None,
            nodes: Vec::new(),
            node_kill_every: 3,
        }
    }
}

impl fmt::Debug for ChaosOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: Vec<String> = self.faults.iter().map(ToString::to_string).collect();
        f.debug_struct("ChaosOptions")
            .field("seed", &self.seed)
            .field("duration", &self.duration)
            .field("cycles", &self.cycles)
            .field("faults", &faults)
            .field("load", &self.load)
            .field("call_timeout", &self.call_timeout)
            .field("probe_timeout", &self.probe_timeout)
            .field("recovery_timeout", &self.recovery_timeout)
            .field("callers_per_server", &self.callers_per_server)
            .field("nodes", &self.nodes)
            .field("node_kill_every", &self.node_kill_every)
            .finish_non_exhaustive()
    }
}

impl ChaosOptions {
    pub(crate) fn tell(&self, progress: Progress) {
        if let Some(hook) = &self.on_progress {
            hook(&progress);
        }
    }
}

/// Supervisor options that make a run spend its time on faults rather than on
/// waiting: a 3 s request timeout, a 5 s startup timeout, restarts after 20 to
/// 200 ms, `Failed` after 3 restarts in 5 s, 200 ms teardown grace. The
/// project's own chaos test and example run with these.
pub fn brisk_supervisor_options() -> mcpvisor::SupervisorOptions {
    let mut options = mcpvisor::SupervisorOptions::default();
    options.request_timeout = Duration::from_secs(3);
    options.startup_timeout = Duration::from_secs(5);
    options.restart = mcpvisor::RestartPolicy {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        max_restarts: 3,
        window: Duration::from_secs(5),
        ..mcpvisor::RestartPolicy::default()
    };
    options.stdio.grace = Duration::from_millis(200);
    options
}
