//! A host that reacts to events: it keeps its tool list in step with servers
//! coming and going while one of them crashes and comes back.
//!
//! Run it: `cargo run --example event_driven`.

use std::time::Duration;

use futures::StreamExt;
use mcpvisor::{CallOptions, Host, HostEvent, SupervisorOptions};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // This binary doubles as the demo server when started as `<exe> demo-server`;
    // that check comes before any runtime exists.
    mcpvisor_demo::serve_if_requested();
    tokio::runtime::Runtime::new()?.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let servers = vec![
        mcpvisor_demo::demo_spec("steady", &[])?,
        mcpvisor_demo::demo_spec("fragile", &[])?,
    ];
    let host = Host::start(servers, SupervisorOptions::default()).await?;
    let mut events = Box::pin(host.events());
    let mut crashed = false;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, events.next()).await {
        match event {
            HostEvent::ServerReady {
                server, pid, tools, ..
            } => {
                println!(
                    "{server} is ready (pid {pid:?}, {tools} tools); routed now: {}",
                    host.tools().len()
                );
                if !crashed && host.ready_servers() == 2 {
                    crashed = true;
                    println!("asking fragile to crash…");
                    let outcome = host
                        .call(
                            "mcp__fragile__crash",
                            json!({"code": 9}),
                            CallOptions::default(),
                        )
                        .await;
                    println!(
                        "crash call ended with: {}",
                        outcome.err().map(|e| e.to_string()).unwrap_or_default()
                    );
                    let r = host
                        .call(
                            "mcp__steady__echo",
                            json!({"text": "still here"}),
                            CallOptions::default(),
                        )
                        .await?;
                    println!("steady answers meanwhile: {}", r.text());
                } else if &*server == "fragile" && crashed {
                    println!("fragile came back; done");
                    break;
                }
            }
            // Every event reads as one line.
            other => println!("{other}"),
        }
    }
    host.shutdown().await;
    Ok(())
}
