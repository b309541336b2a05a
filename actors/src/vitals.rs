//! Process-wide counts of what the supervision tree keeps alive: actors,
//! connections' call lanes and the calls waiting in them.
//!
//! A host that runs for days must come back to the same counts after every
//! restart, renewal and refresh; a count that creeps up is a leak that no
//! single call would show. The counts are kept by guards owned by what they
//! count (an actor's handler, a lane, a call's slot), so whatever path drops the
//! thing also drops its count: nothing has to remember to decrement.

use std::sync::atomic::{AtomicUsize, Ordering};

static ACTORS: AtomicUsize = AtomicUsize::new(0);
static LANES: AtomicUsize = AtomicUsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// What the supervision trees of every [`Host`](crate::Host) in this process
/// hold at one instant.
///
/// Process-wide, not per host: the counts are meant for leak checks and health
/// pages, which look at the process. Read twice with nothing running in
/// between, a settled process gives the same value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Vitals {
    /// Actors whose handler is alive: supervisors, registries, servers,
    /// transports (from the spawn until the actor's task ends).
    pub actors: usize,
    /// Call lanes, one per live connection (and any kept after their
    /// connection ended).
    pub lanes: usize,
    /// Requests waiting for their answer in some lane: tool calls and the
    /// other requests that share their path.
    pub calls_in_flight: usize,
}

impl Vitals {
    /// The counts now.
    pub fn now() -> Vitals {
        Vitals {
            actors: ACTORS.load(Ordering::SeqCst),
            lanes: LANES.load(Ordering::SeqCst),
            calls_in_flight: CALLS.load(Ordering::SeqCst),
        }
    }
}

/// One counted thing: counted while this guard lives.
#[derive(Debug)]
pub(crate) struct Live(&'static AtomicUsize);

impl Live {
    fn count(counter: &'static AtomicUsize) -> Live {
        counter.fetch_add(1, Ordering::SeqCst);
        Live(counter)
    }

    /// An actor's handler.
    pub(crate) fn actor() -> Live {
        Live::count(&ACTORS)
    }

    /// A call lane.
    pub(crate) fn lane() -> Live {
        Live::count(&LANES)
    }

    /// A request waiting in a lane.
    pub(crate) fn call() -> Live {
        Live::count(&CALLS)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_counts_while_it_lives() {
        // Other tests of this crate run actors in parallel: compare a local
        // guard's effect on a counter no other test's guard can touch at once
        // only through the difference it makes under a count of its own.
        static OWN: AtomicUsize = AtomicUsize::new(0);
        let a = Live::count(&OWN);
        let b = Live::count(&OWN);
        assert_eq!(OWN.load(Ordering::SeqCst), 2);
        drop(a);
        assert_eq!(OWN.load(Ordering::SeqCst), 1);
        drop(b);
        assert_eq!(OWN.load(Ordering::SeqCst), 0);
    }
}
