//! Which addresses a node dials, and how often: its `--join` addresses and
//! those the nodes it hears pass on (each a node's own listen address, which
//! a node takes only on the IP of that node's session), at most
//! [`MAX_RELAYED`] from each node, each tried again with a backoff that
//! doubles from [`FIRST_RETRY`] to [`MAX_RETRY`]: no node can make another
//! dial many addresses, or one address often.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Addresses taken from one node's advertisement.
pub(crate) const MAX_RELAYED: usize = 64;

/// Addresses tried at all.
pub(crate) const MAX_ADDRESSES: usize = 256;

/// An address is tried again after this long first.
pub(crate) const FIRST_RETRY: Duration = Duration::from_secs(1);

/// ... and at most this long after its last try.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(10);

struct Backoff {
    next: Instant,
    delay: Duration,
}

/// The addresses being tried (see the module).
#[derive(Default)]
pub(crate) struct Dialling {
    tries: HashMap<String, Backoff>,
}

impl Dialling {
    /// Of the addresses `wanted` (none reached), those to dial now. An
    /// address no longer wanted is forgotten: wanted again, it starts over.
    pub(crate) fn due(&mut self, mut wanted: Vec<String>, now: Instant) -> Vec<String> {
        wanted.truncate(MAX_ADDRESSES);
        self.tries.retain(|a, _| wanted.contains(a));
        wanted
            .into_iter()
            .filter(|address| {
                let backoff = self.tries.entry(address.clone()).or_insert(Backoff {
                    next: now,
                    delay: FIRST_RETRY,
                });
                if now < backoff.next {
                    return false;
                }
                backoff.next = now + backoff.delay;
                backoff.delay = (backoff.delay * 2).min(MAX_RETRY);
                true
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_address_is_tried_ever_less_often_and_starts_over_when_forgotten() {
        let mut dialling = Dialling::default();
        let start = Instant::now();
        let wanted = || vec!["10.0.0.1:9001".to_string()];
        let mut tries = Vec::new();
        for ms in (0..60_000).step_by(100) {
            let now = start + Duration::from_millis(ms);
            if !dialling.due(wanted(), now).is_empty() {
                tries.push(ms);
            }
        }
        assert_eq!(&tries[..5], &[0, 1000, 3000, 7000, 15000]);
        assert!(tries.windows(2).all(|w| w[1] - w[0] <= 10_000));
        assert!(tries.len() < 12, "{tries:?}");
        let later = start + Duration::from_secs(61);
        assert!(dialling.due(Vec::new(), later).is_empty());
        assert_eq!(dialling.due(wanted(), later).len(), 1);
    }

    #[test]
    fn at_most_so_many_addresses_are_tried() {
        let mut dialling = Dialling::default();
        let wanted = (0..10_000)
            .map(|i| format!("10.0.{}.{}:1", i / 256, i % 256))
            .collect();
        assert_eq!(dialling.due(wanted, Instant::now()).len(), MAX_ADDRESSES);
    }
}
