//! `mcpvisor describe <tool>`: what a person needs before calling a tool —
//! its title and description, its parameters as a table (name, type,
//! required, default, description), its behaviour hints and its output schema.

use std::process::ExitCode;

use mcpvisor::ToolDefinition;
use serde_json::Value;

use crate::Failure;
use crate::output::{self, clean, clean_line};

/// Prints `tool`, as text or as its JSON.
pub(crate) fn describe(tool: &ToolDefinition, json: bool) -> Result<ExitCode, Failure> {
    if json {
        println!("{}", output::tool_json(tool));
        return Ok(ExitCode::SUCCESS);
    }
    let bold = anstyle::Style::new().bold();
    let heading = match &tool.title {
        Some(title) => format!("{} — {}", tool.name.as_str(), clean_line(title)),
        None => tool.name.to_string(),
    };
    anstream::println!("{bold}{heading}{bold:#}");
    if !tool.description.is_empty() {
        println!();
        for line in clean(&tool.description).lines() {
            println!("  {line}");
        }
    }
    println!();
    let rows = parameters(&tool.input_schema);
    if rows.is_empty() {
        println!("Parameters: none");
    } else {
        anstream::println!("{bold}Parameters{bold:#}");
        print_table(
            &["NAME", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"],
            &rows,
        );
    }
    if let Some(hints) = tool.annotations.as_ref().and_then(Value::as_object) {
        let shown: Vec<String> = hints
            .iter()
            .map(|(k, v)| format!("{}: {}", clean_line(k), clean_line(&text_of(v))))
            .collect();
        if !shown.is_empty() {
            println!();
            anstream::println!("{bold}Hints{bold:#} (the server's word, not a guarantee)");
            for line in shown {
                println!("  {line}");
            }
        }
    }
    if let Some(schema) = &tool.output_schema {
        println!();
        anstream::println!("{bold}Output schema{bold:#}");
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
        for line in clean(&pretty).lines() {
            println!("  {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One row per property of an object schema, by name.
fn parameters(schema: &Value) -> Vec<[String; 5]> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let kind = type_of(p, 0);
            let kind = match p["enum"].as_array() {
                Some(choices) if choices.len() <= 6 => format!(
                    "{kind}: {}",
                    choices.iter().map(text_of).collect::<Vec<_>>().join("|")
                ),
                _ => kind,
            };
            [
                clean_line(name),
                clean_line(&kind),
                if required.contains(&name.as_str()) {
                    "yes"
                } else {
                    "no"
                }
                .into(),
                p.get("default")
                    .map(|d| clean_line(&text_of(d)))
                    .unwrap_or_default(),
                clean_line(p["description"].as_str().unwrap_or("")),
            ]
        })
        .collect()
}

/// A property's type in a few words: `array of string`, `array of object
/// (path, depth)`, `string|null`; nested arrays down to a depth of three.
fn type_of(p: &Value, depth: usize) -> String {
    let kind = match &p["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if p.get("enum").is_some() => "enum".into(),
        _ if p.get("anyOf").is_some() || p.get("oneOf").is_some() => "any of".into(),
        _ => "any".into(),
    };
    let items = &p["items"];
    if kind.split('|').any(|t| t == "array") && items.is_object() && depth < 3 {
        return format!("{kind} of {}", type_of(items, depth + 1));
    }
    if kind == "object" && depth > 0 {
        if let Some(fields) = p["properties"].as_object().filter(|f| !f.is_empty()) {
            let mut names: Vec<&str> = fields.keys().map(String::as_str).take(4).collect();
            if fields.len() > 4 {
                names.push("…");
            }
            return format!("object ({})", names.join(", "));
        }
    }
    kind
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An aligned table; the last column is cut to the terminal's width.
fn print_table(header: &[&str; 5], rows: &[[String; 5]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count()).min(40);
        }
    }
    let used: usize = widths[..4].iter().map(|w| w + 2).sum::<usize>() + 2;
    let room = output::width()
        .map(|w| w.saturating_sub(used).max(10))
        .unwrap_or(usize::MAX);
    let line = |cells: [&str; 5]| {
        let mut out = String::from("  ");
        for (cell, width) in cells[..4].iter().zip(widths) {
            let cell = output::fit(cell, width);
            out.push_str(&cell);
            out.push_str(&" ".repeat(width.saturating_sub(cell.chars().count()) + 2));
        }
        out.push_str(&output::fit(cells[4], room));
        out.trim_end().to_string()
    };
    let dim = anstyle::Style::new().dimmed();
    anstream::println!("{dim}{}{dim:#}", line(*header));
    for row in rows {
        println!("{}", line([&row[0], &row[1], &row[2], &row[3], &row[4]]));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::type_of;

    #[test]
    fn arrays_say_what_they_hold() {
        assert_eq!(
            type_of(&json!({"type": "array", "items": {"type": "string"}}), 0),
            "array of string"
        );
        assert_eq!(
            type_of(
                &json!({"type": "array", "items": {"type": "object", "properties": {"path": {}, "depth": {}}}}),
                0
            ),
            "array of object (depth, path)"
        );
        assert_eq!(
            type_of(
                &json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
                0
            ),
            "array of array of number"
        );
        assert_eq!(type_of(&json!({"type": "array"}), 0), "array");
        assert_eq!(
            type_of(&json!({"type": ["string", "null"]}), 0),
            "string|null"
        );
    }
}
