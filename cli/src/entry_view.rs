//! One configuration entry shown to a person or a script: how it runs (the
//! command with its arguments, or the URL) and its state. Secrets stay hidden:
//! environment and header values are `[redacted]`, a URL's query and opaque
//! path segments too.

use mcpvisor::config::{ServerEntry, TransportKind};
use mcpvisor::project::EntryStatus;
use mcpvisor_transports::redact_url;
use serde_json::{Map, Value, json};

use crate::output::clean_line;

const REDACTED: &str = "[redacted]";

/// The command line of a stdio entry, or the URL of an HTTP one, as written
/// (unexpanded) and safe to print.
pub(crate) fn target(entry: &ServerEntry) -> String {
    match (&entry.kind, &entry.url, &entry.command) {
        (TransportKind::Http, Some(url), _) | (TransportKind::Other(_), Some(url), None) => {
            shown_url(url)
        }
        (_, _, Some(command)) => quoted(std::iter::once(command).chain(&entry.args)),
        _ => "(no command or url)".to_string(),
    }
}

/// Words as a shell would need them, so a command can be copied and run.
fn quoted<'a>(words: impl Iterator<Item = &'a String>) -> String {
    let words: Vec<String> = words
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
        .collect();
    clean_line(&words.join(" "))
}

/// A URL without its query (which may carry a key). One that does not parse
/// yet (it holds a `${VAR}`) is cut at its query.
pub(crate) fn shown_url(url: &str) -> String {
    let shown = if url.contains("${") {
        match url.split_once('?') {
            Some((base, _)) => format!("{base}?{REDACTED}"),
            None => url.to_string(),
        }
    } else {
        redact_url(url)
    };
    clean_line(&shown)
}

/// `enabled`, `approved`, `not approved` or `disabled in file`.
pub(crate) fn state(s: &EntryStatus) -> &'static str {
    match (s.enabled, s.approved, s.disabled) {
        (true, _, _) => "enabled",
        (false, _, true) => "disabled in file",
        (false, false, false) => "not approved",
        (false, true, false) => "approved",
    }
}

fn redacted_names<'a>(names: impl Iterator<Item = &'a String>) -> Map<String, Value> {
    names.map(|k| (k.clone(), json!(REDACTED))).collect()
}

/// The entry as JSON, values of `env` and `headers` redacted.
pub(crate) fn entry_json(entry: &ServerEntry) -> Value {
    json!({
        "name": entry.name,
        "type": entry.kind.to_string(),
        "command": entry.command,
        "args": entry.args,
        "env": redacted_names(entry.env.keys()),
        "cwd": entry.cwd,
        "url": entry.url.as_deref().map(shown_url),
        "headers": redacted_names(entry.headers.keys()),
        "oauth": entry.oauth.is_some(),
        "disabled": entry.disabled,
        "target": target(entry),
    })
}

/// The entry as text lines under its name, values redacted.
pub(crate) fn entry_lines(entry: &ServerEntry) -> Vec<String> {
    let mut lines = vec![format!("  type: {}", clean_line(&entry.kind.to_string()))];
    if let Some(command) = &entry.command {
        lines.push(format!("  command: {}", clean_line(command)));
        if !entry.args.is_empty() {
            lines.push(format!("  args: {}", quoted(entry.args.iter())));
        }
    }
    if let Some(cwd) = &entry.cwd {
        lines.push(format!("  cwd: {}", clean_line(cwd)));
    }
    for name in entry.env.keys() {
        lines.push(format!("  env: {}={REDACTED}", clean_line(name)));
    }
    if let Some(url) = &entry.url {
        lines.push(format!("  url: {}", shown_url(url)));
    }
    for name in entry.headers.keys() {
        lines.push(format!("  header: {}: {REDACTED}", clean_line(name)));
    }
    if entry.oauth.is_some() {
        lines.push("  oauth: configured".to_string());
    }
    lines
}
