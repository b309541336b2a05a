//! The stdio floor: one JSON-RPC line through a pipe to `cat` and back.
//!
//! No MCP, no JSON parsing, no runtime: blocking writes and reads on this
//! thread. What is left is the cost of two pipe hops and the wake-ups of two
//! processes — no stdio client can go below it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};

use crate::servers::PAYLOAD;

/// The line both stdio floors send: a `tools/call` request as a client would.
pub(crate) fn request_line() -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{PAYLOAD}\"}}}}}}\n"
    )
    .into_bytes()
}

/// `cat` with our end of its pipes.
pub struct PipeFloor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    answer: Vec<u8>,
}

impl PipeFloor {
    /// Spawns `cat` and waits for the first line to come back.
    pub fn open() -> anyhow::Result<PipeFloor> {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning cat")?;
        let stdin = child.stdin.take().context("cat's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("cat's stdout")?);
        let mut floor = PipeFloor {
            child,
            stdin,
            stdout,
            line: request_line(),
            answer: Vec::new(),
        };
        floor.round_trip()?;
        Ok(floor)
    }

    fn send(&mut self) -> anyhow::Result<()> {
        self.stdin.write_all(&self.line)?;
        Ok(())
    }

    fn receive(&mut self) -> anyhow::Result<()> {
        self.answer.clear();
        let n = self.stdout.read_until(b'\n', &mut self.answer)?;
        ensure!(n == self.line.len(), "cat answered {n} bytes");
        Ok(())
    }

    fn round_trip(&mut self) -> anyhow::Result<()> {
        self.send()?;
        self.receive()
    }

    /// `calls` round trips one after another, each timed.
    pub fn sequential(&mut self, calls: usize) -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            self.round_trip()?;
            times.push(start.elapsed());
        }
        Ok(times)
    }

    /// Keeps `depth` lines in the pipe for `window`; returns the lines back inside it.
    pub fn pipelined(&mut self, depth: usize, window: Duration) -> anyhow::Result<u64> {
        for _ in 0..depth {
            self.send()?;
        }
        let deadline = Instant::now() + window;
        let (mut completed, mut outstanding) = (0, depth);
        while outstanding > 0 {
            self.receive()?;
            if Instant::now() < deadline {
                completed += 1;
                self.send()?;
            } else {
                outstanding -= 1;
            }
        }
        Ok(completed)
    }

    /// Closes `cat`'s input and reaps it.
    pub fn close(self) {
        let PipeFloor {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}
