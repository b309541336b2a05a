//! The lane's deadline timer: one task per connection, sleeping until the
//! earliest deadline of a call in flight, so a hung server is found out
//! whether or not anyone is polling its calls.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::CallLane;
use crate::error::CallError;

impl CallLane {
    /// Starts the connection's deadline timer: one task, sleeping until the
    /// earliest deadline of a call in flight, so a hung server is found out
    /// whether or not anyone is polling its calls.
    pub(crate) fn start_deadlines(self: &Arc<Self>) {
        let lane = Arc::downgrade(self);
        let wake = self.wake.clone();
        let task = tokio::spawn(watch_deadlines(lane, wake));
        *self.deadlines.lock() = Some(task.abort_handle());
    }

    /// Wakes the timer only for a deadline sooner than the one it sleeps until:
    /// calls one after another (each due later than the last) cost it nothing;
    /// it wakes once at its old deadline and sleeps on to the new earliest.
    pub(super) fn arm(&self, deadline: Instant) {
        let mut armed = self.armed.lock();
        if armed.is_none_or(|at| deadline < at) {
            *armed = Some(deadline);
            self.wake.notify_one();
        }
    }

    /// Ends the calls whose deadline has passed: each caller gets
    /// [`CallError::Timeout`] now, and the actor ends the connection (the other
    /// calls then fail with `ConnectionTimedOut`), even if an answer turns up
    /// before it acts: a request timeout terminates the connection.
    pub(super) fn expire_due(&self) {
        let due = self.calls.lock().expire(Instant::now());
        for (id, slot) in due {
            self.rounds_ended(&slot);
            slot.reply.fail(CallError::Timeout {
                server: self.server.clone(),
                after: slot.after,
            });
            if !self.report.call_timed_out(id, slot.after) {
                // No actor to end the connection: fail what is left here.
                self.close(&CallError::ConnectionClosed {
                    server: self.server.clone(),
                    reason: Arc::from("the connection's actor is gone"),
                });
                return;
            }
        }
    }
}

/// The deadline task of one lane: sleeps until the earliest deadline (or until a
/// sooner one is set), then ends what is due. Holds the lane weakly, so it never
/// keeps a finished connection alive.
async fn watch_deadlines(lane: Weak<CallLane>, wake: Arc<Notify>) {
    loop {
        let next = match lane.upgrade() {
            Some(lane) => {
                let next = lane.calls.lock().next_deadline();
                // A sooner deadline set meanwhile left a wake-up, which is taken below.
                *lane.armed.lock() = next;
                next
            }
            None => return,
        };
        match next {
            None => wake.notified().await,
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => {}
                    _ = wake.notified() => continue,
                }
                match lane.upgrade() {
                    Some(lane) => lane.expire_due(),
                    None => return,
                }
            }
        }
    }
}
