//! The stdio transport: an MCP server as a child process.
//!
//! The child runs in its own process group, so teardown reaches everything it
//! forked. Messages are newline-delimited JSON-RPC (not LSP `Content-Length`
//! framing) with a hard frame limit. Stderr is read line by line into `tracing`,
//! and its last lines are kept for error messages. When stdout ends, every
//! pending request fails with the exit status and that stderr tail.

mod env;
mod exit_watch;
#[cfg(target_os = "linux")]
mod launch;
mod process;
mod reader;
mod spawner;
mod start;
mod stderr;
mod writer;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::STDIO_FRAME_LIMIT;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{ExitInfo, TransportError};
use crate::event::TransportSink;
use crate::secret::SecretString;
pub use env::{DEFAULT_PASSTHROUGH, child_environment, child_environment_names};
use process::ServerProcess;
use reader::StdoutReader;
use start::{launch_with_parent_death, spawn_plain};
use stderr::{StderrTail, pump_stderr};
pub use writer::StdioWriter;

/// What to run. Environment values are secrets: `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct StdioSpec {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How `args` are shown (`Debug`): as written before `${VAR}` expansion, since
    /// an expanded argument (`--api-key ${KEY}`) may hold a secret. `None`: every
    /// argument after the program is shown as `[redacted]` unless it is a flag.
    pub args_as_written: Option<Vec<String>>,
    /// The server's own variables. The child does not inherit the host's
    /// environment: it gets these, [`DEFAULT_PASSTHROUGH`] and the names in
    /// `env_passthrough` (here and in [`StdioOptions`]), see [`child_environment`].
    pub env: Vec<(String, SecretString)>,
    /// Host variables this server also gets, by name.
    pub env_passthrough: Vec<String>,
    /// Working directory; the host's when absent.
    pub cwd: Option<PathBuf>,
}

impl StdioSpec {
    /// A spec for `command` with `args`, no extra environment, the host's directory.
    pub fn new(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        StdioSpec {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            args_as_written: None,
            env: Vec::new(),
            env_passthrough: Vec::new(),
            cwd: None,
        }
    }
}

impl StdioSpec {
    /// The child's environment under `options` (see [`child_environment`]).
    fn environment(spec: &StdioSpec, options: &StdioOptions) -> Vec<(String, std::ffi::OsString)> {
        let names = options.env_passthrough.iter().chain(&spec.env_passthrough);
        child_environment(names.map(String::as_str), &spec.env, |n| {
            std::env::var_os(n)
        })
    }

    /// The names of the variables the child gets under `options`, for display.
    pub fn environment_names(&self, options: &StdioOptions) -> Vec<String> {
        let names = options.env_passthrough.iter().chain(&self.env_passthrough);
        child_environment_names(names.map(String::as_str), &self.env, |n| {
            std::env::var_os(n)
        })
    }
}

impl fmt::Debug for StdioSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, _)| format!("{k}=[redacted]"))
            .collect();
        let args: Vec<&str> = match &self.args_as_written {
            Some(written) => written.iter().map(String::as_str).collect(),
            None => self
                .args
                .iter()
                .map(|a| {
                    if a.starts_with('-') && !a.contains('=') {
                        a.as_str()
                    } else {
                        "[redacted]"
                    }
                })
                .collect(),
        };
        f.debug_struct("StdioSpec")
            .field("command", &self.command)
            .field("args", &args)
            .field("env", &env)
            .field("env_passthrough", &self.env_passthrough)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// Limits and timings of a stdio connection; start from the default and set
/// fields (it will grow).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioOptions {
    /// Longest line accepted from the server.
    pub frame_limit: usize,
    /// Stderr lines kept for error messages.
    pub stderr_tail_lines: usize,
    /// How long teardown waits after closing stdin, and again after SIGTERM.
    pub grace: Duration,
    /// How long to wait for the exit status once stdout has ended.
    pub exit_wait: Duration,
    /// Most bytes queued for a server that is not reading its stdin; past it a
    /// message is refused (a call fails) rather than buffered.
    pub write_backlog: usize,
    /// Host variables every server gets, by name, beyond [`DEFAULT_PASSTHROUGH`].
    pub env_passthrough: Vec<String>,
    /// Linux: each server gets SIGKILL when the host dies, however it dies (on by
    /// default). Such a server is started by a `vfork`-style clone that sets the
    /// signal before `exec` (see `stdio/launch.rs`); off, by Tokio's `Command`.
    pub die_with_host: bool,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            frame_limit: STDIO_FRAME_LIMIT,
            stderr_tail_lines: 20,
            grace: Duration::from_millis(500),
            exit_wait: Duration::from_secs(1),
            write_backlog: 16 * 1024 * 1024,
            env_passthrough: Vec::new(),
            die_with_host: true,
        }
    }
}

/// A signal for a server's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    /// SIGKILL.
    Kill,
    /// SIGSTOP: the processes freeze until continued.
    Stop,
    /// SIGCONT.
    Continue,
}

/// A running stdio server. Dropping it without [`StdioTransport::shutdown`]
/// still kills the whole process group.
pub struct StdioTransport {
    stdin: Arc<StdioWriter>,
    child: Arc<tokio::sync::Mutex<ServerProcess>>,
    pid: u32,
    tasks: Vec<JoinHandle<()>>,
    grace: Duration,
    down: bool,
    server: Arc<str>,
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("server", &self.server)
            .field("pid", &self.pid)
            .field("down", &self.down)
            .finish()
    }
}

impl StdioTransport {
    /// Starts the server and its reader tasks; events go to `sink`.
    pub fn spawn<S: TransportSink>(
        server: &str,
        spec: &StdioSpec,
        options: &StdioOptions,
        sink: Arc<S>,
    ) -> Result<StdioTransport, TransportError> {
        let spawn_err = |e: std::io::Error| TransportError::Spawn {
            command: spec.command.clone(),
            source: Arc::new(e),
        };
        let env = StdioSpec::environment(spec, options);
        let (child, pid, [stdin, stdout, stderr]) =
            if options.die_with_host && cfg!(target_os = "linux") {
                let runtime = tokio::runtime::Handle::try_current()
                    .map_err(|e| spawn_err(std::io::Error::other(e)))?;
                let (spec, env) = (spec.clone(), env);
                spawner::on_spawner_thread(runtime, move || launch_with_parent_death(&spec, &env))
                    .map_err(spawn_err)?
            } else {
                spawn_plain(spec, env, false).map_err(spawn_err)?
            };
        let stdin = pipe::Sender::from_owned_fd(stdin).map_err(spawn_err)?;
        let stdout = pipe::Receiver::from_owned_fd(stdout).map_err(spawn_err)?;
        let stderr = pipe::Receiver::from_owned_fd(stderr).map_err(spawn_err)?;
        let stdin = StdioWriter::new(stdin, options.write_backlog);
        let server: Arc<str> = Arc::from(server);
        let exit_watch = child.exit_watch(pid).map_err(spawn_err)?;
        let child = Arc::new(tokio::sync::Mutex::new(child));
        let tail = Arc::new(Mutex::new(StderrTail::new(options.stderr_tail_lines)));
        let (stderr_done_tx, stderr_done) = oneshot::channel();
        let stderr_task = {
            let (server, tail) = (server.clone(), tail.clone());
            tokio::spawn(async move {
                pump_stderr(stderr, server, tail).await;
                let _ = stderr_done_tx.send(());
            })
        };
        let reader = StdoutReader {
            sink,
            frame_limit: options.frame_limit,
            child: child.clone(),
            exit_watch,
            stderr_done,
            stderr_tail: tail,
            exit_wait: options.exit_wait,
            server: server.clone(),
        };
        let stdout_task = tokio::spawn(reader.run(stdout));
        let stdin_task = tokio::spawn(stdin.clone().run());
        tracing::debug!(server = %server, pid, command = %spec.command, "started stdio server");
        Ok(StdioTransport {
            stdin,
            child,
            pid,
            tasks: vec![stdout_task, stderr_task, stdin_task],
            grace: options.grace,
            down: false,
            server,
        })
    }

    /// The server's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` to the server's whole process group (fault injection).
    /// Refused once the leader may have been reaped: its process group id could
    /// then name another process's group.
    pub fn signal_group(&self, signal: GroupSignal) -> std::io::Result<()> {
        let gone = || std::io::Error::other("the server has already exited");
        if self.down {
            return Err(gone());
        }
        // The reader holds the lock while it reaps the leader at end of output.
        let Ok(mut child) = self.child.try_lock() else {
            return Err(gone());
        };
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(gone());
        }
        let signal = match signal {
            GroupSignal::Kill => Signal::SIGKILL,
            GroupSignal::Stop => Signal::SIGSTOP,
            GroupSignal::Continue => Signal::SIGCONT,
        };
        killpg(Pid::from_raw(self.pid as i32), signal).map_err(std::io::Error::from)
    }

    /// Closes the server's stdin, as if the host had let go of it (fault
    /// injection); the server sees end of input.
    pub fn close_stdin(&self) {
        self.stdin.close();
    }

    /// Writes one message; `line` must not contain a newline, one is appended.
    /// Never waits (see [`StdioWriter::write_line`]).
    pub fn send(&self, mut line: Vec<u8>) -> Result<(), TransportError> {
        line.push(b'\n');
        self.stdin.write_line(line)
    }

    /// The server's stdin, for tasks that write lines themselves. Lines written
    /// through it and through [`StdioTransport::send`] keep one order.
    pub fn writer(&self) -> Arc<StdioWriter> {
        self.stdin.clone()
    }

    /// Tears the server down: closes stdin, waits, then SIGTERM and SIGKILL to the
    /// whole process group, and reaps the child. Idempotent.
    pub async fn shutdown(&mut self) -> ExitInfo {
        if self.down {
            return ExitInfo(None);
        }
        // Readers first: they would otherwise hold the child lock or report a "crash".
        for task in self.tasks.drain(..) {
            task.abort();
        }
        self.stdin.close();
        let pgid = Pid::from_raw(self.pid as i32);
        let mut child = self.child.lock().await;
        let mut status = tokio::time::timeout(self.grace, child.wait()).await.ok();
        if status.is_none() {
            let _ = killpg(pgid, Signal::SIGTERM);
            // A stopped group (an injected stop) acts on SIGTERM only once continued.
            let _ = killpg(pgid, Signal::SIGCONT);
            status = tokio::time::timeout(self.grace, child.wait()).await.ok();
        }
        if status.is_none() {
            let _ = killpg(pgid, Signal::SIGKILL);
            status = Some(child.wait().await);
        }
        // Whatever the leader left behind in its group goes too.
        let _ = killpg(pgid, Signal::SIGKILL);
        self.down = true;
        let info = ExitInfo(status.and_then(Result::ok));
        tracing::debug!(server = %self.server, pid = self.pid, "stdio server stopped ({info})");
        info
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if !self.down {
            for task in self.tasks.drain(..) {
                task.abort();
            }
            self.stdin.close();
            // Last line of defence (a panic, an aborted task): no process outlives its transport.
            let _ = killpg(Pid::from_raw(self.pid as i32), Signal::SIGKILL);
        }
    }
}
