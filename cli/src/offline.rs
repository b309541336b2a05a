//! Commands that only read configuration or log in: `servers`, `settings`,
//! `login`, `logout`. They start no server.

use std::process::ExitCode;
use std::time::Duration;

use mcpvisor::auth::{AuthState, BrowserDriver, HeadlessDriver};
use mcpvisor::config::process_env;
use mcpvisor::http_client;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;
use serde_json::{Value, json};

use crate::Failure;
use crate::entry_view;

fn need(project: Option<&Project>) -> Result<&Project, Failure> {
    project.ok_or_else(|| Failure("no .mcp.json here; pass --config PATH".into(), 2))
}

/// Lists the entries; `live` holds the statuses of a running `serve`, shown
/// beside each entry; `verbose` adds the names of the variables each stdio
/// server gets.
pub(crate) fn servers(
    project: Option<&Project>,
    settings: &Settings,
    json: bool,
    verbose: bool,
    live: Option<&[Value]>,
) -> Result<ExitCode, Failure> {
    let running = |name: &str| -> Option<&Value> {
        live.and_then(|all| {
            all.iter()
                .find(|s| s["name"].as_str() == Some(name) && s["remote"] != true)
        })
    };
    // Servers other nodes of the serve's cluster supervise.
    let remote: Vec<&Value> = live
        .into_iter()
        .flatten()
        .filter(|s| s["remote"] == true)
        .collect();
    let passthrough = settings.env_passthrough().0;
    let environment = |name: &str| -> Vec<String> {
        project
            .and_then(|p| p.config.servers.get(name))
            .map(|e| e.environment_names(passthrough))
            .unwrap_or_default()
    };
    let Some(project) = project else {
        if json {
            println!(
                "{}",
                json!([{"name": "demo", "type": "stdio", "source": "built-in", "config": null, "enabled": true, "approved": true, "problems": [], "running": running("demo")}])
            );
        } else {
            println!("config: none here or above; the built-in demo server runs");
            println!("demo                 stdio  built-in demo server");
            if let Some(s) = running("demo") {
                println!("    {}", crate::attached::live_line(s));
                for p in crate::attached::live_problems(s) {
                    println!("    problem: {p}");
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    let statuses = project
        .statuses(&process_env)
        .map_err(|e| Failure(e.to_string(), 2))?;
    // Absolute, so it says which file whatever the directory it is read from.
    let config = std::path::absolute(&project.config.path)
        .unwrap_or_else(|_| project.config.path.clone())
        .display()
        .to_string();
    let entry = |name: &str| project.config.servers.get(name);
    if json {
        let all: Vec<Value> = statuses
            .iter()
            .map(|s| {
                let shown = entry(&s.name).map(entry_view::entry_json);
                let field = |key: &str| shown.as_ref().map_or(Value::Null, |e| e[key].clone());
                json!({
                    "name": s.name, "type": s.kind.to_string(), "source": s.source.display().to_string(),
                    "config": config,
                    "command": field("command"), "args": field("args"), "url": field("url"),
                    "target": field("target"),
                    "state": entry_view::state(s),
                    "approved": s.approved, "disabled": s.disabled, "enabled": s.enabled,
                    "auth": auth_state(project, &s.name),
                    "environment": environment(&s.name),
                    "problems": s.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "running": running(&s.name),
                })
            })
            .chain(remote.iter().map(|s| {
                json!({"name": s["name"], "node": s["node"], "source": format!("node {}", s["node"].as_str().unwrap_or("?")), "running": s})
            }))
            .collect();
        println!("{}", Value::Array(all));
        return Ok(ExitCode::SUCCESS);
    }
    println!("config: {config}");
    for s in &statuses {
        println!(
            "{:<20} {:<6} {:<17} {}",
            crate::output::clean_line(&s.name),
            // `to_string` first: the kind's `Display` ignores the width.
            s.kind.to_string(),
            entry_view::state(s),
            entry(&s.name).map(entry_view::target).unwrap_or_default()
        );
        let names = environment(&s.name);
        if verbose && !names.is_empty() {
            println!("    environment: {}", names.join(" "));
        }
        // A stored login (or a store that cannot be read) is worth a line; an HTTP
        // server that never asked for one is not.
        if let Some(auth) = auth_state(project, &s.name).filter(|a| a != "logged out") {
            println!("    login: {auth}");
        }
        for p in &s.problems {
            println!("    problem: {}", crate::output::clean_line(&p.to_string()));
        }
        // Not approved, and approving would not be enough: say what to fix.
        if !s.approved && !s.disabled {
            let passthrough = settings.env_passthrough().0;
            if let Err(e) = project.check_runnable(&s.name, &process_env, passthrough) {
                println!(
                    "    problem: cannot run as written ({}); fix it before `enable`",
                    crate::output::clean_line(&e.to_string())
                );
            }
        }
        if let Some(live) = running(&s.name) {
            println!("    {}", crate::attached::live_line(live));
            for p in crate::attached::live_problems(live) {
                println!("    problem: {p}");
            }
            if live["state"] == "failed" {
                println!(
                    "    hint: `mcpvisor restart {}` starts it now",
                    crate::output::clean_line(&s.name)
                );
            }
        }
    }
    for s in remote {
        println!(
            "{:<20} node {}: {}, {} tools",
            crate::output::clean_line(s["name"].as_str().unwrap_or("?")),
            crate::output::clean_line(s["node"].as_str().unwrap_or("?")),
            crate::output::clean_line(s["detail"].as_str().unwrap_or("?")),
            s["tools"],
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn login(
    project: Option<&Project>,
    name: &str,
    headless: bool,
) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    let oauth = project
        .oauth(name, &process_env)
        .map_err(|e| Failure(e.to_string(), 1))?;
    let client = http_client(&Default::default()).map_err(|e| Failure(e.to_string(), 1))?;
    let port = project
        .config
        .servers
        .get(name)
        .and_then(|e| e.oauth.as_ref())
        .and_then(|o| o.callback_port)
        .unwrap_or(0);
    let result = if headless {
        let driver = HeadlessDriver::new().map_err(|e| Failure(e.to_string(), 1))?;
        oauth.login(&client, &driver).await
    } else {
        let driver = BrowserDriver::bind(port, Duration::from_secs(300))
            .await
            .map_err(|e| Failure(e.to_string(), 1))?;
        oauth.login(&client, &driver).await
    };
    result.map_err(|e| Failure(format!("login to `{name}` failed: {e}"), 1))?;
    println!(
        "logged in to `{name}`; tokens are in {}",
        oauth.token_path().display()
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn logout(project: Option<&Project>, name: &str) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    let oauth = project
        .oauth_for_logout(name, &process_env)
        .map_err(|e| Failure(e.to_string(), 1))?;
    let had = oauth.logout().map_err(|e| Failure(e.to_string(), 1))?;
    println!(
        "{}",
        if had {
            format!("logged out of `{name}`")
        } else {
            format!("`{name}` had no stored tokens")
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The login state of an HTTP entry, for `servers`.
fn auth_state(project: &Project, name: &str) -> Option<String> {
    let oauth = project.oauth(name, &process_env).ok()?;
    Some(match oauth.state() {
        Ok(AuthState::LoggedOut) => "logged out".to_string(),
        Ok(AuthState::LoggedIn {
            expires_at,
            refreshable,
        }) => {
            let refresh = if refreshable { ", refreshable" } else { "" };
            match expires_at {
                Some(at) => {
                    let at = i64::try_from(at)
                        .ok()
                        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
                        .map(|t| t.with_timezone(&chrono::Local).to_rfc3339())
                        .unwrap_or_else(|| at.to_string());
                    format!("logged in (expires at {at}{refresh})")
                }
                None => format!("logged in{refresh}"),
            }
        }
        Ok(_) => "unknown".to_string(),
        Err(e) => format!("error: {}", crate::output::clean_line(&e.to_string())),
    })
}

pub(crate) fn settings(settings: &Settings, json: bool) -> ExitCode {
    if json {
        let mut all: Vec<Value> = vec![
            json!({"key": "home", "value": settings.home.display().to_string(), "source": settings.home_source.to_string()}),
        ];
        all.extend(
            settings
                .all()
                .into_iter()
                .map(|(k, v, s)| json!({"key": k, "value": v, "source": s.to_string()})),
        );
        let (names, source) = settings.env_passthrough();
        all.push(json!({"key": mcpvisor::settings::ENV_PASSTHROUGH, "value": names, "source": source.to_string()}));
        let (command, source) = settings.sampling_command();
        all.push(json!({"key": mcpvisor::settings::SAMPLING_COMMAND, "value": command, "source": source.to_string()}));
        let (versions, source) = settings.protocol_versions();
        all.push(json!({"key": mcpvisor::settings::PROTOCOL_VERSIONS, "value": versions.iter().map(|v| v.as_str()).collect::<Vec<_>>(), "source": source.to_string()}));
        let (level, source) = settings.log_level();
        all.push(json!({"key": mcpvisor::settings::LOG_LEVEL, "value": level.map(|l| l.as_str()), "source": source.to_string()}));
        println!("{}", Value::Array(all));
    } else {
        println!(
            "{:<28} {:<24} {}",
            "home",
            settings.home.display(),
            settings.home_source
        );
        for (key, value, source) in settings.all() {
            println!("{key:<28} {value:<24} {source}");
        }
        let (names, source) = settings.env_passthrough();
        println!(
            "{:<28} {:<24} {source}",
            mcpvisor::settings::ENV_PASSTHROUGH,
            names.join(",")
        );
        let (command, source) = settings.sampling_command();
        println!(
            "{:<28} {:<24} {source}",
            mcpvisor::settings::SAMPLING_COMMAND,
            crate::output::clean_line(command.unwrap_or("(unset)"))
        );
        let (versions, source) = settings.protocol_versions();
        println!(
            "{:<28} {:<24} {source}",
            mcpvisor::settings::PROTOCOL_VERSIONS,
            versions.names()
        );
        let (level, source) = settings.log_level();
        println!(
            "{:<28} {:<24} {source}",
            mcpvisor::settings::LOG_LEVEL,
            level.map_or("(unset)", |l| l.as_str())
        );
    }
    ExitCode::SUCCESS
}
