//! The deadlines a connection keeps outside its calls, without I/O or a
//! clock: the startup (from `initialize` to the first full tools listing),
//! a `server/discover` probe's wait for an answer (an older server may never
//! answer a method it does not know), and each later re-listing. The driver (the actors' connection) arms a timer
//! for [`SetupDeadlines::next_deadline`] and, when it fires, asks
//! [`SetupDeadlines::expire`] what, if anything, ran out.
//!
//! The rules it keeps: a startup deadline stands until the server is ready,
//! whatever the timers do; only the newest re-listing has a deadline (an older
//! one's timer firing late ends nothing); a deadline is reported once.

use std::time::Duration;

/// What ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overdue {
    /// The server was not ready within its startup timeout.
    Startup {
        /// The startup timeout, for the error that reports it.
        after: Duration,
    },
    /// The `server/discover` probe was not answered in time.
    Probe,
    /// A re-listing of the tools took longer than the request timeout.
    Relisting {
        /// The listing's generation.
        generation: u64,
        /// The request timeout, for the error that reports it.
        after: Duration,
    },
}

#[derive(Debug, Clone, Copy)]
struct Due<I> {
    at: I,
    after: Duration,
}

/// The startup and re-listing deadlines of one connection, over any instant
/// type (the driver's clock: Tokio's, so tests can pause it).
#[derive(Debug, Clone)]
pub struct SetupDeadlines<I> {
    startup: Option<Due<I>>,
    probe: Option<I>,
    relisting: Option<(u64, Due<I>)>,
}

impl<I> Default for SetupDeadlines<I> {
    fn default() -> Self {
        Self {
            startup: None,
            probe: None,
            relisting: None,
        }
    }
}

impl<I> SetupDeadlines<I>
where
    I: Copy + Ord + std::ops::Add<Duration, Output = I>,
{
    /// No deadline yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `initialize` is sent at `now`: the server has `after` to be ready.
    pub fn starting(&mut self, now: I, after: Duration) {
        self.startup = Some(Due {
            at: now + after,
            after,
        });
    }

    /// The first listing is in: the startup deadline is met.
    pub fn ready(&mut self) {
        self.startup = None;
        self.probe = None;
    }

    /// A `server/discover` probe is sent at `now` and waits `after` at most.
    pub fn probing(&mut self, now: I, after: Duration) {
        self.probe = Some(now + after);
    }

    /// The probe was answered (or given up): its deadline goes.
    pub fn probed(&mut self) {
        self.probe = None;
    }

    /// Re-listing `generation` starts at `now`, due within `after`. It replaces
    /// any older re-listing's deadline: only the newest listing counts.
    pub fn relisting(&mut self, generation: u64, now: I, after: Duration) {
        self.relisting = Some((
            generation,
            Due {
                at: now + after,
                after,
            },
        ));
    }

    /// Listing `generation` ended (done or failed): its deadline goes. Another
    /// generation's stays.
    pub fn listed(&mut self, generation: u64) {
        if self.relisting.is_some_and(|(g, _)| g == generation) {
            self.relisting = None;
        }
    }

    /// The earliest deadline still standing, for the driver's timer.
    pub fn next_deadline(&self) -> Option<I> {
        [
            self.startup.map(|d| d.at),
            self.probe,
            self.relisting.map(|(_, d)| d.at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// What ran out of time by `now`, the startup first (it ends the
    /// connection, and a listing with it). What is reported is cleared.
    pub fn expire(&mut self, now: I) -> Option<Overdue> {
        if let Some(due) = self.startup.filter(|d| d.at <= now) {
            self.startup = None;
            return Some(Overdue::Startup { after: due.after });
        }
        if self.probe.is_some_and(|at| at <= now) {
            self.probe = None;
            return Some(Overdue::Probe);
        }
        if let Some((generation, due)) = self.relisting.filter(|(_, d)| d.at <= now) {
            self.relisting = None;
            return Some(Overdue::Relisting {
                generation,
                after: due.after,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_startup_deadline_stands_until_ready_and_is_told_once() {
        let t0 = Instant::now();
        let mut d = SetupDeadlines::new();
        assert_eq!(d.next_deadline(), None);
        d.starting(t0, 10 * S);
        assert_eq!(d.next_deadline(), Some(t0 + 10 * S));
        assert_eq!(d.expire(t0 + 9 * S), None, "not due yet");
        assert_eq!(
            d.expire(t0 + 10 * S),
            Some(Overdue::Startup { after: 10 * S })
        );
        assert_eq!(d.expire(t0 + 11 * S), None, "told once");

        let mut d = SetupDeadlines::new();
        d.starting(t0, 10 * S);
        d.ready();
        assert_eq!(d.next_deadline(), None);
        assert_eq!(d.expire(t0 + 60 * S), None, "a ready server is not late");
    }

    #[test]
    fn only_the_newest_relisting_has_a_deadline() {
        let t0 = Instant::now();
        let mut d = SetupDeadlines::new();
        d.relisting(1, t0, 5 * S);
        d.relisting(2, t0 + 3 * S, 5 * S);
        // Generation 1's timer fires at t0+5: nothing of it is left.
        assert_eq!(d.expire(t0 + 5 * S), None);
        // Generation 1 ending does not clear generation 2.
        d.listed(1);
        assert_eq!(d.next_deadline(), Some(t0 + 8 * S));
        assert_eq!(
            d.expire(t0 + 8 * S),
            Some(Overdue::Relisting {
                generation: 2,
                after: 5 * S
            })
        );
        assert_eq!(d.next_deadline(), None);

        d.relisting(3, t0, 5 * S);
        d.listed(3);
        assert_eq!(
            d.expire(t0 + 60 * S),
            None,
            "a finished listing is not late"
        );
    }

    #[test]
    fn a_probe_waits_its_own_time_inside_the_startup() {
        let t0 = Instant::now();
        let mut d = SetupDeadlines::new();
        d.starting(t0, 10 * S);
        d.probing(t0, 3 * S);
        assert_eq!(d.next_deadline(), Some(t0 + 3 * S));
        assert_eq!(d.expire(t0 + 3 * S), Some(Overdue::Probe));
        assert_eq!(d.expire(t0 + 3 * S), None, "told once");
        assert_eq!(
            d.next_deadline(),
            Some(t0 + 10 * S),
            "the startup still stands"
        );

        let mut d = SetupDeadlines::new();
        d.starting(t0, 10 * S);
        d.probing(t0, 3 * S);
        d.probed();
        assert_eq!(d.expire(t0 + 5 * S), None, "an answered probe is not late");
    }

    #[test]
    fn the_startup_is_told_before_a_relisting_due_as_early() {
        let t0 = Instant::now();
        let mut d = SetupDeadlines::new();
        d.starting(t0, 10 * S);
        d.relisting(4, t0, 2 * S);
        assert_eq!(d.next_deadline(), Some(t0 + 2 * S), "the earliest");
        assert_eq!(
            d.expire(t0 + 20 * S),
            Some(Overdue::Startup { after: 10 * S })
        );
        assert_eq!(
            d.expire(t0 + 20 * S),
            Some(Overdue::Relisting {
                generation: 4,
                after: 2 * S
            })
        );
        assert_eq!(d.expire(t0 + 20 * S), None);
    }
}
