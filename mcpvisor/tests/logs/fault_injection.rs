//! `Host::inject` against real third-party servers: server-everything and the
//! Python SDK's server, each over stdio and Streamable HTTP. Every fault that
//! applies to the wire is dealt in turn while a healthy neighbour (the demo
//! server) answers a steady stream of calls; the neighbour must not notice.
//! Each fault is checked by what it must cause: a restart, a typed error of
//! the kind the fault makes, a late answer, ignored malformed lines.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcpvisor::TransportError;
use mcpvisor::{
    CallError, CallOptions, Fault, FaultError, Host, HostEvent, ServerState, ServerStatus,
};
use serde_json::json;
use testkit::peers::{Peer, Wire};
use testkit::{demo, eventually, fast_options, logs};
use tokio::task::JoinHandle;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_server_everything_over_stdio() {
    scenario(Peer::Everything, Wire::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_server_everything_over_http() {
    scenario(Peer::Everything, Wire::HttpSse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_the_python_sdk_over_stdio() {
    scenario(Peer::PythonSdk, Wire::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_the_python_sdk_over_http() {
    scenario(Peer::PythonSdk, Wire::HttpJson).await;
}

/// A healthy server called in a loop while its neighbour is faulted.
struct Neighbour {
    stop: Arc<AtomicBool>,
    task: JoinHandle<(usize, Vec<String>)>,
}

impl Neighbour {
    fn start(host: &Host) -> Neighbour {
        let stop = Arc::new(AtomicBool::new(false));
        let (host, flag) = (host.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let (mut ok, mut failures) = (0, Vec::new());
            while !flag.load(Ordering::Relaxed) {
                let r = host
                    .call(
                        "mcp__calm__echo",
                        json!({"text": "steady"}),
                        CallOptions::default(),
                    )
                    .await;
                match r {
                    Ok(r) if r.text().contains("steady") => ok += 1,
                    other => failures.push(format!("{other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (ok, failures)
        });
        Neighbour { stop, task }
    }

    async fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}

struct Scene {
    host: Host,
    name: &'static str,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = HostEvent> + Send>>,
}

impl Scene {
    fn status(&self) -> ServerStatus {
        self.host
            .servers()
            .into_iter()
            .find(|s| &*s.name == self.name)
            .unwrap()
    }

    fn tool(&self, tool: &str) -> String {
        format!("mcp__{}__{tool}", self.name)
    }

    async fn echo(&self, timeout: Duration) -> Result<String, CallError> {
        let mut options = CallOptions::default();
        options.timeout = Some(timeout);
        self.host
            .call(&self.tool("echo"), json!({"message": "hi"}), options)
            .await
            .map(|r| r.text())
    }

    /// Deals `fault`, checks that it returned and announced itself.
    async fn inject(&mut self, fault: Fault) {
        self.host
            .inject(self.name, fault)
            .await
            .unwrap_or_else(|e| panic!("{fault}: {e}"));
        let name = self.name;
        testkit::wait_for(&mut self.events, Duration::from_secs(5), |e| {
            matches!(e, HostEvent::FaultInjected { server, fault: f } if &**server == name && *f == fault)
        })
        .await;
    }

    /// Waits until the server is ready again after at least `restarts` restarts in all.
    async fn ready_after(&self, restarts: u64) {
        let ok = eventually(Duration::from_secs(30), || {
            let s = self.status();
            s.state == ServerState::Ready && s.restarts >= restarts
        })
        .await;
        assert!(
            ok,
            "not ready after {restarts} restarts: {:?}",
            self.status()
        );
    }
}

async fn scenario(peer: Peer, wire: Wire) {
    logs::capture();
    let running = peer.run(wire);
    let mut options = fast_options();
    options.request_timeout = Duration::from_secs(10);
    let host = Host::start(vec![running.spec.clone(), demo("calm", &[])], options)
        .await
        .unwrap();
    let events = Box::pin(host.events());
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}\n{}",
        running.output()
    );
    let mut scene = Scene {
        host: host.clone(),
        name: peer.name(),
        events,
    };
    let calm_pid = host
        .servers()
        .iter()
        .find(|s| &*s.name == "calm")
        .unwrap()
        .pid;
    let neighbour = Neighbour::start(&host);
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );

    refusals(&scene, wire).await;
    garbage(&mut scene).await;
    delay(&mut scene).await;
    drop_answers(&mut scene).await;
    cleared(&mut scene).await;
    oversize(&mut scene, wire).await;
    if wire == Wire::Stdio {
        kill(&mut scene).await;
        stop(&mut scene).await;
        close_stdin(&mut scene).await;
        exit_during_initialize(&mut scene).await;
    } else {
        cut_stream(&mut scene).await;
        reset(&mut scene, peer).await;
    }

    let (ok, failures) = neighbour.finish().await;
    assert!(failures.is_empty(), "the neighbour noticed: {failures:?}");
    assert!(ok > 20, "the neighbour was called throughout: {ok}");
    let calm = host
        .servers()
        .into_iter()
        .find(|s| &*s.name == "calm")
        .unwrap();
    assert_eq!(calm.restarts, 0, "{calm:?}");
    assert_eq!(calm.pid, calm_pid, "the neighbour kept its process");
    host.shutdown().await;
}

/// Unknown servers and faults of the other transport are refused, typed.
async fn refusals(scene: &Scene, wire: Wire) {
    let e = scene.host.inject("nobody", Fault::Kill).await.unwrap_err();
    assert_eq!(e, FaultError::UnknownServer("nobody".into()));
    let foreign = if wire == Wire::Stdio {
        Fault::CutStream
    } else {
        Fault::Kill
    };
    match scene.host.inject(scene.name, foreign).await {
        Err(FaultError::NotApplicable { fault, .. }) => assert_eq!(fault, foreign.kind()),
        other => panic!("{foreign} on {wire:?}: {other:?}"),
    }
}

/// Malformed lines are ignored and counted; the connection goes on.
async fn garbage(scene: &mut Scene) {
    let before = scene.status();
    scene.inject(Fault::Garbage { lines: 4 }).await;
    // Delivered by the time `inject` returns; handled by the server's actor soon after.
    let marker = format!("server={}", scene.name);
    let ignored = || {
        logs::captured()
            .lines()
            .filter(|l| l.contains(&marker) && l.contains("ignored malformed"))
            .count()
    };
    assert!(
        eventually(Duration::from_secs(5), || ignored() >= 4).await,
        "four malformed lines were seen: {}",
        ignored()
    );
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert_eq!(scene.status().restarts, before.restarts);
    assert_eq!(scene.status().pid, before.pid);
}

/// Answers within the fault's time come late, and still come.
async fn delay(scene: &mut Scene) {
    scene
        .inject(Fault::DelayAnswers {
            by: Duration::from_millis(600),
            during: Duration::from_secs(2),
        })
        .await;
    let started = Instant::now();
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert!(started.elapsed() >= Duration::from_millis(600));
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// A swallowed answer times its call out; the connection is restarted. What is
/// left of the count goes with that connection: the next one's handshake is not
/// swallowed (one restart, not three).
async fn drop_answers(scene: &mut Scene) {
    let before = scene.status().restarts;
    scene.inject(Fault::DropAnswers { count: 3 }).await;
    match scene.echo(Duration::from_millis(1500)).await {
        Err(CallError::Timeout { .. }) => {}
        other => panic!("a dropped answer times out: {other:?}"),
    }
    scene.ready_after(before + 1).await;
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert_eq!(scene.status().restarts, before + 1, "{:?}", scene.status());
}

/// `clear_faults` ends what was set before it could act.
async fn cleared(scene: &mut Scene) {
    let before = scene.status().restarts;
    scene.inject(Fault::DropAnswers { count: 5 }).await;
    scene.host.clear_faults(scene.name).await.unwrap();
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert_eq!(scene.status().restarts, before);
}

/// An oversize answer: stdio ends the connection, HTTP fails that request only.
async fn oversize(scene: &mut Scene, wire: Wire) {
    let before = scene.status().restarts;
    scene.inject(Fault::Oversize).await;
    let r = scene.echo(Duration::from_secs(10)).await;
    if wire == Wire::Stdio {
        assert!(
            matches!(
                &r,
                Err(CallError::Transport {
                    source: TransportError::FrameTooLarge { .. },
                    ..
                })
            ),
            "{r:?}"
        );
        scene.ready_after(before + 1).await;
    } else {
        assert!(
            matches!(
                &r,
                Err(CallError::Transport {
                    source: TransportError::MessageTooLarge { .. },
                    ..
                })
            ),
            "{r:?}"
        );
        assert_eq!(scene.status().restarts, before);
    }
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
}

async fn kill(scene: &mut Scene) {
    let before = scene.status();
    let pid = before.pid.unwrap();
    scene.inject(Fault::Kill).await;
    scene.ready_after(before.restarts + 1).await;
    assert_ne!(scene.status().pid, Some(pid));
    assert!(
        eventually(Duration::from_secs(5), || !testkit::is_alive(pid)).await,
        "the killed process is gone"
    );
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
}

/// A stopped server answers once it continues; a call made meanwhile waits.
async fn stop(scene: &mut Scene) {
    let before = scene.status();
    let pid = before.pid.unwrap();
    scene
        .inject(Fault::Stop {
            duration: Duration::from_millis(800),
        })
        .await;
    // A signal reaches a running process at its next return to user space.
    assert!(
        eventually(Duration::from_millis(700), || process_state(pid)
            == Some('T'))
        .await,
        "stopped by SIGSTOP: {:?}",
        process_state(pid)
    );
    let started = Instant::now();
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_ne!(process_state(pid), Some('T'), "continued");
    assert_eq!(scene.status().restarts, before.restarts);
}

/// A server whose stdin closes reads end of input and exits; it is restarted.
async fn close_stdin(scene: &mut Scene) {
    let before = scene.status().restarts;
    scene.inject(Fault::CloseStdin).await;
    scene.ready_after(before + 1).await;
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
}

/// Armed, then a kill: the restart dies during `initialize`, the next one comes up.
async fn exit_during_initialize(scene: &mut Scene) {
    let before = scene.status().restarts;
    scene.inject(Fault::ExitDuringInitialize).await;
    scene.inject(Fault::Kill).await;
    testkit::wait_for(
        &mut scene.events,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::ServerRestarting { attempt, .. } if *attempt >= 2),
    )
    .await;
    scene.ready_after(before + 2).await;
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
}

/// A cut answer stream fails that request, typed; the connection goes on.
async fn cut_stream(scene: &mut Scene) {
    let before = scene.status().restarts;
    scene.inject(Fault::CutStream).await;
    let r = scene.echo(Duration::from_secs(10)).await;
    assert!(
        matches!(
            &r,
            Err(CallError::Transport {
                source: TransportError::NoResponse | TransportError::Http(_),
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(scene.status().restarts, before);
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
}

/// Connections reset: a call in flight fails, typed; the next one goes through.
async fn reset(scene: &mut Scene, peer: Peer) {
    let before = scene.status().restarts;
    let slow = (peer == Peer::Everything).then(|| {
        let (host, tool) = (
            scene.host.clone(),
            scene.tool("trigger-long-running-operation"),
        );
        tokio::spawn(async move {
            host.call(
                &tool,
                json!({"duration": 20, "steps": 4}),
                CallOptions::default(),
            )
            .await
        })
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    scene.inject(Fault::ResetConnections).await;
    if let Some(slow) = slow {
        let r = tokio::time::timeout(Duration::from_secs(5), slow)
            .await
            .expect("the call in flight ended with the reset")
            .unwrap();
        match r {
            Err(CallError::Transport {
                source: TransportError::Http(text),
                ..
            }) => assert!(text.contains("reset"), "{text}"),
            other => panic!("a reset call fails, typed: {other:?}"),
        }
    }
    assert_eq!(
        scene.echo(Duration::from_secs(10)).await.unwrap(),
        "Echo: hi"
    );
    assert_eq!(scene.status().restarts, before);
}

/// The state letter of `/proc/<pid>/stat` (`T` when stopped).
fn process_state(pid: u32) -> Option<char> {
    testkit::proc::stat(pid).map(|s| s.state)
}
