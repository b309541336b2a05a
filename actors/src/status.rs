//! Server states, readable by the host without a mailbox hop.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::messages::InitializeResult;
use parking_lot::RwLock;

use crate::error::DownReason;
use tokio::sync::watch;

/// Identifies one supervised server (names may repeat; ids never do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerId(pub u64);

/// Where a server stands. Two states are equal when they are the same state
/// for the same reason (reasons compare by what they say).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerState {
    /// Connecting, initializing, listing tools.
    Starting {
        /// Consecutive restart attempt; 0 for the first start.
        attempt: u32,
    },
    /// Routes are live.
    Ready,
    /// Down, restarting after a backoff.
    Restarting {
        /// Consecutive attempt.
        attempt: u32,
        /// Delay before the restart.
        backoff: Duration,
        /// Why it went down.
        reason: DownReason,
    },
    /// Down until a host restarts it.
    Failed {
        /// Why it last failed.
        reason: DownReason,
    },
    /// Cannot be authorized without a person (`mcpvisor login <name>`); not restarted
    /// until a host asks again.
    LoginRequired {
        /// Why.
        reason: DownReason,
    },
    /// Stopped on purpose.
    Stopped,
}

impl PartialEq for ServerState {
    fn eq(&self, other: &Self) -> bool {
        use ServerState::*;
        let same =
            |a: &DownReason, b: &DownReason| Arc::ptr_eq(a, b) || a.to_string() == b.to_string();
        match (self, other) {
            (Starting { attempt: a }, Starting { attempt: b }) => a == b,
            (Ready, Ready) | (Stopped, Stopped) => true,
            (
                Restarting {
                    attempt: a,
                    backoff: x,
                    reason: r,
                },
                Restarting {
                    attempt: b,
                    backoff: y,
                    reason: s,
                },
            ) => a == b && x == y && same(r, s),
            (Failed { reason: r }, Failed { reason: s })
            | (LoginRequired { reason: r }, LoginRequired { reason: s }) => same(r, s),
            _ => false,
        }
    }
}

impl ServerState {
    /// Ready, failed, waiting for a login or stopped: nothing more happens without
    /// a new cause.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            ServerState::Ready
                | ServerState::Failed { .. }
                | ServerState::LoginRequired { .. }
                | ServerState::Stopped
        )
    }
}

/// A server's status as the host sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// Its id.
    pub id: ServerId,
    /// Its name.
    pub name: Arc<str>,
    /// Its state.
    pub state: ServerState,
    /// The current process id (stdio servers, while running).
    pub pid: Option<u32>,
    /// Tools it listed last.
    pub tools: usize,
    /// Restarts since it was first started.
    pub restarts: u64,
    /// When the supervisor next tries to start it: the end of a restart's
    /// backoff, or a failed server's next try; `None` when nothing is planned.
    pub next_try: Option<std::time::SystemTime>,
    /// What the current connection's server said of itself in `initialize`
    /// (its name and version, capabilities, instructions); `None` until then.
    pub initialize: Option<Arc<InitializeResult>>,
}

impl ServerStatus {
    /// The error for a call to this server while it is not ready: where it
    /// stands, why, and when it is tried next.
    pub(crate) fn unavailable(&self) -> crate::error::CallError {
        let why: Option<String> = match &self.state {
            ServerState::Starting { .. } => Some("starting".into()),
            ServerState::Restarting { reason, .. } => Some(format!("restarting: {reason}")),
            ServerState::Failed { reason } => Some(format!("failed: {reason}")),
            ServerState::LoginRequired { .. } => Some("a login is required".into()),
            ServerState::Stopped => Some("stopped".into()),
            ServerState::Ready => None,
        };
        crate::error::CallError::ServerUnavailable {
            server: self.name.clone(),
            why: why.map(Arc::from),
            next_try: self.next_try,
        }
    }
}

/// The shared table of statuses: hosts read it without a mailbox hop; the
/// supervisor is its one writer (others tell the supervisor).
pub(crate) struct StatusBoard {
    map: RwLock<BTreeMap<ServerId, ServerStatus>>,
    changed: watch::Sender<u64>,
}

impl StatusBoard {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(StatusBoard {
            map: RwLock::new(BTreeMap::new()),
            changed: watch::channel(0).0,
        })
    }

    pub(crate) fn update(&self, id: ServerId, name: &Arc<str>, f: impl FnOnce(&mut ServerStatus)) {
        {
            let mut map = self.map.write();
            let entry = map.entry(id).or_insert_with(|| ServerStatus {
                id,
                name: name.clone(),
                state: ServerState::Starting { attempt: 0 },
                pid: None,
                tools: 0,
                restarts: 0,
                next_try: None,
                initialize: None,
            });
            f(entry);
        }
        self.changed.send_modify(|v| *v += 1);
    }

    /// Forgets a server that was removed from the host.
    pub(crate) fn remove(&self, id: ServerId) {
        self.map.write().remove(&id);
        self.changed.send_modify(|v| *v += 1);
    }

    pub(crate) fn snapshot(&self) -> Vec<ServerStatus> {
        let mut all: Vec<_> = self.map.read().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        all
    }

    /// The status of the server named `name` (the first, when two connections
    /// share the name for a moment).
    pub(crate) fn named(&self, name: &str) -> Option<ServerStatus> {
        self.map.read().values().find(|s| &*s.name == name).cloned()
    }

    /// Every server's name (a name twice when two connections share it for a moment).
    pub(crate) fn names(&self) -> Vec<Arc<str>> {
        self.map.read().values().map(|s| s.name.clone()).collect()
    }

    /// True when every server is in a settled state; reads in place, no copies.
    pub(crate) fn all_settled(&self) -> bool {
        self.map.read().values().all(|s| s.state.is_settled())
    }

    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}
