//! Restart policy: exponential backoff with jitter and a restart-intensity limit.
//!
//! Pure: the caller passes the clock and the random sample, so the policy is
//! tested without waiting.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How a crashed server is restarted.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartPolicy {
    /// Delay before the first restart.
    pub initial_backoff: Duration,
    /// Longest delay between restarts.
    pub max_backoff: Duration,
    /// Each consecutive failure multiplies the delay by this.
    pub multiplier: f64,
    /// Random spread around the delay, as a fraction (0.2 = ±20 %), so many
    /// servers that fail together do not restart in lockstep.
    pub jitter: f64,
    /// Restarts allowed within `window`; one more marks the server failed.
    pub max_restarts: usize,
    /// The window for `max_restarts`.
    pub window: Duration,
    /// Once `max_restarts` are spent the server is marked failed, and then
    /// tried again after this long, the delay doubling after each failed try up
    /// to `max_probe_interval`, so a server that comes back is picked up by a
    /// host that runs for days. `None`: a failed server waits for a restart.
    pub probe_interval: Option<Duration>,
    /// Longest delay between two tries of a failed server.
    pub max_probe_interval: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: 0.2,
            max_restarts: 5,
            window: Duration::from_secs(60),
            probe_interval: Some(Duration::from_secs(30)),
            max_probe_interval: Duration::from_secs(600),
        }
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum RestartDecision {
    /// Restart after `backoff`; this is consecutive attempt `attempt` (1-based).
    Restart {
        /// Consecutive failures so far.
        attempt: u32,
        /// Delay before restarting.
        backoff: Duration,
    },
    /// Too many restarts in the window: stop until asked again.
    GiveUp {
        /// Restarts counted in the window.
        restarts: usize,
    },
}

/// One server's restart history.
#[derive(Debug, Default, Clone)]
pub struct RestartTracker {
    recent: VecDeque<Instant>,
    consecutive: u32,
    total: u64,
    /// Tries since the server was marked failed (0: not failed).
    probes: u32,
}

impl RestartTracker {
    /// Records a failure at `now`; `random` is a sample in [0, 1) for jitter.
    pub fn on_failure(
        &mut self,
        policy: &RestartPolicy,
        now: Instant,
        random: f64,
    ) -> RestartDecision {
        while let Some(&t) = self.recent.front() {
            if now.duration_since(t) > policy.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= policy.max_restarts {
            return RestartDecision::GiveUp {
                restarts: self.recent.len(),
            };
        }
        self.recent.push_back(now);
        self.consecutive += 1;
        self.total += 1;
        let exp = policy
            .multiplier
            .powi(self.consecutive.saturating_sub(1).min(64) as i32);
        let base = policy.initial_backoff.as_secs_f64() * exp;
        let spread = 1.0 + policy.jitter * (2.0 * random.clamp(0.0, 1.0) - 1.0);
        let secs = (base * spread)
            .min(policy.max_backoff.as_secs_f64())
            .max(0.0);
        RestartDecision::Restart {
            attempt: self.consecutive,
            backoff: Duration::from_secs_f64(secs),
        }
    }

    /// The server was marked failed (or a try of it failed): the delay until
    /// it is tried again, `None` when failed servers are not tried.
    pub fn next_probe(&mut self, policy: &RestartPolicy, random: f64) -> Option<Duration> {
        let first = policy.probe_interval?;
        self.probes = self.probes.saturating_add(1);
        let base = first.as_secs_f64() * 2f64.powi(self.probes.saturating_sub(1).min(32) as i32);
        let spread = 1.0 + policy.jitter * (2.0 * random.clamp(0.0, 1.0) - 1.0);
        let secs = (base * spread)
            .min(
                policy
                    .max_probe_interval
                    .as_secs_f64()
                    .max(first.as_secs_f64()),
            )
            .max(0.0);
        Some(Duration::from_secs_f64(secs))
    }

    /// Whether the server is failed and being tried now and then: a failure
    /// now is a failed try, not one to restart at once.
    pub fn probing(&self) -> bool {
        self.probes > 0
    }

    /// The server reached ready: the next failure starts from the initial
    /// backoff, and one that came back from failed has its budget again.
    pub fn on_ready(&mut self) {
        self.consecutive = 0;
        if self.probes > 0 {
            self.probes = 0;
            self.recent.clear();
        }
    }

    /// Forget the history (a host asked to restart a failed server).
    pub fn reset(&mut self) {
        self.recent.clear();
        self.consecutive = 0;
        self.probes = 0;
    }

    /// Restarts since the server was first started.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_within_jitter_and_caps() {
        let policy = RestartPolicy {
            max_restarts: 100,
            ..RestartPolicy::default()
        };
        let mut t = RestartTracker::default();
        let now = Instant::now();
        let mut last = Duration::ZERO;
        for i in 1..=12u32 {
            let RestartDecision::Restart { attempt, backoff } = t.on_failure(&policy, now, 0.5)
            else {
                panic!("gave up too early")
            };
            assert_eq!(attempt, i);
            assert!(backoff <= policy.max_backoff);
            // With neutral jitter each delay is the one before times the
            // multiplier (200 ms, 400 ms, 800 ms…), until the cap.
            let expected = policy
                .initial_backoff
                .mul_f64(policy.multiplier.powi(i as i32 - 1))
                .min(policy.max_backoff);
            let off = backoff.abs_diff(expected);
            assert!(
                off <= Duration::from_millis(1),
                "attempt {i}: {backoff:?}, expected {expected:?} (after {last:?})"
            );
            last = backoff;
        }
        assert_eq!(last, policy.max_backoff);
        let mut t = RestartTracker::default();
        let RestartDecision::Restart { backoff: lo, .. } = t.on_failure(&policy, now, 0.0) else {
            panic!()
        };
        let mut t = RestartTracker::default();
        let RestartDecision::Restart { backoff: hi, .. } = t.on_failure(&policy, now, 0.999) else {
            panic!()
        };
        assert!(lo < hi);
        assert!(
            lo >= Duration::from_millis(159) && hi <= Duration::from_millis(241),
            "{lo:?} {hi:?}"
        );
    }

    #[test]
    fn intensity_limit_gives_up_and_window_forgives() {
        let policy = RestartPolicy::default();
        let mut t = RestartTracker::default();
        let start = Instant::now();
        for _ in 0..5 {
            assert!(matches!(
                t.on_failure(&policy, start, 0.5),
                RestartDecision::Restart { .. }
            ));
        }
        assert_eq!(
            t.on_failure(&policy, start, 0.5),
            RestartDecision::GiveUp { restarts: 5 }
        );
        let later = start + policy.window + Duration::from_secs(1);
        assert!(matches!(
            t.on_failure(&policy, later, 0.5),
            RestartDecision::Restart { .. }
        ));
    }

    #[test]
    fn ready_resets_the_backoff_but_not_the_window() {
        let policy = RestartPolicy::default();
        let mut t = RestartTracker::default();
        let now = Instant::now();
        t.on_failure(&policy, now, 0.5);
        t.on_failure(&policy, now, 0.5);
        t.on_ready();
        let RestartDecision::Restart { attempt, backoff } = t.on_failure(&policy, now, 0.5) else {
            panic!()
        };
        assert_eq!(attempt, 1);
        assert_eq!(backoff, policy.initial_backoff);
        t.reset();
        for _ in 0..5 {
            assert!(matches!(
                t.on_failure(&policy, now, 0.5),
                RestartDecision::Restart { .. }
            ));
        }
    }

    #[test]
    fn a_failed_server_is_tried_at_a_slow_doubling_capped_pace_until_it_is_back() {
        let policy = RestartPolicy {
            max_restarts: 1,
            ..RestartPolicy::default()
        };
        let mut t = RestartTracker::default();
        let now = Instant::now();
        t.on_failure(&policy, now, 0.5);
        assert!(matches!(
            t.on_failure(&policy, now, 0.5),
            RestartDecision::GiveUp { .. }
        ));
        assert!(!t.probing());
        let delays: Vec<Duration> = (0..8)
            .map(|_| t.next_probe(&policy, 0.5).unwrap())
            .collect();
        assert!(t.probing());
        assert_eq!(delays[0], Duration::from_secs(30));
        assert_eq!(delays[1], Duration::from_secs(60));
        assert_eq!(delays[4], Duration::from_secs(480));
        assert_eq!(delays[5], policy.max_probe_interval);
        assert_eq!(delays[7], policy.max_probe_interval);
        // Back: a fresh budget, and the next give-up starts from the first delay.
        t.on_ready();
        assert!(!t.probing());
        assert!(matches!(
            t.on_failure(&policy, now, 0.5),
            RestartDecision::Restart { .. }
        ));
        assert_eq!(t.next_probe(&policy, 0.5), Some(Duration::from_secs(30)));

        let never = RestartPolicy {
            probe_interval: None,
            ..policy
        };
        assert_eq!(RestartTracker::default().next_probe(&never, 0.5), None);
    }
}
