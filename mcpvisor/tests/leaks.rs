//! Leak accounting: once a `Host` has shut down, no child process, no thread
//! and no file descriptor it opened is left, read from /proc.
//!
//! How threads are accounted: each test runs its host on a dedicated Tokio
//! runtime (threads named `leaks-rt`) that it shuts down at the end. Tokio's
//! workers and its blocking pool (whose idle threads linger ~10 s by design,
//! and which the HTTP transport uses to join its GET-stream thread) belong to
//! that runtime, so:
//! - right after `Host::shutdown`, every thread that was not there before must
//!   be one of the runtime's own (no `mcpvisor-sse-*` GET-stream thread, nothing
//!   else);
//! - once the runtime is shut down, the set of threads and the set of open file
//!   descriptors equal the ones before the test, exactly.
//!
//! Process-wide things made once and kept for the life of the process (Tokio's
//! signal pipe for SIGCHLD, lazily built TLS roots, tracing call sites) are made
//! by one unmeasured warm-up run first. The tests take a lock, because threads
//! and descriptors are counted for the whole process; threads the test harness
//! starts for the other tests of this file are recognised by name and ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use mcpvisor::HttpSpec;
use mcpvisor::{CallError, CallOptions, Host, HostEvent, ServerSpec, ServerState};
use serde_json::json;
use testkit::http_server::{GetMode, HttpMcpServer, Script};
use testkit::{call, demo, fast_options, live_group_members, wait_for};

/// The tests of this file; the harness names each one's thread after it.
const TESTS: [&str; 3] = [
    "stdio_host_leaves_no_process_thread_or_fd",
    "http_host_joins_its_stream_thread_and_closes_its_fds",
    "a_host_dropped_without_shutdown_still_leaves_nothing",
];

const RUNTIME_THREAD: &str = "leaks-rt";

static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    let guard = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    static WARM_UP: Once = Once::new();
    WARM_UP.call_once(|| {
        on_runtime(|| async {
            stdio_scenario(true).await;
            http_scenario().await;
        });
    });
    guard
}

/// The threads (id → name) and open descriptors (number → target) of this process.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    threads: BTreeMap<u32, String>,
    fds: BTreeMap<u32, String>,
}

impl Snapshot {
    /// Every thread and descriptor here was in `before`, the same.
    fn within(&self, before: &Snapshot) -> bool {
        let kept = |now: &BTreeMap<u32, String>, then: &BTreeMap<u32, String>| {
            now.iter().all(|(k, v)| then.get(k) == Some(v))
        };
        kept(&self.threads, &before.threads) && kept(&self.fds, &before.fds)
    }
}

/// The snapshot leaves out the thread taking it.
fn snapshot() -> Snapshot {
    let me = fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse::<u32>().ok());
    let mut threads = BTreeMap::new();
    for entry in fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if Some(tid) == me {
            continue;
        }
        // A thread that ended while the directory was read is gone: skip it.
        let Ok(name) = fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let name = name.trim_end().to_string();
        // The harness's threads for this file's other tests come and go on their own.
        // A test thread starts with the main thread's name until it renames itself;
        // only the harness's main thread starts threads, so that name is theirs.
        let main_thread_name =
            || fs::read_to_string("/proc/self/comm").is_ok_and(|main| main.trim_end() == name);
        let harness = TESTS
            .iter()
            .any(|t| !name.is_empty() && t.starts_with(&name))
            || (tid != std::process::id() && main_thread_name());
        if harness {
            continue;
        }
        threads.insert(tid, name);
    }
    let mut fds = BTreeMap::new();
    let dir = fs::read_dir("/proc/self/fd").unwrap();
    for entry in dir.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(target) = fs::read_link(entry.path()) {
            fds.insert(fd, target.to_string_lossy().into_owned());
        }
    }
    // The descriptor that listed the directory is closed by now.
    fds.retain(|&fd, _| fs::read_link(format!("/proc/self/fd/{fd}")).is_ok());
    Snapshot { threads, fds }
}

/// Threads in `now` that are not in `before`.
fn new_threads(before: &Snapshot, now: &Snapshot) -> Vec<String> {
    now.threads
        .iter()
        .filter(|(tid, _)| !before.threads.contains_key(tid))
        .map(|(_, name)| name.clone())
        .collect()
}

/// Runs `body` on a fresh runtime and shuts the runtime down (joining its
/// workers and blocking threads) before returning. It all happens on a thread of
/// its own, so a thread started from `block_on` is not taken for the harness's.
fn on_runtime<F, Fut, T>(body: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let host_thread = std::thread::Builder::new()
        .name("leaks-host".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(RUNTIME_THREAD)
                .enable_all()
                .build()
                .unwrap();
            let out = runtime.block_on(body());
            runtime.shutdown_timeout(Duration::from_secs(10));
            out
        })
        .unwrap();
    match host_thread.join() {
        Ok(out) => out,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Polls until `cond` holds or 5 s pass.
fn settles(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// What a scenario saw while its host ran.
struct Seen {
    /// Every process group of a server, and the grandchildren.
    groups: BTreeSet<u32>,
    grandchildren: Vec<u32>,
    during: Snapshot,
    after_shutdown: Snapshot,
}

/// Three stdio servers (one with a grandchild), a crash and a timeout that
/// replace connections, calls; then shutdown (or a plain drop of the host).
async fn stdio_scenario(shut_down: bool) -> Seen {
    let specs = vec![demo("a", &["--grandchild"]), demo("b", &[]), demo("c", &[])];
    let host = Host::start(specs, fast_options()).await.unwrap();
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    let mut groups: BTreeSet<u32> = statuses.iter().filter_map(|s| s.pid).collect();
    let r = call(&host, "mcp__a__grandchild_pid", json!({}))
        .await
        .unwrap();
    let grandchildren = vec![r.text().trim().parse::<u32>().unwrap()];
    // A crash and a timeout: both connections are replaced by new processes.
    let crash = call(&host, "mcp__b__crash", json!({})).await;
    assert!(
        matches!(crash, Err(CallError::Transport { .. })),
        "{crash:?}"
    );
    let hang = host
        .call(
            "mcp__c__sleep",
            json!({"ms": 10_000}),
            CallOptions::default().timeout(Duration::from_millis(200)),
        )
        .await;
    assert!(matches!(hang, Err(CallError::Timeout { .. })), "{hang:?}");
    let replaced = testkit::eventually(Duration::from_secs(20), || {
        host.servers().iter().all(|s| {
            s.state == ServerState::Ready
                && s.pid
                    .is_some_and(|p| &*s.name == "a" || !groups.contains(&p))
        })
    })
    .await;
    assert!(replaced, "{:?}", host.servers());
    groups.extend(host.servers().iter().filter_map(|s| s.pid));
    assert_eq!(
        groups.len(),
        5,
        "three first processes and two replacements"
    );
    for server in ["a", "b", "c"] {
        let r = call(
            &host,
            &format!("mcp__{server}__echo"),
            json!({"text": "hi"}),
        )
        .await;
        assert_eq!(r.unwrap().text(), "hi");
    }
    let during = snapshot();
    if shut_down {
        host.shutdown().await;
    } else {
        drop(host);
        // Dropping sends the shutdown; nothing waits for it but the processes' exit.
        let all_gone = || groups.iter().all(|&g| live_group_members(g).is_empty());
        let deadline = Instant::now() + Duration::from_secs(10);
        while !all_gone() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Let the runtime finish what the teardown handed it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Seen {
        groups,
        grandchildren,
        during,
        after_shutdown: snapshot(),
    }
}

/// One HTTP server with an open GET stream; a timeout replaces the connection
/// (and its stream thread); then shutdown, and the fixture is stopped.
async fn http_scenario() -> Seen {
    let server = HttpMcpServer::start(Script {
        hang_tool: Some("hang".into()),
        get: GetMode::Stream {
            events: 1,
            then_close: false,
            interval_ms: 10,
        },
        ..Script::default()
    })
    .await;
    // Three connections (three sessions, three GET streams) share one stream thread.
    let specs = ["web", "web2", "web3"]
        .map(|name| ServerSpec::http(name, HttpSpec::new(server.url.clone())))
        .to_vec();
    let host = Host::start(specs, fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    // The first GET event arrives through the stream thread (maybe before ready).
    wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerLog { .. })
    })
    .await;
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    let hang = host
        .call(
            "mcp__web__hang",
            json!({}),
            CallOptions::default().timeout(Duration::from_millis(200)),
        )
        .await;
    assert!(matches!(hang, Err(CallError::Timeout { .. })), "{hang:?}");
    wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerRestarting { .. })
    })
    .await;
    wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerReady { .. })
    })
    .await;
    let r = call(&host, "mcp__web__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "hi");
    assert!(
        testkit::eventually(Duration::from_secs(10), || stream_threads(&snapshot()) == 1).await,
        "the new connection's GET stream runs on its thread"
    );
    let during = snapshot();
    host.shutdown().await;
    let after_shutdown = snapshot();
    server.stop();
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    Seen {
        groups: BTreeSet::new(),
        grandchildren: Vec::new(),
        during,
        after_shutdown,
    }
}

fn stream_threads(s: &Snapshot) -> usize {
    s.threads
        .values()
        .filter(|n| n.starts_with("mcpvisor-sse"))
        .count()
}

/// Only the runtime's own threads may be new right after the host is gone.
fn assert_only_runtime_threads(before: &Snapshot, after_shutdown: &Snapshot) {
    let extra: Vec<String> = new_threads(before, after_shutdown)
        .into_iter()
        .filter(|n| n != RUNTIME_THREAD)
        .collect();
    assert!(
        extra.is_empty(),
        "threads left by the host: {extra:?}; before {:?}, after {:?}",
        before.threads,
        after_shutdown.threads
    );
}

/// After the runtime is gone: no thread and no descriptor that was not there
/// before. One that was there and is gone is not this host's: the other tests
/// of this binary run beside it, and a runtime of theirs may end meanwhile.
fn assert_back_to(before: &Snapshot) {
    let settled = settles(|| snapshot().within(before));
    let now = snapshot();
    assert!(
        settled,
        "new threads {:?}; threads before {:?}, after {:?}; fds before {:?}, after {:?}",
        new_threads(before, &now),
        before.threads,
        now.threads,
        before.fds,
        now.fds
    );
    assert!(
        testkit::proc::children().is_empty(),
        "children left: {:?}",
        testkit::proc::children()
    );
}

#[test]
fn stdio_host_leaves_no_process_thread_or_fd() {
    let _alone = alone();
    let before = snapshot();
    let seen = on_runtime(|| stdio_scenario(true));
    // The readings can see what a host holds: three pipes per server, runtime threads.
    assert!(
        seen.during.fds.len() >= before.fds.len() + 9,
        "{:?}",
        seen.during.fds
    );
    assert!(new_threads(&before, &seen.during).len() >= 2);
    assert_only_runtime_threads(&before, &seen.after_shutdown);
    for &pgid in &seen.groups {
        assert!(live_group_members(pgid).is_empty(), "group {pgid}");
    }
    for &pid in &seen.grandchildren {
        assert!(!testkit::is_alive(pid), "grandchild {pid}");
    }
    assert_back_to(&before);
}

#[test]
fn http_host_joins_its_stream_thread_and_closes_its_fds() {
    let _alone = alone();
    let before = snapshot();
    let seen = on_runtime(http_scenario);
    assert_eq!(
        stream_threads(&seen.during),
        1,
        "one GET-stream thread for the host's three HTTP servers"
    );
    assert!(
        seen.during.fds.len() > before.fds.len(),
        "{:?}",
        seen.during.fds
    );
    assert_eq!(
        stream_threads(&seen.after_shutdown),
        0,
        "the GET thread is joined"
    );
    assert_only_runtime_threads(&before, &seen.after_shutdown);
    assert_back_to(&before);
}

#[test]
fn a_host_dropped_without_shutdown_still_leaves_nothing() {
    let _alone = alone();
    let before = snapshot();
    let seen = on_runtime(|| stdio_scenario(false));
    for &pgid in &seen.groups {
        assert!(live_group_members(pgid).is_empty(), "group {pgid}");
    }
    for &pid in &seen.grandchildren {
        assert!(!testkit::is_alive(pid), "grandchild {pid}");
    }
    assert_only_runtime_threads(&before, &seen.after_shutdown);
    assert_back_to(&before);
}
