//! The chaos harness: servers under steady call load while a seeded plan kills,
//! stops, garbles and cuts them, checking after every cycle that the host and
//! the other servers are unharmed and that nothing leaks.
//!
//! ```sh
//! cargo run --release --example chaos -- --cycles 1000 --servers 8 --http 1 --seed 7
//! ```
//!
//! The servers are this binary serving the demo server (`chaos demo-server
//! --fault-tools --fault-file …`); the HTTP servers are the in-process test
//! fixture. Exits with status 1 when an invariant broke.

#[allow(dead_code)]
#[path = "../tests/support/http_server/mod.rs"]
mod http_server;

#[allow(dead_code)]
#[path = "../tests/support/proc.rs"]
mod proc;

#[allow(dead_code, unused_imports)]
#[path = "../tests/support/chaos/mod.rs"]
mod chaos;

use std::process::ExitCode;

use chaos::ChaosConfig;

fn main() -> ExitCode {
    // Started as one of its own servers: serve and exit.
    mcpvisor_demo::serve_if_requested();
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("chaos: cannot locate this binary: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut cfg = ChaosConfig::new(exe);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let number = value.parse::<u64>();
        match (flag.as_str(), number) {
            ("--cycles", Ok(n)) => cfg.cycles = n as usize,
            ("--servers", Ok(n)) => cfg.stdio_servers = (n as usize).max(1),
            ("--http", Ok(n)) => cfg.http_servers = n as usize,
            ("--seed", Ok(n)) => cfg.seed = n,
            ("--verbose", Ok(n)) => cfg.verbose = n != 0,
            _ => {
                eprintln!(
                    "usage: chaos [--cycles N] [--servers N] [--http N] [--seed N] [--verbose 0|1]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("chaos: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let report = runtime.block_on(chaos::run(cfg));
    println!("{report}");
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
