//! The `mcpvisor` command line. For now it only runs the demo server.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcpvisor::demo_server::{self, DemoServerOptions};

#[derive(Parser)]
#[command(name = "mcpvisor", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the built-in demo MCP server on stdin/stdout.
    DemoServer(DemoServerOptions),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Diagnostics go to stderr: stdout carries the protocol.
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
    let Command::DemoServer(opts) = cli.command;
    let result = runtime.block_on(demo_server::run(opts));
    // A stdout write stuck on a client that stopped reading must not keep us alive.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpvisor demo-server: {e}");
            ExitCode::FAILURE
        }
    }
}
