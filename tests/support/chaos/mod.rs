//! The chaos harness: servers under steady call load while a seeded plan
//! injects one fault per cycle, checking the isolation invariants after each.
//!
//! Shared by `examples/chaos.rs` (long runs) and `tests/chaos.rs` (a CI-sized
//! run); both include this directory with `#[path]` and have the Streamable
//! HTTP fixture at `crate::http_server`.
//!
//! Invariants checked after every cycle: no panic anywhere in the process;
//! every call on a healthy server answered with its own text; every call on
//! the faulted server answered correctly or ended with a typed error, never
//! later than its timeout (plus a scheduling slack); the faulted server came
//! back (directly, or through `Host::restart` after reaching `Failed`); no
//! process is left in the group of a connection that is gone; threads, file
//! descriptors and RSS stay within a band above the warmed-up baseline.

mod cycle;
mod load;
mod plan;
mod report;
mod restarts;
mod rng;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcpvisor::transports::{HttpSpec, StdioSpec};
use mcpvisor::{Host, RestartPolicy, ServerSpec, ServerState, SupervisorOptions};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

pub use plan::FaultKind;
pub use report::{Report, Sample};

use crate::http_server::{GetMode, HttpMcpServer, Script};
use crate::proc;
use load::Load;
use plan::FaultPlan;

/// How a chaos run is shaped.
#[derive(Clone, Debug)]
pub struct ChaosConfig {
    /// A binary that serves the demo server when run as `<exe> demo-server …`.
    pub server_exe: PathBuf,
    /// Stdio servers (default 8).
    pub stdio_servers: usize,
    /// Streamable HTTP servers, in-process fixtures (default 1; 0 for none).
    pub http_servers: usize,
    pub cycles: usize,
    pub seed: u64,
    /// Timeout of the load's calls (and the servers' request timeout).
    pub call_timeout: Duration,
    /// Timeout of the calls that hit a hung server on purpose.
    pub fault_timeout: Duration,
    /// Startup timeout (initialize + first tools/list).
    pub startup_timeout: Duration,
    /// How late past its timeout a call may end before it counts as hung
    /// (scheduling on a loaded machine).
    pub timeout_slack: Duration,
    /// Concurrent callers per server.
    pub callers_per_server: usize,
    /// Pause between one caller's calls.
    pub call_pause: Duration,
    /// Longest wait for a faulted server to come back.
    pub recovery_timeout: Duration,
    /// Allowed growth over the baseline.
    pub thread_slack: usize,
    pub fd_slack: usize,
    pub rss_slack_kib: u64,
    /// Print a line per cycle.
    pub verbose: bool,
}

impl ChaosConfig {
    pub fn new(server_exe: PathBuf) -> ChaosConfig {
        ChaosConfig {
            server_exe,
            stdio_servers: 8,
            http_servers: 1,
            cycles: 20,
            seed: 1,
            call_timeout: Duration::from_secs(10),
            fault_timeout: Duration::from_millis(750),
            startup_timeout: Duration::from_secs(3),
            timeout_slack: Duration::from_secs(5),
            callers_per_server: 2,
            call_pause: Duration::from_millis(5),
            recovery_timeout: Duration::from_secs(30),
            thread_slack: 16,
            fd_slack: 32,
            rss_slack_kib: 256 * 1024,
            verbose: false,
        }
    }
}

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic in the process, on any thread, then reports it as usual.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// One HTTP fixture and the port it keeps across restarts.
struct HttpSlot {
    server: HttpMcpServer,
    port: u16,
}

fn http_script() -> Script {
    Script {
        hang_tool: Some("hang".into()),
        // Memory is measured: the fixture must not keep every request.
        unrecorded: true,
        // An open GET stream, so its thread is part of what must not leak.
        get: GetMode::Stream {
            events: 0,
            then_close: false,
            interval_ms: 1000,
        },
        ..Script::default()
    }
}

/// A running harness.
struct Harness {
    cfg: ChaosConfig,
    host: Arc<Host>,
    /// Route components: `s0`… for stdio, then `h0`… for HTTP.
    names: Vec<String>,
    fault_files: Vec<PathBuf>,
    http: Vec<HttpSlot>,
    dir: PathBuf,
    plan: FaultPlan,
    report: Report,
    /// Process groups seen and not yet found empty.
    groups: BTreeSet<u32>,
    /// Restarts and failures as announced, to check `Failed` against the policy.
    restarts: restarts::RestartLog,
}

/// Runs `cfg.cycles` cycles and returns what was found. Call it on a
/// multi-threaded Tokio runtime.
pub async fn run(cfg: ChaosConfig) -> Report {
    count_panics();
    let panics_before = PANICS.load(Ordering::SeqCst);
    let started = Instant::now();
    let mut harness = Harness::start(cfg).await;
    for index in 0..harness.cfg.cycles {
        harness.cycle(index).await;
        harness.report.cycles += 1;
        harness.report.panics = PANICS.load(Ordering::SeqCst) - panics_before;
        if harness.report.panics > 0 {
            harness
                .report
                .violation(index, format!("{} panic(s)", harness.report.panics));
            break;
        }
    }
    harness.finish(started).await
}

impl Harness {
    async fn start(cfg: ChaosConfig) -> Harness {
        let dir = std::env::temp_dir().join(format!(
            "mcpvisor-chaos-{}-{}",
            std::process::id(),
            cfg.seed
        ));
        std::fs::create_dir_all(&dir).expect("create the fault-file directory");
        let exe = cfg.server_exe.to_string_lossy().into_owned();
        let mut names = Vec::new();
        let mut specs = Vec::new();
        let mut fault_files = Vec::new();
        for i in 0..cfg.stdio_servers {
            let name = format!("s{i}");
            let file = dir.join(&name);
            let _ = std::fs::remove_file(&file);
            let args = vec![
                "demo-server".to_string(),
                "--fault-tools".into(),
                "--fault-file".into(),
                file.to_string_lossy().into_owned(),
            ];
            specs.push(ServerSpec::stdio(&name, StdioSpec::new(&exe, args)));
            names.push(name);
            fault_files.push(file);
        }
        let mut http = Vec::new();
        for i in 0..cfg.http_servers {
            let server = HttpMcpServer::start(http_script()).await;
            let name = format!("h{i}");
            let spec = HttpSpec::new(server.url.clone());
            specs.push(ServerSpec::http(&name, spec));
            names.push(name);
            let port = server.addr.port();
            http.push(HttpSlot { server, port });
        }
        let host = Host::start(specs, supervisor_options(&cfg))
            .await
            .expect("start the host");
        // The first subscriber gets every event since start; later ones start fresh.
        drop(host.events());
        let restarts = restarts::RestartLog::start(&host);
        let statuses = host.wait_ready(cfg.recovery_timeout).await;
        let host = Arc::new(host);
        let plan = FaultPlan::new(cfg.seed, cfg.http_servers > 0);
        // Warm up under load, so lazily made buffers and threads are in the baseline.
        let warm = Load::start(
            &host,
            &names,
            cfg.callers_per_server,
            cfg.call_timeout,
            cfg.call_pause,
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let warm_records = warm.stop().await;
        let baseline = Sample::now();
        let mut report = Report::new(cfg.seed, cfg.stdio_servers, cfg.http_servers, baseline);
        for s in &statuses {
            if s.state != ServerState::Ready {
                report.violation(
                    0,
                    format!("server {} not ready at start: {:?}", s.name, s.state),
                );
            }
        }
        if let Some(r) = warm_records.iter().find_map(|t| t.failed.first()) {
            report.violation(0, format!("warm-up call failed: {r:?}"));
        }
        let mut harness = Harness {
            cfg,
            host,
            names,
            fault_files,
            http,
            dir,
            plan,
            report,
            groups: BTreeSet::new(),
            restarts,
        };
        harness.track_groups();
        harness
    }

    /// Adds the process groups of the servers running now.
    fn track_groups(&mut self) {
        for s in self.host.servers() {
            if let Some(pid) = s.pid {
                if self.groups.insert(pid) {
                    self.report.process_groups += 1;
                }
            }
        }
    }

    /// Every tracked group not in use any more must be empty (within a moment:
    /// teardown may still be reaping). Leftovers are counted and killed.
    async fn check_groups(&mut self, cycle: usize, in_use: &BTreeSet<u32>) {
        let gone: Vec<u32> = self.groups.difference(in_use).copied().collect();
        for pgid in gone {
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut left = proc::live_group_members(pgid);
            while !left.is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                left = proc::live_group_members(pgid);
            }
            if !left.is_empty() {
                self.report.leaked_processes += left.len() as u64;
                self.report.violation(
                    cycle,
                    format!("group {pgid} outlived its connection: {left:?}"),
                );
                let group = Pid::from_raw(pgid as i32);
                let _ = killpg(group, Signal::SIGCONT);
                let _ = killpg(group, Signal::SIGKILL);
            }
            self.groups.remove(&pgid);
        }
    }

    fn pids_in_use(&self) -> BTreeSet<u32> {
        self.host.servers().iter().filter_map(|s| s.pid).collect()
    }

    /// The resource band, checked against the baseline.
    fn check_resources(&mut self, cycle: usize) {
        let now = Sample::now();
        self.report.add_sample(now);
        let base = self.report.baseline;
        if now.threads > base.threads + self.cfg.thread_slack {
            let what = format!("{} threads (baseline {})", now.threads, base.threads);
            self.report.violation(cycle, what);
        }
        if now.fds > base.fds + self.cfg.fd_slack {
            let what = format!("{} open fds (baseline {})", now.fds, base.fds);
            self.report.violation(cycle, what);
        }
        if now.rss_kib > base.rss_kib + self.cfg.rss_slack_kib {
            let what = format!("RSS {} KiB (baseline {})", now.rss_kib, base.rss_kib);
            self.report.violation(cycle, what);
        }
    }

    async fn finish(mut self, started: Instant) -> Report {
        self.track_groups();
        let cycles = self.report.cycles;
        let policy = supervisor_options(&self.cfg).restart;
        for name in &self.names {
            for what in self.restarts.early_failures(name, &policy) {
                self.report.violation(cycles, what);
            }
        }
        self.host.shutdown().await;
        self.check_groups(cycles, &BTreeSet::new()).await;
        for slot in &self.http {
            slot.server.stop();
        }
        drop(self.http);
        let _ = std::fs::remove_dir_all(&self.dir);
        // Give torn-down connections a moment to close before the last reading.
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.report.after_shutdown = Sample::now();
        self.report.elapsed = started.elapsed();
        self.report
    }
}

fn supervisor_options(cfg: &ChaosConfig) -> SupervisorOptions {
    let mut options = SupervisorOptions::default();
    options.request_timeout = cfg.call_timeout;
    options.startup_timeout = cfg.startup_timeout;
    options.restart = RestartPolicy {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        max_restarts: 3,
        window: Duration::from_secs(5),
        ..RestartPolicy::default()
    };
    options.stdio.grace = Duration::from_millis(200);
    options
}
