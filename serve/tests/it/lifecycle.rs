//! Stopping `mcpvisor serve`: calls in flight on every transport are answered
//! with a shutdown error, every server process goes, the socket is removed,
//! and the exit code is 0.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use testkit::is_alive;
use testkit::proc::processes;

/// Every live process below `root`.
fn descendants(root: u32) -> Vec<u32> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for p in &all {
            if p.ppid == parent && p.is_live() && !found.contains(&p.pid) {
                found.push(p.pid);
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

/// Kills the serve if the test fails before it exits on its own.
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

#[test]
fn sigterm_answers_calls_in_flight_and_leaves_nothing() {
    a_stop_signal_answers_calls_in_flight_and_leaves_nothing(Signal::SIGTERM);
}

/// Ctrl-C in the terminal that runs `serve` stops it the same way.
#[test]
fn sigint_answers_calls_in_flight_and_leaves_nothing() {
    a_stop_signal_answers_calls_in_flight_and_leaves_nothing(Signal::SIGINT);
}

fn a_stop_signal_answers_calls_in_flight_and_leaves_nothing(signal: Signal) {
    let dir = testkit::scratch_dir(&format!("serve-stop-{signal}"));
    let mut child = Command::new(testkit::mcpvisor_exe())
        .args(["serve", "--stdio", "--http", "127.0.0.1:0", "--no-token"])
        .current_dir(&dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = KillOnDrop(Some(child.id()));
    let (tx, rx) = mpsc::channel::<String>();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let err_tx = tx.clone();
    std::thread::spawn(move || {
        for l in stderr.lines().map_while(Result::ok) {
            let _ = err_tx.send(format!("err:{l}"));
        }
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for l in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(format!("out:{l}"));
        }
    });
    let next = |pred: &dyn Fn(&str) -> bool| -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if pred(&l) => return l,
                Ok(l) => seen.push(l),
                Err(e) => panic!("nothing matching arrived ({e}); saw {seen:#?}"),
            }
        }
    };
    let url = next(&|l| l.starts_with("err:mcpvisor: serving "))
        .trim_start_matches("err:mcpvisor: serving ")
        .to_string();
    let socket = next(&|l| l.starts_with("err:mcpvisor: listening on "))
        .trim_start_matches("err:mcpvisor: listening on ")
        .to_string();
    assert!(std::path::Path::new(&socket).exists());

    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    stdin.write_all(line(init.clone()).as_bytes()).unwrap();
    stdin
        .write_all(
            line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).as_bytes(),
        )
        .unwrap();
    let sleep = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__demo__sleep", "arguments": {"ms": 60000}}});
    stdin.write_all(line(sleep.clone()).as_bytes()).unwrap();
    next(&|l| l.starts_with("out:") && l.contains("\"id\":1"));

    // The same over HTTP, on its own thread.
    let http = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = reqwest::Client::new();
            let opened = client
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(init.to_string())
                .send()
                .await
                .unwrap();
            let id = opened.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_string();
            client
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", &id)
                .body(sleep.to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    });

    // Both calls are running in the demo server before the signal.
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while descendants(pid).is_empty() {
        assert!(Instant::now() < deadline, "no server process under serve");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let processes = descendants(pid);
    kill(Pid::from_raw(pid as i32), signal).unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Everything it printed after the signal (both pipes are closed by now).
    let printed: Vec<String> = rx.iter().collect();
    assert!(status.success(), "{status}; printed {printed:#?}");
    let answer = printed
        .iter()
        .find_map(|l| l.strip_prefix("out:").filter(|l| l.contains("\"id\":2")))
        .unwrap_or_else(|| panic!("no answer to the call in flight; printed {printed:#?}"));
    let answer: Value = serde_json::from_str(answer).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{answer}"
    );
    let over_http = http.join().unwrap();
    assert!(over_http.contains("shutting down"), "{over_http}");
    guard.0 = None;
    assert!(status.success(), "{status}");
    assert!(!processes.is_empty());
    for p in processes {
        assert!(!is_alive(p), "process {p} outlived serve");
    }
    assert!(
        !std::path::Path::new(&socket).exists(),
        "the socket was left behind"
    );
}
