//! Commands that run the servers: `tools`, `call`, `watch`.

use std::process::ExitCode;
use std::time::Duration;

use crate::output;
use crate::stop::StopSignals;
use futures::StreamExt;
use mcpvisor::{CallError, CallOptions, Host};
use serde_json::Value;

pub(crate) fn tools(host: &Host, json: bool) -> ExitCode {
    output::print_tools(&host.tools(), json);
    ExitCode::SUCCESS
}

/// A call's arguments from the command line: a JSON object, else a message and exit code.
pub(crate) fn parse_arguments(arguments: &str) -> Result<Value, (String, u8)> {
    match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(("arguments must be a JSON object".into(), 2)),
        Err(e) => Err((format!("arguments are not valid JSON: {e}"), 2)),
    }
}

pub(crate) async fn call(
    host: &Host,
    name: &str,
    arguments: &str,
    timeout_ms: Option<u64>,
    json: bool,
    stop: &mut StopSignals,
) -> ExitCode {
    let arguments = match parse_arguments(arguments) {
        Ok(v) => v,
        Err((message, code)) => {
            eprintln!("mcpvisor: {message}");
            return ExitCode::from(code);
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
                output::clean_line(p.message.as_deref().unwrap_or(""))
            );
        });
    }
    let pending = host.call(name, arguments, options);
    let canceller = pending.canceller();
    let mut pending = std::pin::pin!(pending);
    let result = tokio::select! {
        r = &mut pending => r,
        code = stop.recv() => {
            canceller.cancel();
            let _ = pending.await;
            eprintln!("mcpvisor: call cancelled (the server was sent notifications/cancelled)");
            return ExitCode::from(code);
        }
    };
    // A form still on the terminal belongs to a call that is over.
    crate::answers::release_terminal();
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
                eprintln!(
                    "mcpvisor: {}; routed tools: {}",
                    output::clean(&e.to_string()),
                    names.join(", ")
                );
            } else {
                eprintln!("mcpvisor: {}", output::clean(&e.to_string()));
            }
            ExitCode::FAILURE
        }
    }
}

pub(crate) async fn watch(host: &Host, json: bool, stop: &mut StopSignals) -> ExitCode {
    let mut events = std::pin::pin!(host.events());
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(e) if json => println!("{}", output::event_json(&e)),
                Some(e) => println!("{}", output::event_line(&e)),
                None => return ExitCode::SUCCESS,
            },
            // Ctrl-C is how a watch ends; another signal is reported.
            code = stop.recv() => return if code == 130 { ExitCode::SUCCESS } else { ExitCode::from(code) },
        }
    }
}
