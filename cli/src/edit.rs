//! `add`, `remove` and `get`: one entry of the `.mcp.json`, as `claude mcp`
//! does it. The file is edited in place with everything else kept as it was
//! (see `mcpvisor::config::edit`); only values given on this command line are
//! written, and none of them is printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use mcpvisor::config::edit::{EditError, edit_file};
use mcpvisor::config::expand::is_variable_name;
use mcpvisor::config::{EntryProblem, FILE_NAME, McpConfig, process_env};
use mcpvisor::project::Project;
use mcpvisor_protocol::mcp::names::validate_server_name;
use serde::Serialize;
use serde::ser::Serializer;
use serde_json::json;

use crate::Failure;
use crate::approve::problem_text;
use crate::entry_view;
use crate::output::clean_line;

/// `mcpvisor add <name> -- <command> [args…]` or `mcpvisor add <name> --url URL`.
#[derive(Args)]
pub(crate) struct AddArgs {
    /// The entry's name (the `<server>` of `mcp__<server>__<tool>`).
    name: String,
    /// The URL of a Streamable HTTP server (instead of a command).
    #[arg(long, conflicts_with_all = ["command", "env", "cwd"])]
    url: Option<String>,
    /// A header the HTTP server gets, `Name: value` (repeatable).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME:VALUE",
        requires = "url"
    )]
    headers: Vec<String>,
    /// A variable the stdio server gets, `KEY=VALUE` (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// The stdio server's working directory (relative to the file's directory).
    #[arg(long)]
    cwd: Option<String>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required_unless_present = "url", value_name = "COMMAND")]
    command: Vec<String>,
}

/// A new entry, its fields in the order people write them.
#[derive(Serialize)]
#[serde(untagged)]
enum NewEntry<'a> {
    Stdio {
        #[serde(rename = "type")]
        kind: &'static str,
        command: &'a str,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        args: &'a [String],
        #[serde(skip_serializing_if = "<[_]>::is_empty", serialize_with = "in_order")]
        env: &'a [(String, String)],
        #[serde(skip_serializing_if = "Option::is_none")]
        cwd: Option<&'a str>,
    },
    Http {
        #[serde(rename = "type")]
        kind: &'static str,
        url: &'a str,
        #[serde(skip_serializing_if = "<[_]>::is_empty", serialize_with = "in_order")]
        headers: &'a [(String, String)],
    },
}

/// Pairs as a JSON object in the order given.
fn in_order<S: Serializer>(pairs: &&[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

fn usage(message: String) -> Failure {
    Failure(message, 2)
}

/// `KEY=VALUE` pairs; a malformed one is refused without echoing it (it may
/// be a secret typed in the wrong place).
fn pairs(given: &[String], flag: &str, separator: char) -> Result<Vec<(String, String)>, Failure> {
    given
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let n = i + 1;
            let (key, value) = item.split_once(separator).ok_or_else(|| {
                usage(format!(
                    "{flag} #{n} has no `{separator}`; write it as KEY{separator}VALUE"
                ))
            })?;
            let key = key.trim();
            let valid = if separator == '=' {
                is_variable_name(key)
            } else {
                !key.is_empty()
            };
            if !valid {
                return Err(usage(format!(
                    "{flag} #{n} does not start with a valid name"
                )));
            }
            let value = if separator == ':' {
                value.trim()
            } else {
                value
            };
            Ok((key.to_string(), value.to_string()))
        })
        .collect()
}

/// `mcpvisor …` as the user should type it next, with `--config` when one was given.
fn suggest(command: &str, name: &str, config_flag: Option<&Path>) -> String {
    let quote = |s: &str| shlex::try_quote(s).map_or_else(|_| s.to_string(), |q| q.into_owned());
    let config = config_flag
        .map(|p| format!(" --config {}", quote(&p.display().to_string())))
        .unwrap_or_default();
    format!("mcpvisor{config} {command} {}", quote(name))
}

/// Every problem of `entry` the loader would report when it runs, on one line.
fn check(name: &str, entry: &NewEntry<'_>, file: &Path) -> Result<(), Failure> {
    validate_server_name(name).map_err(|e| {
        usage(format!(
            "`{}` is not a valid server name: {e}",
            clean_line(name)
        ))
    })?;
    let text = json!({"mcpServers": {name: entry}}).to_string();
    let config = McpConfig::parse(&text, file).map_err(|e| usage(e.to_string()))?;
    let parsed = &config.servers[name];
    // Variables are looked up when the server starts, not now: any value will do.
    let any = |_: &str| Some("placeholder".to_string());
    let problems: Vec<String> = match parsed.resolve(&any, &config.base_dir()) {
        Ok(_) => Vec::new(),
        Err(problems) => problems
            .iter()
            .filter(|p| {
                !matches!(p, EntryProblem::InvalidUrl { .. })
                    || !parsed.url.as_deref().unwrap_or_default().contains("${")
            })
            .map(problem_text)
            .collect(),
    };
    if problems.is_empty() {
        Ok(())
    } else {
        Err(usage(format!(
            "`{}` was not added: {}",
            clean_line(name),
            clean_line(&problems.join("; "))
        )))
    }
}

/// Adds the entry to `file` (created when missing).
pub(crate) fn add(
    args: &AddArgs,
    file: Option<&Path>,
    config_flag: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let file: PathBuf = match file {
        Some(path) => path.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Failure(format!("no working directory: {e}"), 1))?
            .join(FILE_NAME),
    };
    // clap's `requires` does not hold against a trailing command: checked here.
    if args.url.is_none() && !args.headers.is_empty() {
        return Err(Failure(
            "`--header` is for an HTTP server (`--url`); a stdio server gets variables with `--env`"
                .into(),
            2,
        ));
    }
    let env = pairs(&args.env, "--env", '=')?;
    let headers = pairs(&args.headers, "--header", ':')?;
    let entry = match (&args.url, args.command.split_first()) {
        (Some(url), _) => NewEntry::Http {
            kind: "http",
            url,
            headers: &headers,
        },
        (None, Some((command, rest))) => NewEntry::Stdio {
            kind: "stdio",
            command,
            args: rest,
            env: &env,
            cwd: args.cwd.as_deref(),
        },
        (None, None) => return Err(usage("give a command after `--`, or --url".into())),
    };
    check(&args.name, &entry, &file)?;
    // Values given here may be secrets: a new file holding them is the user's alone.
    let mode = if env.is_empty() && headers.is_empty() {
        0o644
    } else {
        0o600
    };
    let name = clean_line(&args.name);
    edit_file(&file, true, mode, |doc| doc.add(&args.name, &entry)).map_err(|e| match e {
        EditError::Exists { path, .. } => Failure(
            format!(
                "server `{name}` already exists in {}; to replace it, run `{}` first",
                path.display(),
                suggest("remove", &args.name, config_flag)
            ),
            2,
        ),
        e => Failure(e.to_string(), 1),
    })?;
    let kind = if args.url.is_some() { "HTTP" } else { "stdio" };
    println!("added {kind} server `{name}` to {}", file.display());
    println!(
        "approve it with `{}`",
        suggest("enable", &args.name, config_flag)
    );
    Ok(ExitCode::SUCCESS)
}

/// Removes the entry and withdraws its approval.
pub(crate) fn remove(
    project: Option<&Project>,
    name: &str,
    config_flag: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let project = need(project, config_flag)?;
    let shown = clean_line(name);
    if !project.config.servers.contains_key(name) {
        return Err(Failure(
            format!(
                "no server named `{shown}` in {}",
                project.config.path.display()
            ),
            2,
        ));
    }
    // First: an entry left behind by a failed edit is then at least not approved.
    project
        .forget_approval(name)
        .map_err(|e| Failure(e.to_string(), 1))?;
    edit_file(&project.config.path, false, 0o644, |doc| doc.remove(name))
        .map_err(|e| Failure(e.to_string(), 1))?;
    println!(
        "removed `{shown}` from {}; its approval is withdrawn",
        project.config.path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints one entry, secrets redacted.
pub(crate) fn get(
    project: Option<&Project>,
    name: &str,
    json: bool,
    config_flag: Option<&Path>,
) -> Result<ExitCode, Failure> {
    let project = need(project, config_flag)?;
    let shown = clean_line(name);
    let file = project.config.path.display().to_string();
    let (Some(entry), Some(status)) = (
        project.config.servers.get(name),
        project
            .statuses(&process_env)
            .map_err(|e| Failure(e.to_string(), 2))?
            .into_iter()
            .find(|s| s.name == name),
    ) else {
        return Err(Failure(format!("no server named `{shown}` in {file}"), 2));
    };
    if json {
        let mut out = entry_view::entry_json(entry);
        out["config"] = json!(file);
        out["state"] = json!(entry_view::state(&status));
        out["approved"] = json!(status.approved);
        out["problems"] = json!(status.problems.iter().map(problem_text).collect::<Vec<_>>());
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{shown}:");
    println!("  config: {file}");
    println!("  state: {}", entry_view::state(&status));
    for line in entry_view::entry_lines(entry) {
        println!("{line}");
    }
    for p in &status.problems {
        println!("  problem: {}", clean_line(&problem_text(p)));
    }
    if !status.approved {
        println!("approve it with `{}`", suggest("enable", name, config_flag));
    }
    Ok(ExitCode::SUCCESS)
}

fn need<'a>(
    project: Option<&'a Project>,
    config_flag: Option<&Path>,
) -> Result<&'a Project, Failure> {
    project.ok_or_else(|| match config_flag {
        Some(_) => Failure("the configuration was not found".into(), 2),
        None => Failure("no .mcp.json here or above; pass --config PATH".into(), 2),
    })
}
