//! The stdin side of a stdio connection: lines out, from any task.
//!
//! A caller writes its line itself with a non-blocking write, so a call reaches
//! the server without waking another task. Only when the pipe is full (the
//! server is slow to read, or not reading at all) does the rest of the line
//! wait in a queue that one writer task drains when the pipe is writable again;
//! while anything is queued, later lines queue behind it, so the server sees
//! lines whole and in order. The queue is bounded in bytes: past the bound a
//! write is refused instead of buffered.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::error::TransportError;

/// Writes whole lines to a server's stdin; shared by every task that sends.
pub struct StdioWriter {
    state: Mutex<WriterState>,
    wake: Notify,
    backlog_limit: usize,
}

struct WriterState {
    /// `None` once closed (teardown) or after a failed write.
    pipe: Option<Arc<pipe::Sender>>,
    queue: VecDeque<Vec<u8>>,
    /// Bytes of the queue's front already written.
    written: usize,
    /// Bytes still to write, over the whole queue.
    queued: usize,
    failure: Option<Arc<io::Error>>,
}

impl StdioWriter {
    pub(crate) fn new(pipe: pipe::Sender, backlog_limit: usize) -> Arc<StdioWriter> {
        Arc::new(StdioWriter {
            state: Mutex::new(WriterState {
                pipe: Some(Arc::new(pipe)),
                queue: VecDeque::new(),
                written: 0,
                queued: 0,
                failure: None,
            }),
            wake: Notify::new(),
            backlog_limit,
        })
    }

    /// Sends one line, which must end with its newline and contain no other.
    ///
    /// Never waits: the line is written now, or what the pipe did not take is
    /// queued for the writer task. Fails with [`TransportError::Backlog`] when the
    /// server has left more than the backlog limit unread (a line is always
    /// accepted into an empty queue, so one large message can still be sent).
    pub fn write_line(&self, line: Vec<u8>) -> Result<(), TransportError> {
        let mut state = self.state.lock();
        let pipe = match &state.pipe {
            Some(pipe) => pipe.clone(),
            None => return Err(state.closed_error()),
        };
        if !state.queue.is_empty() {
            if state.queued + line.len() > self.backlog_limit {
                return Err(TransportError::Backlog {
                    limit: self.backlog_limit,
                });
            }
            state.queued += line.len();
            state.queue.push_back(line);
            return Ok(());
        }
        let mut written = 0;
        while written < line.len() {
            match pipe.try_write(&line[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(state.fail(e)),
            }
        }
        if written < line.len() {
            state.queued = line.len() - written;
            state.written = written;
            state.queue.push_back(line);
            drop(state);
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Closes stdin: the server reads end of file once nothing else holds the pipe.
    /// Queued lines are dropped. Idempotent.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        state.pipe = None;
        state.queue.clear();
        state.queued = 0;
        drop(state);
        self.wake.notify_one();
    }

    /// Drains the queue whenever a write left something in it; ends when the
    /// writer is closed or a write fails.
    pub(crate) async fn run(self: Arc<Self>) {
        loop {
            self.wake.notified().await;
            loop {
                let pipe = {
                    let state = self.state.lock();
                    match &state.pipe {
                        None => return,
                        Some(_) if state.queue.is_empty() => break,
                        Some(pipe) => pipe.clone(),
                    }
                };
                // A close (or a new line) wakes this wait too, so a closed writer
                // never keeps the pipe open while the server is not reading.
                tokio::select! {
                    ready = pipe.writable() => {
                        if let Err(e) = ready {
                            self.state.lock().fail(e);
                            return;
                        }
                    }
                    () = self.wake.notified() => {}
                }
                drop(pipe);
                if self.state.lock().drain().is_err() {
                    return;
                }
            }
        }
    }
}

impl WriterState {
    /// Writes queued bytes until the queue is empty or the pipe is full.
    fn drain(&mut self) -> Result<(), TransportError> {
        let Some(pipe) = self.pipe.clone() else {
            return Err(self.closed_error());
        };
        while let Some(front) = self.queue.front() {
            match pipe.try_write(&front[self.written..]) {
                Ok(n) => {
                    self.written += n;
                    self.queued -= n;
                    if self.written == front.len() {
                        self.queue.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(())
    }

    /// A failed write ends the writer: the process is going away, and the reader
    /// reports its exit with the status, which says more.
    fn fail(&mut self, e: io::Error) -> TransportError {
        let e = Arc::new(e);
        self.failure = Some(e.clone());
        self.pipe = None;
        self.queue.clear();
        self.queued = 0;
        TransportError::Write(e)
    }

    fn closed_error(&self) -> TransportError {
        match &self.failure {
            Some(e) => TransportError::Write(e.clone()),
            None => TransportError::Closed,
        }
    }
}
