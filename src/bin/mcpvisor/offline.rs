//! Commands that only read or change configuration: `servers`, `enable`,
//! `disable`, `settings`. They start nothing.

use std::process::ExitCode;

use mcpvisor::config::process_env;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;
use serde_json::{Value, json};

use crate::Failure;

fn need(project: Option<&Project>) -> Result<&Project, Failure> {
    project.ok_or_else(|| Failure("no .mcp.json here; pass --config PATH".into(), 2))
}

pub(crate) fn servers(project: Option<&Project>, json: bool) -> Result<ExitCode, Failure> {
    let Some(project) = project else {
        if json {
            println!(
                "{}",
                json!([{"name": "demo", "type": "stdio", "source": "built-in", "enabled": true, "approved": true, "problems": []}])
            );
        } else {
            println!("demo                 stdio  built-in demo server (no .mcp.json here)");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let statuses = project
        .statuses(&process_env)
        .map_err(|e| Failure(e.to_string(), 2))?;
    if json {
        let all: Vec<Value> = statuses
            .iter()
            .map(|s| {
                json!({
                    "name": s.name, "type": s.kind.to_string(), "source": s.source.display().to_string(),
                    "approved": s.approved, "disabled": s.disabled, "enabled": s.enabled,
                    "problems": s.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", Value::Array(all));
        return Ok(ExitCode::SUCCESS);
    }
    for s in &statuses {
        let state = match (s.enabled, s.approved, s.disabled) {
            (true, _, _) => "enabled",
            (false, _, true) => "disabled in file",
            (false, false, false) => "not approved",
            (false, true, false) => "approved",
        };
        println!(
            "{:<20} {:<6} {:<17} {}",
            s.name,
            s.kind,
            state,
            s.source.display()
        );
        for p in &s.problems {
            println!("    problem: {p}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn enable(project: Option<&Project>, name: &str) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    match project.enable(name, &process_env) {
        Ok(()) => {
            println!("enabled `{name}` for {}", project.config.path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(mcpvisor::project::ProjectError::Invalid { server, problems }) => {
            eprintln!("mcpvisor: `{server}` was not enabled:");
            for p in problems {
                eprintln!("    {p}");
            }
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(Failure(e.to_string(), 1)),
    }
}

pub(crate) fn disable(project: Option<&Project>, name: &str) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    project
        .disable(name)
        .map_err(|e| Failure(e.to_string(), 1))?;
    println!("disabled `{name}` for {}", project.config.path.display());
    Ok(ExitCode::SUCCESS)
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
    }
    ExitCode::SUCCESS
}
