//! Leaks on a host that keeps running: after many restart cycles of every kind,
//! once the host settles, what it holds comes back to *exactly* the settled
//! baseline: open file descriptors, threads, Tokio tasks, live actors, call
//! lanes, calls in flight and child processes.
//!
//! A check made only after the runtime is destroyed would miss a leaked task,
//! actor or pipe (destroying the runtime drops them); a band of slack would
//! miss one fd per restart for a long time. This host never stops while it is
//! measured, and the comparison is equality.
//!
//! The cycles, dealt in a seeded order (each kind once per round): SIGKILL of a
//! stdio server, a call timeout (the connection is ended and replaced), a
//! server that exits cleanly (EOF on its stdout), an HTTP session the server
//! forgets (renewed), a GET stream the server ends (reconnected, resumed), and
//! an access token the resource refuses (refreshed). 200 cycles by default;
//! `MCPVISOR_LEAK_CYCLES=10000` for the soak run.
//!
//! Its own test binary, with this one test: threads and descriptors are
//! counted for the whole process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor::HttpSpec;
use mcpvisor::auth::OAuth;
use mcpvisor::{CallError, CallOptions, Host, HostEvent, ServerSpec, ServerState, Vitals};
use serde_json::json;
use testkit::auth_server::client::{TempHome, login, oauth_config, protected};
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::http_server::{GetMode, HttpMcpServer, Script};
use testkit::{demo, fast_options, proc, wait_for};

/// One restart cycle of a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cycle {
    Kill,
    Timeout,
    Eof,
    SessionRenewal,
    StreamReconnect,
    OAuthRefresh,
}

const KINDS: [Cycle; 6] = [
    Cycle::Kill,
    Cycle::Timeout,
    Cycle::Eof,
    Cycle::SessionRenewal,
    Cycle::StreamReconnect,
    Cycle::OAuthRefresh,
];

/// What the process holds at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Reading {
    fds: usize,
    threads: usize,
    tasks: usize,
    vitals: Vitals,
    children: usize,
}

fn read() -> Reading {
    Reading {
        fds: proc::fd_count(),
        threads: proc::thread_count(),
        tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        vitals: Vitals::now(),
        children: proc::children().len(),
    }
}

/// The descriptors open now, for a failure's message.
fn fd_targets() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Kept-alive HTTP connections in the test: the pools close an idle one
/// between one and two of these after its last request. A kept-alive
/// connection is not a leak, but how many a pool holds at an instant depends
/// on timing (how many requests overlapped, when the pool last looked): with
/// the default 90 s, the baseline and the final reading each caught the pools
/// mid-way, and a run on a slow machine ended one task off (one more
/// connection in the host's pool, one fewer in the GET streams' pool) with
/// nothing leaked. With a short idle time both readings are taken once every
/// idle connection is gone, and equality means what it says.
const IDLE: Duration = Duration::from_secs(1);

/// Waits until readings a second apart agree for longer than an idle
/// connection can live; that reading.
async fn settled() -> Reading {
    let quiet = (2 * IDLE).as_secs() as usize + 2;
    let mut last = read();
    let mut same = 1;
    for _ in 0..90 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = read();
        if now == last {
            same += 1;
            if same >= quiet {
                return now;
            }
        } else {
            same = 1;
        }
        last = now;
    }
    panic!("the host never settled; last reading {last:?}");
}

/// Waits (up to 60 s) for the reading to equal `baseline`; the last reading.
async fn back_to(baseline: &Reading) -> Reading {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = read();
        if now == *baseline || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The pid of `server`'s process, once it is ready.
fn ready_pid(host: &Host, server: &str) -> Option<u32> {
    host.servers()
        .into_iter()
        .find(|s| &*s.name == server && s.state == ServerState::Ready)
        .and_then(|s| s.pid)
}

/// Waits for `server` to be ready on a process other than `old`.
async fn replaced(host: &Host, server: &str, old: u32) {
    let back = testkit::eventually(Duration::from_secs(20), || {
        ready_pid(host, server).is_some_and(|pid| pid != old)
    })
    .await;
    assert!(back, "`{server}` was not replaced: {:?}", host.servers());
}

/// Calls `server`'s echo until it answers (a renewed connection may still be
/// on its way); fails the test after 20 s.
async fn answers(host: &Host, server: &str) {
    let name = format!("mcp__{server}__echo");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = format!("{server}-{}", rand_tag());
        let r = host
            .call(&name, json!({"text": text}), CallOptions::default())
            .await;
        match r {
            Ok(r) if r.text() == text => return,
            Ok(r) => panic!("`{server}` answered {r:?} to {text}"),
            Err(e) if Instant::now() > deadline => panic!("`{server}` never answered: {e:?}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

fn rand_tag() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The host under test and the servers it talks to.
struct Rig {
    host: Host,
    web: HttpMcpServer,
    auth: AuthServer,
    _home: TempHome,
}

impl Rig {
    async fn start() -> Rig {
        let web = HttpMcpServer::start(Script {
            hang_tool: Some("hang".into()),
            get: GetMode::Stream {
                events: 1,
                then_close: false,
                interval_ms: 10,
            },
            unrecorded: true,
            ..Script::default()
        })
        .await;
        let auth = AuthServer::start(ClientKind::Public).await;
        let home = TempHome::new("running-leaks");
        let oauth = Arc::new(OAuth::new(oauth_config("notes", &auth.mcp_url(), &home.0)).unwrap());
        login(&oauth).await;
        let specs = vec![
            demo("k", &[]),
            demo("t", &[]),
            demo("e", &[]),
            ServerSpec::http("web", HttpSpec::new(web.url.clone())),
            protected("notes", &auth.mcp_url(), &oauth),
        ];
        let mut options = fast_options();
        options.restart.max_restarts = usize::MAX;
        options.http.get_backoff_initial = Duration::from_millis(20);
        options.http.get_backoff_max = Duration::from_millis(200);
        options.http.idle_timeout = IDLE;
        let host = Host::start(specs, options).await.unwrap();
        let statuses = host.wait_ready(Duration::from_secs(30)).await;
        assert!(
            statuses.iter().all(|s| s.state == ServerState::Ready),
            "{statuses:?}"
        );
        Rig {
            host,
            web,
            auth,
            _home: home,
        }
    }

    /// Deals one cycle and waits until the server it hit answers again.
    async fn deal(&self, cycle: Cycle) {
        let host = &self.host;
        match cycle {
            Cycle::Kill => {
                let pid = ready_pid(host, "k").expect("k is ready");
                nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                )
                .unwrap();
                replaced(host, "k", pid).await;
                answers(host, "k").await;
            }
            Cycle::Timeout => {
                let pid = ready_pid(host, "t").expect("t is ready");
                let hang = host
                    .call(
                        "mcp__t__sleep",
                        json!({"ms": 60_000}),
                        CallOptions::default().timeout(Duration::from_millis(100)),
                    )
                    .await;
                assert!(matches!(hang, Err(CallError::Timeout { .. })), "{hang:?}");
                replaced(host, "t", pid).await;
                answers(host, "t").await;
            }
            Cycle::Eof => {
                let pid = ready_pid(host, "e").expect("e is ready");
                let exit = host
                    .call("mcp__e__crash", json!({"code": 0}), CallOptions::default())
                    .await;
                assert!(matches!(exit, Err(CallError::Transport { .. })), "{exit:?}");
                replaced(host, "e", pid).await;
                answers(host, "e").await;
            }
            Cycle::SessionRenewal => {
                let before = self.web.sessions();
                assert_eq!(before.len(), 1, "{before:?}");
                self.web.expire_sessions();
                answers(host, "web").await;
                let after = self.web.sessions();
                assert!(
                    after.len() == 1 && after != before,
                    "{before:?} → {after:?}"
                );
            }
            Cycle::StreamReconnect => {
                let mut events = Box::pin(host.events());
                self.web.end_get_streams();
                // The reopened stream's first event, resumed after the last one seen.
                wait_for(
                    &mut events,
                    Duration::from_secs(20),
                    |e| matches!(e, HostEvent::ServerLog { server, .. } if &**server == "web"),
                )
                .await;
                answers(host, "web").await;
            }
            Cycle::OAuthRefresh => {
                let refreshed = self.auth.counts().refresh_requests;
                self.auth.reject_access_tokens();
                answers(host, "notes").await;
                assert_eq!(self.auth.counts().refresh_requests, refreshed + 1);
            }
        }
    }
}

fn cycles() -> usize {
    std::env::var("MCPVISOR_LEAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn every_restart_kind_returns_to_the_settled_baseline() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Idle blocking threads go quickly, so a settled process has none.
        .thread_keep_alive(Duration::from_millis(100))
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let rig = Rig::start().await;
        // Warm up: every kind twice, so what is made once per process or per
        // connection pool (TLS roots, the SIGCHLD pipe, pooled sockets) is in
        // the baseline.
        for _ in 0..2 {
            for kind in KINDS {
                rig.deal(kind).await;
            }
        }
        let baseline = settled().await;
        let fds_before = fd_targets();
        // Supervisor, registry, and five servers each with its transport; one
        // lane per connection; nothing in flight; three stdio children.
        assert_eq!(
            (
                baseline.vitals.actors,
                baseline.vitals.lanes,
                baseline.vitals.calls_in_flight,
                baseline.children
            ),
            (12, 5, 0, 3),
            "{baseline:?}"
        );

        let total = cycles();
        let mut rng = testkit::Rng::new(0x6c65_616b);
        let mut deck = KINDS;
        let mut dealt = [0usize; KINDS.len()];
        let started = Instant::now();
        for n in 0..total {
            if n % KINDS.len() == 0 {
                rng.shuffle(&mut deck);
            }
            let kind = deck[n % KINDS.len()];
            rig.deal(kind).await;
            dealt[KINDS.iter().position(|k| *k == kind).unwrap()] += 1;
            if (n + 1) % 1000 == 0 {
                eprintln!("{} cycles, {:?}: {:?}", n + 1, started.elapsed(), read());
            }
        }
        let now = back_to(&baseline).await;
        eprintln!(
            "{total} cycles ({dealt:?} per kind) in {:?}; baseline {baseline:?}, now {now:?}",
            started.elapsed()
        );
        assert_eq!(
            now,
            baseline,
            "after {total} cycles the host holds more than it did; fds before {fds_before:?}, now {:?}",
            fd_targets()
        );
        rig.host.shutdown().await;
    });
}
