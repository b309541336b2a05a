//! A long chaos run on the chaos engine (`mcpvisor-chaos`, the engine behind
//! `mcpvisor chaos` and `chaos/tests/engine.rs`): stdio demo servers and Streamable
//! HTTP servers under echo and ping load while a seeded plan deals every kind
//! of fault through `Host::inject`, checking after each cycle that the host
//! and the other servers are unharmed and that nothing leaks.
//!
//! ```sh
//! cargo run --release --example chaos -- --cycles 1000 --servers 8 --http 1 --seed 7
//! ```
//!
//! The stdio servers are this binary serving the demo server (`chaos
//! demo-server`); the HTTP servers are the in-process test fixture. Prints
//! the report; exits with status 1 when an invariant broke, 2 on a usage error.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor::HttpSpec;
use mcpvisor::{ServerSpec, StdioSpec};
use mcpvisor_chaos::{ChaosOptions, Load, Progress};
use serde_json::json;
use testkit::http_server::{GetMode, HttpMcpServer, Script};

struct Args {
    cycles: usize,
    servers: usize,
    http: usize,
    seed: u64,
    verbose: bool,
}

fn main() -> ExitCode {
    // Started as one of its own servers: serve and exit.
    mcpvisor_demo::serve_if_requested();
    let Some(args) = parse(std::env::args().skip(1)) else {
        eprintln!("usage: chaos [--cycles N] [--servers N] [--http N] [--seed N] [--verbose 0|1]");
        return ExitCode::from(2);
    };
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
    runtime.block_on(run(args))
}

fn parse(mut argv: impl Iterator<Item = String>) -> Option<Args> {
    let mut args = Args {
        cycles: 20,
        servers: 8,
        http: 1,
        seed: 1,
        verbose: false,
    };
    while let Some(flag) = argv.next() {
        let n: u64 = argv.next()?.parse().ok()?;
        match flag.as_str() {
            "--cycles" => args.cycles = n as usize,
            "--servers" => args.servers = (n as usize).max(1),
            "--http" => args.http = n as usize,
            "--seed" => args.seed = n,
            "--verbose" => args.verbose = n != 0,
            _ => return None,
        }
    }
    Some(args)
}

async fn run(args: Args) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe.to_string_lossy().into_owned(),
        Err(e) => {
            eprintln!("chaos: cannot locate this binary: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut servers: Vec<ServerSpec> = (0..args.servers)
        .map(|i| ServerSpec::stdio(format!("s{i}"), StdioSpec::new(&exe, ["demo-server"])))
        .collect();
    let mut fixtures = Vec::new();
    for i in 0..args.http {
        let fixture = HttpMcpServer::start(Script {
            // Memory is measured: the fixture must not keep every request.
            unrecorded: true,
            get: GetMode::Stream {
                events: 0,
                then_close: false,
                interval_ms: 1000,
            },
            ..Script::default()
        })
        .await;
        servers.push(ServerSpec::http(
            format!("h{i}"),
            HttpSpec::new(fixture.url.clone()),
        ));
        fixtures.push(fixture);
    }
    let calls: Vec<serde_json::Value> = servers
        .iter()
        .flat_map(|s| {
            let echo = format!("mcp__{}__echo", s.name);
            [
                json!({"tool": echo, "arguments": {"text": "chaos {call}"}, "expect": "chaos {call}", "weight": 3}),
                json!({"ping": s.name}),
            ]
        })
        .collect();
    let load = match Load::from_json(&serde_json::Value::Array(calls).to_string()) {
        Ok(load) => load,
        Err(e) => {
            eprintln!("chaos: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut chaos = ChaosOptions::default();
    chaos.seed = args.seed;
    chaos.cycles = Some(args.cycles);
    chaos.load = load;
    chaos.call_timeout = Duration::from_secs(3);
    if args.verbose {
        chaos.on_progress = Some(Arc::new(|p: &Progress| eprintln!("chaos: {p:?}")));
    }
    let outcome =
        mcpvisor_chaos::run(servers, mcpvisor_chaos::brisk_supervisor_options(), chaos).await;
    for fixture in &fixtures {
        fixture.stop();
    }
    match outcome {
        Ok(report) => {
            println!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("chaos: {e}");
            ExitCode::FAILURE
        }
    }
}
