//! What a session at an older revision is given of a newer server's answers.
//!
//! A 2025-03-26 client knows text, image, audio and embedded resources as
//! content; a `resource_link` block (2025-06-18) is shown to it as text naming
//! the link, so a strict older client does not refuse the whole result.

use mcpvisor_protocol::mcp::revision::Revision;
use serde_json::{Value, json};

/// `result` (a tool result as MCP JSON) as a session at `revision` may receive it.
pub(crate) fn tool_result_for(revision: Revision, mut result: Value) -> Value {
    if revision.rules().output_schema {
        return result;
    }
    if let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) {
        for block in blocks.iter_mut() {
            if block.get("type").and_then(Value::as_str) == Some("resource_link") {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
                *block =
                    json!({"type": "text", "text": format!("[resource link: {name} <{uri}>]")});
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_links_become_text_for_2025_03_26_only() {
        let result = json!({"content": [
            {"type": "text", "text": "see"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"}
        ]});
        let old = tool_result_for(Revision::V2025_03_26, result.clone());
        assert_eq!(old["content"][0]["text"], "see");
        assert_eq!(
            old["content"][1],
            json!({"type": "text", "text": "[resource link: a.txt <file:///a.txt>]"})
        );
        let new = tool_result_for(Revision::V2025_06_18, result.clone());
        assert_eq!(new, result);
    }
}
