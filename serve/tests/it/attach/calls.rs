//! Calls through a running serve: after a restart, under their own timeout,
//! cancelled when the command is killed or interrupted; edits and checks
//! against the running serve.

use super::*;

#[test]
fn a_call_right_after_restart_reaches_a_server_that_takes_a_moment_to_start() {
    let dir = empty_dir("slow-restart");
    // The demo server behind a one-second start, like a server that loads a model or an index.
    let config = serde_json::json!({"mcpServers": {
        "slow": {"command": "sh", "args": [
            "-c", "sleep 1; exec \"$0\" demo-server", testkit::mcpvisor_exe()
        ]}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    run_ok(&dir, &["enable", "slow"]);
    let mut serve = Serve::start(
        &dir,
        &[
            &FAST_RESTARTS[..],
            &["--restart-max-restarts", "0", "serve"],
        ]
        .concat(),
    );
    let pid = |dir: &Path| -> u32 {
        let out = run_ok(dir, &["call", "mcp__slow__pid", "{}"]);
        out.trim().parse().unwrap()
    };
    // serve holds the first calls until the first start settled.
    let before = pid(&dir);
    let crash = run(&dir, &["call", "mcp__slow__crash", "{}"]);
    assert_eq!(crash.status.code(), Some(1));
    let mut status = Value::Null;
    assert!(
        eventually(Duration::from_secs(10), || {
            let out = run_ok(&dir, &["--json", "servers"]);
            status = serde_json::from_str::<Value>(out.trim()).unwrap()[0]["running"].clone();
            status["state"] == "failed"
        }),
        "slow is not reported failed: {status}"
    );

    let restarted = run_ok(&dir, &["restart", "slow"]);
    assert!(restarted.contains("restarted server `slow`"), "{restarted}");
    let args = ["call", "mcp__slow__pid", "{}"];
    let out = run(&dir, &args);
    assert!(
        out.status.success(),
        "the call right after `mcpvisor restart slow` failed: {}",
        describe(&args, &out)
    );
    let after: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_ne!(after, before);
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

#[test]
fn an_attached_call_keeps_its_timeout() {
    let dir = empty_dir("timeout");
    let mut serve = Serve::start(&dir, &["serve"]);
    let before = demo_pid(&dir, &[]);
    let args = [
        "call",
        "mcp__demo__sleep",
        r#"{"ms":5000}"#,
        "--timeout-ms",
        "300",
    ];
    let out = run(&dir, &args);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The call's own limit, not the server's default of a minute.
    assert!(
        stdout.contains("no answer within 0.3s"),
        "{}",
        describe(&args, &out)
    );
    // A client's limit cancels its call; it does not end the connection that
    // other clients share.
    assert_eq!(demo_pid(&dir, &[]), before, "the connection was replaced");
    let seen = run_ok(&dir, &["call", "mcp__demo__cancelled", "{}"]);
    assert!(
        seen.contains("sleep"),
        "the server saw no cancellation: {seen}"
    );
    assert!(serve.stop(Signal::SIGTERM).success());
}

/// A `serve` for `dir`, its demo server's pid, and an attached call to it
/// that sleeps a minute, sent by now.
fn sleeping_call(dir: &Path) -> (Serve, u32, Child) {
    let serve = Serve::start(dir, &["serve"]);
    let before = demo_pid(dir, &[]);
    let call = mcpvisor(dir)
        .args(["call", "mcp__demo__sleep", "ms=60000"])
        .spawn()
        .expect("start the call");
    // Time for it to attach and send the call.
    std::thread::sleep(Duration::from_millis(1500));
    (serve, before, call)
}

/// An attached call killed outright (no Ctrl-C, no cancel sent) is cancelled
/// at the server as soon as its connection is gone, not after the two seconds
/// a client that only stopped writing gets for its answers.
#[test]
fn an_attached_call_killed_outright_is_cancelled_at_once() {
    let dir = empty_dir("killed");
    let (mut serve, before, mut call) = sleeping_call(&dir);
    kill(Pid::from_raw(call.id() as i32), Signal::SIGKILL).unwrap();
    let _ = wait_timeout(&mut call, COMMAND_TIMEOUT);
    // Asked at once: the record is read well inside the two seconds.
    let seen = run_ok(&dir, &["call", "mcp__demo__cancelled"]);
    assert!(
        seen.contains("sleep"),
        "the server saw no cancellation yet: {seen}"
    );
    assert_eq!(demo_pid(&dir, &[]), before, "the connection goes on");
    assert!(serve.stop(Signal::SIGTERM).success());
}

/// Ctrl-C on an attached call reaches the server as `notifications/cancelled`
/// (the demo server's own record says so), and the shared connection goes on.
#[test]
fn ctrl_c_on_an_attached_call_cancels_it_at_the_server() {
    let dir = empty_dir("interrupt");
    let (mut serve, before, mut call) = sleeping_call(&dir);
    kill(Pid::from_raw(call.id() as i32), Signal::SIGINT).unwrap();
    let Some(status) = wait_timeout(&mut call, COMMAND_TIMEOUT) else {
        kill_group(&mut call);
        panic!("the interrupted call did not end");
    };
    assert_eq!(status.code(), Some(130));
    let seen: Value = serde_json::from_str(run_ok(&dir, &["call", "mcp__demo__cancelled"]).trim())
        .expect("the demo server's record of cancellations");
    assert!(
        seen.to_string().contains("sleep"),
        "the server saw no cancellation: {seen}"
    );
    assert_eq!(demo_pid(&dir, &[]), before, "the connection goes on");
    assert!(serve.stop(Signal::SIGTERM).success());
}

/// With a `serve` running for the file, the commands that change the file
/// or its approvals apply the change to it, `servers --check` checks the
/// servers as they run there, and `watch` starts from where things stand.
#[test]
fn edits_checks_and_watch_meet_the_running_serve() {
    let dir = empty_dir("edits");
    let demo = testkit::mcpvisor_exe();
    std::fs::write(
        dir.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"first": {"command": demo, "args": ["demo-server"]}}})
            .to_string(),
    )
    .unwrap();
    run_ok(&dir, &["enable", "first"]);
    let mut serve = Serve::start(&dir, &["serve"]);

    // A second copy would be started and counted apart: the running one is checked.
    let checked = run_ok(&dir, &["servers", "--check"]);
    assert!(
        checked.contains("first: ok, 12 tools (running in serve)"),
        "{checked}"
    );

    // Added and approved while serve runs: it runs there at once, no reload asked.
    run_ok(&dir, &["add", "second", "--", demo, "demo-server"]);
    let enabled = run_ok(&dir, &["enable", "second"]);
    assert!(enabled.contains("started: second"), "{enabled}");
    let tools = run_ok(&dir, &["tools", "second"]);
    assert!(tools.contains("mcp__second__echo"), "{tools}");
    let removed = run_ok(&dir, &["remove", "second"]);
    assert!(removed.contains("stopped: second"), "{removed}");

    // A bare tool name gets the one qualified name the running tools allow.
    let bare = run(&dir, &["call", "echo", "text=x"]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bare.stderr).contains("did you mean `mcp__first__echo`?"),
        "{}",
        describe(&["call", "echo"], &bare)
    );

    // watch prints each server's state before any event comes.
    let mut watch = mcpvisor(&dir)
        .args(["watch"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start watch");
    let lines = Lines::start(watch.stdout.take().unwrap());
    let first = lines.wait_for(COMMAND_TIMEOUT, |l| l.contains("first: ready"));
    kill_group(&mut watch);
    assert!(
        first.is_some(),
        "watch said nothing of `first`: {}",
        lines.text()
    );
    assert!(serve.stop(Signal::SIGTERM).success());
}
