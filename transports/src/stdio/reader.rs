//! The stdout side of a stdio connection: frames in, events out.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::{FrameDecoder, FrameError, Message};
use parking_lot::Mutex;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use super::exit_watch::ExitWatch;
use super::process::ServerProcess;
use super::stderr::StderrTail;
use crate::error::{ExitInfo, TransportError};
use crate::event::{TransportEvent, TransportSink};

/// Bytes read from the server's stdout at a time.
const READ_BUFFER: usize = 16 * 1024;

pub(crate) struct StdoutReader<S> {
    pub(crate) sink: Arc<S>,
    pub(crate) frame_limit: usize,
    pub(crate) child: Arc<tokio::sync::Mutex<ServerProcess>>,
    pub(crate) exit_watch: ExitWatch,
    pub(crate) stderr_done: oneshot::Receiver<()>,
    pub(crate) stderr_tail: Arc<Mutex<StderrTail>>,
    pub(crate) exit_wait: Duration,
    pub(crate) server: Arc<str>,
}

impl<S: TransportSink> StdoutReader<S> {
    pub(crate) async fn run(mut self, stdout: pipe::Receiver) {
        let mut decoder = FrameDecoder::new(self.frame_limit);
        let mut parsed = Vec::new();
        // Set once the leader has exited: the rest of the output is read until
        // this deadline at most (a process that left the group may hold the pipe).
        let mut draining_until = None;
        'output: loop {
            let ready = match draining_until {
                None => tokio::select! {
                    biased;
                    ready = stdout.readable() => ready,
                    () = self.exit_watch.exited() => {
                        // The server is dead even if its pipes are not: what it
                        // left in its group goes, and its output ends.
                        self.exit_watch.end_group();
                        tracing::debug!(server = %self.server, "stdio server's process exited");
                        draining_until = Some(tokio::time::Instant::now() + self.exit_wait);
                        continue;
                    }
                },
                Some(until) => match tokio::time::timeout_at(until, stdout.readable()).await {
                    Ok(ready) => ready,
                    Err(_) => break 'output,
                },
            };
            if let Err(e) = ready {
                self.sink
                    .deliver(TransportEvent::Closed(TransportError::Read(Arc::new(e))))
                    .await;
                return;
            }
            // An idle connection holds no read buffer: one is taken when output
            // is ready and given back once a read would wait. Big enough that a
            // 1 MiB frame takes 64 reads; not zeroed, the kernel writes into it.
            let mut buf: Vec<u8> = Vec::with_capacity(READ_BUFFER);
            loop {
                buf.clear();
                let n = match stdout.try_read_buf(&mut buf) {
                    Ok(0) => break 'output,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        self.sink
                            .deliver(TransportEvent::Closed(TransportError::Read(Arc::new(e))))
                            .await;
                        return;
                    }
                };
                let pushed = decoder.push(&buf[..n], |frame| {
                    parsed.push(match Message::parse(frame) {
                        Ok(incoming) => TransportEvent::Message(incoming),
                        Err(e) => TransportEvent::unparsed(frame, e),
                    })
                });
                for event in parsed.drain(..) {
                    if !self.sink.deliver(event).await {
                        return;
                    }
                }
                if draining_until.is_some_and(|until| tokio::time::Instant::now() >= until) {
                    break 'output;
                }
                if let Err(FrameError::TooLarge { limit }) = pushed {
                    // The connection is no longer trustworthy: the owner tears it down.
                    self.sink
                        .deliver(TransportEvent::Closed(TransportError::FrameTooLarge {
                            limit,
                        }))
                        .await;
                    return;
                }
            }
        }
        if let Err(e) = decoder.finish() {
            tracing::warn!(server = %self.server, "{e}");
        }
        let status = self.exit_status().await;
        let stderr_tail = self.stderr_tail.lock().joined();
        self.sink
            .deliver(TransportEvent::Closed(TransportError::Exited {
                status,
                stderr_tail,
            }))
            .await;
    }

    /// Waits a little for stderr to drain and the process to end, so the error can say how it ended.
    async fn exit_status(&mut self) -> ExitInfo {
        let _ = tokio::time::timeout(self.exit_wait, &mut self.stderr_done).await;
        let mut child = self.child.lock().await;
        match tokio::time::timeout(self.exit_wait, child.wait()).await {
            Ok(Ok(status)) => ExitInfo(Some(status)),
            _ => ExitInfo(None),
        }
    }
}
