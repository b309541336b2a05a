//! The cluster's integration tests, one binary: `mcpvisor serve` nodes (the
//! built binary) joined with ractor_cluster, and a node that lies.

mod auth;
mod chaos;
mod hardening;
mod identity;
mod load_balancer;
mod nodes;
