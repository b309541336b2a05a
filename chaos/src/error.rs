//! Why a run could not be made (as opposed to a run that found a broken
//! invariant, which is a [`Report`](crate::Report)).

use crate::load::LoadError;

/// Why [`run`](crate::run) did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChaosError {
    /// No servers to run.
    #[error("there are no servers to run")]
    NoServers,
    /// No faults to deal.
    #[error("no faults to deal")]
    NoFaults,
    /// None of the faults applies to any server's transport.
    #[error("none of the faults ({faults}) applies to these servers' transports")]
    NothingApplies {
        /// The faults, comma-separated.
        faults: String,
    },
    /// The load names servers or tools the run does not have.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The host did not start.
    #[error("the host did not start: {0}")]
    Start(#[from] mcpvisor::StartError),
    /// The host could not join the cluster, or a node did not start or join.
    #[error("the cluster did not form: {0}")]
    Cluster(String),
}
