//! Three `mcpvisor serve` processes on 127.0.0.1 joined as one cluster, each
//! supervising its own demo servers: every node lists and calls every other
//! node's tools; a cancel and a timeout on another node behave as they do
//! locally; a server name two nodes claim is routed on neither; a node
//! SIGKILLed under load fails its in-flight calls with a lost-node error,
//! its routes leave the others and calls to the survivors go on; restarted,
//! its routes return; a frozen node is lost by the heartbeat and comes back
//! when it speaks again. Refusals (cookie, TLS): cluster/tests/it/auth.rs.
//!
//! Clients are plain Streamable HTTP sessions against each node's `--http`.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::{Value, json};

use testkit::cluster::{Node, await_tools, is_error, text};
use testkit::mcp_http::{QUICK, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_call_each_others_servers_cancel_and_time_out_there() {
    let mut a = Node::new("calls", "a", &["alpha"]);
    let mut b = Node::new("calls", "b", &["beta"]);
    let mut c = Node::new("calls", "c", &["gamma"]);
    a.start(&[], &["--request-timeout-ms", "1500"]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address()], &[]);
    let on_b = b.session().await;
    let on_c = c.session().await;
    let mut id = 100;
    // c learned of b through a: every node reaches every other.
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo", "mcp__beta__echo"],
        true,
    )
    .await;
    await_tools(
        &on_c,
        &mut id,
        &["mcp__alpha__echo", "mcp__beta__echo"],
        true,
    )
    .await;

    // Every node's servers, with their node, on any node.
    let listed = testkit::attached::run_ok(&c.dir, &["servers", "--json"]);
    let listed: Value = serde_json::from_str(&listed).expect("servers --json");
    let node_of = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["running"]["node"].clone())
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
    };
    assert_eq!(node_of("alpha"), "a", "{listed}");
    assert_eq!(node_of("beta"), "b", "{listed}");
    assert_eq!(node_of("gamma"), "c", "{listed}");

    let echoed = on_b
        .call_result(2, "mcp__alpha__echo", json!({"text": "across"}))
        .await;
    assert_eq!(text(&echoed), "across", "{echoed}");
    let from_c = on_c
        .call_result(3, "mcp__beta__add", json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(text(&from_c), "5", "{from_c}");

    // Progress comes back from the node that runs the call.
    let reply = within(
        QUICK,
        on_c.call(4, "mcp__alpha__progress", json!({"steps": 3})),
    )
    .await;
    let progress = reply
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 1, "no progress crossed the cluster: {reply:?}");
    assert!(!is_error(&reply.answer(4)["result"]), "{reply:?}");

    // A cancel on b reaches alpha's server on a.
    let pid_before = text(&on_b.call_result(5, "mcp__alpha__pid", json!({})).await).to_string();
    let sleeping = tokio::spawn({
        let on_b = on_b.clone();
        async move {
            on_b.call(6, "mcp__alpha__sleep", json!({"ms": 10_000}))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    on_b.cancel(6).await;
    let _ = within(QUICK, sleeping).await;
    let deadline = Instant::now() + QUICK;
    let mut next = 7;
    loop {
        let seen = on_b
            .call_result(next, "mcp__alpha__cancelled", json!({}))
            .await;
        next += 1;
        let seen: Value = serde_json::from_str(text(&seen)).expect("a JSON array");
        if seen.as_array().map(Vec::len) == Some(1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cancel never reached alpha: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid_after = text(&on_b.call_result(next, "mcp__alpha__pid", json!({})).await).to_string();
    assert_eq!(pid_before, pid_after, "a cancel restarts nothing");

    // A call past a's timeout ends a's connection there, and a restarts it.
    let timed_out = on_b
        .call_result(50, "mcp__alpha__sleep", json!({"ms": 5_000}))
        .await;
    assert!(is_error(&timed_out), "{timed_out}");
    assert!(
        text(&timed_out).contains("did not answer within 1.5"),
        "the timeout is a's: {timed_out}"
    );
    let deadline = Instant::now() + QUICK;
    let mut next = 51;
    let restarted = loop {
        let result = on_b.call_result(next, "mcp__alpha__pid", json!({})).await;
        next += 1;
        if !is_error(&result) {
            break text(&result).to_string();
        }
        assert!(
            Instant::now() < deadline,
            "alpha did not come back: {result}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(restarted, pid_before, "a restarted alpha's connection");

    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_name_two_nodes_supervise_is_routed_on_neither() {
    let mut a = Node::new("conflict", "a", &["alpha", "dup"]);
    let mut b = Node::new("conflict", "b", &["beta", "dup"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    let (on_a, on_b) = (a.session().await, b.session().await);
    let mut id = 100;
    await_tools(&on_a, &mut id, &["mcp__beta__echo"], true).await;
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    await_tools(&on_a, &mut id, &["mcp__dup__echo"], false).await;
    await_tools(&on_b, &mut id, &["mcp__dup__echo"], false).await;
    let refused = on_a
        .call_result(2, "mcp__dup__echo", json!({"text": "x"}))
        .await;
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("more than one node (b, this node)"),
        "the refusal says why: {refused}"
    );
    for node in [&mut a, &mut b] {
        let log = node.stop();
        let conflict = log
            .lines()
            .find(|l| l.contains("route conflict") && l.contains("mcp__dup__echo"))
            .unwrap_or_else(|| panic!("{}: no conflict reported:\n{log}", node.name));
        assert!(
            conflict.contains("\"a\"") && conflict.contains("\"b\""),
            "{}: the conflict names both nodes: {conflict}",
            node.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_fails_its_calls_and_leaves_then_returns() {
    let mut a = Node::new("kill", "a", &["alpha"]);
    let mut b = Node::new("kill", "b", &["beta"]);
    let mut c = Node::new("kill", "c", &["gamma"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address(), b.address()], &[]);
    let on_b = b.session().await;
    let on_c = c.session().await;
    let mut id = 1000;
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo"],
        true,
    )
    .await;
    await_tools(
        &on_c,
        &mut id,
        &["mcp__alpha__echo", "mcp__beta__echo"],
        true,
    )
    .await;
    // c's events, other nodes' included, as `mcpvisor watch` shows them.
    let mut watch = testkit::attached::mcpvisor(&c.dir)
        .args(["watch", "--json"])
        .spawn()
        .expect("watch");
    let events = testkit::attached::Lines::start(watch.stdout.take().unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A's server crashes and comes back: c hears of it from a.
    let crashed = on_c.call_result(9, "mcp__alpha__crash", json!({})).await;
    assert!(is_error(&crashed), "{crashed}");
    let relayed = events.wait_for(QUICK, |l| {
        l.contains("\"node\":\"a\"") && l.contains("\"server_ready\"") && l.contains("alpha")
    });
    assert!(
        relayed.is_some(),
        "a's events never reached c:\n{}",
        events.text()
    );
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], true).await;

    // Load: calls held on a, and a steady stream to the survivors.
    let mut held = Vec::new();
    for i in 0..6 {
        let on_b = on_b.clone();
        held.push(tokio::spawn(async move {
            let reply = on_b
                .call(10 + i, "mcp__alpha__sleep", json!({"ms": 30_000}))
                .await;
            (Instant::now(), reply.answer(10 + i)["result"].clone())
        }));
    }
    let survivors = tokio::spawn({
        let on_c = on_c.clone();
        async move {
            let mut answered = 0;
            for i in 0..60u64 {
                let result = on_c
                    .call_result(200 + i, "mcp__beta__echo", json!({"text": "still here"}))
                    .await;
                assert_eq!(
                    text(&result),
                    "still here",
                    "a survivor's call failed: {result}"
                );
                answered += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            answered
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed_at = Instant::now();
    a.kill();
    for call in held {
        let (ended, result) = within(QUICK, call).await.expect("a held call");
        assert!(is_error(&result), "{result}");
        assert!(
            text(&result).contains("node `a`") && text(&result).contains("was lost"),
            "the error names the lost node: {result}"
        );
        // The heartbeat bound is 1 s here; a session closed is seen sooner.
        assert!(
            ended.duration_since(killed_at) < Duration::from_secs(10),
            "a held call ended {:?} after the kill",
            ended.duration_since(killed_at)
        );
    }
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], false).await;
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], false).await;
    let lost_event = events.wait_for(QUICK, |l| {
        l.contains("\"node_lost\"") && l.contains("\"a\"")
    });
    assert!(
        lost_event.is_some(),
        "no node_lost event:\n{}",
        events.text()
    );
    let reply = within(
        QUICK,
        on_b.call(300, "mcp__alpha__echo", json!({"text": "x"})),
    )
    .await;
    let gone = reply.answer(300);
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool"),
        "a lost node's tool is not routed: {gone}"
    );
    assert_eq!(within(QUICK, survivors).await.expect("survivor calls"), 60);

    // a comes back on its port: b and c dial it again, and its routes return.
    a.start(&[], &[]);
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], true).await;
    let back = on_c
        .call_result(301, "mcp__alpha__echo", json!({"text": "back"}))
        .await;
    assert_eq!(text(&back), "back", "{back}");
    let joined = events.wait_for(QUICK, |l| {
        l.contains("\"node_joined\"") && l.contains("\"a\"")
    });
    assert!(joined.is_some(), "no node_joined event:\n{}", events.text());
    testkit::attached::kill_group(&mut watch);
    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_node_is_lost_by_the_heartbeat_and_back_when_it_speaks_again() {
    let mut a = Node::new("frozen", "a", &["alpha"]);
    let mut b = Node::new("frozen", "b", &["beta"]);
    let mut c = Node::new("frozen", "c", &["gamma"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address()], &[]);
    let on_b = b.session().await;
    let mut id = 1000;
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo"],
        true,
    )
    .await;
    let held = tokio::spawn({
        let on_b = on_b.clone();
        async move {
            let reply = on_b
                .call(10, "mcp__alpha__sleep", json!({"ms": 30_000}))
                .await;
            (Instant::now(), reply.answer(10)["result"].clone())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Stopped, not killed: its sessions stay open, it only goes silent.
    let serve_pid = Pid::from_raw(a.serve().pid() as i32);
    let frozen_at = Instant::now();
    nix::sys::signal::kill(serve_pid, Signal::SIGSTOP).unwrap();
    // Calls to another node go on while a is silent.
    for i in 0..10u64 {
        let result = on_b
            .call_result(20 + i, "mcp__gamma__echo", json!({"text": "meanwhile"}))
            .await;
        assert_eq!(text(&result), "meanwhile", "{result}");
    }
    let (ended, result) = within(QUICK, held).await.expect("the held call");
    assert!(
        text(&result).contains("node `a`") && text(&result).contains("was lost"),
        "{result}"
    );
    // Lost after 1 s of silence (checked each 100 ms heartbeat), not at once.
    let after = ended.duration_since(frozen_at);
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(10),
        "lost {after:?} after it froze"
    );
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], false).await;
    // It speaks again: its routes return without a new session.
    nix::sys::signal::kill(serve_pid, Signal::SIGCONT).unwrap();
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    let back = on_b
        .call_result(40, "mcp__alpha__echo", json!({"text": "thawed"}))
        .await;
    assert_eq!(text(&back), "thawed", "{back}");
    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}
