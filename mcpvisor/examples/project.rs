//! The README's headline use: a host that runs the servers of a `.mcp.json`.
//!
//! It writes a project (one stdio server: this binary serving the demo
//! server), approves the entry as `mcpvisor enable` would, starts it with
//! [`mcpvisor::start_project`], lists the tools for a model and calls one.
//!
//! Run it: `cargo run --example project`.

use std::time::Duration;

use mcpvisor::project::Project;
use mcpvisor::settings::{Overrides, Settings};
use mcpvisor::{CallOptions, start_project};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // This binary doubles as the demo server when started as `<exe> demo-server`;
    // that check comes before any runtime exists.
    mcpvisor_demo::serve_if_requested();
    tokio::runtime::Runtime::new()?.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // A project and a home of its own, so the example touches none of yours.
    let dir = std::env::temp_dir().join(format!("mcpvisor-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let exe = std::env::current_exe()?;
    let config = dir.join(".mcp.json");
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&json!({"mcpServers": {
            "demo": {"command": exe, "args": ["demo-server"]}
        }}))?,
    )?;
    let settings = Settings::load(&Overrides {
        home: Some(dir.join("home")),
        ..Overrides::default()
    })?;

    // Servers run only once approved (`mcpvisor enable demo` does this).
    Project::open(&config, &settings.home)?.enable("demo", &|var| std::env::var(var).ok())?;

    let (host, problems) = start_project(&config, &settings).await?;
    // An approved entry that cannot run (a variable gone, say) is a problem
    // of its own; it stops none of the others.
    for problem in &problems {
        println!("not started: {problem}");
    }
    host.wait_ready(Duration::from_secs(30)).await;
    for tool in host.tools().iter().take(3) {
        println!("{}", tool.to_anthropic_tool());
    }
    let answer = host
        .call(
            "mcp__demo__add",
            json!({"a": 2, "b": 3}),
            CallOptions::default(),
        )
        .await?;
    println!("mcp__demo__add -> {}", answer.text());
    host.shutdown().await;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
