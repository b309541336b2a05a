//! The soak's load: workers making calls at a steady rate, some in bursts,
//! some cancelled, and the tally of how they ended.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use mcpvisor::{CallError, CallOptions, CallToolResult, Host};
use serde::Serialize;
use tokio::time::{Instant, MissedTickBehavior};

use super::SoakPlan;
use crate::servers::PAYLOAD;

/// How the calls ended so far.
#[derive(Debug, Default)]
pub struct Tally {
    ok: AtomicU64,
    /// Answered with `isError`: the tool ran and failed.
    tool_errors: AtomicU64,
    cancelled: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
}

/// A [`Tally`] read at one moment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// Calls answered.
    pub ok: u64,
    /// Calls answered with `isError`.
    pub tool_errors: u64,
    /// Calls dropped in flight on purpose.
    pub cancelled: u64,
    /// Calls that failed, by [`CallError`] variant.
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    /// Every failed call, whatever its kind.
    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }
}

impl Tally {
    /// The counts now.
    pub fn read(&self) -> Counts {
        Counts {
            ok: self.ok.load(Ordering::Relaxed),
            tool_errors: self.tool_errors.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            errors: self
                .errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    fn record(&self, result: Result<CallToolResult, CallError>) {
        match result {
            Ok(answer) if answer.is_error => {
                self.tool_errors.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
                *errors.entry(kind(&e)).or_default() += 1;
            }
        }
    }
}

/// The variant's name (`ConnectionClosed`, `UnknownTool`…): what a user matches on.
fn kind(e: &CallError) -> String {
    format!("{e:?}")
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// One worker until `deadline`: a call every `workers / rate` seconds to the
/// servers in turn; every `burst_every`-th tick a burst of calls at once
/// instead, and every `cancel_every`-th call dropped once it is in flight.
pub async fn worker(
    host: Host,
    plan: SoakPlan,
    index: usize,
    deadline: Instant,
    tally: Arc<Tally>,
) {
    let period = Duration::from_secs_f64(plan.workers as f64 / plan.calls_per_second);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let arguments = serde_json::json!({ "text": PAYLOAD });
    let mut server = index;
    let mut n: u64 = 0;
    while ticks.tick().await < deadline {
        n += 1;
        server = (server + plan.workers) % plan.servers;
        let tool = format!("mcp__echo{server}__echo");
        if n % plan.burst_every == 0 {
            let burst = (0..plan.burst)
                .map(|_| host.call(&tool, arguments.clone(), CallOptions::default()));
            for result in futures::future::join_all(burst).await {
                tally.record(result);
            }
            continue;
        }
        let mut call = host.call(&tool, arguments.clone(), CallOptions::default());
        if n % plan.cancel_every == 0 {
            // Polled once, so it is in flight (or failed at once), then dropped:
            // the server gets `notifications/cancelled`.
            match (&mut call).now_or_never() {
                Some(result) => tally.record(result),
                None => {
                    drop(call);
                    tally.cancelled.fetch_add(1, Ordering::Relaxed);
                }
            }
            continue;
        }
        tally.record(call.await);
    }
}
