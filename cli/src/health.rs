//! `servers --check`: each enabled server started once, on its own, to see that
//! it initializes and lists its tools; then stopped. Like `claude mcp list`:
//! one line per server, and a non-zero exit if any failed. A failed start is
//! not retried (no restart loop) and one slow server delays no other's line.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use mcpvisor::config::process_env;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;
use mcpvisor::{Host, ServerSpec, ServerState};
use serde_json::{Value, json};

use crate::Failure;
use crate::approve::problem_text;
use crate::entry_view;
use crate::output::{self, clean_line, state_text};

/// How one server's check went.
struct Outcome {
    name: String,
    result: Result<(usize, Duration), String>,
}

pub(crate) async fn check(
    project: Option<&Project>,
    settings: &Settings,
    json: bool,
) -> Result<ExitCode, Failure> {
    let mut outcomes = Vec::new();
    let mut skipped = Vec::new();
    let specs = match project {
        None => vec![
            mcpvisor_demo::demo_spec("demo", &[])
                .map_err(|e| Failure(format!("cannot locate the demo server: {e}"), 1))?,
        ],
        Some(project) => {
            let statuses = project
                .statuses(&process_env)
                .map_err(|e| Failure(e.to_string(), 2))?;
            for s in statuses.iter().filter(|s| !s.enabled) {
                skipped.push((s.name.clone(), entry_view::state(s)));
            }
            let (specs, _) = project
                .enabled_specs(&process_env)
                .map_err(|e| Failure(e.to_string(), 2))?;
            // An entry that does not resolve fails its check without starting.
            for s in statuses
                .iter()
                .filter(|s| s.enabled && !s.problems.is_empty())
            {
                let why: Vec<String> = s.problems.iter().map(problem_text).collect();
                outcomes.push(Outcome {
                    name: s.name.clone(),
                    result: Err(why.join("; ")),
                });
            }
            specs
        }
    };
    // Each line as its check ends: a slow server holds up only its own.
    if !json {
        for o in &outcomes {
            print_outcome(o);
        }
    }
    let mut checks: futures::stream::FuturesUnordered<_> = specs
        .into_iter()
        .map(|spec| check_one(spec, settings))
        .collect();
    while let Some(outcome) = futures::StreamExt::next(&mut checks).await {
        if !json {
            print_outcome(&outcome);
        }
        outcomes.push(outcome);
    }
    outcomes.sort_by(|a, b| a.name.cmp(&b.name));
    let failed = outcomes.iter().any(|o| o.result.is_err());
    if json {
        let mut all: Vec<Value> = outcomes.iter().map(outcome_json).collect();
        all.extend(
            skipped
                .iter()
                .map(|(name, state)| json!({"name": name, "ok": null, "skipped": state})),
        );
        println!("{}", Value::Array(all));
    } else {
        for (name, state) in &skipped {
            println!("{}: not checked ({state})", clean_line(name));
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `servers --check` while a `serve` runs for the configuration: its servers
/// are the ones checked, as they run (a second copy of each would answer for
/// itself, not for them). `live` holds the running serve's statuses.
pub(crate) fn report_live(live: &[Value], json: bool) -> ExitCode {
    let mut failed = false;
    let mut all = Vec::new();
    for s in live.iter().filter(|s| s["remote"] != true) {
        let name = s["name"].as_str().unwrap_or("?");
        let ready = s["state"] == "ready";
        let refused = s["refused"]["total"].as_u64().unwrap_or(0);
        failed |= !ready || refused > 0;
        if json {
            all.push(if ready {
                json!({"name": name, "ok": refused == 0, "tools": s["tools"], "refused": refused, "live": true})
            } else {
                json!({"name": name, "ok": false, "error": s["detail"], "live": true})
            });
            continue;
        }
        let name = clean_line(name);
        if ready {
            let tools = output::count(s["tools"].as_u64().unwrap_or(0) as usize, "tool");
            match refused {
                0 => println!("{name}: ok, {tools} (running in serve)"),
                n => println!(
                    "{name}: ok, {tools}, {} without a route (running in serve; `servers` says why)",
                    output::count(n as usize, "more tool")
                ),
            }
        } else {
            println!(
                "{name}: failed: {} (running in serve)",
                clean_line(s["detail"].as_str().unwrap_or("?"))
            );
        }
    }
    if json {
        println!("{}", Value::Array(all));
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_outcome(o: &Outcome) {
    let name = clean_line(&o.name);
    match &o.result {
        Ok((tools, took)) => println!(
            "{name}: ok, {}, {}",
            output::count(*tools, "tool"),
            output::duration(*took)
        ),
        Err(why) => println!("{name}: failed: {}", clean_line(why)),
    }
}

fn outcome_json(o: &Outcome) -> Value {
    match &o.result {
        Ok((tools, took)) => {
            json!({"name": o.name, "ok": true, "tools": tools, "ms": took.as_millis() as u64})
        }
        Err(why) => json!({"name": o.name, "ok": false, "error": why}),
    }
}

/// Starts `spec` alone, waits for it to be ready (or not), stops it.
async fn check_one(spec: ServerSpec, settings: &Settings) -> Outcome {
    let name = spec.name.to_string();
    let mut options = settings.supervisor_options();
    // Once: a check reports the first failure instead of retrying it.
    options.restart.max_restarts = 0;
    let startup = spec.startup_timeout.unwrap_or(options.startup_timeout);
    let began = Instant::now();
    let host = match Host::start(vec![spec], options).await {
        Ok(host) => host,
        Err(e) => {
            return Outcome {
                name,
                result: Err(format!("could not start: {e}")),
            };
        }
    };
    let statuses = host.wait_ready(startup + Duration::from_millis(500)).await;
    let took = began.elapsed();
    let result = match statuses.first().map(|s| (&s.state, s.tools)) {
        Some((ServerState::Ready, tools)) => Ok((tools, took)),
        Some((ServerState::Starting { .. }, _)) => {
            Err(format!("not ready within {} ms", startup.as_millis()))
        }
        Some((state @ ServerState::Failed { .. }, _)) => Err(crate::oneshot::why(state)),
        Some((state, _)) => Err(state_text(state)),
        None => Err("did not start".to_string()),
    };
    host.shutdown().await;
    Outcome { name, result }
}
