//! What a host asked of its servers that outlives a connection: resource
//! subscriptions and log levels. A restarted server is asked again as soon as
//! it is ready, so a host does not see a restart as a silent unsubscribe.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use mcpvisor_protocol::mcp::logging::LogLevel;
use parking_lot::Mutex;

/// Most resources a host may subscribe to on one server.
pub(crate) const MAX_SUBSCRIPTIONS: usize = 1024;

/// Longest URI a host may subscribe to (each is kept and sent again on every restart).
pub(crate) const MAX_URI_BYTES: usize = 8 * 1024;

/// What recording a subscription did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// A new subscription.
    Added,
    /// It was there already.
    Existing,
    /// The server has as many as allowed.
    Full,
}

#[derive(Default)]
pub(crate) struct RestartReplay {
    subscriptions: Mutex<HashMap<Arc<str>, BTreeSet<String>>>,
    log_levels: Mutex<HashMap<Arc<str>, LogLevel>>,
    /// The level for servers the host set none for.
    default_level: Option<LogLevel>,
}

impl RestartReplay {
    pub(crate) fn new(default_level: Option<LogLevel>) -> RestartReplay {
        RestartReplay {
            default_level,
            ..Default::default()
        }
    }

    /// Records a subscription, under one lock with the check.
    pub(crate) fn subscribe(&self, server: &Arc<str>, uri: &str) -> Recorded {
        let mut all = self.subscriptions.lock();
        let mine = all.entry(server.clone()).or_default();
        if mine.contains(uri) {
            return Recorded::Existing;
        }
        if mine.len() >= MAX_SUBSCRIPTIONS {
            return Recorded::Full;
        }
        mine.insert(uri.to_string());
        Recorded::Added
    }

    /// Forgets a subscription; false if there was none.
    pub(crate) fn unsubscribe(&self, server: &str, uri: &str) -> bool {
        let mut all = self.subscriptions.lock();
        let Some(mine) = all.get_mut(server) else {
            return false;
        };
        let had = mine.remove(uri);
        if mine.is_empty() {
            all.remove(server);
        }
        had
    }

    /// Whether the host subscribed to `uri` on `server`.
    pub(crate) fn is_subscribed(&self, server: &str, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .get(server)
            .is_some_and(|s| s.contains(uri))
    }

    /// The subscriptions to renew on a new connection of `server`.
    pub(crate) fn subscriptions(&self, server: &str) -> Vec<String> {
        self.subscriptions
            .lock()
            .get(server)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub(crate) fn set_level(&self, server: &Arc<str>, level: LogLevel) {
        self.log_levels.lock().insert(server.clone(), level);
    }

    /// The level to set on a new connection of `server`, if any.
    pub(crate) fn level(&self, server: &str) -> Option<LogLevel> {
        self.log_levels
            .lock()
            .get(server)
            .copied()
            .or(self.default_level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_are_bounded_and_per_server() {
        let restart_replay = RestartReplay::new(Some(LogLevel::Warning));
        let a: Arc<str> = Arc::from("a");
        for i in 0..MAX_SUBSCRIPTIONS {
            assert_eq!(
                restart_replay.subscribe(&a, &format!("x://{i}")),
                Recorded::Added
            );
        }
        assert_eq!(restart_replay.subscribe(&a, "x://0"), Recorded::Existing);
        assert_eq!(restart_replay.subscribe(&a, "x://new"), Recorded::Full);
        assert_eq!(
            restart_replay.subscribe(&Arc::from("b"), "x://new"),
            Recorded::Added
        );
        assert!(restart_replay.unsubscribe("a", "x://0"));
        assert!(!restart_replay.unsubscribe("a", "x://0"));
        assert_eq!(restart_replay.subscribe(&a, "x://new"), Recorded::Added);
        assert_eq!(restart_replay.subscriptions("a").len(), MAX_SUBSCRIPTIONS);
        assert_eq!(restart_replay.level("a"), Some(LogLevel::Warning));
        restart_replay.set_level(&a, LogLevel::Debug);
        assert_eq!(restart_replay.level("a"), Some(LogLevel::Debug));
    }
}
