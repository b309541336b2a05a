//! The harness's own record of restarts, to hold the supervisor to its policy:
//! a server may reach `Failed` only after `max_restarts` restarts within the
//! policy's window. Kept from the host's events by a task of its own that reads
//! them as they come, so each restart is stamped when it happened (to within a
//! scheduling delay), not when a cycle got round to looking.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcpvisor::{Host, HostEvent, RestartPolicy};
use tokio::task::JoinHandle;

/// How much later than the supervisor the harness may stamp an event.
const STAMP_SLACK: Duration = Duration::from_millis(500);

#[derive(Default)]
struct Record {
    /// When each restart was announced.
    restarts: Vec<Instant>,
    /// When the server was announced failed, not yet checked.
    failed: Vec<Instant>,
}

/// Restarts and failures of each server, as the host announced them.
pub struct RestartLog {
    servers: Arc<Mutex<HashMap<String, Record>>>,
    reader: JoinHandle<()>,
}

impl RestartLog {
    /// Starts reading `host`'s events.
    pub fn start(host: &Host) -> RestartLog {
        let servers: Arc<Mutex<HashMap<String, Record>>> = Arc::default();
        let mut events = Box::pin(host.events());
        let log = servers.clone();
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let now = Instant::now();
                match event {
                    HostEvent::ServerRestarting { server, .. } => {
                        lock(&log)
                            .entry(server.to_string())
                            .or_default()
                            .restarts
                            .push(now);
                    }
                    HostEvent::ServerFailed { server, .. } => {
                        lock(&log)
                            .entry(server.to_string())
                            .or_default()
                            .failed
                            .push(now);
                    }
                    _ => {}
                }
            }
        });
        RestartLog { servers, reader }
    }

    /// Each failure of `server` announced since the last look that came with
    /// fewer restarts in the window than `policy` allows, described.
    pub fn early_failures(&self, server: &str, policy: &RestartPolicy) -> Vec<String> {
        let mut servers = lock(&self.servers);
        let record = servers.entry(server.to_string()).or_default();
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
                    "{server} Failed after {within} restart(s) in {:?}; the policy allows {}",
                    policy.window, policy.max_restarts
                ));
            }
        }
        early
    }

    /// [`RestartLog::early_failures`] for a server seen `Failed`: its
    /// `ServerFailed` event may still be on its way to the reader, so wait for
    /// it (a failure without one is a violation too).
    pub async fn check_failed(&self, server: &str, policy: &RestartPolicy) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let announced = lock(&self.servers)
                .get(server)
                .is_some_and(|r| !r.failed.is_empty());
            if announced {
                return self.early_failures(server, policy);
            }
            if Instant::now() > deadline {
                return vec![format!(
                    "{server} is Failed, but no ServerFailed event came"
                )];
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The host asked for `server` to restart: its history starts over.
    pub fn reset(&self, server: &str) {
        lock(&self.servers).remove(server);
    }
}

impl Drop for RestartLog {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
