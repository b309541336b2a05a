//! The attached commands see the running serve's supervisor: its servers,
//! their revisions, its crashes and restarts; without a serve, the one-shot path.

use super::*;

/// A host that starts `serve --stdio` for a configuration a serve already runs
/// shares that serve's servers: its calls reach the same demo process, a child
/// of the running serve, and it leaves them running when it goes.
#[test]
fn serve_stdio_beside_a_running_serve_shares_its_supervisor() {
    use std::io::Write;
    let dir = empty_dir("stdio-shares");
    let mut serve = Serve::start(&dir, &["serve"]);
    let shared = demo_pid(&dir, &[]);
    let mut host = mcpvisor(&dir)
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("start serve --stdio");
    let out = Lines::start(host.stdout.take().unwrap());
    let mut stdin = host.stdin.take().unwrap();
    for message in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "second-host", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "mcp__demo__pid", "arguments": {}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let answer = out
        .wait_for(COMMAND_TIMEOUT, |l| l.contains("\"id\":2"))
        .expect("an answer to the call");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let pid: u32 = answer["result"]["content"][0]["text"]
        .as_str()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(
        pid, shared,
        "the second host reaches the running serve's server"
    );
    assert_eq!(parent_of(pid), Some(serve.pid()));
    drop(stdin);
    let status = wait_timeout(&mut host, EXIT_TIMEOUT).expect("serve --stdio ends with its input");
    assert!(status.success(), "{status}");
    assert!(
        is_alive(shared),
        "the shared server outlives the second host"
    );
    assert_eq!(demo_pid(&dir, &[]), shared);
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

/// `servers`, attached to a running serve, names the revision each live
/// connection settled on: here the one serve was told to prefer.
#[test]
fn servers_shows_the_revision_each_connection_settled_on() {
    let dir = empty_dir("revision");
    let mut serve = Serve::start(&dir, &["--protocol-versions", "2025-06-18", "serve"]);
    // serve answers before its demo server is ready; the revision is known only
    // once the connection has settled, so ask until it has.
    let mut text = String::new();
    eventually(Duration::from_secs(20), || {
        text = run_ok(&dir, &["servers"]);
        !text.contains("running: starting")
    });
    assert!(text.contains(", protocol 2025-06-18"), "{text}");
    let json: Value = serde_json::from_str(&run_ok(&dir, &["--json", "servers"])).unwrap();
    let live = &json[0]["running"];
    assert_eq!(live["protocol"], "2025-06-18", "{json}");
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

#[test]
fn attached_commands_share_the_servers_of_the_running_serve() {
    let dir = empty_dir("shared");
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());

    let tools = run_ok(&dir, &["tools"]);
    for tool in ["mcp__demo__echo", "mcp__demo__sleep", "mcp__demo__pid"] {
        assert!(tools.contains(tool), "{tools}");
    }
    let first = demo_pid(&dir, &[]);
    let second = demo_pid(&dir, &[]);
    assert_eq!(first, second, "both calls reach the one server of serve");
    assert_eq!(
        parent_of(first),
        Some(serve.pid()),
        "the demo server {first} is a child of serve {} (its stat: ppid {:?})",
        serve.pid(),
        stat(first).map(|s| s.ppid)
    );
    let echoed = run_ok(&dir, &["call", "mcp__demo__echo", r#"{"text":"attached"}"#]);
    assert_eq!(echoed.trim(), "attached");
    // A server name the running serve does not have is an error, as one-shot.
    let unknown = run(&dir, &["tools", "dmeo"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("no server `dmeo` in the running serve; did you mean `demo`?"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
    // Completion scripts read the running serve's tool names.
    let names = run_ok(&dir, &["tool-names"]);
    assert!(names.lines().any(|l| l == "mcp__demo__echo"), "{names}");
    assert_eq!(demo_pid(&dir, &[]), first, "tool-names started no server");

    // --no-attach runs a server of its own, gone when the command is.
    let own = demo_pid(&dir, &["--no-attach"]);
    assert_ne!(own, first, "--no-attach started its own demo server");
    assert!(
        eventually(Duration::from_secs(5), || !is_alive(own)),
        "the --no-attach server {own} outlived its command"
    );
    assert!(
        is_alive(first),
        "serve's demo server survives the one-shot command"
    );
    assert_eq!(demo_pid(&dir, &[]), first);

    let status = serve.stop(Signal::SIGTERM);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        serve.stderr.finish(Duration::from_secs(2))
    );
}

#[test]
fn an_attached_watch_sees_a_crash_and_the_restart_done_by_serve() {
    let dir = empty_dir("watch");
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    let before = demo_pid(&dir, &[]);

    let mut watch = Running::start(&dir, &["watch"]);
    // The watch says nothing once subscribed.
    watch.wait_watching(&dir, "demo");

    let crash = run(&dir, &["call", "mcp__demo__crash", "{}"]);
    assert_eq!(
        crash.status.code(),
        Some(1),
        "{}",
        describe(&["call", "mcp__demo__crash", "{}"], &crash)
    );
    let said = String::from_utf8_lossy(&crash.stdout);
    assert!(
        said.contains("`demo`"),
        "the crash result names demo: {said}"
    );

    let down = watch.stdout.wait_for(Duration::from_secs(10), |l| {
        event_text(l).starts_with("demo: down (")
    });
    assert!(
        down.is_some(),
        "watch printed no restarting line\n{}",
        watch.output()
    );
    let ready = watch.stdout.wait_for(Duration::from_secs(20), |l| {
        event_text(l).starts_with("demo: ready")
    });
    let Some(ready) = ready else {
        panic!("watch printed no ready line\n{}", watch.output());
    };
    let after = demo_pid(&dir, &[]);
    assert_ne!(after, before, "a new process serves demo");
    assert!(
        ready.ends_with(&format!("pid {after}")),
        "ready line {ready:?} names the new pid {after}"
    );
    assert_eq!(parent_of(after), Some(serve.pid()));

    kill(Pid::from_raw(watch.child.id() as i32), Signal::SIGINT).unwrap();
    let Some(status) = wait_timeout(&mut watch.child, EXIT_TIMEOUT) else {
        panic!(
            "watch still running {EXIT_TIMEOUT:?} after SIGINT\n{}",
            watch.output()
        );
    };
    assert_eq!(
        status.code(),
        Some(0),
        "Ctrl-C ends watch cleanly\n{}",
        watch.output()
    );
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

/// The live status of `demo` in `mcpvisor --json servers` (attached).
/// A `watch` line without the local time it starts with (`HH:MM:SS.mmm `).
fn event_text(line: &str) -> &str {
    let (time, rest) = line.split_once(' ').unwrap_or(("", line));
    assert!(
        time.len() == 12 && time.as_bytes()[2] == b':' && time.as_bytes()[8] == b'.',
        "a watch line starts with the local time: {line}"
    );
    rest
}

fn live_demo(dir: &Path) -> Value {
    let out = run_ok(dir, &["--json", "servers"]);
    let all: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("`--json servers` printed no JSON ({e}): {out}"));
    all[0]["running"].clone()
}

#[test]
fn restart_brings_back_a_failed_server_of_the_running_serve() {
    let dir = empty_dir("restart");
    // No restart is allowed: one crash leaves the server failed.
    let mut serve = Serve::start(
        &dir,
        &[
            &FAST_RESTARTS[..],
            &["--restart-max-restarts", "0", "serve"],
        ]
        .concat(),
    );
    let before = demo_pid(&dir, &[]);
    let running = live_demo(&dir);
    assert_eq!(running["state"], "ready", "{running}");
    assert_eq!(running["pid"], before, "{running}");

    // A running server is restarted too (after an upgrade there is no other way).
    let restart_running = run_ok(&dir, &["restart", "demo"]);
    assert!(
        restart_running.contains("restarted server `demo`"),
        "{restart_running}"
    );
    let after = demo_pid(&dir, &[]);
    assert_ne!(
        after, before,
        "a running server is stopped and started again"
    );
    assert!(
        eventually(Duration::from_secs(5), || !is_alive(before)),
        "the old process is gone"
    );
    let before = after;

    let crash = run(&dir, &["call", "mcp__demo__crash", "{}"]);
    assert_eq!(crash.status.code(), Some(1));
    let mut status = Value::Null;
    assert!(
        eventually(Duration::from_secs(10), || {
            status = live_demo(&dir);
            status["state"] == "failed"
        }),
        "demo is not reported failed after its crash: {status}"
    );
    let text = run_ok(&dir, &["servers"]);
    assert!(text.contains("running: failed"), "{text}");
    assert!(!is_alive(before), "the crashed server is gone");

    // A call to the failed server says what to do.
    let refused = run(&dir, &["call", "mcp__demo__pid", "{}"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stdout);
    assert!(said.contains("mcpvisor restart demo"), "{said}");

    let restarted = run_ok(&dir, &["restart", "demo"]);
    assert!(restarted.contains("restarted server `demo`"), "{restarted}");
    // Straight after `restart`, as a person or a script would.
    let after = demo_pid(&dir, &[]);
    assert_ne!(after, before);
    assert_eq!(parent_of(after), Some(serve.pid()));
    assert_eq!(live_demo(&dir)["state"], "ready");

    let unknown = run(&dir, &["restart", "nope"]);
    assert_eq!(
        unknown.status.code(),
        Some(2),
        "{}",
        describe(&["restart", "nope"], &unknown)
    );
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains("no server is named `nope`"), "{said}");

    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

#[test]
fn without_serve_the_one_shot_path_works_and_restart_says_what_it_needs() {
    let dir = empty_dir("oneshot");
    let tools = run_ok(&dir, &["tools"]);
    assert!(tools.contains("mcp__demo__echo"), "{tools}");
    let echoed = run_ok(&dir, &["call", "mcp__demo__echo", r#"{"text":"alone"}"#]);
    assert_eq!(echoed.trim(), "alone");
    let first = demo_pid(&dir, &[]);
    let second = demo_pid(&dir, &[]);
    assert_ne!(first, second, "each one-shot command runs its own server");

    let out = run(&dir, &["restart", "demo"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        describe(&["restart", "demo"], &out)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("mcpvisor serve"), "{said}");
    assert!(
        processes_in(&dir).is_empty(),
        "{:?} left",
        processes_in(&dir)
    );
}
