//! The routed tool set as the gateway advertises it, and tool names back to routes.

use mcpvisor::{Host, QualifiedMcpToolName, ToolDefinition};
use mcpvisor_protocol::mcp::names::PREFIX;
use mcpvisor_protocol::mcp::revision::Revision;
use serde_json::{Map, Value, json};

/// How tools (and prompts) are named to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// `mcp__server__tool`, as routed.
    #[default]
    Qualified,
    /// `server__tool`: for hosts that prefix names again (`mcp__<entry>__…`).
    Short,
    /// The server's own name (`tool`), for a client that must see a server's
    /// tools as the server names them (a suite's fixture, a host's allow
    /// list). A name two servers share is advertised for neither, as routes
    /// that collide are: a call by it could reach either.
    Original,
}

impl Naming {
    /// The names a session may be told of: `Naming::Original` by name, the
    /// others by keyword; `None` for anything else.
    pub fn parse(word: &str) -> Option<Naming> {
        match word {
            "qualified" => Some(Naming::Qualified),
            "short" => Some(Naming::Short),
            "original" => Some(Naming::Original),
            _ => None,
        }
    }

    /// The word [`Naming::parse`] reads.
    pub fn word(self) -> &'static str {
        match self {
            Naming::Qualified => "qualified",
            Naming::Short => "short",
            Naming::Original => "original",
        }
    }

    /// The advertised name of a route.
    pub fn advertise<'a>(&self, name: &'a QualifiedMcpToolName) -> &'a str {
        match self {
            Naming::Qualified => name.as_str(),
            Naming::Short => &name.as_str()[PREFIX.len()..],
            Naming::Original => name.tool(),
        }
    }

    /// The routed name a session's name stands for, among the routes
    /// `names` (`None`: not a name this session could have been given). Only
    /// [`Naming::Original`] reads `names`: the others map back by their form.
    pub fn route<'a>(
        &self,
        advertised: &str,
        names: impl IntoIterator<Item = &'a QualifiedMcpToolName>,
    ) -> Option<String> {
        let qualified = match self {
            Naming::Qualified => advertised.to_string(),
            Naming::Short => format!("{PREFIX}{advertised}"),
            Naming::Original => {
                let mut found = names.into_iter().filter(|n| n.tool() == advertised);
                let one = found.next()?;
                // Shared by two servers: advertised for neither, so none.
                return found.next().is_none().then(|| one.as_str().to_string());
            }
        };
        QualifiedMcpToolName::parse(&qualified)
            .ok()
            .map(|n| n.as_str().to_string())
    }

    /// The names of `names` this naming cannot advertise: under
    /// [`Naming::Original`], those whose own part two routes share.
    pub fn hidden<'a>(
        &self,
        names: impl IntoIterator<Item = &'a QualifiedMcpToolName>,
    ) -> std::collections::HashSet<&'a str> {
        if *self != Naming::Original {
            return Default::default();
        }
        let mut seen = std::collections::HashMap::<&str, usize>::new();
        for name in names {
            *seen.entry(name.tool()).or_default() += 1;
        }
        seen.into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(tool, _)| tool)
            .collect()
    }
}

/// The route a session's tool name stands for on `host` now.
pub(crate) fn route_of(host: &Host, naming: Naming, advertised: &str) -> Option<String> {
    match naming {
        Naming::Original => {
            let table = host.routes();
            naming.route(
                advertised,
                table.sorted().iter().map(|r| &r.definition.name),
            )
        }
        _ => naming.route(advertised, []),
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
    let sorted = table.sorted();
    let hidden = naming.hidden(sorted.iter().map(|r| &r.definition.name));
    // Filtered before paging, so the offsets handed out stay stable.
    let tools: Vec<_> = match hidden.is_empty() {
        true => sorted.iter().collect(),
        false => sorted
            .iter()
            .filter(|r| !hidden.contains(r.definition.name.tool()))
            .collect(),
    };
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
        let none: [&QualifiedMcpToolName; 0] = [];
        assert_eq!(
            Naming::Short.route("git__log", none).as_deref(),
            Some("mcp__git__log")
        );
        assert_eq!(
            Naming::Qualified.route("mcp__git__log", none).as_deref(),
            Some("mcp__git__log")
        );
        assert_eq!(Naming::Short.route("mcp__git__log", none), None);
        assert_eq!(Naming::Qualified.route("git__log", none), None);
        assert_eq!(Naming::Qualified.route("not a name", none), None);
    }

    #[test]
    fn original_names_are_the_servers_own_unless_two_servers_share_one() {
        let names = [
            QualifiedMcpToolName::new("git", "log").unwrap(),
            QualifiedMcpToolName::new("git", "status").unwrap(),
            QualifiedMcpToolName::new("svn", "status").unwrap(),
        ];
        let original = Naming::Original;
        assert_eq!(original.advertise(&names[0]), "log");
        assert_eq!(
            original.route("log", &names).as_deref(),
            Some("mcp__git__log")
        );
        assert_eq!(original.route("status", &names), None, "shared: neither");
        assert_eq!(original.route("mcp__git__log", &names), None);
        assert_eq!(original.hidden(&names), ["status"].into_iter().collect());
        assert!(Naming::Qualified.hidden(&names).is_empty());
        for naming in [Naming::Qualified, Naming::Short, Naming::Original] {
            assert_eq!(Naming::parse(naming.word()), Some(naming));
        }
    }
}
