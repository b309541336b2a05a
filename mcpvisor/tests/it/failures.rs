//! Connection failures: timeouts, crashes, oversize frames, isolation between servers.

use std::time::Duration;

use futures::future::join_all;
use mcpvisor::TransportError;
use mcpvisor::{CallError, CallOptions, Host, HostEvent, ServerSpec, ServerState, StdioSpec};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use testkit::peers::PeerServer;
use testkit::{call, demo, eventually, fast_options, is_alive, next_ready, wait_for};

fn pid_of(host: &Host, name: &str) -> Option<u32> {
    host.servers()
        .into_iter()
        .find(|s| &*s.name == name && s.state == ServerState::Ready)
        .and_then(|s| s.pid)
}

#[tokio::test]
async fn timeout_replaces_the_connection_and_drops_late_answers() {
    let host = Host::start(vec![demo("demo", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    host.wait_ready(Duration::from_secs(20)).await;
    let old_pid = pid_of(&host, "demo").unwrap();
    let r = call(&host, "mcp__demo__pid", json!({})).await.unwrap();
    assert_eq!(r.text(), old_pid.to_string());

    // One call would answer after 1.5 s, well inside its own timeout; the other times out first.
    let patient = host.call(
        "mcp__demo__sleep",
        json!({"ms": 1500}),
        CallOptions::default().timeout(Duration::from_secs(20)),
    );
    let hasty = host.call(
        "mcp__demo__sleep",
        json!({"ms": 1500}),
        CallOptions::default().timeout(Duration::from_millis(300)),
    );
    let (patient, hasty) = tokio::join!(patient, hasty);
    assert!(
        matches!(hasty, Err(CallError::Timeout { after, .. }) if after == Duration::from_millis(300)),
        "{hasty:?}"
    );
    assert!(
        matches!(patient, Err(CallError::ConnectionTimedOut { .. })),
        "the late answer is never delivered: {patient:?}"
    );
    assert!(patient.unwrap_err().is_timeout());

    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ServerRestarting { .. })
    })
    .await;
    let ready = next_ready(&mut events).await;
    let HostEvent::ServerReady {
        pid: Some(new_pid), ..
    } = ready
    else {
        panic!("{ready:?}")
    };
    assert_ne!(new_pid, old_pid, "a new process serves the connection");
    assert!(
        eventually(Duration::from_secs(5), || !testkit::is_alive(old_pid)).await,
        "the old process is gone"
    );
    let r = call(&host, "mcp__demo__pid", json!({})).await.unwrap();
    assert_eq!(r.text(), new_pid.to_string());
    // Nothing from the old connection leaks into the new one.
    let r = call(&host, "mcp__demo__cancelled", json!({}))
        .await
        .unwrap();
    assert_eq!(r.text(), "[]");
    host.shutdown().await;
}

#[tokio::test]
async fn crash_mid_call_fails_with_the_exit_status() {
    let host = Host::start(vec![demo("demo", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let e = call(&host, "mcp__demo__crash", json!({"code": 7}))
        .await
        .unwrap_err();
    let CallError::Transport {
        source: TransportError::Exited { status, .. },
        ..
    } = &e
    else {
        panic!("expected an exit, got {e}")
    };
    assert_eq!(status.code(), Some(7));
    assert!(e.to_string().contains("exit code 7"), "{e}");
    // It comes back and works.
    next_ready(&mut events).await;
    let r = call(&host, "mcp__demo__echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "back");
    host.shutdown().await;
}

#[tokio::test]
async fn killing_one_server_never_fails_calls_on_another() {
    let host = Host::start(
        vec![demo("healthy", &[]), demo("victim", &[])],
        fast_options(),
    )
    .await
    .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        let host = &host;
        async move {
            let mut kills = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(pid) = pid_of(host, "victim") {
                    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
                    kills += 1;
                }
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
            kills
        }
    };
    let calls = async {
        let mut results = Vec::new();
        for batch in 0..20 {
            let batch_calls = (0..10).map(|i| {
                host.call(
                    "mcp__healthy__echo",
                    json!({"text": format!("{batch}-{i}")}),
                    CallOptions::default(),
                )
            });
            results.extend(join_all(batch_calls).await);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        results
    };
    let (results, kills) = tokio::join!(calls, killer);
    assert_eq!(results.len(), 200);
    for (n, r) in results.iter().enumerate() {
        let text = r
            .as_ref()
            .unwrap_or_else(|e| panic!("healthy call {n} failed: {e}"))
            .text();
        assert_eq!(text, format!("{}-{}", n / 10, n % 10));
    }
    assert!(kills >= 3, "the victim was killed {kills} times");
    let victim = host
        .servers()
        .into_iter()
        .find(|s| &*s.name == "victim")
        .unwrap();
    assert!(victim.restarts >= 3, "{victim:?}");
    let healthy = host
        .servers()
        .into_iter()
        .find(|s| &*s.name == "healthy")
        .unwrap();
    assert_eq!(healthy.restarts, 0);
    // The victim comes back.
    assert!(
        eventually(Duration::from_secs(20), || pid_of(&host, "victim")
            .is_some())
        .await
    );
    host.shutdown().await;
}

#[tokio::test]
async fn restart_intensity_limit_marks_failed_until_asked_again() {
    let mut options = fast_options();
    options.restart.max_restarts = 2;
    let host = Host::start(vec![demo("flaky", &["--exit-during-initialize"])], options)
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let failed = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerFailed { .. })
    })
    .await;
    let HostEvent::ServerFailed { reason, .. } = failed else {
        unreachable!()
    };
    assert!(reason.to_string().contains("exit code 4"), "{reason}");
    // The reason is typed: the process exited, with its status.
    match &*reason {
        mcpvisor::ConnectionError::Transport(mcpvisor::TransportError::Exited {
            status, ..
        }) => assert_eq!(status.code(), Some(4)),
        other => panic!("expected the exit as the reason, got {other:?}"),
    }
    assert!(matches!(
        host.servers()[0].state,
        ServerState::Failed { .. }
    ));
    assert_eq!(host.servers()[0].restarts, 2);
    // Asked again, it starts again (and fails again, with a fresh budget).
    assert_eq!(host.restart("flaky").await.unwrap(), 1);
    wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, HostEvent::ServerStarting { attempt: 0, .. })
    })
    .await;
    wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerFailed { .. })
    })
    .await;
    host.shutdown().await;
}

#[tokio::test]
async fn startup_timeout_when_initialize_is_never_answered() {
    let mut options = fast_options();
    options.startup_timeout = Duration::from_millis(300);
    options.restart.max_restarts = 1;
    let host = Host::start(vec![demo("mute", &["--hang-initialize"])], options)
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let restarting = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ServerRestarting { .. })
    })
    .await;
    let HostEvent::ServerRestarting { reason, .. } = restarting else {
        unreachable!()
    };
    assert!(
        reason.to_string().contains("startup did not finish"),
        "{reason}"
    );
    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ServerFailed { .. })
    })
    .await;
    host.shutdown().await;
}

/// A server that closes its stdin but keeps its stdout open never produces an
/// end of file: the failed write itself ends the connection, and the server is
/// restarted instead of staying "ready" and unreachable.
#[tokio::test]
async fn a_server_that_closes_its_stdin_is_restarted() {
    let script = r#"
read -r line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"1"}}}'
read -r line
read -r line
printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}'
exec 0<&-
exec sleep 1000
"#;
    let spec = mcpvisor::ServerSpec::stdio("deaf", mcpvisor::StdioSpec::new("sh", ["-c", script]));
    let host = Host::start(vec![spec], fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let first = pid_of(&host, "deaf").expect("ready with a pid");
    let stdin = format!("/proc/{first}/fd/0");
    assert!(
        eventually(Duration::from_secs(10), || !std::path::Path::new(&stdin)
            .exists())
        .await,
        "the server closed its stdin"
    );
    // The pipe has no reader now: the call cannot be written.
    let failed = call(&host, "mcp__deaf__echo", json!({})).await.unwrap_err();
    assert!(
        matches!(failed, CallError::ServerUnavailable { .. }),
        "{failed:?}"
    );
    wait_for(&mut events, Duration::from_secs(15), |e| {
        matches!(e, HostEvent::ServerRestarting { server, reason, .. }
            if &**server == "deaf" && reason.to_string().contains("writing to the server failed"))
    })
    .await;
    next_ready(&mut events).await;
    let second = pid_of(&host, "deaf").expect("ready again");
    assert_ne!(first, second, "a new process");
    host.shutdown().await;
}

#[tokio::test]
async fn a_forking_launchers_death_is_the_servers_death() {
    // `sh -c '…; true'` forks the real server and waits for it, as npx and uvx
    // do: the real server holds the pipes, so killing the launcher closes none.
    let command = format!("'{}' demo-server; true", testkit::mcpvisor_exe());
    let spec = ServerSpec::stdio("wrapped", StdioSpec::new("sh", ["-c".to_string(), command]));
    let host = Host::start(vec![spec], fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    host.wait_ready(Duration::from_secs(20)).await;
    let launcher = pid_of(&host, "wrapped").unwrap();
    let server: u32 = call(&host, "mcp__wrapped__pid", json!({}))
        .await
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert_ne!(launcher, server, "the launcher forked the server");

    kill(Pid::from_raw(launcher as i32), Signal::SIGKILL).unwrap();
    wait_for(
        &mut events,
        Duration::from_secs(15),
        |e| matches!(e, HostEvent::ServerRestarting { server, .. } if &**server == "wrapped"),
    )
    .await;
    next_ready(&mut events).await;
    let reaped = || {
        !testkit::proc::children()
            .iter()
            .any(|(pid, _)| *pid == launcher)
    };
    assert!(
        eventually(Duration::from_secs(5), || reaped() && !is_alive(server)).await,
        "the launcher is reaped and the server it left is ended with its group"
    );
    let relaunched = pid_of(&host, "wrapped").unwrap();
    assert_ne!(relaunched, launcher);
    let answered: u32 = call(&host, "mcp__wrapped__pid", json!({}))
        .await
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert_ne!(
        answered, server,
        "calls go to the new server, not the one left behind"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn an_http_server_that_goes_down_is_restarting_until_it_is_back() {
    let everything = PeerServer::everything();
    let url = everything.url.clone();
    let port: u16 = url
        .trim_end_matches("/mcp")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let spec = ServerSpec::http("everything", mcpvisor::HttpSpec::new(url));
    let mut options = fast_options();
    // Slow enough that the state between tries can be seen.
    options.restart.initial_backoff = Duration::from_secs(5);
    options.restart.max_backoff = Duration::from_secs(5);
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    host.wait_ready(Duration::from_secs(30)).await;
    let echo = json!({"message": "up"});
    call(&host, "mcp__everything__echo", echo.clone())
        .await
        .unwrap();

    drop(everything);
    // Noticed by the supervisor through the notification stream: no call is made.
    let down = wait_for(
        &mut events,
        Duration::from_secs(20),
        |e| matches!(e, HostEvent::ServerRestarting { server, .. } if &**server == "everything"),
    )
    .await;
    let HostEvent::ServerRestarting { reason, .. } = down else {
        unreachable!()
    };
    assert!(reason.to_string().contains("unreachable"), "{reason}");
    let status = host
        .servers()
        .into_iter()
        .find(|s| &*s.name == "everything")
        .unwrap();
    assert!(
        matches!(status.state, ServerState::Restarting { .. }),
        "{status:?}"
    );
    assert!(status.next_try.is_some(), "{status:?}");
    // A call fails at once, saying where the server stands and when it is tried.
    let refused = call(&host, "mcp__everything__echo", echo.clone())
        .await
        .unwrap_err();
    let CallError::ServerUnavailable { why, next_try, .. } = &refused else {
        panic!("{refused:?}")
    };
    assert!(
        why.as_deref().is_some_and(|w| w.contains("restarting")),
        "{refused}"
    );
    assert!(
        next_try.is_some() && refused.to_string().contains("next try in"),
        "{refused}"
    );

    // Back where it was: the supervisor reconnects by itself.
    let _back = PeerServer::everything_at(port);
    wait_for(
        &mut events,
        Duration::from_secs(40),
        |e| matches!(e, HostEvent::ServerReady { server, .. } if &**server == "everything"),
    )
    .await;
    call(&host, "mcp__everything__echo", echo).await.unwrap();
    host.shutdown().await;
}

#[tokio::test]
async fn a_failed_server_is_tried_again_and_picked_up_when_it_is_back() {
    // Nothing listens yet: every start fails, and the budget is soon spent.
    let port = testkit::peers::free_port();
    let spec = ServerSpec::http(
        "later",
        mcpvisor::HttpSpec::new(format!("http://127.0.0.1:{port}/mcp")),
    );
    let mut options = fast_options();
    options.restart.max_restarts = 2;
    options.restart.probe_interval = Some(Duration::from_secs(2));
    options.restart.max_probe_interval = Duration::from_secs(2);
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    wait_for(
        &mut events,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::ServerFailed { server, .. } if &**server == "later"),
    )
    .await;
    let status = host.servers().into_iter().next().unwrap();
    assert!(
        matches!(status.state, ServerState::Failed { .. }),
        "{status:?}"
    );
    assert!(
        status.next_try.is_some(),
        "a failed server shows its next try: {status:?}"
    );

    let _up = PeerServer::everything_at(port);
    wait_for(
        &mut events,
        Duration::from_secs(40),
        |e| matches!(e, HostEvent::ServerReady { server, .. } if &**server == "later"),
    )
    .await;
    call(&host, "mcp__later__echo", json!({"message": "back"}))
        .await
        .unwrap();
    host.shutdown().await;
}
