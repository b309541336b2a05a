//! The node-kill fault: with other nodes of a cluster, a cycle kills one
//! (SIGKILL to its process group) while the load runs on this host's servers
//! and probe calls wait on the node's, then starts it again.
//!
//! Checked: every probe call waiting on the node ends with a lost-node error
//! within the loss bound plus the slack; the node's routes leave this host
//! within the same bound; no call to this host's own servers fails; once
//! started again, the node's routes return within the recovery bound.

use std::fmt;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor::cluster::{Cluster, ClusterOptions};
use mcpvisor::{CallError, CallOptions, Host, JoinCluster};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use crate::callers::Running;
use crate::engine::Engine;
use crate::invariant::Invariant;

/// The report's name of the fault.
pub const NODE_KILL: &str = "node-kill";

/// Starts a node's process (again after each kill). The child must lead its
/// own process group (`process_group(0)`): a kill takes the whole group.
pub type NodeStarter = Arc<dyn Fn() -> std::io::Result<Child> + Send + Sync>;

/// Another node of the cluster the run's host joins, which `node-kill`
/// cycles kill and start again.
#[derive(Clone)]
pub struct ChaosNode {
    /// Its node name.
    pub name: String,
    /// How to start it.
    pub start: NodeStarter,
    /// A call to one of its tools that stays in flight long enough to meet
    /// the kill (a slow tool), with its arguments: what the probes call.
    pub probe: Option<(String, Value)>,
}

impl fmt::Debug for ChaosNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChaosNode")
            .field("name", &self.name)
            .field("probe", &self.probe.as_ref().map(|(tool, _)| tool))
            .finish_non_exhaustive()
    }
}

/// Probe calls in flight on the node at the kill.
const PROBES: usize = 4;

/// The run's cluster: its membership and the nodes it runs.
pub(crate) struct Nodes {
    pub(crate) cluster: Option<Cluster>,
    pub(crate) running: Vec<(ChaosNode, Option<Child>)>,
    pub(crate) lost_after: Duration,
}

impl Nodes {
    /// Joins `options`' cluster and starts every node; each must be routed
    /// (at least one tool) within `within`.
    pub(crate) async fn start(
        host: &Host,
        options: Option<ClusterOptions>,
        nodes: &[ChaosNode],
        within: Duration,
    ) -> Result<Nodes, String> {
        let Some(options) = options else {
            if nodes.is_empty() {
                return Ok(Nodes {
                    cluster: None,
                    running: Vec::new(),
                    lost_after: Duration::ZERO,
                });
            }
            return Err("nodes to kill need the cluster the host joins".into());
        };
        let lost_after = options.lost_after;
        let cluster = host
            .join_cluster(options)
            .await
            .map_err(|e| e.to_string())?;
        let mut running = Vec::new();
        for node in nodes {
            let child = (node.start)().map_err(|e| format!("node {}: {e}", node.name))?;
            running.push((node.clone(), Some(child)));
        }
        let mut all = Nodes {
            cluster: Some(cluster),
            running,
            lost_after,
        };
        for node in nodes {
            if routed_on(host, &node.name, true, within).await.is_none() {
                all.stop();
                return Err(format!(
                    "node {} was not routed within {within:?}",
                    node.name
                ));
            }
        }
        Ok(all)
    }

    /// Stops every node (their process groups) and leaves the cluster.
    pub(crate) fn stop(&mut self) {
        for (_, child) in &mut self.running {
            if let Some(mut child) = child.take() {
                let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
                let _ = child.wait();
            }
        }
        self.cluster = None;
    }
}

/// When `host` routes (`present`) or no longer routes a tool of `node`,
/// within `within`; `None` past it.
async fn routed_on(host: &Host, node: &str, present: bool, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    loop {
        let has = host
            .routes()
            .iter()
            .any(|r| r.node.as_deref() == Some(node));
        if has == present {
            return Some(Instant::now());
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

impl Engine {
    /// A node-kill cycle, `index` in the run. False when there is no node.
    pub(crate) async fn node_cycle(&mut self, index: usize) -> bool {
        if self.nodes.running.is_empty() {
            return false;
        }
        let which = index % self.nodes.running.len();
        let node = self.nodes.running[which].0.clone();
        self.report.node_killed();
        let load = Running::start(
            &self.host,
            &self.open_calls(),
            &self.callers,
            self.pace(),
            self.chaos.seed ^ (index as u64 + 1),
        );
        let probes: Vec<_> = node
            .probe
            .iter()
            .flat_map(|(tool, arguments)| {
                (0..PROBES).map(move |_| (tool.clone(), arguments.clone()))
            })
            .map(|(tool, arguments)| {
                let call = self.host.call(&tool, arguments, CallOptions::default());
                tokio::spawn(async move { (call.await, Instant::now()) })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;

        let killed_at = Instant::now();
        if let Some(mut child) = self.nodes.running[which].1.take() {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
        let bound = self.nodes.lost_after + self.chaos.timeout_slack;
        if routed_on(&self.host, &node.name, false, bound)
            .await
            .is_none()
        {
            let detail = format!(
                "node {}'s routes were still here {bound:?} after it was killed",
                node.name
            );
            self.violate(Invariant::NodeWithdrawn, Some(index), None, detail);
        }
        for mut probe in probes {
            let ended = tokio::time::timeout(bound, &mut probe).await;
            // A probe still waiting is a violation below; it must not outlive the cycle.
            probe.abort();
            let detail = match ended {
                Ok(Ok((Err(CallError::NodeLost { .. }), at))) if at - killed_at <= bound => {
                    continue;
                }
                Ok(Ok((Err(CallError::NodeLost { .. }), at))) => format!(
                    "a call on node {} failed as lost {:?} after the kill, past {bound:?}",
                    node.name,
                    at - killed_at
                ),
                Ok(Ok((Ok(_), _))) => format!(
                    "a probe of node {} answered: it ended before the kill (choose a slower probe)",
                    node.name
                ),
                Ok(Ok((Err(e), _))) => {
                    format!(
                        "a call on node {} ended with {e}, not a lost node",
                        node.name
                    )
                }
                Ok(Err(e)) => format!("a probe task failed: {e}"),
                Err(_) => format!(
                    "a call on node {} was still waiting {bound:?} after the kill",
                    node.name
                ),
            };
            self.violate(Invariant::AnsweredInTime, Some(index), None, detail);
        }

        // Back: the node starts again and its routes return.
        let restarted_at = Instant::now();
        match (node.start)() {
            Ok(child) => self.nodes.running[which].1 = Some(child),
            Err(e) => {
                let detail = format!("node {} could not be started again: {e}", node.name);
                self.violate(Invariant::Recovered, Some(index), None, detail);
            }
        }
        match routed_on(&self.host, &node.name, true, self.chaos.recovery_timeout).await {
            Some(at) => self.report.recovered(NODE_KILL, at - restarted_at),
            None => {
                let detail = format!(
                    "node {}'s routes did not return within {:?} of its start",
                    node.name, self.chaos.recovery_timeout
                );
                self.violate(Invariant::Recovered, Some(index), None, detail);
            }
        }
        tokio::time::sleep(self.chaos.settle).await;
        let by_server = load.stop().await;
        self.report.add_calls(&by_server, "");
        for (server, t) in &by_server {
            if t.failed() > 0 {
                let errors: Vec<String> =
                    t.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let detail = format!(
                    "{} call(s) failed while node {} was killed: {}",
                    t.failed(),
                    node.name,
                    errors.join(", ")
                );
                let i = self.index_of(server);
                self.violate(Invariant::HealthyUnaffected, Some(index), Some(i), detail);
            }
        }
        self.check_resources(index);
        self.check_panics(Some(index));
        true
    }
}
