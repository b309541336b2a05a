//! What the fault shim costs a host with no fault set, measured in the run:
//! an event delivered straight to a sink against the same event through
//! `Faulty` with nothing set, on a current-thread runtime like a transport's
//! reader. The report sets the difference against mcpvisor's stdio call p50.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor_transports::{Faulty, Oversized, TransportEvent, TransportSink, WireFaults};
use serde::Serialize;

/// Events delivered per sample.
const EVENTS: u64 = 200_000;
/// Samples per sink, alternating; the median is kept.
const SAMPLES: usize = 15;

/// Takes every event and keeps nothing.
struct Discard;

impl TransportSink for Discard {
    async fn deliver(&self, event: TransportEvent) -> bool {
        black_box(event);
        true
    }
}

/// The shim's cost per event.
#[derive(Debug, Clone, Serialize)]
pub struct ShimCost {
    /// Nanoseconds per event delivered straight to the sink (median of samples).
    pub direct_ns: f64,
    /// Nanoseconds per event through the shim with no fault set.
    pub shim_ns: f64,
}

impl ShimCost {
    /// The shim's added time per event (never below zero).
    pub fn added_ns(&self) -> f64 {
        (self.shim_ns - self.direct_ns).max(0.0)
    }
}

fn per_event<S: TransportSink>(runtime: &tokio::runtime::Runtime, sink: &S) -> f64 {
    let took: Duration = runtime.block_on(async {
        let started = Instant::now();
        for _ in 0..EVENTS {
            black_box(sink.deliver(TransportEvent::SessionRenewed).await);
        }
        started.elapsed()
    });
    took.as_nanos() as f64 / EVENTS as f64
}

/// Measures both paths, alternating samples so load on the machine hits both alike.
pub fn measure() -> anyhow::Result<ShimCost> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let direct = Discard;
    let shim = Faulty::new(
        Arc::new(Discard),
        WireFaults::new(),
        Oversized::Frame { limit: 1 << 20 },
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        a.push(per_event(&runtime, &direct));
        b.push(per_event(&runtime, &shim));
    }
    Ok(ShimCost {
        direct_ns: median(&mut a),
        shim_ns: median(&mut b),
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
