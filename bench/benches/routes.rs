//! Route lookup the way a call does it: on a host with real servers (demo
//! servers, each with extra tools), through the public API.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use mcpvisor::{Host, ServerSpec, ServerState, StdioSpec, SupervisorOptions};

const SERVERS: usize = 8;
const EXTRA_TOOLS: usize = 16;

fn start_host(runtime: &tokio::runtime::Runtime) -> Host {
    let exe = env!("CARGO_BIN_EXE_harness");
    let specs = (0..SERVERS)
        .map(|s| {
            let mut args = vec![mcpvisor_demo::DEMO_SERVER_ARG.to_string()];
            for t in 0..EXTRA_TOOLS {
                args.push("--extra-tool".into());
                args.push(format!("tool_{t}"));
            }
            ServerSpec::stdio(format!("server{s}"), StdioSpec::new(exe, args))
        })
        .collect();
    runtime.block_on(async {
        let host = Host::start(specs, SupervisorOptions::default())
            .await
            .expect("host starts");
        let statuses = host.wait_ready(Duration::from_secs(30)).await;
        assert!(statuses.iter().all(|s| s.state == ServerState::Ready));
        host
    })
}

fn route_lookup(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let host = start_host(&runtime);
    let routes = host.routes();
    let hit = format!("mcp__server{}__tool_{}", SERVERS / 2, EXTRA_TOOLS / 2);
    assert!(routes.get(&hit).is_some(), "{hit} is routed");

    let mut group = c.benchmark_group("route_lookup");
    group.bench_function(format!("snapshot + get, {} routes", routes.len()), |b| {
        b.iter(|| host.routes().get(black_box(&hit)).map(|r| r.server_id))
    });
    group.bench_function("get on a held table", |b| {
        b.iter(|| routes.get(black_box(&hit)).map(|r| r.server_id))
    });
    group.bench_function("miss", |b| {
        b.iter(|| routes.get(black_box("mcp__server0__absent")).is_some())
    });
    group.finish();

    // Every tool in name order: the table sorts once, on first use, and each
    // call copies the definitions out.
    let mut group = c.benchmark_group("tool_listing");
    group.bench_function(format!("Host::tools, {} routes", routes.len()), |b| {
        b.iter(|| host.tools().len())
    });
    group.finish();
    runtime.block_on(host.shutdown());
}

criterion_group!(benches, route_lookup);
criterion_main!(benches);
