//! State shared by the read loop and the per-call tasks.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use mcpvisor_protocol::RequestId;
use mcpvisor_protocol::wire::jsonrpc::{Message, Notification};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::AbortHandle;

use super::hostile::Hostile;
use super::tools::ToolTable;

/// Lines queued for stdout; bounded so a client that stops reading slows us down
/// instead of growing memory without end.
pub(crate) const OUTBOX_CAPACITY: usize = 1024;

/// What the stdout writer is asked to do.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// Write these bytes as they are.
    Bytes(Vec<u8>),
    /// Flush, then report that everything queued before has been written.
    Flush(oneshot::Sender<()>),
}

/// The sending side of the single stdout writer.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Outgoing>,
}

impl Outbox {
    pub(crate) fn new(tx: mpsc::Sender<Outgoing>) -> Self {
        Outbox { tx }
    }

    /// Queues one message as one line.
    pub(crate) async fn send(&self, message: &Message) {
        let mut line = message.to_vec();
        line.push(b'\n');
        self.send_raw(line).await;
    }

    /// Queues bytes exactly as given (a hostile server's garbage, half a line).
    pub(crate) async fn send_raw(&self, bytes: Vec<u8>) {
        // The writer only goes away when stdout is broken; nobody is left to tell.
        let _ = self.tx.send(Outgoing::Bytes(bytes)).await;
    }

    /// Waits until everything queued so far has reached stdout.
    pub(crate) async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.tx.send(Outgoing::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }

    /// Queues a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method, Some(params));
        self.send(&Message::Notification(n)).await;
    }
}

/// A `tools/call` whose task has not yet committed to answering.
#[derive(Debug)]
struct Call {
    tool: String,
    /// Set right after the task is spawned; `None` only in that short window.
    abort: Option<AbortHandle>,
}

/// Everything the connection's tasks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) outbox: Outbox,
    pub(crate) tools: Mutex<ToolTable>,
    pub(crate) page_size: usize,
    pub(crate) grandchild_pid: Option<u32>,
    pub(crate) hostile: Option<Hostile>,
    /// Answers the client sent to our own requests (`--hostile server-requests`).
    pub(crate) client_answers: Mutex<Vec<Value>>,
    /// Answer lines held back to be sent in reverse order (`--hostile out-of-order`).
    pub(crate) held_answers: Mutex<Vec<Vec<u8>>>,
    in_flight: Mutex<HashMap<RequestId, Call>>,
    cancellations: Mutex<Vec<Value>>,
    /// Woken whenever a call leaves `in_flight`, so shutdown can wait for idleness.
    idle: Notify,
    /// The level the client set (`logging/setLevel`): quieter messages are not sent.
    pub(crate) log_level: Mutex<Option<mcpvisor_protocol::mcp::logging::LogLevel>>,
}

/// Locks ignoring poisoning: every critical section here leaves the data valid.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(
        outbox: Outbox,
        tools: ToolTable,
        page_size: usize,
        grandchild_pid: Option<u32>,
        hostile: Option<Hostile>,
    ) -> Self {
        Shared {
            outbox,
            tools: Mutex::new(tools),
            page_size,
            grandchild_pid,
            hostile,
            client_answers: Mutex::new(Vec::new()),
            held_answers: Mutex::new(Vec::new()),
            in_flight: Mutex::new(HashMap::new()),
            cancellations: Mutex::new(Vec::new()),
            idle: Notify::new(),
            log_level: Mutex::new(None),
        }
    }

    /// Registers a call before its task exists, so a fast task always finds
    /// its own entry. Returns false when the id is already in flight.
    pub(crate) fn begin(&self, id: &RequestId, tool: &str) -> bool {
        let mut calls = lock(&self.in_flight);
        if calls.contains_key(id) {
            return false;
        }
        let call = Call {
            tool: tool.to_string(),
            abort: None,
        };
        calls.insert(id.clone(), call);
        true
    }

    /// Attaches the task's abort handle, unless the task already finished.
    pub(crate) fn attach(&self, id: &RequestId, abort: AbortHandle) {
        if let Some(call) = lock(&self.in_flight).get_mut(id) {
            call.abort = Some(abort);
        }
    }

    /// Called by a task before it answers. False means the call was cancelled
    /// and must stay unanswered.
    pub(crate) fn finish(&self, id: &RequestId) -> bool {
        let removed = lock(&self.in_flight).remove(id).is_some();
        self.idle.notify_waiters();
        removed
    }

    /// Aborts an in-flight call and records it; unknown ids are ignored.
    pub(crate) fn cancel(&self, id: &RequestId) {
        let Some(call) = lock(&self.in_flight).remove(id) else {
            return;
        };
        if let Some(abort) = call.abort {
            abort.abort();
        }
        // Without a handle the task has not run yet; `finish` will see the entry
        // gone and keep quiet.
        lock(&self.cancellations).push(json!({ "requestId": id, "tool": call.tool }));
        self.idle.notify_waiters();
    }

    /// The cancellations recorded so far, oldest first.
    pub(crate) fn cancellations(&self) -> Vec<Value> {
        lock(&self.cancellations).clone()
    }

    /// Waits until no call is in flight.
    pub(crate) async fn wait_idle(&self) {
        loop {
            // Created before the check so a wake-up between the two is not lost.
            let woken = self.idle.notified();
            if lock(&self.in_flight).is_empty() {
                return;
            }
            woken.await;
        }
    }

    /// Aborts every call still in flight, without recording them as cancelled.
    pub(crate) fn abort_all(&self) {
        for (_, call) in lock(&self.in_flight).drain() {
            if let Some(abort) = call.abort {
                abort.abort();
            }
        }
    }
}
