//! When to reopen an SSE stream: after the server's `retry:`, never sooner than
//! a floor, or else after an exponential backoff with jitter that starts over
//! once a stream has stayed up.

use std::time::Duration;

/// The shortest reconnection delay, whatever `retry:` says: a server asking for
/// `retry: 0` must not turn the client into a loop of requests.
pub(crate) const RETRY_FLOOR: Duration = Duration::from_millis(100);

/// A stream that stayed open this long was healthy: the next failure starts the
/// backoff from its first step again.
pub(crate) const HEALTHY_FOR: Duration = Duration::from_secs(5);

/// The delay a server's `retry:` asks for, raised to [`RETRY_FLOOR`].
pub(crate) fn retry_delay(retry_ms: u64) -> Duration {
    Duration::from_millis(retry_ms).max(RETRY_FLOOR)
}

/// The GET stream's reconnection delays.
#[derive(Debug, Clone)]
pub(crate) struct StreamBackoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl StreamBackoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> StreamBackoff {
        let initial = initial.max(RETRY_FLOOR);
        StreamBackoff {
            initial,
            max: max.max(initial),
            next: initial,
        }
    }

    /// The delay before the next attempt, after a stream that ended (or never
    /// opened). `retry_ms` is the server's last `retry:`; `healthy` says the stream
    /// stayed up for [`HEALTHY_FOR`]; `jitter` is uniform in `[0, 1)` and spreads
    /// the backoff by ±20 % so many clients of one server do not return together.
    ///
    /// After a healthy stream the server's `retry:` is honoured (above the
    /// floor). After a failure the backoff goes on growing whatever `retry:` once
    /// said, so a server that asked for `retry: 0` and then fails is not polled
    /// every 100 ms for ever.
    pub(crate) fn after(&mut self, retry_ms: Option<u64>, healthy: bool, jitter: f64) -> Duration {
        if healthy {
            self.next = self.initial;
        }
        let step = self.next;
        self.next = (self.next * 2).min(self.max);
        let backoff = step
            .mul_f64(0.8 + 0.4 * jitter.clamp(0.0, 1.0))
            .max(RETRY_FLOOR);
        match retry_ms {
            Some(ms) if healthy => retry_delay(ms),
            Some(ms) => retry_delay(ms).max(backoff),
            None => backoff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn server_retry_is_raised_to_the_floor() {
        let mut b = StreamBackoff::new(500 * MS, 30_000 * MS);
        assert_eq!(b.after(Some(0), true, 0.5), RETRY_FLOOR);
        assert_eq!(b.after(Some(1), true, 0.5), RETRY_FLOOR);
        assert_eq!(b.after(Some(750), true, 0.5), 750 * MS);
        assert_eq!(retry_delay(0), RETRY_FLOOR);
    }

    #[test]
    fn a_retry_once_given_does_not_stop_the_backoff_after_failures() {
        let mut b = StreamBackoff::new(500 * MS, 30_000 * MS);
        let delays: Vec<_> = (0..5).map(|_| b.after(Some(0), false, 0.5)).collect();
        assert_eq!(
            delays,
            [500 * MS, 1_000 * MS, 2_000 * MS, 4_000 * MS, 8_000 * MS]
        );
        // A longer retry than the backoff step is honoured.
        let mut b = StreamBackoff::new(500 * MS, 30_000 * MS);
        assert_eq!(b.after(Some(3_000), false, 0.5), 3_000 * MS);
    }

    #[test]
    fn failures_double_the_delay_up_to_the_maximum() {
        let mut b = StreamBackoff::new(500 * MS, 3_000 * MS);
        let delays: Vec<_> = (0..6).map(|_| b.after(None, false, 0.5)).collect();
        assert_eq!(
            delays,
            [
                500 * MS,
                1_000 * MS,
                2_000 * MS,
                3_000 * MS,
                3_000 * MS,
                3_000 * MS
            ]
        );
    }

    #[test]
    fn a_healthy_stream_starts_the_backoff_over() {
        let mut b = StreamBackoff::new(500 * MS, 30_000 * MS);
        for _ in 0..5 {
            b.after(None, false, 0.5);
        }
        assert_eq!(b.after(None, false, 0.5), 16_000 * MS);
        assert_eq!(b.after(None, true, 0.5), 500 * MS);
        assert_eq!(b.after(None, false, 0.5), 1_000 * MS);
    }

    #[test]
    fn jitter_spreads_twenty_percent_each_way() {
        let mut low = StreamBackoff::new(1_000 * MS, 30_000 * MS);
        let mut high = low.clone();
        assert_eq!(low.after(None, false, 0.0), 800 * MS);
        let top = high.after(None, false, 0.999_999);
        assert!(top > 1_199 * MS && top < 1_200 * MS, "{top:?}");
    }

    #[test]
    fn an_initial_delay_below_the_floor_is_raised() {
        let mut b = StreamBackoff::new(MS, 2 * MS);
        assert_eq!(b.after(None, false, 0.0), RETRY_FLOOR);
    }
}
