//! Commands that run the servers: `tools`, `call`, `watch`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::output;
use crate::stop::StopSignals;
use futures::StreamExt;
use mcpvisor::{CallError, CallOptions, Host, QualifiedMcpToolName, ToolDefinition};
use serde_json::Value;

use crate::invocation::Invocation;
use crate::progress::Progress;
use crate::{Failure, suggest};

/// Prints `tools` (those of `servers` when some are named).
///
/// A server named that shows no tool gets a line on stderr saying why:
/// `unready` tells whether it is not ready (then the exit is 1), `refused`
/// what it listed that has no route (also 1: its tools exist but cannot be
/// called); a ready server that lists none is only said to.
pub(crate) fn print_tools(
    tools: &[Arc<ToolDefinition>],
    servers: &[String],
    json: bool,
    unready: impl Fn(&str) -> Option<String>,
    refused: impl Fn(&str) -> Vec<String>,
) -> ExitCode {
    let shown: Vec<Arc<ToolDefinition>> = tools
        .iter()
        .filter(|t| servers.is_empty() || servers.iter().any(|s| s == t.name.server()))
        .cloned()
        .collect();
    output::print_tools(&shown, json);
    let mut code = ExitCode::SUCCESS;
    for server in servers {
        if shown.iter().any(|t| t.name.server() == server) {
            continue;
        }
        let name = output::clean_line(server);
        if let Some(state) = unready(server) {
            eprintln!(
                "mcpvisor: server `{name}` is not ready ({state}); its tools show once it is"
            );
            code = ExitCode::from(1);
            continue;
        }
        let lines = refused(server);
        if lines.is_empty() {
            eprintln!("mcpvisor: server `{name}` lists no tools");
            continue;
        }
        for line in lines {
            eprintln!("mcpvisor: server `{name}`: {line}");
        }
        code = ExitCode::from(1);
    }
    code
}

/// The tool `name` among `tools`; else a usage error naming the closest names.
pub(crate) fn find<'a>(
    tools: &'a [Arc<ToolDefinition>],
    name: &str,
    invocation: &Invocation,
) -> Result<&'a ToolDefinition, Failure> {
    if let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) {
        return Ok(tool);
    }
    // `server__tool` (the short form) or a bare tool name: the one tool it
    // can mean, if there is exactly one, is what to suggest.
    if !name.starts_with("mcp__") {
        let meant: Vec<&str> = tools
            .iter()
            .filter(|t| {
                t.name.tool() == name
                    || name
                        .split_once("__")
                        .is_some_and(|(s, tool)| t.name.server() == s && t.name.tool() == tool)
            })
            .map(|t| t.name.as_str())
            .collect();
        if let [one] = meant.as_slice() {
            return Err(Failure(
                format!(
                    "no tool `{}`; did you mean `{one}`? (tools are named mcp__<server>__<tool>)",
                    output::clean_line(name)
                ),
                2,
            ));
        }
    }
    let server = QualifiedMcpToolName::parse(name)
        .map(|q| q.server().to_string())
        .unwrap_or_default();
    let theirs: Vec<&ToolDefinition> = tools
        .iter()
        .map(|t| &**t)
        .filter(|t| t.name.server() == server)
        .collect();
    // Within the server named, its tools' own names are compared (the shared
    // prefix would make every name look close); else the full names.
    let close: Vec<&str> = match QualifiedMcpToolName::parse(name) {
        Ok(q) if !theirs.is_empty() => {
            let own: Vec<&str> = theirs.iter().map(|t| t.name.tool()).collect();
            suggest::closest(q.tool(), &own, 3)
                .into_iter()
                .filter_map(|t| theirs.iter().find(|d| d.name.tool() == t))
                .map(|d| d.name.as_str())
                .collect()
        }
        _ => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            suggest::closest(name, &names, 3)
        }
    };
    let theirs = theirs.len();
    let hint = match (close.as_slice(), theirs) {
        ([one], _) => format!("; did you mean `{one}`?"),
        ([], 0) => String::new(),
        ([], n) => format!(
            "; `{server}` has {} (`{}` lists them)",
            output::count(n, "tool"),
            invocation.command(&["tools", &server])
        ),
        (many, _) => format!("; did you mean one of: {}?", many.join(", ")),
    };
    Err(Failure(
        format!("no tool `{}`{hint}", output::clean_line(name)),
        2,
    ))
}

pub(crate) async fn call(
    host: &Host,
    name: &str,
    arguments: Value,
    timeout_ms: Option<u64>,
    json: bool,
    stop: &mut StopSignals,
) -> ExitCode {
    let mut options = CallOptions::default();
    if let Some(ms) = timeout_ms {
        options = options.timeout(Duration::from_millis(ms));
    }
    let progress = std::sync::Arc::new(Progress::new(json));
    let shown = progress.clone();
    options = options.on_progress(move |p| shown.update(p.progress, p.total, p.message.as_deref()));
    let started = std::time::Instant::now();
    let pending = host.call(name, arguments, options);
    let canceller = pending.canceller();
    let mut pending = std::pin::pin!(pending);
    let result = tokio::select! {
        r = &mut pending => r,
        code = stop.recv() => {
            canceller.cancel();
            let _ = pending.await;
            progress.finish();
            output::error("call cancelled (the server was sent notifications/cancelled)", json);
            return ExitCode::from(code);
        }
    };
    // A form still on the terminal belongs to a call that is over.
    crate::answers::release_terminal();
    progress.finish();
    match result {
        Ok(r) => {
            output::print_result(name, &r, json, started);
            if r.is_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            let message = match &e {
                // The tool went away between the listing and the call (its server restarted).
                CallError::UnknownTool(_) => format!("{e}; its server may have restarted"),
                // One-shot: nothing is restarted, the command ends with the call.
                CallError::Timeout { server, after } => format!(
                    "server `{server}` did not answer within {}",
                    output::duration(*after)
                ),
                _ => e.to_string(),
            };
            output::error(&message, json);
            ExitCode::FAILURE
        }
    }
}

pub(crate) async fn watch(host: &Host, json: bool, stop: &mut StopSignals) -> ExitCode {
    let mut events = std::pin::pin!(host.events());
    let mut repeats = output::Repeats::default();
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(e) if json => println!("{}", output::event_json(&e)),
                Some(e) => {
                    let shown = output::event_json(&e);
                    let line = repeats.collapse(
                        shown["server"].as_str().unwrap_or(""),
                        &output::clean_line(shown["reason"].as_str().unwrap_or("")),
                        &output::event_line(&e),
                    );
                    anstream::println!("{line}");
                }
                None => return ExitCode::SUCCESS,
            },
            // Ctrl-C is how a watch ends; another signal is reported.
            code = stop.recv() => return if code == 130 { ExitCode::SUCCESS } else { ExitCode::from(code) },
        }
    }
}
