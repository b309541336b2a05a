//! The `mcpvisor` binary as a user runs it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use testkit::serve::finish;

/// A hang guard, not a measure.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn mcpvisor(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut cmd = testkit::serve::mcpvisor(dir);
    finish(cmd.args(args).env("RUST_LOG", "trace"), RUN_TIMEOUT)
}

fn empty_dir(tag: &str) -> std::path::PathBuf {
    testkit::scratch_dir(&format!("cli-{tag}"))
}

#[test]
fn without_mcp_json_the_demo_server_is_used() {
    let dir = empty_dir("demo");
    let out = mcpvisor(&dir, &["tools"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    for tool in [
        "mcp__demo__echo",
        "mcp__demo__add",
        "mcp__demo__sleep",
        "mcp__demo__progress",
    ] {
        assert!(stdout.contains(tool), "{stdout}");
    }
    let out = mcpvisor(&dir, &["call", "mcp__demo__echo", r#"{"text":"hello"}"#]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
    let out = mcpvisor(
        &dir,
        &["--json", "call", "mcp__demo__add", r#"{"a":1,"b":2}"#],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 3);
    let out = mcpvisor(&dir, &["--json", "tools"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 12);
}

#[test]
fn bad_arguments_and_unknown_tools_are_clear_errors() {
    let dir = empty_dir("bad");
    let out = mcpvisor(&dir, &["call", "mcp__demo__echo", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid JSON"));
    // An unknown tool is a usage error: the nearest names, not the whole list.
    let out = mcpvisor(&dir, &["call", "mcp__demo__ech", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // (The helper sets RUST_LOG, so diagnostics come first; the error is the last line.)
    assert_eq!(
        stderr.trim().lines().last(),
        Some("mcpvisor: no tool `mcp__demo__ech`; did you mean `mcp__demo__echo`?")
    );
    let out = mcpvisor(&dir, &["call", "mcp__demo__zzzzzz", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "no tool `mcp__demo__zzzzzz`; `demo` has 12 tools (`mcpvisor tools demo` lists them)"
        ),
        "{stderr}"
    );
    // The short form gets the one name it can mean (a bare name too, from a
    // running serve's tools: serve/tests/it/attach.rs).
    for (typed, said) in [
        ("demo__echo", "did you mean `mcp__demo__echo`?"),
        ("echo", "`mcpvisor tools` lists them"),
    ] {
        let out = mcpvisor(&dir, &["call", typed, "text=x"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(said), "{typed}: {stderr}");
    }
    let out = mcpvisor(&dir, &["call", "mcp__demo__fail", "{}"]);
    assert_eq!(out.status.code(), Some(1), "a tool error exits non-zero");
}

#[test]
fn env_secrets_never_reach_output_or_logs() {
    let dir = empty_dir("secret");
    // Random per run: a secret a test run left behind cannot make this one pass.
    let secret = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("sk-{:016x}", h.finish())
    };
    let demo = env!("CARGO_BIN_EXE_mcpvisor");
    let config = serde_json::json!({"mcpServers": {
        "good": {"command": demo, "args": ["demo-server"], "env": {"API_TOKEN": secret}},
        "broken": {"command": "/nonexistent/server", "env": {"API_TOKEN": secret}},
        "typo": {"command": demo, "args": "not-a-list", "env": {"API_TOKEN": secret}}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    // The whole file is refused (args has the wrong type) without echoing any value.
    let out = mcpvisor(&dir, &["tools"]);
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(&secret), "{all}");
    assert!(all.contains(".mcp.json:1:"), "{all}");

    let config = serde_json::json!({"mcpServers": {
        "good": {"command": demo, "args": ["demo-server"], "env": {"API_TOKEN": secret}},
        "broken": {"command": "/nonexistent/server", "env": {"API_TOKEN": secret}}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for args in [
        &["enable", "good"][..],
        &["enable", "broken"],
        &["tools"],
        &["servers"],
        &["--json", "servers"],
        &["call", "mcp__good__echo", r#"{"text":"x"}"#],
    ] {
        let out = mcpvisor(
            &dir,
            &[&["--startup-timeout-ms", "1000"][..], args].concat(),
        );
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains(&secret), "secret leaked by {args:?}: {all}");
        let named = if args[0] == "enable" { args[1] } else { "good" };
        assert!(all.contains(named), "{args:?}: {all}");
        // The secret-bearing server really ran and answered: its absence above
        // is not the absence of the server.
        if args[0] == "call" {
            assert!(out.status.success(), "{all}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "x\n");
        }
        if args[0] == "tools" {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("mcp__good__echo"),
                "{all}"
            );
        }
    }
}

#[test]
fn ctrl_c_cancels_a_call_and_says_so() {
    a_stop_signal_cancels_a_call_and_says_so(Signal::SIGINT, 130);
}

/// A service manager's SIGTERM and a closed terminal's SIGHUP end a call the
/// same way, with their own exit codes.
#[test]
fn sigterm_and_sighup_cancel_a_call_and_say_so() {
    a_stop_signal_cancels_a_call_and_says_so(Signal::SIGTERM, 143);
    a_stop_signal_cancels_a_call_and_says_so(Signal::SIGHUP, 129);
}

fn a_stop_signal_cancels_a_call_and_says_so(signal: Signal, code: i32) {
    let dir = empty_dir(&format!("stop-{signal}"));
    let child = testkit::serve::mcpvisor(&dir)
        .args(["call", "mcp__demo__sleep", r#"{"ms":60000}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The CLI watches for Ctrl-C before it starts its server, so once the demo
    // server runs, the interrupt is handled (and the call, if not sent yet, never is).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !has_demo_child(child.id()) {
        assert!(Instant::now() < deadline, "demo server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "exited promptly"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{signal}: {stderr}");
    assert!(stderr.contains("call cancelled"), "{signal}: {stderr}");
}

/// True once `parent` has a child process running the demo server.
fn has_demo_child(parent: u32) -> bool {
    testkit::proc::processes().iter().any(|p| {
        let cmdline =
            std::fs::read_to_string(format!("/proc/{}/cmdline", p.pid)).unwrap_or_default();
        p.ppid == parent && cmdline.contains("demo-server")
    })
}
