//! The HTTP sessions of one gateway: ids, the cap, idle expiry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::wire::jsonrpc::Message;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::session::Session;

/// One HTTP session: the MCP session and its unsolicited messages, read by
/// at most one GET stream at a time.
pub(crate) struct HttpSession {
    pub(crate) session: Arc<Session>,
    pub(crate) notices: Arc<tokio::sync::Mutex<mpsc::Receiver<Message>>>,
    last_seen: Mutex<Instant>,
    /// Set when the session ends (DELETE, expiry, shutdown): its GET stream ends too.
    ended: tokio::sync::watch::Sender<bool>,
}

/// Marks a session as seen when dropped: at the end of a GET stream or of an
/// answer, however it ends (a client that disconnects included).
pub(crate) struct Touching(pub(crate) Arc<HttpSession>);

impl Drop for Touching {
    fn drop(&mut self) {
        self.0.touch();
    }
}

impl HttpSession {
    pub(crate) fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    /// Resolves once the session has ended.
    pub(crate) async fn ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|e| *e).await;
    }

    fn end(&self) {
        self.ended.send_replace(true);
        self.session.close();
    }

    /// Idle: nothing asked for `idle`, nothing in flight, no GET stream
    /// open; or not initialized, nothing asked for `init` and nothing in
    /// flight, whatever GET stream it holds (a slot taken by a client that
    /// never meant to use it).
    fn idle(&self, idle: Duration, init: Duration, now: Instant) -> bool {
        let asked = now.duration_since(*self.last_seen.lock());
        if self.session.in_flight() > 0 {
            return false;
        }
        (!self.session.initialized() && asked >= init)
            || (asked >= idle && self.notices.try_lock().is_ok())
    }
}

/// Why a session could not be opened.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full {
    pub(crate) limit: usize,
}

/// Every open session, by id.
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    limit: usize,
}

impl Sessions {
    pub(crate) fn new(limit: usize) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            limit,
        }
    }

    /// Registers a session made by `open` (given its notices channel) under a fresh id.
    pub(crate) fn insert(
        &self,
        open: impl FnOnce(mpsc::Sender<Message>) -> Arc<Session>,
        queue: usize,
    ) -> Result<(String, Arc<HttpSession>), Full> {
        let mut map = self.map.lock();
        if map.len() >= self.limit {
            return Err(Full { limit: self.limit });
        }
        let (tx, rx) = mpsc::channel(queue);
        let session = Arc::new(HttpSession {
            session: open(tx),
            notices: Arc::new(tokio::sync::Mutex::new(rx)),
            last_seen: Mutex::new(Instant::now()),
            ended: tokio::sync::watch::channel(false).0,
        });
        let id = new_id();
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.map.lock().get(id).cloned()
    }

    /// Removes and closes a session; false if there was none.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = self.map.lock().remove(id);
        match removed {
            Some(s) => {
                s.end();
                true
            }
            None => false,
        }
    }

    /// Closes and forgets sessions idle for `idle`, or not initialized
    /// `init` after they opened; returns how many.
    pub(crate) fn expire(&self, idle: Duration, init: Duration) -> usize {
        let now = Instant::now();
        let expired: Vec<Arc<HttpSession>> = {
            let mut map = self.map.lock();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, s)| s.idle(idle, init, now))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for s in &expired {
            s.end();
        }
        expired.len()
    }

    /// Closes every session.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.map.lock().drain().map(|(_, s)| s).collect();
        for s in all {
            s.end();
        }
    }
}

/// 128 bits from the operating system's CSPRNG, as hex.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // Without an OS random source nothing secure can run; the id would be guessable.
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
