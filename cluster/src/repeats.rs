//! Warnings that repeat (a node with the wrong cookie tries again every
//! second for ever, a stranger opens connection after connection): the log
//! gets one line per kind and peer per window, and the next line says how
//! many were left out.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// One line per kind and peer per this long.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// The longest key kept: keys carry what peers say (an address, a name).
const MAX_KEY: usize = 160;

/// Keys remembered at most: a flood of distinct peers forgets the oldest
/// windows rather than growing the table.
const MAX_KEYS: usize = 1024;

/// What was said recently (see the module).
#[derive(Default)]
pub(crate) struct Repeats {
    said: Mutex<HashMap<String, (Instant, u64)>>,
}

impl Repeats {
    /// Whether a warning under `key` should be logged now: `Some(n)` with
    /// the number of them left out since the last one logged, `None` to
    /// leave this one out.
    pub(crate) fn check(&self, mut key: String, now: Instant) -> Option<u64> {
        if key.len() > MAX_KEY {
            let mut end = MAX_KEY;
            while !key.is_char_boundary(end) {
                end -= 1;
            }
            key.truncate(end);
        }
        let mut said = self.said.lock();
        if let Some((since, left_out)) = said.get_mut(&key) {
            if now.duration_since(*since) < WINDOW {
                *left_out += 1;
                return None;
            }
            let n = *left_out;
            *since = now;
            *left_out = 0;
            return Some(n);
        }
        if said.len() >= MAX_KEYS {
            said.retain(|_, (since, _)| now.duration_since(*since) < WINDOW);
            if said.len() >= MAX_KEYS {
                said.clear();
            }
        }
        said.insert(key, (now, 0));
        Some(0)
    }
}

/// Logs a warning at most once per [`WINDOW`] for `key` (see the module):
/// `warn_repeated!(repeats, key, field = value, ..., "message")`.
macro_rules! warn_repeated {
    ($repeats:expr, $key:expr, $($field:tt)*) => {
        if let Some(left_out) = $repeats.check($key, std::time::Instant::now()) {
            tracing::warn!(left_out, $($field)*);
        }
    };
}
pub(crate) use warn_repeated;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_warning_is_said_once_per_window_with_the_count() {
        let repeats = Repeats::default();
        let t = Instant::now();
        assert_eq!(repeats.check("refused 10.0.0.1".into(), t), Some(0));
        for i in 1..=20 {
            assert_eq!(
                repeats.check("refused 10.0.0.1".into(), t + Duration::from_secs(i)),
                None
            );
        }
        assert_eq!(repeats.check("refused 10.0.0.2".into(), t), Some(0));
        assert_eq!(
            repeats.check("refused 10.0.0.1".into(), t + WINDOW),
            Some(20)
        );
    }

    #[test]
    fn a_flood_of_peers_does_not_grow_the_table() {
        let repeats = Repeats::default();
        let t = Instant::now();
        for i in 0..(3 * MAX_KEYS) {
            repeats.check(format!("peer {i}"), t);
        }
        assert!(repeats.said.lock().len() <= MAX_KEYS);
    }
}
