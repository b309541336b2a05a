//! Malformed input from a server is ignored and logged, but a server that sends
//! nothing else must not flood the host's log: after the first few, only every
//! thousandth is logged, with the running count.

/// Malformed messages logged one by one, per connection.
const LOGGED_EACH: u64 = 32;
/// After those, one in this many is logged.
const LOGGED_EVERY: u64 = 1000;

/// Counts the malformed messages of one connection.
#[derive(Debug, Default)]
pub(crate) struct MalformedCount {
    count: u64,
}

impl MalformedCount {
    /// Counts one ignored message; true when this one should be logged.
    pub(crate) fn note(&mut self) -> bool {
        self.count += 1;
        self.count <= LOGGED_EACH || self.count % LOGGED_EVERY == 0
    }

    /// Malformed messages seen so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_garbage_is_logged_sparsely() {
        let mut m = MalformedCount::default();
        let logged = (0..100_000).filter(|_| m.note()).count();
        assert_eq!(m.count(), 100_000);
        assert_eq!(logged as u64, LOGGED_EACH + 100_000 / LOGGED_EVERY);
        let mut few = MalformedCount::default();
        assert!(
            (0..LOGGED_EACH).all(|_| few.note()),
            "the first ones all are"
        );
    }
}
