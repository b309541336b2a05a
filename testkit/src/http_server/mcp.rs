//! The MCP side: what each JSON-RPC request is answered with.

use std::time::Duration;

use serde_json::{Value, json};

use super::script::Script;

pub(super) const PROTOCOL_VERSION: &str = "2025-03-26";
pub(super) const BUILT_IN_TOOLS: [&str; 3] = ["echo", "add", "slow"];

/// The method of a JSON-RPC message, if it has one.
pub(super) fn method_of(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// A request carries a method and an id; notifications and responses do not both.
pub(super) fn is_request(message: &Value) -> bool {
    method_of(message).is_some() && message.get("id").is_some_and(|id| !id.is_null())
}

/// The tool a `tools/call` request names.
pub(super) fn called_tool(request: &Value) -> Option<&str> {
    if method_of(request) != Some("tools/call") {
        return None;
    }
    request.pointer("/params/name").and_then(Value::as_str)
}

/// The `notifications/message` the fixture sends on its own, carrying `data`.
pub(super) fn log_notification(data: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": "fixture", "data": data},
    })
}

/// A JSON-RPC error response.
pub(super) fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The response to `request`; `slow` sleeps before answering.
pub(super) async fn respond(script: &Script, request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let result = match method_of(request).unwrap_or_default() {
        "initialize" => Ok(json!({
            // Like real servers: the client's revision when it is one it knows.
            "protocolVersion": match params["protocolVersion"].as_str() {
                _ if script.only_2025_03_26 => PROTOCOL_VERSION,
                Some(v @ ("2025-06-18" | "2025-11-25")) => v,
                _ => PROTOCOL_VERSION,
            },
            "capabilities": if script.hang_resource_reads {
                json!({"tools": {"listChanged": true}, "logging": {}, "resources": {}})
            } else {
                json!({"tools": {"listChanged": true}, "logging": {}})
            },
            "serverInfo": {"name": "http-fixture", "version": "1"},
        })),
        "ping" | "logging/setLevel" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tool_list(script)})),
        "resources/list" if script.hang_resource_reads => Ok(json!({
            "resources": [{"uri": "note://stuck", "name": "stuck"}]
        })),
        "tools/call" => call_tool(script, &params).await,
        _ => Err((-32601, "Method not found".to_string())),
    };
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error_response(id, code, &message),
    }
}

fn tool_list(script: &Script) -> Vec<Value> {
    let mut tools = vec![
        json!({
            "name": "echo",
            "description": "Answers with its text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        }),
        json!({
            "name": "add",
            "description": "Answers with the sum of a and b.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        }),
        json!({
            "name": "slow",
            "description": "Sleeps ms milliseconds, then answers \"slow done\".",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
            },
        }),
    ];
    for name in script.knob_tools() {
        tools.push(json!({
            "name": name,
            "description": "A fixture tool a script knob acts on.",
            "inputSchema": {"type": "object"},
        }));
    }
    tools
}

async fn call_tool(script: &Script, params: &Value) -> Result<Value, (i64, String)> {
    let invalid = |why: &str| (-32602, format!("Invalid params: {why}"));
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let text = match name {
        "echo" => args
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("echo needs a string `text`"))?
            .to_string(),
        "add" => {
            let (a, b) = (&args["a"], &args["b"]);
            match (a.as_i64(), b.as_i64(), a.as_f64(), b.as_f64()) {
                (Some(a), Some(b), _, _) => (a + b).to_string(),
                (_, _, Some(a), Some(b)) => (a + b).to_string(),
                _ => return Err(invalid("add needs numbers `a` and `b`")),
            }
        }
        "slow" => {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            "slow done".to_string()
        }
        other if script.knob_tools().contains(&other) => format!("{other} done"),
        other => return Err((-32602, format!("Unknown tool: {other}"))),
    };
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": false}))
}
