//! The `mcpvisor` command line: list tools, call one, watch events.
//!
//! It reads `--config PATH`, else `./.mcp.json`, else runs on the built-in demo
//! server, so `mcpvisor tools` works anywhere.

mod output;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use futures::StreamExt;
use mcpvisor::config::{FILE_NAME, McpConfig};
use mcpvisor::demo_server::{self, DemoServerOptions};
use mcpvisor::{CallError, CallOptions, Host, ServerSpec, ServerState, SupervisorOptions};
use serde_json::Value;
use tokio::signal::unix::Signal;

#[derive(Parser)]
#[command(
    name = "mcpvisor",
    version,
    about = "Supervised MCP servers for agent hosts"
)]
struct Cli {
    /// The `.mcp.json` to read (default: ./.mcp.json, else the built-in demo server).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// How long to wait for servers to start, in milliseconds.
    #[arg(long, global = true, default_value_t = 30_000)]
    startup_timeout_ms: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the routed tools of every server.
    Tools,
    /// Call a tool by qualified name: mcpvisor call mcp__demo__echo '{"text":"hi"}'.
    Call {
        /// The qualified name, mcp__<server>__<tool>.
        name: String,
        /// The arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Call timeout in milliseconds (default: the server's request timeout).
        #[arg(long)]
        timeout_ms: Option<u64>,
    },
    /// Print events as they happen until Ctrl-C.
    Watch,
    /// Show each server's state.
    Servers,
    /// Serve the built-in demo MCP server on stdin/stdout.
    DemoServer(DemoServerOptions),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Diagnostics go to stderr: stdout carries results (and the protocol, for demo-server).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpvisor: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli));
    // A stdout write stuck on a reader that went away must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

async fn run(cli: Cli) -> ExitCode {
    if let Command::DemoServer(options) = cli.command {
        return match demo_server::run(options).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcpvisor demo-server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (specs, problems) = match server_specs(cli.config.as_ref()) {
        Ok(found) => found,
        Err(message) => {
            eprintln!("mcpvisor: {message}");
            return ExitCode::from(2);
        }
    };
    // Registered before any server starts, so an early Ctrl-C is not lost.
    let mut interrupt =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("mcpvisor: cannot watch for Ctrl-C: {e}");
                return ExitCode::FAILURE;
            }
        };
    for (server, problem) in &problems {
        eprintln!("mcpvisor: server `{server}` not started: {problem}");
    }
    let options = SupervisorOptions {
        startup_timeout: Duration::from_millis(cli.startup_timeout_ms),
        ..SupervisorOptions::default()
    };
    let host = match Host::start(specs, options).await {
        Ok(host) => host,
        Err(e) => {
            eprintln!("mcpvisor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match cli.command {
        Command::Watch => watch(&host, cli.json, &mut interrupt).await,
        command => {
            let wait = Duration::from_millis(cli.startup_timeout_ms) + Duration::from_secs(1);
            let statuses = host.wait_ready(wait).await;
            for s in statuses.iter().filter(|s| s.state != ServerState::Ready) {
                eprintln!(
                    "mcpvisor: server `{}` is {}",
                    s.name,
                    output::state_text(&s.state)
                );
            }
            match command {
                Command::Tools => tools(&host, cli.json),
                Command::Servers => servers(&host, cli.json),
                Command::Call {
                    name,
                    arguments,
                    timeout_ms,
                } => {
                    call(
                        &host,
                        &name,
                        &arguments,
                        timeout_ms,
                        cli.json,
                        &mut interrupt,
                    )
                    .await
                }
                Command::Watch | Command::DemoServer(_) => ExitCode::SUCCESS,
            }
        }
    };
    host.shutdown().await;
    code
}

/// Specs that can run, and `(server, problem)` for entries that cannot.
type ServersToRun = (Vec<ServerSpec>, Vec<(String, String)>);

/// The servers to run: from --config, ./.mcp.json, or the demo server.
fn server_specs(config: Option<&PathBuf>) -> Result<ServersToRun, String> {
    let default = PathBuf::from(FILE_NAME);
    let path = match config {
        Some(p) => p.clone(),
        None if default.exists() => default,
        None => {
            let demo = mcpvisor::demo::demo_spec("demo", &[])
                .map_err(|e| format!("cannot locate the demo server: {e}"))?;
            return Ok((vec![demo], Vec::new()));
        }
    };
    let cfg = McpConfig::load(&path).map_err(|e| e.to_string())?;
    Ok(cfg.server_specs())
}

fn tools(host: &Host, json: bool) -> ExitCode {
    let tools = host.tools();
    if json {
        let all: Vec<Value> = tools.iter().map(output::tool_json).collect();
        println!("{}", Value::Array(all));
    } else {
        for t in &tools {
            println!("{}", output::tool_line(t));
        }
    }
    ExitCode::SUCCESS
}

fn servers(host: &Host, json: bool) -> ExitCode {
    let statuses = host.servers();
    if json {
        let all: Vec<Value> = statuses.iter().map(output::status_json).collect();
        println!("{}", Value::Array(all));
    } else {
        for s in &statuses {
            println!(
                "{:<20} {:<10} {} tools",
                s.name,
                output::state_text(&s.state),
                s.tools
            );
        }
    }
    ExitCode::SUCCESS
}

async fn call(
    host: &Host,
    name: &str,
    arguments: &str,
    timeout_ms: Option<u64>,
    json: bool,
    interrupt: &mut Signal,
) -> ExitCode {
    let arguments: Value = match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            eprintln!("mcpvisor: arguments must be a JSON object");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("mcpvisor: arguments are not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = CallOptions::default();
    if let Some(ms) = timeout_ms {
        options = options.timeout(Duration::from_millis(ms));
    }
    if !json {
        options = options.on_progress(|p| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            eprintln!(
                "progress {}{total} {}",
                p.progress,
                p.message.as_deref().unwrap_or("")
            );
        });
    }
    let pending = host.call(name, arguments, options);
    let canceller = pending.canceller();
    let mut pending = std::pin::pin!(pending);
    let result = tokio::select! {
        r = &mut pending => r,
        _ = interrupt.recv() => {
            canceller.cancel();
            let _ = pending.await;
            eprintln!("mcpvisor: call cancelled (the server was sent notifications/cancelled)");
            return ExitCode::from(130);
        }
    };
    match result {
        Ok(r) => {
            if json {
                println!("{}", r.to_value());
            } else {
                println!("{}", output::result_text(&r));
            }
            if r.is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            if let CallError::UnknownTool(_) = e {
                let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
                eprintln!("mcpvisor: {e}; routed tools: {}", names.join(", "));
            } else {
                eprintln!("mcpvisor: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn watch(host: &Host, json: bool, interrupt: &mut Signal) -> ExitCode {
    let mut events = std::pin::pin!(host.events());
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(e) if json => println!("{}", output::event_json(&e)),
                Some(e) => println!("{}", output::event_line(&e)),
                None => return ExitCode::SUCCESS,
            },
            _ = interrupt.recv() => return ExitCode::SUCCESS,
        }
    }
}
