//! An agent loop that embeds mcpvisor: start the servers, offer their tools to a
//! model, route the model's tool calls, and shut down cleanly.
//!
//! The "model" here is a scripted stand-in that picks tools by name, so the
//! example runs anywhere: `cargo run --example embedded_host`.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{
    CallOptions, ClientCapabilities, ClientHandler, ElicitAnswer, FormRequest, Host, HostAnswer,
    SamplingRequest, SamplingResult, SharedClientHandler, SupervisorOptions,
};
use serde_json::{Value, json};

/// What the host offers servers besides tools: its model (sampling) and its
/// user (elicitation). Servers see these capabilities and may ask; each answer
/// is bounded in time, and an elicitation's answer is completed with the
/// form's defaults and checked against it before it goes back.
struct AgentHandler;

impl ClientHandler for AgentHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: true,
            elicitation: true,
            ..Default::default()
        }
    }

    fn create_message(&self, request: SamplingRequest) -> HostAnswer<SamplingResult> {
        println!(
            "server {} asks the model ({} messages)",
            request.server,
            request.request.messages.len()
        );
        // A real host would call its model API here.
        let reply = SamplingResult::text("stand-in", "a reply from the host's model");
        Box::pin(async move { Ok(reply) })
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        println!(
            "server {} asks: {} ({} fields)",
            request.server,
            request.message,
            request.form.fields.len()
        );
        // An unattended agent accepts the form as offered (its defaults).
        Box::pin(async { Ok(ElicitAnswer::accept(Default::default())) })
    }
}

/// A stand-in for a model: it asks for these tool calls in turn.
fn scripted_model_turns() -> Vec<(&'static str, Value)> {
    vec![
        ("mcp__demo__echo", json!({"text": "hello from the agent"})),
        ("mcp__demo__add", json!({"a": 19, "b": 23})),
        (
            "mcp__demo__fail",
            json!({"message": "a tool error the model should read"}),
        ),
        ("mcp__demo__progress", json!({"steps": 3})),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // This binary doubles as the demo server when started as `<exe> demo-server`;
    // that check comes before any runtime exists.
    mcpvisor_demo::serve_if_requested();
    tokio::runtime::Runtime::new()?.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let servers = vec![mcpvisor_demo::demo_spec("demo", &[])?];
    let mut options = SupervisorOptions::default();
    options.client_handler = Some(SharedClientHandler(Arc::new(AgentHandler)));
    let host = Host::start(servers, options).await?;
    for status in host.wait_ready(Duration::from_secs(10)).await {
        println!("server {}: {:?}", status.name, status.state);
    }

    // What a host hands to a model API (Anthropic's tool shape here).
    let offered: Vec<Value> = host.tools().iter().map(|t| t.to_anthropic_tool()).collect();
    println!("offering {} tools to the model", offered.len());

    for (name, arguments) in scripted_model_turns() {
        let options = CallOptions::default()
            .timeout(Duration::from_secs(10))
            .on_progress(|p| println!("  progress {}/{}", p.progress, p.total.unwrap_or(0.0)));
        match host.call(name, arguments, options).await {
            Ok(result) if result.is_error => println!("{name} -> tool error: {}", result.text()),
            Ok(result) => println!("{name} -> {}", result.text()),
            Err(e) => println!("{name} -> call failed: {e}"),
        }
    }

    host.shutdown().await;
    Ok(())
}
