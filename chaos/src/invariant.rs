//! The invariants a run checks, by name, and one broken instance of one.

use serde::Serialize;

/// One property of crash isolation a run holds the host to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Invariant {
    /// Every server was ready at the start and answered the load before any fault.
    ServersStart,
    /// Every fault dealt was applied (`Host::inject` succeeded).
    FaultsApplied,
    /// Every call on a server with no fault was answered.
    HealthyUnaffected,
    /// Every call ended, answered or with a typed error, within its timeout
    /// plus the slack.
    AnsweredInTime,
    /// The faulted server's calls failed only in ways its fault explains, and
    /// garbage restarted nothing.
    ErrorsExplained,
    /// The faulted server answered again within the recovery bound.
    Recovered,
    /// A server was marked failed only once the restart policy allowed it.
    FailedPerPolicy,
    /// No process was left in the group of a connection that is gone.
    NoLeakedProcess,
    /// Threads, file descriptors and RSS stayed within a band over the baseline.
    ResourcesInBand,
    /// Nothing panicked.
    NoPanic,
    /// A killed node's routes left this host within the loss bound plus the slack.
    NodeWithdrawn,
}

impl Invariant {
    /// Every invariant, in the order the report lists them.
    pub const ALL: [Invariant; 11] = [
        Invariant::ServersStart,
        Invariant::FaultsApplied,
        Invariant::HealthyUnaffected,
        Invariant::AnsweredInTime,
        Invariant::ErrorsExplained,
        Invariant::Recovered,
        Invariant::FailedPerPolicy,
        Invariant::NoLeakedProcess,
        Invariant::ResourcesInBand,
        Invariant::NoPanic,
        Invariant::NodeWithdrawn,
    ];

    /// Its name: `healthy-unaffected`, `recovered`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::ServersStart => "servers-start",
            Invariant::FaultsApplied => "faults-applied",
            Invariant::HealthyUnaffected => "healthy-unaffected",
            Invariant::AnsweredInTime => "answered-in-time",
            Invariant::ErrorsExplained => "errors-explained",
            Invariant::Recovered => "recovered",
            Invariant::FailedPerPolicy => "failed-per-policy",
            Invariant::NoLeakedProcess => "no-leaked-process",
            Invariant::ResourcesInBand => "resources-in-band",
            Invariant::NoPanic => "no-panic",
            Invariant::NodeWithdrawn => "node-withdrawn",
        }
    }

    /// Whether only a run with cluster nodes can test it.
    pub fn needs_cluster(self) -> bool {
        matches!(self, Invariant::NodeWithdrawn)
    }

    /// What it promises, in a sentence.
    pub fn promise(self) -> &'static str {
        match self {
            Invariant::ServersStart => {
                "every server was ready at the start and answered the load before any fault"
            }
            Invariant::FaultsApplied => "every fault dealt was applied",
            Invariant::HealthyUnaffected => "every call on a server with no fault was answered",
            Invariant::AnsweredInTime => {
                "every call ended, answered or with a typed error, within its timeout plus the slack"
            }
            Invariant::ErrorsExplained => {
                "calls on the faulted server failed only in ways the fault explains"
            }
            Invariant::Recovered => "the faulted server answered again within the recovery bound",
            Invariant::FailedPerPolicy => {
                "a server was marked failed only once the restart policy allowed it"
            }
            Invariant::NoLeakedProcess => {
                "no process was left in the group of a connection that is gone"
            }
            Invariant::ResourcesInBand => {
                "threads, file descriptors and RSS stayed within the band over the baseline"
            }
            Invariant::NoPanic => "nothing panicked",
            Invariant::NodeWithdrawn => {
                "a killed node's routes left this host within the loss bound plus the slack"
            }
        }
    }
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One time an invariant did not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which.
    pub invariant: Invariant,
    /// The cycle it happened in (`None`: at the start or at the end).
    pub cycle: Option<usize>,
    /// The server concerned, when one is.
    pub server: Option<String>,
    /// What was seen.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cycle {
            Some(c) => write!(f, "cycle {c}")?,
            None => f.write_str("run")?,
        }
        if let Some(server) = &self.server {
            write!(f, ", {server}")?;
        }
        write!(f, ": {}: {}", self.invariant, self.detail)
    }
}
