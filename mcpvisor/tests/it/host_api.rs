//! The host handle as an agent developer holds it: cloned into tasks, called
//! from threads outside the runtime, its servers' `initialize` answers and
//! its events readable as text.

use std::time::Duration;

use mcpvisor::{CallOptions, Host, HostEvent};
use serde_json::json;
use testkit::{demo, fast_options, next_ready};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clone_is_the_same_host_and_dropping_one_stops_nothing() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let ready = next_ready(&mut events).await;
    assert!(ready.to_string().starts_with("d: ready,"), "{ready}");
    let clone = host.clone();
    let in_task = tokio::spawn(async move {
        let r = clone
            .call(
                "mcp__d__echo",
                json!({"text": "from a task"}),
                CallOptions::default(),
            )
            .await
            .unwrap();
        r.text().to_string()
    });
    assert_eq!(in_task.await.unwrap(), "from a task");
    // The clone is gone; the host still runs.
    let r = host
        .call(
            "mcp__d__echo",
            json!({"text": "still"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "still");
    let again = host.clone();
    again.shutdown().await;
    assert!(host.is_shut_down(), "a clone's shutdown is the host's");
    assert!(host.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_a_thread_outside_the_runtime_completes() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let outside = host.clone();
    let answer = std::thread::spawn(move || {
        assert!(
            tokio::runtime::Handle::try_current().is_err(),
            "no runtime here"
        );
        let call = outside.call(
            "mcp__d__echo",
            json!({"text": "from a plain thread"}),
            CallOptions::default().timeout(Duration::from_secs(20)),
        );
        futures::executor::block_on(call).map(|r| r.text().to_string())
    })
    .join()
    .unwrap();
    assert_eq!(answer.unwrap(), "from a plain thread");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_status_carries_what_initialize_returned() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let status = &host.servers()[0];
    let init = status.initialize.as_ref().expect("initialized");
    assert!(!init.server_info.name.is_empty());
    assert!(!init.server_info.version.is_empty());
    assert_eq!(init.protocol_version, "2025-03-26");
    host.shutdown().await;
    assert!(
        matches!(host.servers()[0].state, mcpvisor::ServerState::Stopped),
        "{:?}",
        host.servers()[0].state
    );
    let stopped = HostEvent::ServerStopped { server: "d".into() };
    assert_eq!(stopped.to_string(), "d: stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_starts_in_one_call_with_its_problems() {
    let dir = testkit::scratch_dir("start-project");
    let config = json!({"mcpServers": {
        "d": {"command": testkit::mcpvisor_exe(), "args": ["demo-server"]},
        "broken": {"command": "x", "env": {"K": "${SURELY_UNSET_VARIABLE_42}"}},
        "unapproved": {"command": "y"},
    }});
    let path = dir.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let env: std::collections::HashMap<String, String> = [(
        "MCPVISOR_HOME".to_string(),
        dir.join("home").display().to_string(),
    )]
    .into();
    let settings = mcpvisor::settings::Settings::load_with(&Default::default(), &env).unwrap();
    let project = mcpvisor::project::Project::open(&path, &settings.home).unwrap();
    project.enable("d", &|_| None).unwrap();
    // An entry that cannot run is approved by hand, as an edit after approval would do.
    project.enable("broken", &|_| Some("set".into())).unwrap();

    let (host, problems) = mcpvisor::start_project(&path, &settings).await.unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].to_string().contains("SURELY_UNSET_VARIABLE_42"),
        "{}",
        problems[0]
    );
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses.len(), 1, "only the runnable approved entry starts");
    let r = host
        .call(
            "mcp__d__echo",
            json!({"text": "one call"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "one call");
    host.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_answers_from_a_live_connection_and_a_hung_one_is_restarted() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let ready = next_ready(&mut events).await;
    let HostEvent::ServerReady { pid: Some(pid), .. } = ready else {
        panic!("a stdio server has a pid: {ready:?}");
    };
    let took = host.ping("d", None).await.unwrap();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(matches!(
        host.ping("nobody", None).await,
        Err(mcpvisor::CallError::UnknownServer(_))
    ));
    // A stopped process cannot answer: the ping times out, which ends the
    // connection as a call's timeout does, and the server comes back.
    let group = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let hung = host.ping("d", Some(Duration::from_millis(300))).await;
    assert!(
        matches!(hung, Err(mcpvisor::CallError::Timeout { .. })),
        "{hung:?}"
    );
    let back = next_ready(&mut events).await;
    assert!(
        matches!(back, HostEvent::ServerReady { pid: Some(p), .. } if p != pid),
        "{back:?}"
    );
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGCONT);
    host.ping("d", None).await.unwrap();
    host.shutdown().await;
}
