//! `tools`, `call`, `servers`, `watch` and `restart` through a running `serve`:
//! no server is started, and every command sees the same supervisor.

use std::process::ExitCode;
use std::sync::Arc;

use mcpvisor::{QualifiedMcpToolName, ToolDefinition};
use mcpvisor_protocol::mcp::messages::{CallToolResult, methods};
use mcpvisor_serve::client::{Client, ClientError};
use mcpvisor_serve::session::extension;
use serde_json::{Value, json};

use crate::Failure;
use crate::output;
use crate::progress::Progress;
use crate::stop::StopSignals;

fn failed(e: ClientError) -> Failure {
    Failure(e.to_string(), 1)
}

/// Every routed tool, page by page.
/// Every tool the running `serve` lists, page by page.
pub(crate) async fn all_tools(client: &mut Client) -> Result<Vec<Arc<ToolDefinition>>, Failure> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = client
            .request(methods::TOOLS_LIST, params, |_| {})
            .await
            .map_err(failed)?;
        for tool in page["tools"].as_array().into_iter().flatten() {
            let Some(name) = tool["name"]
                .as_str()
                .and_then(|n| QualifiedMcpToolName::parse(n).ok())
            else {
                continue;
            };
            tools.push(Arc::new(ToolDefinition {
                name,
                description: tool["description"].as_str().unwrap_or("").to_string(),
                input_schema: tool["inputSchema"].clone(),
                title: tool["title"].as_str().map(str::to_string),
                output_schema: tool.get("outputSchema").cloned(),
                icons: mcpvisor_protocol::mcp::icons::Icon::read_all(&tool["icons"]),
                annotations: tool.get("annotations").cloned(),
            }));
        }
        match page["nextCursor"].as_str() {
            Some(next) if tools.len() < 1_000_000 => cursor = Some(next.to_string()),
            _ => return Ok(tools),
        }
    }
}

pub(crate) async fn call(
    client: &mut Client,
    name: &str,
    arguments: Value,
    timeout_ms: Option<u64>,
    json: bool,
    stop: &mut StopSignals,
) -> Result<ExitCode, Failure> {
    let mut params =
        json!({"name": name, "arguments": arguments, "_meta": {"progressToken": "cli"}});
    if let Some(ms) = timeout_ms {
        params["_meta"][extension::TIMEOUT_MS] = json!(ms);
    }
    let started = std::time::Instant::now();
    let progress = Progress::new(json);
    let on_progress = |n: &mcpvisor_protocol::wire::jsonrpc::Notification| {
        if n.method != methods::PROGRESS {
            return;
        }
        let p = n.params.clone().unwrap_or_default();
        progress.update(
            p["progress"].as_f64().unwrap_or_default(),
            p["total"].as_f64(),
            p["message"].as_str(),
        );
    };
    let mut code = None;
    let answer = client
        .request_until(methods::TOOLS_CALL, params, on_progress, async {
            code = Some(stop.recv().await);
        })
        .await;
    progress.finish();
    let value = match answer {
        Ok(value) => value,
        Err(ClientError::Cancelled) => {
            output::error(
                "call cancelled (the server was sent notifications/cancelled)",
                json,
            );
            return Ok(ExitCode::from(code.unwrap_or(130)));
        }
        Err(ClientError::Rpc(e)) => {
            output::error(&e.message, json);
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(failed(e)),
    };
    let result = CallToolResult::parse(value)
        .map_err(|e| Failure(format!("serve sent an invalid tool result: {e}"), 1))?;
    output::print_result(name, &result, json, started);
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Each of `names` is a server of the running `serve`; else a usage error
/// naming the nearest.
pub(crate) async fn check_names(client: &mut Client, names: &[String]) -> Result<(), Failure> {
    let live = live_servers(client).await?;
    let known: Vec<&str> = live.iter().filter_map(|s| s["name"].as_str()).collect();
    for name in names {
        if known.contains(&name.as_str()) {
            continue;
        }
        let hint = match crate::suggest::nearest(name, &known) {
            Some(close) => format!("; did you mean `{close}`?"),
            None => format!("; its servers: {}", known.join(", ")),
        };
        return Err(Failure(
            format!(
                "no server `{}` in the running serve{hint}",
                output::clean_line(name)
            ),
            2,
        ));
    }
    Ok(())
}

/// Whether the server a qualified `name` names is ready in the running
/// `serve` (false for one it runs that is down; true for one it does not run,
/// whose tools are simply not there).
pub(crate) async fn server_ready(client: &mut Client, name: &str) -> Result<bool, Failure> {
    let Ok(qualified) = QualifiedMcpToolName::parse(name) else {
        return Ok(true);
    };
    let live = live_servers(client).await?;
    Ok(live
        .iter()
        .find(|s| s["name"].as_str() == Some(qualified.server()))
        .is_none_or(|s| s["state"] == "ready"))
}

/// Every server's live status in the running `serve` (see `mcpvisor_serve::wire::status_json`).
pub(crate) async fn live_servers(client: &mut Client) -> Result<Vec<Value>, Failure> {
    let mut answer = client
        .request(extension::SERVERS, json!({}), |_| {})
        .await
        .map_err(failed)?;
    match answer["servers"].take() {
        Value::Array(all) => Ok(all),
        _ => Err(Failure("serve sent no server list".into(), 1)),
    }
}

/// One line for a live status.
pub(crate) fn live_line(s: &Value) -> String {
    let pid = s["pid"]
        .as_u64()
        .map(|p| format!(", pid {p}"))
        .unwrap_or_default();
    let protocol = s["protocol"]
        .as_str()
        .map(|p| format!(", protocol {}", output::clean_line(p)))
        .unwrap_or_default();
    format!(
        "running: {}{pid}, {} tools, {} restarts{protocol}",
        output::clean_line(s["detail"].as_str().unwrap_or("?")),
        s["tools"],
        s["restarts"],
    )
}

/// The problems of a live status worth a line each: tools it listed that
/// have no route (the first few, then how many more).
pub(crate) fn live_problems(s: &Value) -> Vec<String> {
    const SHOWN: usize = 5;
    let refused = &s["refused"];
    let total = refused["total"].as_u64().unwrap_or(0) as usize;
    let first = refused["first"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut lines: Vec<String> = first
        .iter()
        .take(SHOWN)
        .map(|r| {
            format!(
                "tool `{}` has no route: {}",
                output::clean_line(r["tool"].as_str().unwrap_or("?")),
                output::clean_line(r["reason"].as_str().unwrap_or("?"))
            )
        })
        .collect();
    if total > lines.len() {
        lines.push(format!("{} more tools have no route", total - lines.len()));
    }
    lines
}

pub(crate) async fn watch(
    client: &mut Client,
    json: bool,
    stop: &mut StopSignals,
) -> Result<ExitCode, Failure> {
    client
        .request(extension::WATCH, json!({}), |_| {})
        .await
        .map_err(failed)?;
    // Where things stand first: a quiet supervisor would print nothing for
    // hours. Read after subscribing, so no change falls between the two.
    for s in live_servers(client).await? {
        if json {
            let mut state = s.clone();
            state["event"] = json!("server_status");
            println!("{state}");
        } else {
            anstream::println!(
                "{}",
                output::stamped(&format!(
                    "{}: {}",
                    output::clean_line(s["name"].as_str().unwrap_or("?")),
                    live_line(&s).trim_start_matches("running: ")
                ))
            );
        }
    }
    let mut repeats = output::Repeats::default();
    loop {
        let next = tokio::select! {
            n = client.next_notification() => n.map_err(failed)?,
            code = stop.recv() => {
                return Ok(if code == 130 { ExitCode::SUCCESS } else { ExitCode::from(code) });
            }
        };
        let Some(n) = next else {
            eprintln!("mcpvisor: serve stopped");
            return Ok(ExitCode::SUCCESS);
        };
        if n.method != extension::EVENT {
            continue;
        }
        let params = n.params.unwrap_or_default();
        if json {
            println!("{}", params["event"]);
        } else {
            let line = repeats.collapse(
                params["event"]["server"].as_str().unwrap_or(""),
                &output::clean_line(params["event"]["reason"].as_str().unwrap_or("")),
                &output::clean_line(params["text"].as_str().unwrap_or("")),
            );
            anstream::println!("{}", output::stamped(&line));
        }
    }
}

pub(crate) async fn restart(client: &mut Client, name: &str) -> Result<ExitCode, Failure> {
    let answer = client
        .request(extension::RESTART, json!({ "server": name }), |_| {})
        .await;
    match answer {
        Ok(v) => {
            let n = v["restarted"].as_u64().unwrap_or(0);
            if n == 0 {
                return Err(Failure(
                    format!(
                        "server `{}` could not be restarted",
                        output::clean_line(name)
                    ),
                    1,
                ));
            }
            println!("restarted server `{}`", output::clean_line(name));
            Ok(ExitCode::SUCCESS)
        }
        Err(ClientError::Rpc(e)) => Err(Failure(e.message, 2)),
        Err(e) => Err(failed(e)),
    }
}

pub(crate) async fn reload(client: &mut Client, json: bool) -> Result<ExitCode, Failure> {
    let report = client
        .request(extension::RELOAD, json!({}), |_| {})
        .await
        .map_err(|e| match e {
            ClientError::Rpc(e) => Failure(format!("reload failed: {}", e.message), 2),
            e => failed(e),
        })?;
    if json {
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    for (key, verb) in [
        ("added", "started"),
        ("removed", "stopped"),
        ("restarted", "restarted"),
        ("unchanged", "unchanged"),
    ] {
        for name in report[key].as_array().into_iter().flatten() {
            println!(
                "{verb}: {}",
                output::clean_line(name.as_str().unwrap_or("?"))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
