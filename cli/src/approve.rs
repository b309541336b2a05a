//! `enable` and `disable`: approving entries of the configuration, several at
//! once. Each name that fails is one line naming it; the others are still done,
//! and the exit code says whether any failed.

use std::process::ExitCode;

use mcpvisor::config::{EntryProblem, process_env};
use mcpvisor::project::{EnableOptions, Enabled, Project, ProjectError};
use mcpvisor::settings::Settings;

use crate::Failure;
use crate::output::clean_line;

/// Which entries a command names.
pub(crate) struct Selection<'a> {
    /// Given by name.
    pub(crate) names: &'a [String],
    /// `--all`: every entry of the file.
    pub(crate) all: bool,
}

impl Selection<'_> {
    fn names(&self, project: &Project) -> Vec<String> {
        if self.all {
            project.config.servers.keys().cloned().collect()
        } else {
            self.names.to_vec()
        }
    }
}

fn need(project: Option<&Project>) -> Result<&Project, Failure> {
    project.ok_or_else(|| Failure("no .mcp.json here or above; pass --config PATH".into(), 2))
}

pub(crate) fn enable(
    project: Option<&Project>,
    settings: &Settings,
    selection: Selection<'_>,
    force: bool,
) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    let file = project.config.path.display();
    let options = EnableOptions {
        passthrough: settings.env_passthrough().0.to_vec(),
        force,
    };
    let mut failed = false;
    for name in selection.names(project) {
        let shown = clean_line(&name);
        match project.enable_checked(&name, &process_env, &options) {
            Ok(Enabled::DisabledInFile) => {
                println!("enabled `{shown}` for {file}");
                eprintln!(
                    "mcpvisor: warning: `{shown}` is \"disabled\": true in {file}; \
                     it is approved but runs only once the file enables it"
                );
            }
            Ok(_) => println!("enabled `{shown}` for {file}"),
            // `--all` means the entries the file does not switch off.
            Err(ProjectError::DisabledInFile(_)) if selection.all => {
                eprintln!(
                    "mcpvisor: skipped `{shown}`: it is \"disabled\": true in {file} \
                     (--force approves it anyway)"
                );
            }
            Err(e) => {
                failed = true;
                eprintln!("mcpvisor: `{shown}` was not enabled: {}", why(&e, project));
            }
        }
    }
    Ok(exit(failed))
}

pub(crate) fn disable(
    project: Option<&Project>,
    selection: Selection<'_>,
) -> Result<ExitCode, Failure> {
    let project = need(project)?;
    let file = project.config.path.display();
    let mut failed = false;
    for name in selection.names(project) {
        let shown = clean_line(&name);
        match project.disable(&name) {
            Ok(()) => println!("disabled `{shown}` for {file}"),
            Err(e) => {
                failed = true;
                eprintln!("mcpvisor: `{shown}` was not disabled: {}", why(&e, project));
            }
        }
    }
    Ok(exit(failed))
}

fn exit(failed: bool) -> ExitCode {
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The reason, on one line, without repeating the server's name.
fn why(e: &ProjectError, project: &Project) -> String {
    let file = project.config.path.display();
    let text = match e {
        ProjectError::DisabledInFile(_) => {
            format!("it is \"disabled\": true in {file}; --force approves it anyway")
        }
        ProjectError::UnknownServer(name) => format!("no server named `{name}` in {file}"),
        ProjectError::Invalid { problems, .. } => problems
            .iter()
            .map(problem_text)
            .collect::<Vec<_>>()
            .join("; "),
        e => e.to_string(),
    };
    clean_line(&text)
}

/// A problem without its `server `x`: ` prefix (the line already names it).
pub(crate) fn problem_text(p: &EntryProblem) -> String {
    let text = p.to_string();
    match text.strip_prefix("server `") {
        Some(rest) => match rest.split_once("`: ") {
            Some((_, reason)) => reason.to_string(),
            None => text,
        },
        None => text,
    }
}
