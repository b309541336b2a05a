//! However the CLI ends, its servers end with it: SIGTERM and SIGHUP clean up
//! like Ctrl-C (every process group, grandchildren that ignore SIGTERM
//! included), and a host killed outright takes its servers with it (Linux's
//! parent-death signal).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use testkit::{is_alive, live_group_members};

fn scratch(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("death-{tag}"))
}

/// `mcpvisor --json watch` on a one-server config whose server is `command args…`;
/// returns the CLI and the server's pid once it is ready.
fn watch(dir: &Path, command: &str, args: Value) -> (Child, u32) {
    let config = json!({"mcpServers": {"s": {"command": command, "args": args}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new(testkit::mcpvisor_exe());
        cmd.args(args)
            .current_dir(dir)
            .env("MCPVISOR_HOME", dir.join("home"));
        cmd
    };
    assert!(run(&["enable", "s"]).status().unwrap().success());
    let mut cli = run(&["--json", "watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(cli.stdout.take().unwrap()).lines();
    let pid = loop {
        let line = lines
            .next()
            .expect("watch ended before the server was ready")
            .unwrap();
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["event"] == "server_ready" {
            break event["pid"].as_u64().unwrap() as u32;
        }
    };
    // Keep reading so the CLI never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (cli, pid)
}

fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

#[test]
fn sigterm_and_sighup_tear_down_every_group_like_ctrl_c() {
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let dir = scratch(&format!("{signal:?}"));
        // The grandchild ignores SIGTERM: only the group's SIGKILL ends it.
        let (mut cli, pid) = watch(
            &dir,
            testkit::mcpvisor_exe(),
            json!(["demo-server", "--grandchild"]),
        );
        assert!(
            eventually(Duration::from_secs(5), || live_group_members(pid).len()
                >= 2),
            "the grandchild runs in the server's group"
        );
        kill(Pid::from_raw(cli.id() as i32), signal).unwrap();
        let status = cli.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal:?}: {status:?}");
        assert!(
            eventually(Duration::from_secs(5), || live_group_members(pid)
                .is_empty()),
            "{signal:?} left {:?} running in group {pid}",
            live_group_members(pid)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_host_killed_outright_takes_its_servers_with_it() {
    let dir = scratch("sigkill");
    // A server that would outlive its stdin: the shell waits on after the demo
    // server exits at EOF, as a server with its own work would.
    let (mut cli, pid) = watch(
        &dir,
        "sh",
        json!([
            "-c",
            "\"$0\" demo-server; sleep 1000",
            testkit::mcpvisor_exe()
        ]),
    );
    assert!(is_alive(pid));
    kill(Pid::from_raw(cli.id() as i32), Signal::SIGKILL).unwrap();
    cli.wait().unwrap();
    let gone = eventually(Duration::from_secs(10), || !is_alive(pid));
    // Clean up what a failure would leave behind.
    let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    assert!(gone, "server {pid} outlived its killed host");
    let _ = std::fs::remove_dir_all(&dir);
}
