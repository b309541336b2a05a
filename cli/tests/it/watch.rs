//! `mcpvisor watch` without a `serve`: it runs the servers itself and prints
//! their state changes as they happen. A demo server killed under it shows as
//! down and then ready again with a new pid; Ctrl-C ends the watch cleanly (0)
//! and takes the server with it. The attached watch: serve/tests/it/attach.rs.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use testkit::is_alive;
use testkit::serve::mcpvisor;

fn scratch(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("watch-{tag}"))
}

/// The next event of `kind` for `demo` (up to 20 s); the events skipped go to `seen`.
fn next_event(lines: &Receiver<String>, kind: &str, seen: &mut Vec<String>) -> Value {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no {kind} event; the watch printed {seen:#?}"));
        seen.push(line.clone());
        let event: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON event ({e}): {line}"));
        if event["event"] == kind && event["server"] == "demo" {
            return event;
        }
    }
}

#[test]
fn watch_shows_a_killed_server_come_back_and_ends_on_ctrl_c() {
    let dir = scratch("restart");
    let config = json!({"mcpServers": {"demo": {
        "command": env!("CARGO_BIN_EXE_mcpvisor"), "args": ["demo-server"],
    }}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    assert!(
        mcpvisor(&dir)
            .args(["enable", "demo"])
            .status()
            .unwrap()
            .success()
    );

    let mut watch = mcpvisor(&dir)
        .args(["--json", "watch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = watch.stdout.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    let mut seen = Vec::new();
    let first = next_event(&lines, "server_ready", &mut seen)["pid"]
        .as_u64()
        .unwrap() as i32;

    kill(Pid::from_raw(first), Signal::SIGKILL).unwrap();
    next_event(&lines, "server_restarting", &mut seen);
    let second = next_event(&lines, "server_ready", &mut seen)["pid"]
        .as_u64()
        .unwrap() as i32;
    assert_ne!(second, first, "{seen:#?}");
    assert!(is_alive(second as u32));

    kill(Pid::from_raw(watch.id() as i32), Signal::SIGINT).unwrap();
    let (done, status) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(watch.wait());
    });
    let status = status
        .recv_timeout(Duration::from_secs(20))
        .expect("the watch still runs after Ctrl-C")
        .unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "Ctrl-C ends a watch cleanly: {status:?}"
    );
    let gone = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        !is_alive(second as u32)
    });
    assert!(gone, "the server outlived the watch");
    let _ = std::fs::remove_dir_all(&dir);
}
