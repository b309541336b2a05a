//! The demo MCP server, and the hostile behaviours the isolation tests use.
//!
//! Any binary that links this crate — the `mcpvisor` CLI, an example, a test
//! host — can serve it: [`serve_if_requested`] turns the running binary into
//! the server when it is started with `demo-server` as its first argument, and
//! [`demo_spec`] starts the current binary that way. The library an agent
//! embeds (`mcpvisor`) does not contain it.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

mod server;

pub use server::*;

use std::ffi::OsString;

use clap::Parser;
use mcpvisor_actors::ServerSpec;
use mcpvisor_transports::StdioSpec;

/// The first argument that makes a binary serve the demo server.
pub const DEMO_SERVER_ARG: &str = "demo-server";

/// A spec that runs the demo server from the current executable, named `name`,
/// with extra demo-server flags (e.g. `--page-size 2`).
pub fn demo_spec(name: &str, flags: &[&str]) -> std::io::Result<ServerSpec> {
    let exe = std::env::current_exe()?;
    let mut args = vec![DEMO_SERVER_ARG.to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    Ok(ServerSpec::stdio(
        name,
        StdioSpec::new(exe.to_string_lossy().into_owned(), args),
    ))
}

#[derive(Parser)]
struct DemoArgs {
    #[command(flatten)]
    options: DemoServerOptions,
}

/// If this process was started as `<binary> demo-server …`, serves the demo
/// server on stdin/stdout and exits; otherwise returns at once.
///
/// Call it first thing in `main`, before a Tokio runtime exists: serving
/// builds its own runtime.
pub fn serve_if_requested() {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) != Some(DEMO_SERVER_ARG) {
        return;
    }
    args.remove(1);
    let options = DemoArgs::parse_from(args).options;
    let code = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let result = rt.block_on(server::run(options));
            rt.shutdown_timeout(std::time::Duration::from_millis(100));
            i32::from(result.is_err())
        }
        Err(_) => 1,
    };
    std::process::exit(code);
}
