//! A host with a Streamable HTTP server it builds the spec of itself:
//! headers (kept out of every log and error), a timeout per request, the
//! HTTP limits, and what becomes of a server that is not up.
//!
//! Pass the server's URL (`cargo run --example http_server -- http://127.0.0.1:3001/mcp`);
//! without one, it starts the tests' Streamable HTTP server (an echo tool) on
//! 127.0.0.1 and uses that.

use std::time::Duration;

use mcpvisor::{
    CallError, CallOptions, Host, HttpSpec, SecretString, ServerSpec, ServerState,
    SupervisorOptions,
};
use serde_json::json;
use testkit::http_server::{HttpMcpServer, Script};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, _fixture) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => {
            let fixture = HttpMcpServer::start(Script::default()).await;
            (fixture.url.clone(), Some(fixture))
        }
    };

    let mut spec = HttpSpec::new(url);
    // A header's value is a literal: never expanded again, never printed.
    spec.headers = vec![(
        "X-Api-Key".into(),
        SecretString::from("example-key".to_string()),
    )];
    let server = ServerSpec::http("web", spec).with_request_timeout(Some(Duration::from_secs(20)));

    let mut options = SupervisorOptions::default();
    // Idle kept-alive connections close after 30 s, below most servers' own limit.
    options.http.idle_timeout = Duration::from_secs(30);
    let host = Host::start(vec![server], options).await?;

    for status in host.wait_ready(Duration::from_secs(15)).await {
        println!("{}: {:?}", status.name, status.state);
        if status.state != ServerState::Ready {
            // Not up: it is tried again with backoff, then at a slow pace for good.
            println!("  next try: {:?}", status.next_try);
        }
    }
    match host
        .call(
            "mcp__web__echo",
            json!({"text": "over HTTP"}),
            CallOptions::default(),
        )
        .await
    {
        Ok(answer) => println!("mcp__web__echo -> {}", answer.text()),
        Err(e @ CallError::ServerUnavailable { .. }) => println!("not reachable: {e}"),
        Err(e) => println!("call failed: {e}"),
    }
    host.shutdown().await;
    Ok(())
}
