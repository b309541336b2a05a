//! A tool's `outputSchema` (from protocol 2025-06-18): its results'
//! `structuredContent` must match it.
//!
//! Schemas come from servers, so they are compiled without any way to fetch
//! a `$ref` (no network, no files), once per listing.

use std::fmt;

use serde_json::Value;

use crate::mcp::messages::CallToolResult;

/// A compiled `outputSchema`.
pub struct OutputCheck {
    validator: jsonschema::Validator,
}

impl fmt::Debug for OutputCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OutputCheck")
    }
}

/// Most problems one mismatch reports.
const MAX_PROBLEMS: usize = 3;

impl OutputCheck {
    /// Compiles `schema`; an error says why it is not a usable JSON Schema.
    pub fn compile(schema: &Value) -> Result<OutputCheck, String> {
        if !schema.is_object() {
            return Err("`outputSchema` is not an object".into());
        }
        jsonschema::validator_for(schema)
            .map(|validator| OutputCheck { validator })
            .map_err(|e| clip(&e.to_string()))
    }

    /// Checks a result: a successful one must carry `structuredContent` that
    /// matches; a tool error (`isError`) is the tool's to describe, and passes.
    pub fn check(&self, result: &CallToolResult) -> Result<(), String> {
        if result.is_error {
            return Ok(());
        }
        let Some(structured) = &result.structured_content else {
            return Err(
                "the result has no `structuredContent`, which the tool's `outputSchema` requires"
                    .into(),
            );
        };
        let problems: Vec<String> = self
            .validator
            .iter_errors(structured)
            .take(MAX_PROBLEMS)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                clip(&format!("at {at}: {e}"))
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "`structuredContent` does not match the tool's `outputSchema`: {}",
                problems.join("; ")
            ))
        }
    }
}

/// At most 200 characters of a message (schema errors quote values).
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(200).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(structured: Option<Value>, is_error: bool) -> CallToolResult {
        CallToolResult {
            content: Vec::new(),
            is_error,
            structured_content: structured,
        }
    }

    #[test]
    fn structured_content_must_match() {
        let check = OutputCheck::compile(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"]
        }))
        .unwrap();
        assert!(check.check(&result(Some(json!({"n": 3})), false)).is_ok());
        let wrong = check
            .check(&result(Some(json!({"n": "many"})), false))
            .unwrap_err();
        assert!(wrong.contains("/n"), "{wrong}");
        assert!(check.check(&result(None, false)).is_err());
        assert!(check.check(&result(None, true)).is_ok(), "tool errors pass");
    }

    #[test]
    fn schemas_that_are_not_schemas_or_reach_out_are_refused() {
        assert!(OutputCheck::compile(&json!(3)).is_err());
        assert!(OutputCheck::compile(&json!({"type": 12})).is_err());
        // No fetching: a remote reference cannot be resolved, so it is refused.
        assert!(OutputCheck::compile(&json!({"$ref": "http://127.0.0.1:9/schema.json"})).is_err());
    }
}
