//! How the CLI prints tools, results and events, as text or JSON.
//!
//! Text a server supplied (descriptions, results, errors, logs) never reaches
//! the terminal raw: control characters other than newline and tab are shown
//! escaped, so a server cannot move the cursor, rewrite earlier lines, retitle
//! the window or ring the bell. JSON output is escaped by the encoder.
//!
//! Colour only where it is wanted: on a terminal, and never with `NO_COLOR`
//! (`anstream` strips the styles otherwise). Tables fit the terminal's width
//! on a terminal; piped, nothing is cut.

use std::sync::Arc;

use mcpvisor::{CallToolResult, ContentBlock, HostEvent, ServerState, ToolDefinition};
use serde_json::{Value, json};

/// `text` with terminal control characters (C0 but newline and tab, DEL, C1)
/// shown as `\u{..}` escapes.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// [`clean`], with newlines escaped too: for text that must stay on one line.
pub(crate) fn clean_line(text: &str) -> String {
    clean(text).replace('\n', "\\n")
}

/// A tool with every field its server sent, and its server and tool names apart.
pub(crate) fn tool_json(t: &ToolDefinition) -> Value {
    let mut tool = json!({"name": t.name.as_str(), "server": t.name.server(), "tool": t.name.tool(),
        "description": t.description, "inputSchema": t.input_schema});
    if let Some(title) = &t.title {
        tool["title"] = json!(title);
    }
    if let Some(schema) = &t.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    if let Some(annotations) = &t.annotations {
        tool["annotations"] = annotations.clone();
    }
    if !t.icons.is_empty() {
        tool["icons"] = serde_json::to_value(&t.icons).unwrap_or(Value::Null);
    }
    tool
}

/// Whether stderr is a terminal that takes colour (not with `NO_COLOR`).
pub(crate) fn colour_on_stderr() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// The terminal's width when stdout is one; `None` when piped (nothing is cut).
pub(crate) fn width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size()
        .ok()
        .map(|(columns, _)| usize::from(columns).max(40))
}

/// `text` cut to `room` characters, with `…` where it was cut.
pub(crate) fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut out: String = text.chars().take(room.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub(crate) use mcpvisor_protocol::human::{count, duration};

/// A call's result: the result on stdout (its JSON with `--json`), then on
/// stderr whether the tool said it failed (the exit code says it too) and,
/// on a terminal, how long it took.
pub(crate) fn print_result(name: &str, r: &CallToolResult, json: bool, since: std::time::Instant) {
    if json {
        println!("{}", r.to_value());
        return;
    }
    println!("{}", result_text(r));
    if r.is_error {
        let red = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Red.into()));
        anstream::eprintln!(
            "{red}mcpvisor: `{}` reported an error{red:#}",
            clean_line(name)
        );
    }
    took(since);
}

/// After a call, on a terminal: how long it took, dimmed, on stderr.
fn took(since: std::time::Instant) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let dim = anstyle::Style::new().dimmed();
        anstream::eprintln!("{dim}({}){dim:#}", duration(since.elapsed()));
    }
}

/// A failure on stderr as one line, or as a JSON object on stdout with `--json`.
pub(crate) fn error(message: &str, json: bool) {
    if json {
        println!("{}", json!({"error": message}));
    } else {
        let red = anstyle::Style::new()
            .bold()
            .fg_color(Some(anstyle::AnsiColor::Red.into()));
        anstream::eprintln!("{red}mcpvisor:{red:#} {}", clean(message));
    }
}

/// The tools as an aligned table: name, then the description's first line,
/// cut to the terminal's width.
fn tool_table(tools: &[Arc<ToolDefinition>]) -> Vec<String> {
    let name_width = tools
        .iter()
        .map(|t| t.name.as_str().len())
        .max()
        .unwrap_or(0)
        .min(60);
    let bold = anstyle::Style::new().bold();
    tools
        .iter()
        .map(|t| {
            let first = clean_line(t.description.lines().next().unwrap_or(""));
            let name = t.name.as_str();
            let pad = name_width.saturating_sub(name.len());
            let room = width()
                .map(|w| w.saturating_sub(name_width + 2))
                .unwrap_or(usize::MAX);
            if first.is_empty() || room < 10 {
                format!("{bold}{name}{bold:#}")
            } else {
                format!(
                    "{bold}{name}{bold:#}{}  {}",
                    " ".repeat(pad),
                    fit(&first, room)
                )
            }
        })
        .collect()
}

pub(crate) fn result_text(r: &CallToolResult) -> String {
    clean(&raw_result_text(r))
}

fn raw_result_text(r: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for block in &r.content {
        parts.push(match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { mime_type, data } => {
                format!("[image {mime_type}, {} base64 bytes]", data.len())
            }
            ContentBlock::Audio { mime_type, data } => {
                format!("[audio {mime_type}, {} base64 bytes]", data.len())
            }
            ContentBlock::Resource { resource } => {
                format!("[resource {}]", resource.get("uri").unwrap_or(&Value::Null))
            }
            ContentBlock::Unknown(v) => v.to_string(),
        });
    }
    parts.join("\n")
}

pub(crate) fn state_text(s: &ServerState) -> String {
    clean_line(&mcpvisor_serve::wire::state_text(s))
}

/// The routed tools, as a table or as one JSON array.
pub(crate) fn print_tools(tools: &[Arc<ToolDefinition>], json: bool) {
    if json {
        let all: Vec<Value> = tools.iter().map(|t| tool_json(t)).collect();
        println!("{}", Value::Array(all));
        return;
    }
    for line in tool_table(tools) {
        anstream::println!("{line}");
    }
    let servers: std::collections::BTreeSet<&str> = tools.iter().map(|t| t.name.server()).collect();
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        eprintln!(
            "{} from {}",
            count(tools.len(), "tool"),
            count(servers.len(), "server")
        );
    }
}

pub(crate) use mcpvisor_serve::wire::event_json;

/// An event as one line, after the local time it was seen.
pub(crate) fn event_line(e: &HostEvent) -> String {
    stamped(&clean_line(&e.to_string()))
}

/// Why each server last went down, so a reason that comes again (a launcher
/// failing the same way on every restart) is said once, not on every line.
/// Bounded by the number of servers.
#[derive(Default)]
pub(crate) struct Repeats(std::collections::HashMap<String, String>);

impl Repeats {
    /// `text` (an event's line), with `reason` replaced by a short mention
    /// when it is `server`'s last reason again.
    pub(crate) fn collapse(&mut self, server: &str, reason: &str, text: &str) -> String {
        if reason.is_empty() {
            return text.to_string();
        }
        if self.0.get(server).is_some_and(|last| last == reason) {
            return text.replace(reason, "the same reason as before");
        }
        self.0.insert(server.to_string(), reason.to_string());
        text.to_string()
    }
}

/// `line` after the local time now (print with `anstream`, which drops the
/// dimming where colour is off).
pub(crate) fn stamped(line: &str) -> String {
    let now = chrono::Local::now().format("%H:%M:%S%.3f");
    let dim = anstyle::Style::new().dimmed();
    format!("{dim}{now}{dim:#} {line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_said_again_is_mentioned_not_repeated() {
        let mut repeats = Repeats::default();
        let long = "failed to start `npx`: ".to_string() + &"x".repeat(600);
        let line = |n: u32| format!("git: restarting (attempt {n}): {long}");
        assert_eq!(repeats.collapse("git", &long, &line(1)), line(1));
        let again = repeats.collapse("git", &long, &line(2));
        assert_eq!(
            again,
            "git: restarting (attempt 2): the same reason as before"
        );
        // Another server's reason, or a new one, is said in full.
        assert_eq!(repeats.collapse("web", &long, &line(1)), line(1));
        assert_eq!(
            repeats.collapse("git", "exit code 1", "git: exit code 1"),
            "git: exit code 1"
        );
    }

    #[test]
    fn control_characters_are_escaped_but_newlines_and_tabs_kept() {
        let hostile = "ok\x1b[2J\x1b]0;pwned\x07\r\u{9b}31m\x7f\tend\nnext";
        let shown = clean(hostile);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(
            shown.contains("\\u{1b}[2J") && shown.contains("\tend\nnext"),
            "{shown:?}"
        );
        assert_eq!(clean_line("a\nb\x1b"), "a\\nb\\u{1b}");
    }
}
