//! The stdio floor as an async client pays it: the same line through a pipe to
//! `cat`, but with Tokio's epoll-driven pipes on the harness's runtime.
//!
//! Compared with [`super::PipeFloor`] it adds what every async client has to
//! pay — the reactor, parking and waking runtime threads — and nothing of MCP.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::floor_pipe::request_line;

/// `cat` with async ends of its pipes.
pub struct TokioPipeFloor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    answer: Vec<u8>,
}

impl TokioPipeFloor {
    /// Spawns `cat` and waits for the first line to come back.
    pub async fn open() -> anyhow::Result<TokioPipeFloor> {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("spawning cat")?;
        let stdin = child.stdin.take().context("cat's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("cat's stdout")?);
        let mut floor = TokioPipeFloor {
            child,
            stdin,
            stdout,
            line: request_line(),
            answer: Vec::new(),
        };
        floor.send().await?;
        floor.receive().await?;
        Ok(floor)
    }

    async fn send(&mut self) -> anyhow::Result<()> {
        self.stdin.write_all(&self.line).await?;
        Ok(())
    }

    async fn receive(&mut self) -> anyhow::Result<()> {
        self.answer.clear();
        let n = self.stdout.read_until(b'\n', &mut self.answer).await?;
        ensure!(n == self.line.len(), "cat answered {n} bytes");
        Ok(())
    }

    /// `calls` round trips one after another, each timed.
    pub async fn sequential(&mut self, calls: usize) -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            self.send().await?;
            self.receive().await?;
            times.push(start.elapsed());
        }
        Ok(times)
    }

    /// Keeps `depth` lines in the pipe for `window`; returns the lines back inside it.
    pub async fn pipelined(&mut self, depth: usize, window: Duration) -> anyhow::Result<u64> {
        for _ in 0..depth {
            self.send().await?;
        }
        let deadline = Instant::now() + window;
        let (mut completed, mut outstanding) = (0, depth);
        while outstanding > 0 {
            self.receive().await?;
            if Instant::now() < deadline {
                completed += 1;
                self.send().await?;
            } else {
                outstanding -= 1;
            }
        }
        Ok(completed)
    }

    /// Closes `cat`'s input and reaps it.
    pub async fn close(self) {
        let TokioPipeFloor {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait().await;
    }
}
