//! A CI-sized chaos run: eight stdio servers and one Streamable HTTP server
//! under steady call load, two decks of faults (every kind twice, in a seeded
//! order), the isolation invariants checked after each cycle. The same
//! harness runs longer as `cargo run --release --example chaos`.

mod support;

#[path = "support/chaos/mod.rs"]
mod chaos;

use support::{http_server, proc};

use chaos::{ChaosConfig, FaultKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_cycles_keep_every_invariant() {
    let mut cfg = ChaosConfig::new(env!("CARGO_BIN_EXE_mcpvisor").into());
    let kinds = FaultKind::STDIO.len() + FaultKind::HTTP.len();
    cfg.cycles = 2 * kinds;
    cfg.seed = 0x6d63_7076;
    cfg.verbose = true;
    let report = chaos::run(cfg).await;
    eprintln!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert_eq!(report.cycles, 2 * kinds);
    // Every kind of fault was injected twice.
    assert_eq!(report.faults.len(), kinds, "{:?}", report.faults);
    assert!(
        report.faults.values().all(|&n| n == 2),
        "{:?}",
        report.faults
    );
    assert_eq!(report.healthy_failed, 0);
    assert!(
        report.healthy_ok > 100,
        "the load was real: {}",
        report.healthy_ok
    );
    assert!(report.faulted_failed_total() > 0, "the faults were real");
    // Kill, stop, oversize, cut, two startup faults, HTTP stall: each restarts.
    assert!(report.restarts >= 14, "{report}");
    assert!(report.restarted_on_request >= 2, "{report}");
    assert_eq!(report.leaked_processes, 0);
    assert_eq!(report.panics, 0);
    // Once the host is gone, its connections' threads and fds are too (tokio's
    // blocking pool may still hold the thread that joined the GET stream's;
    // tests/leaks.rs accounts for threads exactly).
    assert!(
        report.after_shutdown.threads <= report.baseline.threads + 2,
        "{report}"
    );
    assert!(report.after_shutdown.fds < report.baseline.fds, "{report}");
}
