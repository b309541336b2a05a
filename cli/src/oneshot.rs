//! The one-shot path: a command starts only the servers it needs (the one a
//! qualified name names, or those listed), tries each once — no restart loop —
//! reports each that did not start in one line, and says in its exit code
//! whether one it needed failed. A healthy server's answer never waits for a
//! broken neighbour, since the neighbour is not started.

use std::time::Duration;

use mcpvisor::TransportError;
use mcpvisor::config::process_env;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;
use mcpvisor::{ConnectionError, Host, ServerSpec, ServerState, ServerStatus};

use crate::Failure;
use crate::invocation::Invocation;
use crate::output::clean_line;
use crate::suggest::nearest;

/// Which servers a command needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Needed {
    /// Every enabled server (`tools`, `resources` and `prompts` without a name, `watch`).
    All,
    /// These, by name.
    Servers(Vec<String>),
}

/// The servers to start for `needed`: the enabled entries it names, or the
/// built-in demo server when there is no `.mcp.json`. A name that cannot run
/// is an error saying why and what to run.
pub(crate) fn specs_for(
    project: Option<&Project>,
    settings: &Settings,
    needed: &Needed,
    invocation: &Invocation,
) -> Result<Vec<ServerSpec>, Failure> {
    let Some(project) = project else {
        let demo = mcpvisor_demo::demo_spec("demo", &[])
            .map_err(|e| Failure(format!("cannot locate the demo server: {e}"), 1))?;
        if let Needed::Servers(names) = needed {
            if let Some(other) = names.iter().find(|n| *n != "demo") {
                return Err(Failure(
                    format!(
                        "no server `{}`: there is no .mcp.json here, and the built-in demo server is `demo` (pass --config PATH for another file)",
                        clean_line(other)
                    ),
                    2,
                ));
            }
        }
        return Ok(vec![demo]);
    };
    let statuses = project
        .statuses(&process_env)
        .map_err(|e| Failure(e.to_string(), 2))?;
    let wanted = |name: &str| match needed {
        Needed::All => true,
        Needed::Servers(names) => names.iter().any(|n| n == name),
    };
    if let Needed::Servers(names) = needed {
        for name in names {
            let Some(status) = statuses.iter().find(|s| &s.name == name) else {
                let known: Vec<&str> = statuses.iter().map(|s| s.name.as_str()).collect();
                let hint = match nearest(name, &known) {
                    Some(close) => format!("; did you mean `{close}`?"),
                    None if known.is_empty() => " (it has no entries)".to_string(),
                    None => format!("; its servers: {}", known.join(", ")),
                };
                return Err(Failure(
                    format!(
                        "no server `{}` in {}{hint}",
                        clean_line(name),
                        project.config.path.display()
                    ),
                    2,
                ));
            };
            if status.disabled {
                return Err(Failure(
                    format!(
                        "server `{name}` is disabled in {} (\"disabled\": true); remove that line to run it",
                        project.config.path.display()
                    ),
                    2,
                ));
            }
            if !status.approved {
                let enable = invocation.command(&["enable", name]);
                // Suggest `enable` only where it would succeed.
                let passthrough = settings.env_passthrough().0;
                let message = match project.check_runnable(name, &process_env, passthrough) {
                    Ok(()) => format!("server `{name}` is not approved to run; run `{enable}`"),
                    Err(e) => format!(
                        "server `{name}` is not approved, and cannot run as written: {}; fix it, then run `{enable}`",
                        clean_line(&e.to_string())
                    ),
                };
                return Err(Failure(message, 2));
            }
            if let Some(problem) = status.problems.first() {
                return Err(Failure(
                    format!(
                        "server `{name}` cannot run: {}",
                        clean_line(&problem.to_string())
                    ),
                    2,
                ));
            }
        }
    } else {
        let unapproved: Vec<_> = statuses
            .iter()
            .filter(|s| !s.approved && !s.disabled)
            .collect();
        if !unapproved.is_empty() && statuses.iter().all(|s| !s.enabled) {
            // Nothing would run: one line that says how, not one per entry.
            const NAMED: usize = 10;
            let mut names: Vec<String> = unapproved
                .iter()
                .take(NAMED)
                .map(|s| format!("`{}`", clean_line(&s.name)))
                .collect();
            if unapproved.len() > NAMED {
                names.push(format!("{} more", unapproved.len() - NAMED));
            }
            return Err(Failure(
                format!(
                    "no server of {} is approved to run ({} not approved: {}); run `{}` to approve them all, or `{}` for one",
                    project.config.path.display(),
                    unapproved.len(),
                    names.join(", "),
                    invocation.command(&["enable", "--all"]),
                    invocation.command(&["enable", "<name>"])
                ),
                2,
            ));
        }
        let passthrough = settings.env_passthrough().0;
        for status in unapproved {
            let enable = invocation.command(&["enable", &status.name]);
            // `enable` is suggested only where it would succeed.
            match project.check_runnable(&status.name, &process_env, passthrough) {
                Ok(()) => eprintln!(
                    "mcpvisor: `{}` is not approved, so it was not started; run `{enable}`",
                    clean_line(&status.name),
                ),
                Err(e) => eprintln!(
                    "mcpvisor: `{}` is not approved, and cannot run as written: {}; fix it, then run `{enable}`",
                    clean_line(&status.name),
                    clean_line(&e.to_string())
                ),
            }
        }
    }
    let (specs, problems) = project
        .enabled_specs(&process_env)
        .map_err(|e| Failure(e.to_string(), 2))?;
    for problem in problems {
        eprintln!(
            "mcpvisor: not started: {}",
            clean_line(&problem.to_string())
        );
    }
    Ok(specs.into_iter().filter(|s| wanted(&s.name)).collect())
}

/// Starts `specs` for one command: each tried once (no restarts) unless the
/// command runs until stopped (`watch`), which keeps the usual restarts.
pub(crate) async fn start(
    specs: Vec<ServerSpec>,
    settings: &Settings,
    handler: mcpvisor::SharedClientHandler,
    long_running: bool,
) -> Result<(Host, Duration), Failure> {
    let mut options = settings.supervisor_options();
    options.client_handler = Some(handler);
    if !long_running {
        options.restart.max_restarts = 0;
    }
    let startup = options.startup_timeout;
    let host = Host::start(specs, options)
        .await
        .map_err(|e| Failure(format!("could not start the supervisor: {e}"), 1))?;
    Ok((host, startup))
}

/// The servers that did not become ready, each with why.
pub(crate) fn failures(statuses: &[ServerStatus]) -> Vec<(String, String)> {
    statuses
        .iter()
        .filter(|s| s.state != ServerState::Ready)
        .map(|s| (s.name.to_string(), why(&s.state)))
        .collect()
}

/// One failure as a sentence.
pub(crate) fn sentence((name, why): &(String, String)) -> String {
    format!("`{}` did not start: {}", clean_line(name), clean_line(why))
}

/// Reports `failures` on stderr: a line each, or a JSON line each with `--json`.
pub(crate) fn report(failures: &[(String, String)], json: bool) {
    for failure in failures {
        if json {
            eprintln!(
                "{}",
                serde_json::json!({"server": failure.0, "error": format!("did not start: {}", failure.1)})
            );
        } else {
            eprintln!("mcpvisor: {}", sentence(failure));
        }
    }
}

/// Why a server is not ready, as a person would put it.
pub(crate) fn why(state: &ServerState) -> String {
    match state {
        ServerState::Failed { reason }
        | ServerState::Restarting { reason, .. }
        | ServerState::LoginRequired { reason } => reason_text(reason),
        ServerState::Starting { .. } => {
            "it is still starting (no answer to initialize in time)".into()
        }
        ServerState::Stopped => "it was stopped".into(),
        other => crate::output::state_text(other),
    }
}

fn reason_text(reason: &ConnectionError) -> String {
    if let ConnectionError::Transport(TransportError::Spawn { command, source }) = reason {
        return match source.kind() {
            std::io::ErrorKind::NotFound => format!("command not found: {command}"),
            std::io::ErrorKind::PermissionDenied => format!("permission denied: {command}"),
            _ => format!("cannot run {command}: {source}"),
        };
    }
    reason.to_string()
}
