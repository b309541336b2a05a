//! The requests a session is answering, by id: how each is stopped, and what
//! becomes of a call whose client went away.
//!
//! A cancel (or the session's end) stops a request and cancels its call
//! upstream. A client that disconnects from an HTTP answer does not: MCP says
//! a disconnection is not a cancellation, so the call is detached and runs on,
//! still in the table, so that a `notifications/cancelled` that follows can
//! still cancel it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::future::{AbortHandle, AbortRegistration, Abortable};
use mcpvisor::{CallError, CallToolResult, PendingCall};
use mcpvisor_protocol::wire::jsonrpc::RequestId;
use parking_lot::Mutex;

/// Why a request was not admitted.
pub(crate) enum Refusal {
    /// The session has ended.
    Closed,
    /// The id is taken by a request still in flight.
    DuplicateId,
    /// As many requests as allowed are in flight.
    Full(usize),
}

/// What became of a request, shared by its table entry and its answer.
#[derive(Default)]
pub(crate) struct RequestMarks {
    /// Stopped by a cancel (or the session's end): its call is cancelled upstream.
    cancelled: AtomicBool,
    /// Its client went away; its call runs on, still cancellable by id.
    detached: AtomicBool,
}

impl RequestMarks {
    /// Marks the request as stopped on purpose (its call is then cancelled upstream).
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
}

struct Entry {
    abort: AbortHandle,
    marks: Arc<RequestMarks>,
}

impl Entry {
    fn cancel(self) {
        self.marks.cancel();
        self.abort.abort();
    }
}

#[derive(Default)]
struct Table {
    entries: HashMap<RequestId, Entry>,
    closed: bool,
}

/// One session's requests in flight.
#[derive(Default)]
pub(crate) struct Requests(Mutex<Table>);

/// An admitted request: what its answer needs to stop when cancelled and to
/// leave the table when it ends.
pub(crate) struct Admitted {
    pub(crate) registration: AbortRegistration,
    pub(crate) marks: Arc<RequestMarks>,
    pub(crate) registered: Registered,
}

impl Requests {
    /// Registers request `id`, refused when the session ended, the id is in
    /// use, or `limit` requests are in flight.
    pub(crate) fn admit(
        self: &Arc<Self>,
        id: &RequestId,
        limit: usize,
    ) -> Result<Admitted, Refusal> {
        let mut table = self.0.lock();
        if table.closed {
            return Err(Refusal::Closed);
        }
        if table.entries.contains_key(id) {
            return Err(Refusal::DuplicateId);
        }
        if table.entries.len() >= limit {
            return Err(Refusal::Full(table.entries.len()));
        }
        let (abort, registration) = AbortHandle::new_pair();
        let marks = Arc::new(RequestMarks::default());
        let entry = Entry {
            abort,
            marks: marks.clone(),
        };
        table.entries.insert(id.clone(), entry);
        Ok(Admitted {
            registration,
            registered: Registered {
                requests: self.clone(),
                id: id.clone(),
                marks: marks.clone(),
            },
            marks,
        })
    }

    /// Cancels request `id`, if it is in flight.
    pub(crate) fn cancel(&self, id: &RequestId) {
        let found = self.0.lock().entries.remove(id);
        if let Some(entry) = found {
            entry.cancel();
        }
    }

    /// Refuses every request from now on and cancels those in flight.
    pub(crate) fn close(&self) {
        let entries: Vec<Entry> = {
            let mut table = self.0.lock();
            table.closed = true;
            table.entries.drain().map(|(_, e)| e).collect()
        };
        for entry in entries {
            entry.cancel();
        }
    }

    /// True once the session ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.lock().closed
    }

    /// Requests in flight.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().entries.len()
    }

    /// Drops `id`'s entry if it is still the one of `marks` (a cancelled id may
    /// have been used again since).
    fn forget(&self, id: &RequestId, marks: &Arc<RequestMarks>) {
        let mut table = self.0.lock();
        if table
            .entries
            .get(id)
            .is_some_and(|e| Arc::ptr_eq(&e.marks, marks))
        {
            table.entries.remove(id);
        }
    }

    /// Keeps a detached call's entry (putting it back if it went first), now
    /// stopped through `abort`; false when the id belongs to another request
    /// or the session ended.
    fn keep_detached(&self, id: &RequestId, marks: &Arc<RequestMarks>, abort: AbortHandle) -> bool {
        let mut table = self.0.lock();
        let ours = match table.entries.get(id) {
            Some(entry) => Arc::ptr_eq(&entry.marks, marks),
            None => !table.closed,
        };
        if ours {
            let marks = marks.clone();
            table.entries.insert(id.clone(), Entry { abort, marks });
        }
        ours
    }
}

/// Removes a request from the table when its answer ends, unless its call
/// was detached (the detached call removes it when it ends).
pub(crate) struct Registered {
    requests: Arc<Requests>,
    id: RequestId,
    marks: Arc<RequestMarks>,
}

impl Registered {
    /// The call of this request, made to outlive the future awaiting it.
    pub(crate) fn detaching(&self, call: PendingCall) -> Detaching {
        Detaching {
            call: Some(call),
            requests: Arc::downgrade(&self.requests),
            id: self.id.clone(),
            marks: self.marks.clone(),
        }
    }

    /// The call of this request, cancelled upstream when the future awaiting
    /// it is dropped: at 2026-07-28 over HTTP, a closed response stream is
    /// the client's cancel.
    pub(crate) fn cancelling(&self, call: PendingCall) -> Detaching {
        Detaching {
            call: Some(call),
            // No table to be kept in: dropped unfinished, the call goes.
            requests: Weak::new(),
            id: self.id.clone(),
            marks: self.marks.clone(),
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if !self.marks.detached.load(Ordering::SeqCst) {
            self.requests.forget(&self.id, &self.marks);
        }
    }
}

/// A routed call that outlives the future awaiting it: dropped unfinished
/// without a cancel, it runs on to its end; dropped after a cancel, it is
/// cancelled upstream.
pub(crate) struct Detaching {
    call: Option<PendingCall>,
    requests: Weak<Requests>,
    id: RequestId,
    marks: Arc<RequestMarks>,
}

impl Future for Detaching {
    type Output = Result<CallToolResult, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(Err(CallError::Cancelled));
        };
        let done = Pin::new(call).poll(cx);
        if done.is_ready() {
            self.call = None;
        }
        done
    }
}

impl Drop for Detaching {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        if self.marks.cancelled.load(Ordering::SeqCst) {
            return;
        }
        let (Some(requests), Ok(runtime)) = (
            self.requests.upgrade(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        self.marks.detached.store(true, Ordering::SeqCst);
        let (abort, registration) = AbortHandle::new_pair();
        if !requests.keep_detached(&self.id, &self.marks, abort) {
            return;
        }
        let (id, marks) = (self.id.clone(), self.marks.clone());
        runtime.spawn(async move {
            let _ = Abortable::new(call, registration).await;
            requests.forget(&id, &marks);
        });
    }
}
