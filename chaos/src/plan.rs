//! The seeded plan: which fault comes next and which server it is dealt to.
//!
//! Faults come from shuffled decks holding every requested fault once, so any
//! run of as many cycles as there are faults sees each of them. A fault goes
//! only to a server whose transport it applies to (process faults to stdio
//! servers, stream and connection faults to HTTP servers, the rest to both).

use mcpvisor::{Fault, FaultKind, ServerSpec, TransportSpec};

use crate::rng::Rng;

/// How the host reaches a server, as far as faults care.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// A child process on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl Wire {
    /// The wire of `spec`.
    pub fn of(spec: &ServerSpec) -> Wire {
        match spec.transport {
            TransportSpec::Stdio(_) => Wire::Stdio,
            _ => Wire::Http,
        }
    }

    /// `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Stdio => "stdio",
            Wire::Http => "http",
        }
    }
}

/// Whether `kind` can be dealt to a server on `wire`.
pub fn applies(kind: FaultKind, wire: Wire) -> bool {
    kind.applies_to(wire == Wire::Http)
}

/// The next fault and its server, or why none could be dealt.
#[derive(Debug, Clone)]
pub(crate) enum Deal {
    /// `fault` to the server at this index.
    To(Fault, usize),
    /// No server this fault applies to is left.
    Skipped(Fault),
}

/// Deals the requested faults in a seeded order.
#[derive(Debug)]
pub(crate) struct FaultPlan {
    rng: Rng,
    faults: Vec<Fault>,
    deck: Vec<Fault>,
}

impl FaultPlan {
    pub(crate) fn new(seed: u64, faults: Vec<Fault>) -> FaultPlan {
        FaultPlan {
            rng: Rng::new(seed),
            faults,
            deck: Vec::new(),
        }
    }

    /// The next fault, to one of the servers on `wires` that `open` allows
    /// (servers given up on are not dealt faults). `None` when no fault was
    /// requested.
    pub(crate) fn next(&mut self, wires: &[Wire], open: impl Fn(usize) -> bool) -> Option<Deal> {
        if self.deck.is_empty() {
            self.deck.extend(self.faults.iter().cloned());
            self.rng.shuffle(&mut self.deck);
        }
        let fault = self.deck.pop()?;
        let candidates: Vec<usize> = (0..wires.len())
            .filter(|&i| open(i) && applies(fault.kind(), wires[i]))
            .collect();
        if candidates.is_empty() {
            return Some(Deal::Skipped(fault));
        }
        let victim = candidates[self.rng.below(candidates.len())];
        Some(Deal::To(fault, victim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_comes_once_a_deck_and_only_where_it_applies() {
        let faults: Vec<Fault> = ["kill", "garbage", "cut-stream"]
            .iter()
            .map(|f| f.parse().unwrap())
            .collect();
        let wires = [Wire::Stdio, Wire::Http];
        let mut plan = FaultPlan::new(7, faults);
        let mut dealt = Vec::new();
        for _ in 0..3 {
            match plan.next(&wires, |_| true).unwrap() {
                Deal::To(fault, victim) => {
                    assert!(applies(fault.kind(), wires[victim]), "{fault} to {victim}");
                    dealt.push(fault.kind().as_str());
                }
                Deal::Skipped(f) => panic!("{f} skipped"),
            }
        }
        dealt.sort();
        assert_eq!(dealt, ["cut-stream", "garbage", "kill"]);
        // The same seed deals the same way.
        let again = |seed| {
            let mut p = FaultPlan::new(seed, vec!["garbage".parse().unwrap()]);
            (0..6)
                .map(|_| format!("{:?}", p.next(&wires, |_| true)))
                .collect::<Vec<_>>()
        };
        assert_eq!(again(3), again(3));
        // With the only HTTP server closed, an HTTP fault has nowhere to go.
        let mut plan = FaultPlan::new(1, vec!["reset".parse().unwrap()]);
        assert!(matches!(
            plan.next(&wires, |i| i == 0),
            Some(Deal::Skipped(_))
        ));
        assert!(
            FaultPlan::new(1, Vec::new())
                .next(&wires, |_| true)
                .is_none()
        );
    }
}
