//! How the CLI prints tools, results and events, as text or JSON.
//!
//! Text a server supplied (descriptions, results, errors, logs) never reaches
//! the terminal raw: control characters other than newline and tab are shown
//! escaped, so a server cannot move the cursor, rewrite earlier lines, retitle
//! the window or ring the bell. JSON output is escaped by the encoder.

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

pub(crate) fn tool_json(t: &ToolDefinition) -> Value {
    let mut tool = json!({"name": t.name.as_str(), "description": t.description, "inputSchema": t.input_schema});
    if let Some(title) = &t.title {
        tool["title"] = json!(title);
    }
    if let Some(schema) = &t.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    tool
}

pub(crate) fn tool_line(t: &ToolDefinition) -> String {
    let first = clean_line(t.description.lines().next().unwrap_or(""));
    if first.is_empty() {
        t.name.to_string()
    } else {
        format!("{:<40} {first}", t.name.as_str())
    }
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

/// The routed tools, one line each or as one JSON array.
pub(crate) fn print_tools(tools: &[ToolDefinition], json: bool) {
    if json {
        let all: Vec<Value> = tools.iter().map(tool_json).collect();
        println!("{}", Value::Array(all));
    } else {
        for t in tools {
            println!("{}", tool_line(t));
        }
    }
}

pub(crate) use mcpvisor_serve::wire::event_json;

pub(crate) fn event_line(e: &HostEvent) -> String {
    clean_line(&e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

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
