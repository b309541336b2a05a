use super::*;
use serde_json::json;

fn init(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {"listChanged": true}},
           "serverInfo": {"name": "s", "version": "1"}})
}

#[test]
fn initialize_result_validates() {
    let r = InitializeResult::validate(init(PROTOCOL_VERSION)).unwrap();
    assert_eq!(r.server_info.name, "s");
    assert!(r.capabilities.tools.is_some());
    assert_eq!(
        InitializeResult::validate(init("2024-11-05")),
        Err(InitializeError::UnsupportedVersion("2024-11-05".into()))
    );
    let mut no_info = init(PROTOCOL_VERSION);
    no_info.as_object_mut().unwrap().remove("serverInfo");
    assert_eq!(
        InitializeResult::validate(no_info),
        Err(InitializeError::MissingField("serverInfo"))
    );
    let mut bad_caps = init(PROTOCOL_VERSION);
    bad_caps["capabilities"] = json!(3);
    assert_eq!(
        InitializeResult::validate(bad_caps),
        Err(InitializeError::MissingField("capabilities"))
    );
    assert_eq!(
        InitializeResult::validate(json!([])),
        Err(InitializeError::NotAnObject)
    );
    assert_eq!(
        InitializeResult::validate(json!({})),
        Err(InitializeError::MissingField("protocolVersion"))
    );
}

#[test]
fn initialize_params_carry_version_and_client_info() {
    let v = serde_json::to_value(InitializeParams::new("mcpvisor", "0.1.0")).unwrap();
    assert_eq!(v["protocolVersion"], PROTOCOL_VERSION);
    assert_eq!(v["clientInfo"]["name"], "mcpvisor");
    assert!(v["capabilities"].is_object());
}

#[test]
fn tools_page_sets_aside_bad_entries() {
    let page = ToolsPage::parse(json!({"tools": [
        {"name": "a", "inputSchema": {"type": "object"}},
        {"description": "no name"},
        {"name": "b"}
    ], "nextCursor": "2"}))
    .unwrap();
    assert_eq!(page.tools.len(), 2);
    assert_eq!(page.rejected.len(), 1);
    assert_eq!(page.next_cursor.as_deref(), Some("2"));
    assert!(ToolsPage::parse(json!({"tools": 1})).is_err());
}

#[test]
fn call_result_keeps_every_block_kind() {
    let r = CallToolResult::parse(json!({"content": [
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "x://y", "text": "t"}},
        {"type": "resource_link", "uri": "x://z"},
        {"type": "text"}
    ], "isError": true}))
    .unwrap();
    assert!(r.is_error);
    assert_eq!(r.content.len(), 6);
    assert!(matches!(r.content[3], ContentBlock::Resource { .. }));
    assert!(matches!(r.content[4], ContentBlock::Unknown(_)));
    assert!(
        matches!(r.content[5], ContentBlock::Unknown(_)),
        "malformed text kept raw"
    );
    assert_eq!(r.text(), "hi");
    assert_eq!(CallToolResult::parse(r.to_value()).unwrap(), r);
}

#[test]
fn call_params_carry_progress_token() {
    let p = call_tool_params("echo", Some(json!({"text": "x"})), Some(&json!(4)));
    assert_eq!(p["_meta"]["progressToken"], 4);
    assert_eq!(p["arguments"]["text"], "x");
}

#[test]
fn call_line_is_the_request_call_params_describe() {
    use crate::wire::jsonrpc::{Incoming, Message};
    let args = json!({"text": "a \"quoted\"\nline", "n": 1.5});
    for (arguments, progress) in [(Some(&args), Some(9)), (None, None)] {
        let line = call_tool_line(7, "echo\u{1}", arguments, progress);
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let Ok(Incoming::Single(Message::Request(req))) = Message::parse(&line[..line.len() - 1])
        else {
            panic!("not a request: {}", String::from_utf8_lossy(&line));
        };
        assert_eq!(req.id, crate::RequestId::Number(7));
        assert_eq!(req.method, methods::TOOLS_CALL);
        let expected = call_tool_params(
            "echo\u{1}",
            arguments.cloned(),
            progress.map(Value::from).as_ref(),
        );
        assert_eq!(req.params, Some(expected));
    }
}
