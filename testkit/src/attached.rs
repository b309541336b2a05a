//! CLI commands run against a running `mcpvisor serve` from a test: each one
//! bounded in time (a hang fails the test, its process group killed), long
//! ones (`watch`, `serve --stdio`) read line by line as they go.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::serve::wait_timeout;

/// A one-shot CLI command, from start to exit.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// `mcpvisor` in `dir` (home `dir/home`, its own process group), output piped.
pub fn mcpvisor(dir: &Path) -> Command {
    let mut cmd = super::serve::mcpvisor(dir);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The lines a pipe yields, as they come (and all of them so far).
pub struct Lines {
    rx: mpsc::Receiver<String>,
    all: Arc<Mutex<String>>,
    ended: Arc<Mutex<bool>>,
}

impl Lines {
    /// Reads `pipe` on a thread of its own.
    pub fn start(pipe: impl Read + Send + 'static) -> Lines {
        let (tx, rx) = mpsc::channel();
        let all = Arc::new(Mutex::new(String::new()));
        let ended = Arc::new(Mutex::new(false));
        let (sink, end) = (all.clone(), ended.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                {
                    let mut sink = sink.lock().unwrap();
                    sink.push_str(&line);
                    sink.push('\n');
                }
                let _ = tx.send(line);
            }
            *end.lock().unwrap() = true;
        });
        Lines { rx, all, ended }
    }

    /// The first line from now on that satisfies `pred`, within `within`.
    pub fn wait_for(&self, within: Duration, mut pred: impl FnMut(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.rx.recv_timeout(left) {
                Ok(line) if pred(&line) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.all.lock().unwrap().clone()
    }

    /// Everything, once the pipe ends (or what came within `within`).
    pub fn finish(&self, within: Duration) -> String {
        let deadline = Instant::now() + within;
        while !*self.ended.lock().unwrap() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.text()
    }
}

/// Kills `child`'s process group and reaps it.
pub fn kill_group(child: &mut Child) {
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    let _ = child.wait();
}

/// Runs a one-shot command in `dir`; fails the test if it does not end in time.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    let mut child = mcpvisor(dir).args(args).spawn().expect("start mcpvisor");
    let stdout = Lines::start(child.stdout.take().unwrap());
    let stderr = Lines::start(child.stderr.take().unwrap());
    let Some(status) = wait_timeout(&mut child, COMMAND_TIMEOUT) else {
        kill_group(&mut child);
        panic!(
            "`mcpvisor {}` still running after {COMMAND_TIMEOUT:?}\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            stdout.finish(Duration::from_secs(1)),
            stderr.finish(Duration::from_secs(1)),
        );
    };
    Output {
        status,
        stdout: stdout.finish(Duration::from_secs(5)).into_bytes(),
        stderr: stderr.finish(Duration::from_secs(5)).into_bytes(),
    }
}

/// A command's exit and output, for a failed assertion.
pub fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "`mcpvisor {}` exited with {}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a command that must succeed; returns its stdout.
pub fn run_ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(out.status.success(), "{}", describe(args, &out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `mcpvisor call mcp__<server>__pid '{}'`: the server's pid, or `None` when
/// the call failed (the server is down or restarting).
pub fn try_pid(dir: &Path, server: &str) -> Option<u32> {
    let out = run(dir, &["call", &format!("mcp__{server}__pid"), "{}"]);
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The server's pid; the call must succeed.
pub fn pid(dir: &Path, server: &str) -> u32 {
    try_pid(dir, server).unwrap_or_else(|| panic!("mcp__{server}__pid failed"))
}

/// Polls `cond` until it holds or `within` passes.
pub fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A long-running command (`watch`); killed with its group when dropped.
pub struct Running {
    /// The process.
    pub child: Child,
    /// Its stdout, line by line.
    pub stdout: Lines,
    /// Its stderr, line by line.
    pub stderr: Lines,
}

impl Running {
    /// Starts `mcpvisor <args>` in `dir`.
    pub fn start(dir: &Path, args: &[&str]) -> Running {
        let mut child = mcpvisor(dir).args(args).spawn().expect("start mcpvisor");
        let stdout = Lines::start(child.stdout.take().unwrap());
        let stderr = Lines::start(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Both outputs so far, for a failed assertion.
    pub fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.text(),
            self.stderr.text()
        )
    }

    /// Returns once a `watch` prints events: a log line of `server`'s, asked
    /// for again until one shows.
    pub fn wait_watching(&mut self, dir: &Path, server: &str) {
        for attempt in 0..30 {
            assert!(
                matches!(self.child.try_wait(), Ok(None)),
                "watch exited early\n{}",
                self.output()
            );
            let marker = format!("watching-marker-{attempt}");
            run_ok(
                dir,
                &[
                    "call",
                    &format!("mcp__{server}__log"),
                    &format!(r#"{{"message":"{marker}"}}"#),
                ],
            );
            let seen = self
                .stdout
                .wait_for(Duration::from_millis(500), |l| l.contains(&marker));
            if seen.is_some() {
                return;
            }
        }
        panic!(
            "watch printed none of {server}'s log lines\n{}",
            self.output()
        );
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_group(&mut self.child);
        }
    }
}
