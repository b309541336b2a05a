//! A warning that can repeat as fast as a peer can cause it (an accept loop
//! out of descriptors, connections refused at a cap) is said once per period,
//! with the count of those held back, so the log stays readable and small.

use std::time::Duration;

use tokio::time::Instant;

/// At most one line per this long for a warning that can repeat as fast as
/// a peer can connect.
pub(crate) const WARN_EVERY: Duration = Duration::from_secs(10);

/// A warning said once per [`WARN_EVERY`], with the count of those held back.
pub(crate) struct Hushed {
    last: Option<Instant>,
    held: u64,
}

impl Hushed {
    pub(crate) fn new() -> Hushed {
        Hushed {
            last: None,
            held: 0,
        }
    }

    /// Whether to say it now; if so, how many were held back since the last time.
    pub(crate) fn due(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(at) if now.duration_since(at) < WARN_EVERY => {
                self.held += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_warning_is_said_once_per_period_with_the_count_held_back() {
        let mut hushed = Hushed::new();
        let t0 = Instant::now();
        assert_eq!(hushed.due(t0), Some(0));
        for i in 1..=5 {
            assert_eq!(hushed.due(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(hushed.due(t0 + WARN_EVERY), Some(5));
        assert_eq!(hushed.due(t0 + WARN_EVERY), None);
    }
}
