//! The routed tool set as the gateway advertises it, and tool names back to routes.

use mcpvisor::{Host, QualifiedMcpToolName, ToolDefinition};
use mcpvisor_protocol::mcp::names::PREFIX;
use mcpvisor_protocol::mcp::revision::Revision;
use serde_json::{Map, Value, json};

/// How tools are named to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// `mcp__server__tool`, as routed.
    #[default]
    Qualified,
    /// `server__tool`: for hosts that prefix names again (`mcp__<entry>__…`).
    Short,
}

impl Naming {
    /// The advertised name of a route.
    pub fn advertise<'a>(&self, name: &'a QualifiedMcpToolName) -> &'a str {
        match self {
            Naming::Qualified => name.as_str(),
            Naming::Short => &name.as_str()[PREFIX.len()..],
        }
    }

    /// The routed name a session's tool name stands for (`None`: not a name this
    /// session could have been given).
    pub fn route(&self, advertised: &str) -> Option<String> {
        let qualified = match self {
            Naming::Qualified => advertised.to_string(),
            Naming::Short => format!("{PREFIX}{advertised}"),
        };
        QualifiedMcpToolName::parse(&qualified)
            .ok()
            .map(|n| n.as_str().to_string())
    }
}

/// Why a `tools/list` cursor was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadCursor;

/// One page of `tools/list`: tools sorted by name from `cursor` (an offset
/// this gateway handed out), at most `page_size` of them.
pub(crate) fn list_page(
    host: &Host,
    naming: Naming,
    revision: Revision,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<Value, BadCursor> {
    let start = match cursor {
        None => 0,
        Some(c) if c.len() <= 20 => c.parse::<usize>().map_err(|_| BadCursor)?,
        Some(_) => return Err(BadCursor),
    };
    // The table's own sorted routes: a page copies its tools alone, so listing
    // every page stays linear in the tools, not quadratic.
    let table = host.routes();
    let tools = table.sorted();
    if start > tools.len() {
        return Err(BadCursor);
    }
    let end = (start + page_size.max(1)).min(tools.len());
    let page: Vec<Value> = tools[start..end]
        .iter()
        .map(|r| tool_json(&r.definition, naming, revision))
        .collect();
    let mut result = Map::new();
    result.insert("tools".into(), Value::Array(page));
    if end < tools.len() {
        result.insert("nextCursor".into(), Value::String(end.to_string()));
    }
    Ok(Value::Object(result))
}

/// A tool as a session at `revision` sees it: with what 2025-06-18 brought
/// (title, outputSchema) and 2025-11-25 (icons) where the session has it.
fn tool_json(t: &ToolDefinition, naming: Naming, revision: Revision) -> Value {
    let full = revision.rules().output_schema;
    let mut tool = json!({
        "name": naming.advertise(&t.name),
        "inputSchema": t.input_schema,
    });
    if !t.description.is_empty() {
        tool["description"] = Value::String(t.description.clone());
    }
    if let Some(annotations) = &t.annotations {
        tool["annotations"] = annotations.clone();
    }
    if full {
        if let Some(title) = &t.title {
            tool["title"] = Value::String(title.clone());
        }
        if let Some(schema) = &t.output_schema {
            tool["outputSchema"] = schema.clone();
        }
    }
    if revision.rules().icons && !t.icons.is_empty() {
        tool["icons"] = serde_json::to_value(&t.icons).unwrap_or(Value::Null);
    }
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_the_prefix_and_map_back() {
        let name = QualifiedMcpToolName::new("git", "log").unwrap();
        assert_eq!(Naming::Short.advertise(&name), "git__log");
        assert_eq!(Naming::Qualified.advertise(&name), "mcp__git__log");
        assert_eq!(
            Naming::Short.route("git__log").as_deref(),
            Some("mcp__git__log")
        );
        assert_eq!(
            Naming::Qualified.route("mcp__git__log").as_deref(),
            Some("mcp__git__log")
        );
        assert_eq!(Naming::Short.route("mcp__git__log"), None);
        assert_eq!(Naming::Qualified.route("git__log"), None);
        assert_eq!(Naming::Qualified.route("not a name"), None);
    }
}
