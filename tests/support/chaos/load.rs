//! Steady concurrent call load: a few callers per server, calling `echo` in a
//! loop with a unique text each time, until told to stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcpvisor::transports::TransportError;
use mcpvisor::{CallError, CallOptions, Host};
use serde_json::json;
use tokio::task::JoinHandle;

/// How one call ended.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// Index of the server called.
    pub server: usize,
    /// `None` when it answered with the text it was sent.
    pub error: Option<String>,
    pub elapsed: Duration,
    pub timeout: Duration,
}

/// The load running now.
pub struct Load {
    stop: Arc<AtomicBool>,
    callers: Vec<JoinHandle<Vec<CallRecord>>>,
}

impl Load {
    /// Starts `per_server` callers on each of `servers` (their route names).
    pub fn start(
        host: &Arc<Host>,
        servers: &[String],
        per_server: usize,
        timeout: Duration,
        pause: Duration,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut callers = Vec::new();
        for (server, name) in servers.iter().enumerate() {
            for caller in 0..per_server {
                let (host, stop) = (Arc::clone(host), Arc::clone(&stop));
                let tool = format!("mcp__{name}__echo");
                callers.push(tokio::spawn(async move {
                    let mut records = Vec::new();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let text = format!("{server}-{caller}-{n}");
                        let record = call_once(&host, server, &tool, &text, timeout).await;
                        let failed = record.error.is_some();
                        records.push(record);
                        // A server that is down fails calls at once: do not spin on it.
                        let nap = if failed {
                            Duration::from_millis(20)
                        } else {
                            pause
                        };
                        tokio::time::sleep(nap).await;
                    }
                    records
                }));
            }
        }
        Load { stop, callers }
    }

    /// Stops the callers and collects every call they made.
    pub async fn stop(self) -> Vec<CallRecord> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for caller in self.callers {
            match caller.await {
                Ok(records) => all.extend(records),
                Err(e) => all.push(CallRecord {
                    server: usize::MAX,
                    error: Some(format!("caller task failed: {e}")),
                    elapsed: Duration::ZERO,
                    timeout: Duration::ZERO,
                }),
            }
        }
        all
    }
}

async fn call_once(
    host: &Host,
    server: usize,
    tool: &str,
    text: &str,
    timeout: Duration,
) -> CallRecord {
    let started = Instant::now();
    let outcome = host
        .call(
            tool,
            json!({ "text": text }),
            CallOptions::default().timeout(timeout),
        )
        .await;
    let error = match outcome {
        Ok(r) if r.text() == text => None,
        Ok(r) => Some(format!("wrong answer {:?} for {text:?}", r.text())),
        Err(e) => Some(error_kind(&e)),
    };
    CallRecord {
        server,
        error,
        elapsed: started.elapsed(),
        timeout,
    }
}

/// A short name for the kind of a call error, for the summary.
pub fn error_kind(e: &CallError) -> String {
    match e {
        CallError::UnknownTool(_) => "unknown-tool".into(),
        CallError::ServerUnavailable { .. } => "unavailable".into(),
        CallError::Timeout { .. } => "timeout".into(),
        CallError::ConnectionTimedOut { .. } => "connection-timed-out".into(),
        CallError::Transport { source, .. } => format!("transport/{}", transport_kind(source)),
        CallError::ConnectionClosed { .. } => "connection-closed".into(),
        CallError::Cancelled => "cancelled".into(),
        CallError::Overloaded { .. } => "overloaded".into(),
        CallError::Rpc { .. } => "rpc-error".into(),
        CallError::InvalidResult { .. } => "invalid-result".into(),
        CallError::Shutdown => "shutdown".into(),
        other => format!("other ({other})"),
    }
}

fn transport_kind(e: &TransportError) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("unknown")
        .to_string()
}
