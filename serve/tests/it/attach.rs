//! `mcpvisor serve` and the commands that attach to it through its local
//! socket: `tools`, `call`, `servers`, `watch` and `restart` see one running
//! supervisor; `--no-attach` and the absence of a serve keep the one-shot path;
//! one serve per configuration, a stale socket is replaced, and a stopped serve
//! leaves neither its socket nor a server process behind.
//!
//! Every child is waited for with a bound and killed when the bound passes, so
//! a hang fails the test instead of blocking the run.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use testkit::proc::{is_alive, live_group_members, parent_of, stat};
use testkit::serve::wait_timeout;

/// From start to the "listening on" line of `mcpvisor serve`.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);
/// From SIGTERM (or SIGINT) to the exit of a long-running command.
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);
/// Restarts come quickly in these tests.
const FAST_RESTARTS: [&str; 2] = ["--restart-initial-backoff-ms", "50"];

/// A fresh directory without `.mcp.json`, so every command uses the demo server;
/// its `home/` is `MCPVISOR_HOME`.
fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-attach", tag)
}

use testkit::attached::{
    COMMAND_TIMEOUT, Lines, Running, describe, eventually, kill_group, mcpvisor, run,
};

/// Runs a command that must succeed; returns its stdout.
fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(out.status.success(), "{}", describe(args, &out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `mcpvisor [flags] call mcp__demo__pid '{}'`: the demo server's pid.
fn demo_pid(dir: &Path, flags: &[&str]) -> u32 {
    let args = [flags, &["call", "mcp__demo__pid", "{}"]].concat();
    let stdout = run_ok(dir, &args);
    stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("`mcpvisor {}` printed {stdout:?}", args.join(" ")))
}

/// Live processes whose working directory is `dir` (every command and server
/// these tests start runs there), with their command lines.
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    testkit::proc::processes()
        .into_iter()
        .filter(|s| s.is_live())
        .filter(|s| std::fs::read_link(format!("/proc/{}/cwd", s.pid)).is_ok_and(|c| c == dir))
        .map(|s| {
            let cmdline = std::fs::read(format!("/proc/{}/cmdline", s.pid)).unwrap_or_default();
            (s.pid, String::from_utf8_lossy(&cmdline).replace('\0', " "))
        })
        .collect()
}

/// A running `mcpvisor serve`; stopped (SIGTERM, then SIGKILL) when dropped.
struct Serve {
    child: Child,
    stderr: Lines,
    socket: PathBuf,
}

impl Serve {
    /// Starts `mcpvisor <args>` (args include `serve`) and waits for its socket.
    fn start(dir: &Path, args: &[&str]) -> Serve {
        let mut child = mcpvisor(dir)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("start mcpvisor serve");
        let stderr = Lines::start(child.stderr.take().unwrap());
        let line = stderr.wait_for(LISTEN_TIMEOUT, |l| l.starts_with("mcpvisor: listening on "));
        let Some(line) = line else {
            kill_group(&mut child);
            panic!(
                "`mcpvisor {}` printed no listening line within {LISTEN_TIMEOUT:?}\nstderr:\n{}",
                args.join(" "),
                stderr.finish(Duration::from_secs(1))
            );
        };
        let socket = PathBuf::from(line.trim_start_matches("mcpvisor: listening on "));
        Serve {
            child,
            stderr,
            socket,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` and returns the exit status (fails the test after [`EXIT_TIMEOUT`]).
    fn stop(&mut self, signal: Signal) -> ExitStatus {
        kill(Pid::from_raw(self.pid() as i32), signal).expect("signal serve");
        match wait_timeout(&mut self.child, EXIT_TIMEOUT) {
            Some(status) => status,
            None => {
                kill_group(&mut self.child);
                panic!(
                    "serve still running {EXIT_TIMEOUT:?} after {signal}\nstderr:\n{}",
                    self.stderr.finish(Duration::from_secs(1))
                );
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = kill(Pid::from_raw(self.pid() as i32), Signal::SIGTERM);
            if wait_timeout(&mut self.child, EXIT_TIMEOUT).is_none() {
                kill_group(&mut self.child);
            }
        }
    }
}

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

#[test]
fn one_serve_per_configuration_a_stale_socket_is_replaced_and_stop_leaves_nothing() {
    let dir = empty_dir("single");
    let mut first = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    let first_demo = demo_pid(&dir, &[]);

    let second = run(&dir, &["serve"]);
    assert!(
        !second.status.success(),
        "{}",
        describe(&["serve"], &second)
    );
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("already running"), "{said}");
    assert_eq!(
        demo_pid(&dir, &[]),
        first_demo,
        "the first serve still serves"
    );

    // A serve that is killed cannot remove its socket.
    let status = first.stop(Signal::SIGKILL);
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    assert!(
        first.socket.exists(),
        "the killed serve's socket {} stays",
        first.socket.display()
    );
    assert!(
        eventually(Duration::from_secs(10), || !is_alive(first_demo)),
        "the killed serve's demo server {first_demo} outlived it"
    );
    // Meanwhile the commands see that nobody answers there and run on their own.
    let alone = demo_pid(&dir, &[]);
    assert_ne!(alone, first_demo);
    let out = run(&dir, &["restart", "demo"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        describe(&["restart", "demo"], &out)
    );

    let mut next = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    assert_eq!(
        next.socket, first.socket,
        "the same configuration, the same socket"
    );
    // The socket now leads to the new serve: a call attaches to its server.
    let next_demo = demo_pid(&dir, &[]);
    assert_ne!(next_demo, first_demo);
    assert_eq!(
        parent_of(next_demo),
        Some(next.pid()),
        "the call reached the new serve's demo server"
    );
    assert_eq!(demo_pid(&dir, &[]), next_demo);

    let status = next.stop(Signal::SIGTERM);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        next.stderr.finish(Duration::from_secs(2))
    );
    assert!(
        !next.socket.exists(),
        "the socket {} is removed on exit",
        next.socket.display()
    );
    assert!(!is_alive(next_demo), "serve's demo server stopped with it");
    assert!(
        eventually(Duration::from_secs(2), || live_group_members(next_demo)
            .is_empty()),
        "the demo server's group still has {:?}",
        live_group_members(next_demo)
    );
    assert!(
        eventually(Duration::from_secs(2), || processes_in(&dir).is_empty()),
        "processes left in the project directory: {:?}",
        processes_in(&dir)
    );
    // Nothing runs: the commands are one-shot again.
    let out = run(&dir, &["restart", "demo"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_socket_is_private_to_its_owner() {
    let dir = empty_dir("modes");
    let mut serve = Serve::start(&dir, &["serve"]);
    let meta = std::fs::symlink_metadata(&serve.socket).unwrap();
    assert!(meta.file_type().is_socket(), "{}", serve.socket.display());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let parent = serve.socket.parent().unwrap();
    assert_eq!(parent, dir.join("home").join("run"));
    let meta = std::fs::symlink_metadata(parent).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

#[test]
fn stopping_serve_answers_attached_commands_and_leaves_nothing() {
    let dir = empty_dir("stop");
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    let demo = demo_pid(&dir, &[]);
    let mut watch = Running::start(&dir, &["watch"]);
    watch.wait_watching(&dir, "demo");
    let mut call = Running::start(&dir, &["call", "mcp__demo__sleep", r#"{"ms":60000}"#]);
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(
        matches!(call.child.try_wait(), Ok(None)),
        "the sleep call is in flight\n{}",
        call.output()
    );

    let started = Instant::now();
    let status = serve.stop(Signal::SIGTERM);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        serve.stderr.finish(Duration::from_secs(2))
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "serve took {:?} to stop",
        started.elapsed()
    );

    // The call in flight is told that serve went away, instead of hanging.
    let Some(code) = wait_timeout(&mut call.child, EXIT_TIMEOUT) else {
        panic!(
            "the attached call outlived serve by {EXIT_TIMEOUT:?}\n{}",
            call.output()
        );
    };
    assert_eq!(code.code(), Some(1), "{}", call.output());
    let said = call.stdout.finish(Duration::from_secs(2));
    assert!(said.contains("shutting down"), "{}", call.output());

    let Some(code) = wait_timeout(&mut watch.child, EXIT_TIMEOUT) else {
        panic!(
            "watch outlived serve by {EXIT_TIMEOUT:?}\n{}",
            watch.output()
        );
    };
    assert_eq!(code.code(), Some(0), "{}", watch.output());
    assert!(
        watch
            .stderr
            .finish(Duration::from_secs(2))
            .contains("serve stopped"),
        "{}",
        watch.output()
    );

    assert!(!serve.socket.exists(), "the socket is removed on exit");
    assert!(!is_alive(demo));
    assert!(
        eventually(Duration::from_secs(2), || processes_in(&dir).is_empty()),
        "processes left in the project directory: {:?}",
        processes_in(&dir)
    );
}

#[test]
fn a_configured_project_is_attached_from_its_directory_and_by_path() {
    let dir = empty_dir("configured");
    let config = serde_json::json!({"mcpServers": {
        "svc": {"command": testkit::mcpvisor_exe(), "args": ["demo-server"]}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    run_ok(&dir, &["enable", "svc"]);
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());

    let pid = |cwd: &Path, flags: &[&str]| -> u32 {
        let args = [flags, &["call", "mcp__svc__pid", "{}"]].concat();
        let mut cmd = mcpvisor(cwd);
        // The home of the project, wherever the command runs.
        cmd.env("MCPVISOR_HOME", dir.join("home")).args(&args);
        let mut child = cmd.spawn().unwrap();
        let stdout = Lines::start(child.stdout.take().unwrap());
        let stderr = Lines::start(child.stderr.take().unwrap());
        let Some(status) = wait_timeout(&mut child, COMMAND_TIMEOUT) else {
            kill_group(&mut child);
            panic!("`mcpvisor {}` hung\n{}", args.join(" "), stderr.text());
        };
        let out = stdout.finish(Duration::from_secs(5));
        assert!(
            status.success(),
            "`mcpvisor {}`: {status}\n{out}\n{}",
            args.join(" "),
            stderr.finish(Duration::from_secs(5))
        );
        out.trim().parse().unwrap()
    };
    let here = pid(&dir, &[]);
    assert_eq!(parent_of(here), Some(serve.pid()));
    let elsewhere = empty_dir("configured-elsewhere");
    let config_path = dir.join(".mcp.json");
    let by_path = pid(&elsewhere, &["--config", config_path.to_str().unwrap()]);
    assert_eq!(by_path, here, "--config names the same configuration");
    let explicit = pid(&dir, &["--config", ".mcp.json"]);
    assert_eq!(explicit, here);

    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

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
