//! The `mcpvisor` command line.
//!
//! It reads `--config PATH`, else the nearest `.mcp.json` in the working
//! directory or above it, and runs the entries approved
//! for that file (`mcpvisor enable <name>`); with no `.mcp.json` it runs the
//! built-in demo server, so `mcpvisor tools` works anywhere.

mod answers;
mod approve;
mod arguments;
mod attached;
mod chaos;
mod cli;
mod cluster;
mod describe;
mod dispatch;
mod edit;
mod entry_view;
mod health;
mod inject;
mod invocation;
mod live;
mod offline;
mod oneshot;
mod output;
mod progress;
mod relay;
mod resources_prompts;
mod serve;
mod shell;
mod stop;
mod suggest;
mod warnings;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    diagnostics(&cli);
    quiet_when_the_reader_leaves();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Command::Serve(args) = &cli.command {
        builder.worker_threads(args.worker_threads());
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcpvisor: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli));
    // A stdout write stuck on a reader that went away must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(200));
    answers::release_terminal();
    code
}

/// `mcpvisor tools | head -1`: once the reader is gone, the next print
/// fails. SIGPIPE stays ignored (a server that dies while it is written to
/// must not take mcpvisor with it), so that failure is a panic of `println!`;
/// it ends the process quietly, as a killed `ls` would (141), instead of with
/// a panic message. Servers go with it (their parent-death signal).
fn quiet_when_the_reader_leaves() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        report(info);
    }));
}

/// Where diagnostics go: stderr (stdout carries results, and the protocol for
/// `demo-server` and `serve --stdio`). A command speaks for itself in plain
/// lines; tracing's lines (times, module paths) appear only when asked for
/// with `-v` or `RUST_LOG`, except in `serve`, which runs unattended and logs
/// warnings as it always did.
fn diagnostics(cli: &Cli) {
    let unattended = matches!(cli.command, Command::Serve(_));
    let quiet = std::env::var_os("RUST_LOG").is_none() && cli.verbose == 0 && !unattended;
    if quiet {
        // The servers' troubles are reported by the command itself; what
        // else warns (configuration, logins) gets one plain line.
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .event_format(warnings::OneLine)
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                // (A target matches by prefix: `mcpvisor` alone would take in
                // `mcpvisor_actors` too.)
                "off,mcpvisor=warn,mcpvisor_auth=warn,mcpvisor_actors=off,\
                 mcpvisor_transports=off,mcpvisor_serve=off,mcpvisor_protocol=off,mcpvisor_demo=off",
            ))
            .init();
        return;
    }
    let filter = match (std::env::var("RUST_LOG"), cli.verbose) {
        (Ok(spec), _) => tracing_subscriber::EnvFilter::new(spec),
        (Err(_), 0) => tracing_subscriber::EnvFilter::new("warn"),
        // What mcpvisor and its servers do (starts, stops, their stderr).
        (Err(_), 1) => tracing_subscriber::EnvFilter::new(
            "warn,mcpvisor=debug,mcpvisor_actors=debug,mcpvisor_transports=debug,\
             mcpvisor_auth=debug,mcpvisor_serve=debug",
        ),
        (Err(_), 2) => tracing_subscriber::EnvFilter::new("debug"),
        (Err(_), _) => tracing_subscriber::EnvFilter::new("trace"),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(output::colour_on_stderr())
        // ractor_cluster logs whole frames (call arguments, handshake digests) at debug and a warning per refused session: only its errors, whatever was asked.
        .with_env_filter(filter.add_directive("ractor_cluster=error".parse().expect("a directive")))
        .init();
}

/// A failure to report and the exit code it warrants.
struct Failure(String, u8);

async fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    match dispatch::dispatch(cli).await {
        Ok(code) => code,
        Err(Failure(message, code)) => {
            output::error(&message, json);
            ExitCode::from(code)
        }
    }
}
