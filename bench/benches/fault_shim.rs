//! What the fault shim costs a connection with no fault set: one answer event
//! delivered straight to a sink against the same event through `Faulty` with
//! nothing set (the state every host is in unless a test deals a fault).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mcpvisor_transports::{Faulty, Oversized, TransportEvent, TransportSink, WireFaults};

/// Takes every event and keeps nothing, as cheaply as a sink can.
struct Discard;

impl TransportSink for Discard {
    async fn deliver(&self, event: TransportEvent) -> bool {
        black_box(event);
        true
    }
}

/// Delivers `iters` events in one task, so the runtime's entry is not measured.
fn run<S: TransportSink>(runtime: &tokio::runtime::Runtime, sink: &S, iters: u64) -> Duration {
    runtime.block_on(async {
        let started = Instant::now();
        for _ in 0..iters {
            // The unarmed path is the same for every event: a cheap one keeps
            // the event's own cost out of the figure.
            black_box(sink.deliver(TransportEvent::SessionRenewed).await);
        }
        started.elapsed()
    })
}

fn shim(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let direct = Discard;
    let unarmed = Faulty::new(
        Arc::new(Discard),
        WireFaults::new(),
        Oversized::Frame { limit: 1 << 20 },
    );
    let mut group = c.benchmark_group("fault_shim");
    group.bench_function("deliver, no shim", |b| {
        b.iter_custom(|iters| run(&runtime, &direct, iters))
    });
    group.bench_function("deliver, shim with no fault set", |b| {
        b.iter_custom(|iters| run(&runtime, &unarmed, iters))
    });
    group.finish();
}

criterion_group!(benches, shim);
criterion_main!(benches);
