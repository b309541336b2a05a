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

mod calls;
mod commands;
mod lifecycle;
