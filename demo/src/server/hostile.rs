//! `--hostile <behaviour>`: the demo server breaks the protocol on purpose, one
//! way at a time, so tests can prove a client survives each.
//!
//! Apart from its one misbehaviour a hostile server is the ordinary demo
//! server: where it sends junk it still sends the real answer afterwards
//! (unless the behaviour is to never answer properly), so a test can tell
//! "ignored" from "accepted".

use std::io::Write;
use std::sync::Arc;

use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::wire::jsonrpc::{Message, Notification, Request, RequestId};
use serde_json::{Map, Value, json};

use super::state::{Shared, lock};
use super::tools::{ToolKind, ToolTable};

/// Tools listed by `many-tools`, all in one `tools/list` page.
pub const MANY_TOOLS: usize = 10_000;
/// Properties of the `huge` tool's input schema (`huge-schema`).
pub const HUGE_SCHEMA_PROPERTIES: usize = 4_000;
/// Nesting depth of the `deep` property in the `huge` tool's schema.
pub const HUGE_SCHEMA_DEPTH: usize = 32;
/// Answers `out-of-order` and `batched-answers` hold back and then send last first.
pub const REORDER_BATCH: usize = 4;
/// Nesting depth of the `abyss` tool's schema (`too-deep`): past the JSON
/// parser's recursion limit of 128.
pub const TOO_DEEP: usize = 200;
/// Lines of garbage `garbage-flood` sends once initialized.
pub const GARBAGE_FLOOD_LINES: usize = 50_000;
/// The log message `garbage-flood` sends after its garbage.
pub const GARBAGE_FLOOD_DONE: &str = "garbage flood done";
/// Requests `server-requests` sends once initialized, with their ids.
pub const SERVER_REQUESTS: [(&str, &str); 4] = [
    ("sampling/createMessage", "s-1"),
    ("roots/list", "s-2"),
    ("elicitation/create", "s-3"),
    ("ping", "s-4"),
];

/// Sampling requests `sampling-flood` sends at once, once initialized (ids `f-0` …).
pub const SAMPLING_FLOOD: usize = 200;

/// One way to misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Hostile {
    /// Before reading anything, answer requests the client never sent (ids 2
    /// and 3, an error without id) and send a ping request.
    RepliesBeforeInitialize,
    /// Precede every tool answer with answers for ids that were never issued.
    UnknownIds,
    /// Answer every tool call twice, the second time with other content.
    DuplicateAnswers,
    /// Hold tool answers until four are due, then send them last first.
    OutOfOrder,
    /// Hold tool answers until four are due, then send them as one JSON-RPC
    /// batch (an array on one line), last first.
    BatchedAnswers,
    /// Precede every tool answer with lines that are not JSON (binary included).
    InvalidJson,
    /// Precede every tool answer with JSON values that are not objects.
    NotAnObject,
    /// Precede every tool answer with a copy saying `"jsonrpc": "1.0"` (and one without the member).
    WrongVersion,
    /// Once initialized, send log and unknown notifications without pause, forever.
    NotificationFlood,
    /// Once initialized, send 50,000 lines that are not JSON, then a log
    /// message saying so.
    GarbageFlood,
    /// List 10,000 tools (`t00000` …) in one page.
    ManyTools,
    /// List a tool `huge` whose input schema is ~0.8 MB, wide and deep.
    HugeSchema,
    /// List a tool `abyss` whose input schema nests deeper than any parser
    /// should follow, so the whole `tools/list` answer is unreadable.
    TooDeep,
    /// Write to stderr without pause, in long lines and one endless line, forever.
    StderrFlood,
    /// Answer a tool call with half a line, then exit.
    PartialLineEof,
    /// Once initialized, send requests the client did not advertise (sampling,
    /// roots, elicitation) and a ping; the `client_answers` tool shows the answers.
    ServerRequests,
    /// Once initialized, send [`SAMPLING_FLOOD`] `sampling/createMessage`
    /// requests at once; the `client_answers` tool shows the answers.
    SamplingFlood,
    /// Put terminal control sequences (clear screen, window title, bell, colours)
    /// in every tool description, tool result text and error message.
    TerminalEscapes,
    /// Answer every tool call with both `result` and `error`.
    ResultAndError,
    /// Answer `add` with `structuredContent` outside its `outputSchema`
    /// (`{"sum": "many"}`).
    WrongOutput,
    /// Answer every tool call with a result nested deeper than a parser follows.
    TooDeepAnswer,
    /// Page `tools/list` forever, each page's `nextCursor` a new ~900 KB string.
    HugeCursors,
    /// Page `tools/list` forever, each page's `nextCursor` a new 15 KiB string
    /// (under any sensible length cap, so only keeping hashes bounds memory).
    LongCursors,
    /// Page `tools/list` forever, each page one tool with a ~900 KB description.
    EndlessListing,
}

/// What `terminal-escapes` puts in front of every string it sends.
pub const TERMINAL_ESCAPES: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}[31m\r\u{9b}1m";

impl Hostile {
    /// Adds the tools this behaviour lists to `table`.
    pub(crate) fn add_tools(self, table: &mut ToolTable) {
        match self {
            Hostile::ManyTools => {
                for i in 0..MANY_TOOLS {
                    table.add(&many_tool_name(i), ToolKind::ExtraEcho);
                }
            }
            Hostile::HugeSchema => table.add("huge", ToolKind::ExtraEcho),
            Hostile::TooDeep => table.add("abyss", ToolKind::ExtraEcho),
            Hostile::ServerRequests | Hostile::SamplingFlood => {
                table.add("client_answers", ToolKind::ClientAnswers)
            }
            _ => {}
        }
    }

    /// Tools per `tools/list` page: `many-tools` lists everything at once.
    pub(crate) fn page_size(self, default: usize) -> usize {
        match self {
            Hostile::ManyTools => usize::MAX,
            _ => default,
        }
    }

    /// The whole `tools/list` page for `cursor`, where this behaviour pages forever.
    pub(crate) fn endless_page(self, cursor: Option<&str>) -> Option<Value> {
        let page = cursor
            .and_then(|c| c.split(':').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        let filler = |what: char| what.to_string().repeat(900 * 1024);
        let tool = |description: String| {
            json!({"name": format!("page{page}"), "description": description,
                   "inputSchema": {"type": "object"}})
        };
        match self {
            Hostile::HugeCursors => Some(json!({
                "tools": [tool("a page".into())],
                "nextCursor": format!("{}:{}", page + 1, filler('c')),
            })),
            Hostile::LongCursors => Some(json!({
                "tools": [],
                "nextCursor": format!("{}:{}", page + 1, "c".repeat(15 * 1024)),
            })),
            Hostile::EndlessListing => Some(json!({
                "tools": [tool(filler('d'))],
                "nextCursor": (page + 1).to_string(),
            })),
            _ => None,
        }
    }

    /// Rewrites a `tools/list` page before it is sent.
    pub(crate) fn rewrite_listing(self, tools: &mut [Value]) {
        match self {
            // Short entries, so 10,000 of them fit in one 1 MiB line.
            Hostile::ManyTools => {
                for tool in tools.iter_mut().filter(|t| is_many_tool(t)) {
                    let name = tool["name"].clone();
                    *tool = json!({ "name": name, "inputSchema": { "type": "object" } });
                }
            }
            Hostile::HugeSchema => {
                for tool in tools.iter_mut().filter(|t| t["name"] == "huge") {
                    tool["inputSchema"] = huge_schema();
                }
            }
            Hostile::TerminalEscapes => {
                for tool in tools.iter_mut() {
                    tool["description"] = json!(format!("{TERMINAL_ESCAPES}described"));
                }
            }
            Hostile::TooDeep => {
                for tool in tools.iter_mut().filter(|t| t["name"] == "abyss") {
                    let mut schema = json!({ "type": "string" });
                    for _ in 0..TOO_DEEP {
                        schema = json!({ "type": "array", "items": schema });
                    }
                    tool["inputSchema"] = schema;
                }
            }
            _ => {}
        }
    }

    /// Runs before the server reads its first line.
    pub(crate) async fn on_start(self, shared: &Arc<Shared>) {
        match self {
            Hostile::RepliesBeforeInitialize => {
                let lines = [
                    json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
                        {"name": "ghost", "inputSchema": {"type": "object"}}
                    ]}}),
                    json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [
                        {"type": "text", "text": "an answer nobody asked for"}
                    ]}}),
                    json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "early"}}),
                    json!({"jsonrpc": "2.0", "id": "early-ping", "method": "ping"}),
                ];
                for line in lines {
                    shared.outbox.send_raw(json_line(&line)).await;
                }
            }
            Hostile::StderrFlood => {
                // A plain thread: it must not depend on the runtime being responsive.
                let _ = std::thread::Builder::new()
                    .name("stderr-flood".into())
                    .spawn(flood_stderr);
            }
            _ => {}
        }
    }

    /// Runs right after the `initialize` answer was queued.
    pub(crate) async fn after_initialize(self, shared: &Arc<Shared>) {
        match self {
            Hostile::NotificationFlood => {
                let shared = Arc::clone(shared);
                tokio::spawn(async move { flood_notifications(&shared).await });
            }
            Hostile::GarbageFlood => {
                for i in 0..GARBAGE_FLOOD_LINES {
                    let line = format!("garbage line {i}, not JSON\n");
                    shared.outbox.send_raw(line.into_bytes()).await;
                }
                let params =
                    json!({ "level": "info", "logger": "flood", "data": GARBAGE_FLOOD_DONE });
                let note = Notification::new(methods::LOG_MESSAGE, Some(params));
                shared.outbox.send(&Message::Notification(note)).await;
            }
            Hostile::SamplingFlood => {
                for i in 0..SAMPLING_FLOOD {
                    let params = json!({"messages": [], "maxTokens": 1});
                    let id = RequestId::String(format!("f-{i}"));
                    let request = Request::new(id, "sampling/createMessage", Some(params));
                    shared.outbox.send(&Message::Request(request)).await;
                }
            }
            Hostile::ServerRequests => {
                for (method, id) in SERVER_REQUESTS {
                    let params = (method != methods::PING).then(|| json!({}));
                    let request = Request::new(RequestId::String(id.into()), method, params);
                    shared.outbox.send(&Message::Request(request)).await;
                }
            }
            _ => {}
        }
    }

    /// Sends a tool call's answer the hostile way.
    pub(crate) async fn answer(self, shared: &Shared, answer: &Message) {
        let line = message_line(answer);
        match self {
            Hostile::UnknownIds => {
                let bogus = [
                    json!({"jsonrpc": "2.0", "id": 987_654_321, "result": text("unknown id")}),
                    json!({"jsonrpc": "2.0", "id": "no-such-id", "result": text("unknown id")}),
                    json!({"jsonrpc": "2.0", "id": -1, "error": {"code": -32603, "message": "unknown id"}}),
                ];
                for value in bogus {
                    shared.outbox.send_raw(json_line(&value)).await;
                }
                shared.outbox.send_raw(line).await;
            }
            Hostile::DuplicateAnswers => {
                shared.outbox.send_raw(line).await;
                if let Some(mut copy) = as_value(answer) {
                    copy["result"] = text("duplicate answer");
                    shared.outbox.send_raw(json_line(&copy)).await;
                }
            }
            Hostile::OutOfOrder => {
                let batch = {
                    let mut held = lock(&shared.held_answers);
                    held.push(line);
                    if held.len() < REORDER_BATCH {
                        return;
                    }
                    std::mem::take(&mut *held)
                };
                for line in batch.into_iter().rev() {
                    shared.outbox.send_raw(line).await;
                }
            }
            Hostile::BatchedAnswers => {
                let held = {
                    let mut held = lock(&shared.held_answers);
                    held.push(line);
                    if held.len() < REORDER_BATCH {
                        return;
                    }
                    std::mem::take(&mut *held)
                };
                let mut batch = b"[".to_vec();
                for (i, line) in held.iter().rev().enumerate() {
                    if i > 0 {
                        batch.push(b',');
                    }
                    batch.extend_from_slice(line.strip_suffix(b"\n").unwrap_or(line));
                }
                batch.extend_from_slice(b"]\n");
                shared.outbox.send_raw(batch).await;
            }
            Hostile::InvalidJson => {
                for junk in [
                    &b"{\"jsonrpc\":\"2.0\",\"id\":\n"[..],
                    b"this is not json\n",
                    b"\xff\xfe\x00\x01 binary \x80\n",
                    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}}\n",
                    b"\"unterminated\n",
                ] {
                    shared.outbox.send_raw(junk.to_vec()).await;
                }
                shared.outbox.send_raw(line).await;
            }
            Hostile::NotAnObject => {
                for junk in [
                    "42",
                    "\"a string\"",
                    "null",
                    "true",
                    "[]",
                    "[1,2,3]",
                    "[[]]",
                ] {
                    shared
                        .outbox
                        .send_raw(format!("{junk}\n").into_bytes())
                        .await;
                }
                shared.outbox.send_raw(line).await;
            }
            Hostile::WrongVersion => {
                if let Some(mut copy) = as_value(answer) {
                    copy["result"] = text("wrong version");
                    copy["jsonrpc"] = json!("1.0");
                    shared.outbox.send_raw(json_line(&copy)).await;
                    if let Some(map) = copy.as_object_mut() {
                        map.remove("jsonrpc");
                    }
                    shared.outbox.send_raw(json_line(&copy)).await;
                }
                shared.outbox.send_raw(line).await;
            }
            Hostile::PartialLineEof => cut_and_exit(shared, answer, 0).await,
            Hostile::ResultAndError | Hostile::TooDeepAnswer => {
                let mut copy = as_value(answer).unwrap_or_default();
                if self == Hostile::ResultAndError {
                    copy["error"] = json!({"code": -32000, "message": "and an error"});
                } else {
                    let mut deep = json!("bottom");
                    for _ in 0..TOO_DEEP {
                        deep = json!([deep]);
                    }
                    copy["result"] = deep;
                }
                shared.outbox.send_raw(json_line(&copy)).await;
            }
            Hostile::TerminalEscapes => {
                let mut copy = as_value(answer).unwrap_or_default();
                let failed = copy.get("error").is_some() || copy["result"]["isError"] == true;
                if failed {
                    // As a JSON-RPC error, so the client's error path prints it.
                    if let Some(map) = copy.as_object_mut() {
                        map.remove("result");
                    }
                    copy["error"] =
                        json!({"code": -32000, "message": format!("{TERMINAL_ESCAPES}failed")});
                } else {
                    copy["result"] = text(&format!("{TERMINAL_ESCAPES}answered"));
                }
                shared.outbox.send_raw(json_line(&copy)).await;
            }
            _ => shared.outbox.send_raw(line).await,
        }
    }
}

/// Writes the first half of `answer`'s line (no newline), waits until it is
/// out, and exits with `code`: the client sees end of file inside a frame.
pub(crate) async fn cut_and_exit(shared: &Shared, answer: &Message, code: i32) -> ! {
    let line = answer.to_vec();
    shared
        .outbox
        .send_raw(line[..line.len() / 2].to_vec())
        .await;
    shared.outbox.flush().await;
    eprintln!("demo server: exiting with code {code} in the middle of an answer");
    std::process::exit(code)
}

/// Lines a confused server might print: none of them is a usable message.
pub(crate) fn garbage_lines() -> Vec<Vec<u8>> {
    [
        &b"{\"jsonrpc\":\"2.0\",\"id\":\n"[..],
        b"this is not json\n",
        b"\xff\xfe\x00 binary\n",
        b"42\n",
        b"[]\n",
        b"[1,2,3]\n",
        b"{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":987654321,\"result\":{}}\n",
        b"{\"jsonrpc\":\"2.0\"}\n",
    ]
    .iter()
    .map(|l| l.to_vec())
    .collect()
}

/// The name of the `i`-th `many-tools` tool.
pub fn many_tool_name(i: usize) -> String {
    format!("t{i:05}")
}

fn is_many_tool(tool: &Value) -> bool {
    tool["name"].as_str().is_some_and(|n| {
        n.len() == 6 && n.starts_with('t') && n[1..].bytes().all(|b| b.is_ascii_digit())
    })
}

/// An object schema with [`HUGE_SCHEMA_PROPERTIES`] described properties and one
/// property nested [`HUGE_SCHEMA_DEPTH`] levels deep.
fn huge_schema() -> Value {
    let mut properties = Map::new();
    let description = "a property of a very large schema; ".repeat(4);
    for i in 0..HUGE_SCHEMA_PROPERTIES {
        properties.insert(
            format!("p{i:04}"),
            json!({ "type": "string", "description": description }),
        );
    }
    let mut deep = json!({ "type": "string" });
    for _ in 0..HUGE_SCHEMA_DEPTH {
        deep = json!({ "type": "object", "properties": { "next": deep } });
    }
    properties.insert("deep".into(), deep);
    json!({ "type": "object", "properties": properties, "required": ["text"] })
}

async fn flood_notifications(shared: &Shared) {
    for n in 0u64.. {
        let (method, params) = if n % 2 == 0 {
            (
                methods::LOG_MESSAGE,
                json!({ "level": "info", "logger": "flood", "data": format!("flood {n}") }),
            )
        } else {
            ("notifications/flood", json!({ "n": n }))
        };
        let note = Notification::new(method, Some(params));
        shared.outbox.send(&Message::Notification(note)).await;
    }
}

fn flood_stderr() {
    let line = format!("{}\n", "stderr flood ".repeat(80));
    let endless = vec![b'e'; 64 * 1024];
    let mut stderr = std::io::stderr();
    loop {
        for _ in 0..64 {
            if stderr.write_all(line.as_bytes()).is_err() {
                return;
            }
        }
        // A line that never ends, in pieces.
        for _ in 0..32 {
            if stderr.write_all(&endless).is_err() {
                return;
            }
        }
        if stderr.write_all(b"\n").is_err() {
            return;
        }
    }
}

fn text(s: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": s }] })
}

fn as_value(message: &Message) -> Option<Value> {
    serde_json::from_slice(&message.to_vec()).ok()
}

fn message_line(message: &Message) -> Vec<u8> {
    let mut line = message.to_vec();
    line.push(b'\n');
    line
}

fn json_line(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_tools_fit_one_frame_and_the_huge_schema_is_large() {
        let mut table = ToolTable::new(&[]);
        Hostile::ManyTools.add_tools(&mut table);
        let mut page = table.page(0, Hostile::ManyTools.page_size(3));
        Hostile::ManyTools.rewrite_listing(&mut page);
        let line = json!({ "jsonrpc": "2.0", "id": 2, "result": { "tools": page } }).to_string();
        assert_eq!(page.len(), super::super::BUILT_IN_TOOLS.len() + MANY_TOOLS);
        assert!(
            line.len() < mcpvisor_protocol::STDIO_FRAME_LIMIT,
            "{}",
            line.len()
        );

        let schema = huge_schema().to_string();
        assert!(
            schema.len() > 500_000 && schema.len() < 1_000_000,
            "{}",
            schema.len()
        );
    }

    #[test]
    fn garbage_lines_never_parse_as_a_usable_message() {
        for line in garbage_lines() {
            let body = &line[..line.len() - 1];
            let usable = matches!(
                Message::parse(body),
                Ok(mcpvisor_protocol::Incoming::Single(Message::Response(r))) if r.id != RequestId::Number(987_654_321)
            );
            assert!(!usable, "{}", String::from_utf8_lossy(body));
        }
    }
}
