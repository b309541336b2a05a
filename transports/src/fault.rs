//! Wire faults: what a misbehaving server does to the bytes, made to happen in
//! the client's own transport layer, so they can be dealt to servers nobody
//! controls (a third party's HTTP endpoint included).
//!
//! [`WireFaults`] is the state of one server's faults; it outlives connections,
//! so a fault set while the server restarts applies to the next connection.
//! [`Faulty`] wraps a connection's [`TransportSink`]: with no fault set it costs
//! one relaxed atomic load per event. The HTTP transport reads the same state
//! for the faults only it can make (a cut answer stream).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcpvisor_protocol::{Incoming, Message};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::TransportError;
use crate::event::{TransportEvent, TransportSink};

/// Answers held back by a delay at one time; past it the reader waits.
const DELAY_QUEUE: usize = 256;

/// One server's wire faults. Every fault ends by itself (a count runs out, a
/// time passes) or on [`WireFaults::clear`].
#[derive(Debug, Default)]
pub struct WireFaults {
    /// True while any fault may be set: the one thing the hot path reads.
    armed: AtomicBool,
    state: Mutex<WireState>,
}

#[derive(Debug, Default)]
struct WireState {
    drop_answers: u32,
    oversize: bool,
    delay: Option<Delay>,
    cut_streams: u32,
}

#[derive(Debug, Clone, Copy)]
struct Delay {
    by: Duration,
    until: Instant,
}

impl WireState {
    fn any(&self) -> bool {
        self.drop_answers > 0 || self.oversize || self.delay.is_some() || self.cut_streams > 0
    }
}

/// What happens to one answer under the faults set.
enum Verdict {
    Pass,
    Drop,
    Oversize,
    Delay(Duration),
}

impl WireFaults {
    /// A server's fault state, with nothing set.
    pub fn new() -> Arc<WireFaults> {
        Arc::new(WireFaults::default())
    }

    /// The next `count` answers are swallowed: their calls time out.
    pub fn drop_answers(&self, count: u32) {
        self.set(|s| s.drop_answers = s.drop_answers.saturating_add(count));
    }

    /// The next answer arrives as a frame over the limit.
    pub fn oversize_next(&self) {
        self.set(|s| s.oversize = true);
    }

    /// Answers that arrive within `during` from now are delivered `by` late.
    pub fn delay_answers(&self, by: Duration, during: Duration) {
        let until = Instant::now()
            .checked_add(during)
            .unwrap_or_else(far_future);
        self.set(|s| s.delay = Some(Delay { by, until }));
    }

    /// The next answer stream (HTTP) is closed after its headers, before the answer.
    pub fn cut_next_stream(&self) {
        self.set(|s| s.cut_streams = s.cut_streams.saturating_add(1));
    }

    /// The connection the counted faults were dealt to ended: what is left of
    /// them (answers to drop, an oversize, cuts) goes with it; a delay, which
    /// runs for a time, stays.
    pub fn connection_ended(&self) {
        let mut state = self.state.lock();
        state.drop_answers = 0;
        state.oversize = false;
        state.cut_streams = 0;
        self.expire(&mut state);
    }

    /// Ends every fault set.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        *state = WireState::default();
        self.armed.store(false, Ordering::Release);
    }

    /// True while a fault is set.
    pub fn is_set(&self) -> bool {
        self.armed.load(Ordering::Relaxed) && {
            let mut state = self.state.lock();
            self.expire(&mut state);
            state.any()
        }
    }

    fn set(&self, change: impl FnOnce(&mut WireState)) {
        let mut state = self.state.lock();
        change(&mut state);
        self.armed.store(true, Ordering::Release);
    }

    /// Drops a delay whose time is over, and disarms when nothing is left.
    fn expire(&self, state: &mut WireState) {
        if state.delay.is_some_and(|d| Instant::now() >= d.until) {
            state.delay = None;
        }
        if !state.any() {
            self.armed.store(false, Ordering::Release);
        }
    }

    /// Takes one cut from the count: true if this answer stream is to be cut.
    pub(crate) fn take_cut(&self) -> bool {
        if !self.armed.load(Ordering::Relaxed) {
            return false;
        }
        let mut state = self.state.lock();
        let cut = state.cut_streams > 0;
        state.cut_streams = state.cut_streams.saturating_sub(1);
        self.expire(&mut state);
        cut
    }

    fn verdict(&self) -> Verdict {
        let mut state = self.state.lock();
        let verdict = if state.drop_answers > 0 {
            state.drop_answers -= 1;
            Verdict::Drop
        } else if state.oversize {
            state.oversize = false;
            Verdict::Oversize
        } else {
            match state.delay {
                Some(d) if Instant::now() < d.until => Verdict::Delay(d.by),
                _ => Verdict::Pass,
            }
        };
        self.expire(&mut state);
        verdict
    }
}

/// A time past any fault's end (a year), for durations too large to add.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(365 * 24 * 3600)
}

/// What an over-limit frame does on this transport.
#[derive(Debug, Clone, Copy)]
pub enum Oversized {
    /// Stdio: the connection can no longer be trusted and ends.
    Frame {
        /// The frame limit.
        limit: usize,
    },
    /// HTTP: the request the answer was for fails; the connection goes on.
    Message {
        /// The message limit.
        limit: usize,
    },
}

/// A [`TransportSink`] that applies a server's wire faults to what the
/// transport delivers, then hands it on.
pub struct Faulty<S> {
    inner: Arc<S>,
    faults: Arc<WireFaults>,
    oversized: Oversized,
    /// Feeds the task that delivers delayed answers; started on first use.
    delayed: Mutex<Option<mpsc::Sender<(Instant, TransportEvent)>>>,
    /// That task: answers still held when the connection goes are dropped with it.
    delivering: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl<S> Drop for Faulty<S> {
    fn drop(&mut self) {
        if let Some(task) = self.delivering.lock().take() {
            task.abort();
        }
    }
}

impl<S: TransportSink> Faulty<S> {
    /// Wraps `inner` under `faults`; `oversized` says what an oversize frame is here.
    pub fn new(inner: Arc<S>, faults: Arc<WireFaults>, oversized: Oversized) -> Faulty<S> {
        Faulty {
            inner,
            faults,
            oversized,
            delayed: Mutex::new(None),
            delivering: Mutex::new(None),
        }
    }

    /// The sink faults are applied in front of.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// Delivers `lines` malformed lines as if the server had written them; false
    /// if the owner is gone. They carry no request id, so no call fails for them.
    pub async fn garbage(&self, lines: u32) -> bool {
        for i in 0..lines {
            let line = GARBAGE[i as usize % GARBAGE.len()].as_bytes();
            let event = match Message::parse(line) {
                Err(e) => TransportEvent::unparsed(line, e),
                // Every line above is malformed; a parse that succeeds delivers it as it is.
                Ok(incoming) => TransportEvent::Message(incoming),
            };
            if !self.inner.deliver(event).await {
                return false;
            }
        }
        true
    }

    async fn faulted(&self, event: TransportEvent) -> bool {
        let Some(id) = answer_id(&event) else {
            return self.inner.deliver(event).await;
        };
        match self.faults.verdict() {
            Verdict::Pass => self.inner.deliver(event).await,
            Verdict::Drop => {
                tracing::debug!(%id, "fault: answer dropped");
                true
            }
            Verdict::Oversize => {
                let event = match self.oversized {
                    Oversized::Frame { limit } => {
                        TransportEvent::Closed(TransportError::FrameTooLarge { limit })
                    }
                    Oversized::Message { limit } => TransportEvent::RequestFailed {
                        id,
                        error: TransportError::MessageTooLarge { limit },
                    },
                };
                self.inner.deliver(event).await
            }
            Verdict::Delay(by) => {
                let at = Instant::now().checked_add(by).unwrap_or_else(far_future);
                self.delay(at, event).await
            }
        }
    }

    /// Queues `event` for delivery at `at`, in order with earlier delayed answers.
    async fn delay(&self, at: Instant, event: TransportEvent) -> bool {
        let tx = {
            let mut slot = self.delayed.lock();
            slot.get_or_insert_with(|| {
                let (tx, rx) = mpsc::channel(DELAY_QUEUE);
                let task = tokio::spawn(deliver_later(self.inner.clone(), rx));
                *self.delivering.lock() = Some(task);
                tx
            })
            .clone()
        };
        tx.send((at, event)).await.is_ok()
    }
}

/// Delivers delayed answers at their time; ends when the sink is dropped and
/// the queue is empty, or when the owner is gone.
async fn deliver_later<S: TransportSink>(
    inner: Arc<S>,
    mut rx: mpsc::Receiver<(Instant, TransportEvent)>,
) {
    while let Some((at, event)) = rx.recv().await {
        tokio::time::sleep_until(at).await;
        if !inner.deliver(event).await {
            return;
        }
    }
}

impl<S: TransportSink> TransportSink for Faulty<S> {
    async fn deliver(&self, event: TransportEvent) -> bool {
        if !self.faults.armed.load(Ordering::Relaxed) {
            return self.inner.deliver(event).await;
        }
        self.faulted(event).await
    }
}

/// The id a message answers, if it is an answer (a batch: its first answer).
fn answer_id(event: &TransportEvent) -> Option<mcpvisor_protocol::RequestId> {
    let of = |m: &Message| match m {
        Message::Response(r) => Some(r.id.clone()),
        Message::Error(e) => e.id.clone(),
        _ => None,
    };
    match event {
        TransportEvent::Message(Incoming::Single(m)) => of(m),
        TransportEvent::Message(Incoming::Batch(items)) => items.iter().flatten().find_map(of),
        _ => None,
    }
}

/// Malformed lines of the kinds broken servers write: a log line on stdout, a
/// cut message, the wrong JSON-RPC version, a bare value, replacement characters.
const GARBAGE: [&str; 5] = [
    "INFO server listening (this is a log line, not JSON-RPC)",
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/mess",
    "{\"jsonrpc\":\"1.0\",\"method\":\"notifications/message\"}",
    "42",
    "{\"jsonrpc\":\"2.0\",\"method\":\"\u{fffd}\u{fffd}\",\"params\":[1,2,",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_run_out_and_disarm() {
        let f = WireFaults::new();
        assert!(!f.is_set());
        f.drop_answers(2);
        assert!(matches!(f.verdict(), Verdict::Drop));
        assert!(matches!(f.verdict(), Verdict::Drop));
        assert!(matches!(f.verdict(), Verdict::Pass));
        assert!(!f.armed.load(Ordering::Relaxed));
        f.cut_next_stream();
        assert!(f.take_cut());
        assert!(!f.take_cut());
        assert!(!f.is_set());
    }

    #[tokio::test(start_paused = true)]
    async fn a_delay_ends_by_itself() {
        let f = WireFaults::new();
        f.delay_answers(Duration::from_millis(10), Duration::from_secs(1));
        assert!(matches!(f.verdict(), Verdict::Delay(d) if d == Duration::from_millis(10)));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(matches!(f.verdict(), Verdict::Pass));
        assert!(!f.is_set());
    }

    #[test]
    fn clear_ends_everything() {
        let f = WireFaults::new();
        f.oversize_next();
        f.drop_answers(5);
        f.clear();
        assert!(matches!(f.verdict(), Verdict::Pass));
        assert!(!f.is_set());
    }

    #[test]
    fn garbage_lines_are_all_malformed_and_carry_no_id() {
        for line in GARBAGE {
            let err = Message::parse(line.as_bytes()).expect_err(line);
            assert!(
                matches!(
                    TransportEvent::unparsed(line.as_bytes(), err),
                    TransportEvent::Malformed(_)
                ),
                "{line}"
            );
        }
    }
}
