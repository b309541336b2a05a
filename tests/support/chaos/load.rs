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

/// What one caller saw.
#[derive(Debug, Default)]
pub struct CallerTally {
    /// Index of the server called.
    pub server: usize,
    /// Calls answered with the text they sent.
    pub ok: u64,
    /// Calls that failed or answered wrongly.
    pub failed: Vec<CallRecord>,
    /// Calls that ended after their timeout (however they ended).
    pub late: Vec<CallRecord>,
}

/// The load running now.
pub struct Load {
    stop: Arc<AtomicBool>,
    callers: Vec<JoinHandle<CallerTally>>,
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
                    let mut tally = CallerTally {
                        server,
                        ..CallerTally::default()
                    };
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let text = format!("{server}-{caller}-{n}");
                        let record = call_once(&host, server, &tool, &text, timeout).await;
                        let failed = record.error.is_some();
                        if record.elapsed > record.timeout {
                            tally.late.push(record.clone());
                        }
                        if failed {
                            tally.failed.push(record);
                        } else {
                            tally.ok += 1;
                        }
                        // A server that is down fails calls at once: do not spin on it.
                        let nap = if failed {
                            Duration::from_millis(20)
                        } else {
                            pause
                        };
                        tokio::time::sleep(nap).await;
                    }
                    tally
                }));
            }
        }
        Load { stop, callers }
    }

    /// Stops the callers and collects what each saw.
    pub async fn stop(self) -> Vec<CallerTally> {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for caller in self.callers {
            match caller.await {
                Ok(tally) => all.push(tally),
                Err(e) => all.push(CallerTally {
                    server: usize::MAX,
                    failed: vec![CallRecord {
                        server: usize::MAX,
                        error: Some(format!("caller task failed: {e}")),
                        elapsed: Duration::ZERO,
                        timeout: Duration::ZERO,
                    }],
                    ..CallerTally::default()
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
