//! The run's own record of what the host announced: restarts and failures per
//! server (to hold the supervisor to its restart policy), counts, and every
//! process a connection ran (so the leak check also sees connections that
//! lived between two looks). A task reads the events as they come, so each is
//! stamped when it happened (to within a scheduling delay), not when a cycle
//! got round to looking.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcpvisor::{Host, HostEvent, RestartPolicy};
use tokio::task::JoinHandle;

/// How much later than the supervisor the run may stamp an event.
const STAMP_SLACK: Duration = Duration::from_millis(500);
/// Restarts kept per server: the policy's window never needs more.
const MAX_STAMPS: usize = 4096;

#[derive(Default)]
struct Record {
    /// When each restart was announced.
    restarts: Vec<Instant>,
    /// When the server was announced failed, not yet checked.
    failed: Vec<Instant>,
}

#[derive(Default)]
struct Log {
    servers: HashMap<String, Record>,
    restarts: u64,
    sessions_renewed: u64,
    /// Processes of connections announced ready, not yet taken.
    pids: BTreeSet<u32>,
}

/// What the host announced, as read by a task of the run.
pub(crate) struct EventLog {
    log: Arc<Mutex<Log>>,
    reader: JoinHandle<()>,
}

impl EventLog {
    /// Starts reading `host`'s events.
    pub(crate) fn start(host: &Host) -> EventLog {
        let log: Arc<Mutex<Log>> = Arc::default();
        let mut events = Box::pin(host.events());
        let writer = log.clone();
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let now = Instant::now();
                let mut log = lock(&writer);
                match event {
                    HostEvent::ServerRestarting { server, .. } => {
                        log.restarts += 1;
                        let r = log.servers.entry(server.to_string()).or_default();
                        if r.restarts.len() >= MAX_STAMPS {
                            r.restarts.remove(0);
                        }
                        r.restarts.push(now);
                    }
                    HostEvent::ServerFailed { server, .. } => {
                        let r = log.servers.entry(server.to_string()).or_default();
                        if r.failed.len() < MAX_STAMPS {
                            r.failed.push(now);
                        }
                    }
                    HostEvent::ServerReady { pid: Some(pid), .. } => {
                        log.pids.insert(pid);
                    }
                    HostEvent::SessionRenewed { .. } => log.sessions_renewed += 1,
                    _ => {}
                }
            }
        });
        EventLog { log, reader }
    }

    /// Restarts and session renewals announced so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        let log = lock(&self.log);
        (log.restarts, log.sessions_renewed)
    }

    /// The processes of connections announced ready since the last call.
    pub(crate) fn take_pids(&self) -> BTreeSet<u32> {
        std::mem::take(&mut lock(&self.log).pids)
    }

    /// Each failure of `server` announced since the last look that came with
    /// fewer restarts in the window than `policy` allows, described.
    pub(crate) fn early_failures(&self, server: &str, policy: &RestartPolicy) -> Vec<String> {
        let mut log = lock(&self.log);
        let record = log.servers.entry(server.to_string()).or_default();
        let mut early = Vec::new();
        for at in std::mem::take(&mut record.failed) {
            let from = at.checked_sub(policy.window + STAMP_SLACK).unwrap_or(at);
            let within = record
                .restarts
                .iter()
                .filter(|&&t| t >= from && t <= at)
                .count();
            if within < policy.max_restarts {
                early.push(format!(
                    "marked failed after {within} restart(s) in {:?}; the policy allows {}",
                    policy.window, policy.max_restarts
                ));
            }
        }
        early
    }

    /// [`EventLog::early_failures`] for a server seen failed: its
    /// `ServerFailed` event may still be on its way to the reader, so wait for
    /// it (a failure without one is a violation too).
    pub(crate) async fn check_failed(&self, server: &str, policy: &RestartPolicy) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let announced = lock(&self.log)
                .servers
                .get(server)
                .is_some_and(|r| !r.failed.is_empty());
            if announced {
                return self.early_failures(server, policy);
            }
            if Instant::now() > deadline {
                return vec!["marked failed, but no ServerFailed event came".into()];
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The host asked for `server` to restart: its history starts over.
    pub(crate) fn reset(&self, server: &str) {
        lock(&self.log).servers.remove(server);
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
