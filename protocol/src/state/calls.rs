//! The state of the tool calls on one connection, without I/O or a clock.
//!
//! Inputs are events and the time (any ordered `Copy` type the driver uses as
//! an instant); outputs are the calls' payloads handed back exactly once, with
//! what became of them, and the lines to write. Every call ends exactly once:
//! answered, failed, cancelled, timed out or lost with the connection. An
//! answer that comes after any of these is dropped ([`Answered::Late`] after a
//! timeout); a timeout ends the connection whether or not a late answer follows.
//!
//! Deadlines belong to the table, not to whoever waits for a call: the driver
//! asks [`CallTable::next_deadline`] for one timer and calls
//! [`CallTable::expire`] when it fires.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::mcp::messages::{CancelledParams, methods};
use crate::wire::jsonrpc::{Message, Notification, RequestId};

/// Why a call could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartRefused {
    /// The connection is not ready or has ended.
    #[error("the connection is not open")]
    Closed,
    /// As many calls are in flight as the connection allows.
    #[error("{0} calls are in flight")]
    Overloaded(usize),
    /// The id is already in use on this connection.
    #[error("request id {0} is already in use")]
    DuplicateId(i64),
}

/// What an incoming answer meant.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered<T> {
    /// The answer to a call in flight: it ends here, with this payload.
    Call(T),
    /// The answer to a call that already timed out: dropped. The timeout still
    /// ends the connection ([`CallTable::take_expired`]).
    Late,
    /// No call of this table has this id (another requester's, or a stray).
    Unknown,
}

/// The request ids of one connection: one counter for everything that sends
/// requests on it (the session's own requests, the call table's), so no two
/// share an id. Clones share the counter.
#[derive(Debug, Clone, Default)]
pub struct RequestIds(Arc<AtomicI64>);

impl RequestIds {
    /// A new counter; the first id is 1.
    pub fn new() -> RequestIds {
        RequestIds::default()
    }

    /// The next id.
    pub fn next(&self) -> i64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

struct Slot<T, I> {
    payload: T,
    deadline: I,
}

/// The calls in flight on one connection; `T` is what the driver keeps per call
/// (a reply channel, a progress callback), `I` its instant type.
pub struct CallTable<T, I> {
    ids: RequestIds,
    open: bool,
    max_in_flight: usize,
    slots: HashMap<i64, Slot<T, I>>,
    deadlines: BTreeSet<(I, i64)>,
    /// Timed out: the driver ends the connection for these.
    expired: HashSet<i64>,
}

impl<T, I: Ord + Copy> CallTable<T, I> {
    /// A table that accepts calls once [`CallTable::open`]ed.
    pub fn new(max_in_flight: usize) -> Self {
        CallTable::with_ids(max_in_flight, RequestIds::new())
    }

    /// A table that takes its ids from `ids`, shared with the connection's session.
    pub fn with_ids(max_in_flight: usize, ids: RequestIds) -> Self {
        CallTable {
            ids,
            open: false,
            max_in_flight,
            slots: HashMap::new(),
            deadlines: BTreeSet::new(),
            expired: HashSet::new(),
        }
    }

    /// The connection is ready: calls may start.
    pub fn open(&mut self) {
        self.open = true;
    }

    /// Calls in flight.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Records call `id`, due by `deadline`. Recorded before its line is written,
    /// so the answer always finds it.
    pub fn start(&mut self, id: i64, deadline: I, payload: T) -> Result<(), StartRefused> {
        if !self.open {
            return Err(StartRefused::Closed);
        }
        if self.slots.len() >= self.max_in_flight {
            return Err(StartRefused::Overloaded(self.max_in_flight));
        }
        if self.slots.contains_key(&id) || self.expired.contains(&id) {
            return Err(StartRefused::DuplicateId(id));
        }
        self.deadlines.insert((deadline, id));
        self.slots.insert(id, Slot { payload, deadline });
        Ok(())
    }

    /// Records a call under the connection's next id, due by `deadline`, and
    /// returns the id (none is taken when the call is refused).
    pub fn start_next(&mut self, deadline: I, payload: T) -> Result<i64, StartRefused> {
        if !self.open {
            return Err(StartRefused::Closed);
        }
        if self.slots.len() >= self.max_in_flight {
            return Err(StartRefused::Overloaded(self.max_in_flight));
        }
        let id = self.ids.next();
        self.start(id, deadline, payload).map(|()| id)
    }

    /// The connection's ids, for a request whose parameters name its id before
    /// it starts (a task's progress token): take one, then [`CallTable::start`] it.
    pub fn ids(&self) -> &RequestIds {
        &self.ids
    }

    /// The answer (result or error) for `id` arrived.
    pub fn answer(&mut self, id: i64) -> Answered<T> {
        match self.remove(id) {
            Some(payload) => Answered::Call(payload),
            None if self.expired.contains(&id) => Answered::Late,
            None => Answered::Unknown,
        }
    }

    /// The transport failed call `id` alone (an HTTP status, an oversize answer).
    /// Like [`CallTable::answer`]: the payload if it was in flight.
    pub fn fail(&mut self, id: i64) -> Answered<T> {
        self.answer(id)
    }

    /// The caller gave up on `id`: its payload and the `notifications/cancelled`
    /// to send, unless it already ended.
    pub fn cancel(&mut self, id: i64, reason: &str) -> Option<(T, Message)> {
        let payload = self.remove(id)?;
        let params = CancelledParams {
            request_id: RequestId::Number(id),
            reason: Some(reason.to_string()),
        };
        let note = Notification::new(methods::CANCELLED, serde_json::to_value(params).ok());
        Some((payload, Message::Notification(note)))
    }

    /// Forgets `id` without telling the server (its line could not be written).
    pub fn withdraw(&mut self, id: i64) -> Option<T> {
        self.remove(id)
    }

    /// The earliest deadline of a call in flight: the one timer the driver needs.
    pub fn next_deadline(&self) -> Option<I> {
        self.deadlines.first().map(|(at, _)| *at)
    }

    /// Ends every call due at `now` or before; they wait in the expired set until
    /// [`CallTable::take_expired`].
    pub fn expire(&mut self, now: I) -> Vec<(i64, T)> {
        let mut due = Vec::new();
        while let Some(&(at, id)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(slot) = self.slots.remove(&id) {
                self.expired.insert(id);
                due.push((id, slot.payload));
            }
        }
        due
    }

    /// True if call `id` timed out (once): the connection must end. The MCP
    /// guide's rule: a request timeout terminates the connection, even if an
    /// answer turns up afterwards.
    pub fn take_expired(&mut self, id: i64) -> bool {
        self.expired.remove(&id)
    }

    /// The payload of call `id` in flight, to look at (its progress callback).
    pub fn get(&self, id: i64) -> Option<&T> {
        self.slots.get(&id).map(|s| &s.payload)
    }

    /// The connection ended: no call starts any more, and every call in flight
    /// is handed back to be failed.
    pub fn close(&mut self) -> Vec<(i64, T)> {
        self.open = false;
        self.expired.clear();
        self.deadlines.clear();
        self.slots.drain().map(|(id, s)| (id, s.payload)).collect()
    }

    fn remove(&mut self, id: i64) -> Option<T> {
        let slot = self.slots.remove(&id)?;
        self.deadlines.remove(&(slot.deadline, id));
        Some(slot.payload)
    }
}

#[cfg(test)]
mod tests;
