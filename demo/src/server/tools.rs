//! The demo server's tool table: what `tools/list` shows and what each name runs.

use serde_json::{Value, json};

/// What a listed tool does when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKind {
    Echo,
    Add,
    Sleep,
    Cancelled,
    Fail,
    Crash,
    Flood,
    Progress,
    Pid,
    GrandchildPid,
    Log,
    AddTool,
    /// A tool added by `--extra-tool` or `add_tool`: behaves like `echo`.
    ExtraEcho,
    /// `--fault-tools`: garbage lines on stdout, then the answer.
    Garbage,
    /// `--fault-tools`: half of the answer line, then exit.
    CutAnswer,
    /// `--hostile server-requests`: the answers the client gave to our requests.
    ClientAnswers,
}

/// The built-in tools, in listing order.
const BUILT_IN: [(&str, ToolKind); 12] = [
    ("echo", ToolKind::Echo),
    ("add", ToolKind::Add),
    ("sleep", ToolKind::Sleep),
    ("cancelled", ToolKind::Cancelled),
    ("fail", ToolKind::Fail),
    ("crash", ToolKind::Crash),
    ("flood", ToolKind::Flood),
    ("progress", ToolKind::Progress),
    ("pid", ToolKind::Pid),
    ("grandchild_pid", ToolKind::GrandchildPid),
    ("log", ToolKind::Log),
    ("add_tool", ToolKind::AddTool),
];

/// The names of the built-in tools, in listing order.
pub const BUILT_IN_TOOLS: [&str; 12] = {
    let mut names = [""; 12];
    let mut i = 0;
    while i < BUILT_IN.len() {
        names[i] = BUILT_IN[i].0;
        i += 1;
    }
    names
};

#[derive(Debug, Clone)]
struct ToolEntry {
    name: String,
    kind: ToolKind,
}

/// The tools in listing order; names are kept exactly as given, duplicates included.
#[derive(Debug, Clone)]
pub(crate) struct ToolTable {
    entries: Vec<ToolEntry>,
}

impl ToolTable {
    /// The built-in tools followed by `extra` echo-like ones.
    pub(crate) fn new(extra: &[String]) -> Self {
        let mut entries: Vec<ToolEntry> = BUILT_IN
            .iter()
            .map(|(name, kind)| ToolEntry {
                name: (*name).to_string(),
                kind: *kind,
            })
            .collect();
        entries.extend(extra.iter().map(|name| ToolEntry {
            name: name.clone(),
            kind: ToolKind::ExtraEcho,
        }));
        ToolTable { entries }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The first tool listed under `name`: with duplicates, the built-in wins.
    pub(crate) fn find(&self, name: &str) -> Option<ToolKind> {
        self.entries.iter().find(|e| e.name == name).map(|e| e.kind)
    }

    /// Appends an echo-like tool.
    pub(crate) fn add_echo(&mut self, name: &str) {
        self.add(name, ToolKind::ExtraEcho);
    }

    /// Appends a tool of any kind.
    pub(crate) fn add(&mut self, name: &str, kind: ToolKind) {
        self.entries.push(ToolEntry {
            name: name.to_string(),
            kind,
        });
    }

    /// Listing entries `offset..offset + size` (clamped to the table).
    pub(crate) fn page(&self, offset: usize, size: usize) -> Vec<Value> {
        self.entries
            .iter()
            .skip(offset)
            .take(size)
            .map(|e| describe(&e.name, e.kind))
            .collect()
    }
}

/// One `tools/list` entry.
fn describe(name: &str, kind: ToolKind) -> Value {
    let (description, properties, required): (&str, Value, &[&str]) = match kind {
        ToolKind::Echo | ToolKind::ExtraEcho => (
            "Returns `text` unchanged as text content.",
            json!({ "text": { "type": "string", "description": "Text to return." } }),
            &["text"],
        ),
        ToolKind::Add => (
            "Adds two numbers; returns the sum as text and as structuredContent.sum.",
            json!({
                "a": { "type": "number", "description": "First addend." },
                "b": { "type": "number", "description": "Second addend." }
            }),
            &["a", "b"],
        ),
        ToolKind::Sleep => (
            "Sleeps `ms` milliseconds, then answers. Honours notifications/cancelled.",
            json!({ "ms": { "type": "integer", "minimum": 0, "description": "Milliseconds to sleep." } }),
            &["ms"],
        ),
        ToolKind::Cancelled => (
            "Returns, as a JSON array in text, every cancellation of an in-flight call seen so far.",
            json!({}),
            &[],
        ),
        ToolKind::Fail => (
            "Returns a tool error (isError: true) carrying `message`.",
            json!({ "message": { "type": "string", "description": "The error text." } }),
            &[],
        ),
        ToolKind::Crash => (
            "Exits the server process at once with `code` (default 3), without answering.",
            json!({ "code": { "type": "integer", "description": "Process exit code." } }),
            &[],
        ),
        ToolKind::Flood => (
            "Answers with one line of exactly `bytes` bytes (newline not counted).",
            json!({ "bytes": { "type": "integer", "minimum": 0, "description": "Length of the answer line." } }),
            &["bytes"],
        ),
        ToolKind::Progress => (
            "Sends `steps` progress notifications (when the call carries a progress token), then answers.",
            json!({
                "steps": { "type": "integer", "minimum": 0, "description": "Number of progress notifications." },
                "delay_ms": { "type": "integer", "minimum": 0, "description": "Pause before each step." }
            }),
            &["steps"],
        ),
        ToolKind::Pid => ("Returns the server's process id as text.", json!({}), &[]),
        ToolKind::GrandchildPid => (
            "Returns the process id of the `sleep` grandchild started by --grandchild.",
            json!({}),
            &[],
        ),
        ToolKind::Log => (
            "Sends a notifications/message log entry, then answers \"logged\".",
            json!({
                "level": { "type": "string", "description": "Log level (default info)." },
                "message": { "type": "string", "description": "The log text." }
            }),
            &["message"],
        ),
        ToolKind::Garbage => (
            "Writes garbage lines to stdout (invalid JSON, binary, non-objects, a wrong version, unknown ids), then answers.",
            json!({}),
            &[],
        ),
        ToolKind::CutAnswer => (
            "Writes half of its answer line to stdout, then exits with code 5.",
            json!({}),
            &[],
        ),
        ToolKind::ClientAnswers => (
            "Returns, as a JSON array in text, every answer the client sent to the server's own requests.",
            json!({}),
            &[],
        ),
        ToolKind::AddTool => (
            "Adds an echo-like tool named `name` and sends notifications/tools/list_changed.",
            json!({ "name": { "type": "string", "description": "Exact name of the new tool." } }),
            &["name"],
        ),
    };
    let mut tool = json!({
        "name": name,
        "description": description,
        "inputSchema": { "type": "object", "properties": properties, "required": required },
    });
    if kind == ToolKind::Add {
        tool["outputSchema"] = json!({
            "type": "object",
            "properties": { "sum": { "type": "number" } },
            "required": ["sum"],
        });
    }
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_description_and_an_object_schema() {
        let table = ToolTable::new(&["bad name!".to_string()]);
        let all = table.page(0, usize::MAX);
        assert_eq!(all.len(), BUILT_IN_TOOLS.len() + 1);
        for tool in &all {
            assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(tool["inputSchema"]["properties"].is_object());
        }
        assert_eq!(all[BUILT_IN_TOOLS.len()]["name"], "bad name!");
    }

    #[test]
    fn duplicate_names_resolve_to_the_built_in() {
        let mut table = ToolTable::new(&["sleep".to_string()]);
        table.add_echo("fresh");
        assert_eq!(table.find("sleep"), Some(ToolKind::Sleep));
        assert_eq!(table.find("fresh"), Some(ToolKind::ExtraEcho));
        assert_eq!(table.find("missing"), None);
        assert_eq!(table.page(table.len(), 3), Vec::<Value>::new());
    }
}
