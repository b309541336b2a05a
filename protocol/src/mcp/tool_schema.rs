//! MCP tools as host tool definitions.
//!
//! Model APIs want a JSON Schema whose root is an object with `properties`.
//! Servers send all sorts: no schema, `true`, a schema without `type`, a
//! non-object root. [`ToolDefinition::from_tool`] normalises them so a host can
//! hand the definition to any model API without checking it again.

use serde_json::{Map, Value, json};

use crate::mcp::messages::Tool;
use crate::mcp::names::{NameError, QualifiedMcpToolName};

/// A tool as a host offers it to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The route: `mcp__server__tool`.
    pub name: QualifiedMcpToolName,
    /// The server's description, or empty.
    pub description: String,
    /// Normalised JSON Schema: object root, `properties` present.
    pub input_schema: Value,
    /// A name for people, when the server gives one.
    pub title: Option<String>,
    /// The schema of its results' `structuredContent`, as the server sent it.
    pub output_schema: Option<Value>,
    /// Its icons (from 2025-11-25), as checked.
    pub icons: Vec<crate::mcp::icons::Icon>,
    /// Behaviour hints (`readOnlyHint`, `destructiveHint`…), as the server sent
    /// them: hints from a server, not guarantees.
    pub annotations: Option<Value>,
}

/// How a schema was changed to fit the object-root shape (for reports, never fatal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaNote {
    /// No schema or `true`/`{}`: replaced by an empty object schema.
    Defaulted,
    /// The root was not an object schema; it was wrapped or replaced.
    Replaced(String),
}

impl ToolDefinition {
    /// Builds the definition of `tool` served by `server`.
    pub fn from_tool(
        server: &str,
        tool: &Tool,
    ) -> Result<(ToolDefinition, Option<SchemaNote>), NameError> {
        ToolDefinition::from_owned_tool(server, tool.clone())
    }

    /// [`ToolDefinition::from_tool`] taking the tool, so its schemas are moved
    /// rather than copied: a listing of many tools then never holds two copies.
    pub fn from_owned_tool(
        server: &str,
        tool: Tool,
    ) -> Result<(ToolDefinition, Option<SchemaNote>), NameError> {
        let name = QualifiedMcpToolName::new(server, &tool.name)?;
        let (input_schema, note) = normalise_owned_schema(tool.input_schema);
        Ok((
            ToolDefinition {
                name,
                description: tool.description.unwrap_or_default(),
                input_schema,
                title: tool.title,
                icons: tool.icons,
                annotations: tool.annotations,
                output_schema: tool.output_schema,
            },
            note,
        ))
    }

    /// The OpenAI function-calling shape:
    /// `{"type":"function","function":{"name","description","parameters"}}`.
    pub fn to_openai_function(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name.as_str(),
                "description": self.description,
                "parameters": self.input_schema,
            }
        })
    }

    /// The Anthropic tool shape: `{"name","description","input_schema"}`.
    pub fn to_anthropic_tool(&self) -> Value {
        json!({
            "name": self.name.as_str(),
            "description": self.description,
            "input_schema": self.input_schema,
        })
    }
}

/// Returns an object-root schema with `properties`, and a note when it had to change it.
pub fn normalise_schema(schema: &Value) -> (Value, Option<SchemaNote>) {
    normalise_owned_schema(schema.clone())
}

/// [`normalise_schema`] taking the schema, which a good one is returned as
/// (with `type` and `properties` made sure of) instead of being copied.
pub fn normalise_owned_schema(schema: Value) -> (Value, Option<SchemaNote>) {
    match schema {
        Value::Null | Value::Bool(true) => (empty_object(), Some(SchemaNote::Defaulted)),
        Value::Bool(false) => (
            empty_object(),
            Some(SchemaNote::Replaced(
                "schema `false` accepts nothing".into(),
            )),
        ),
        Value::Object(ref map) if map.is_empty() => (empty_object(), Some(SchemaNote::Defaulted)),
        Value::Object(mut out) => {
            let ty = out.get("type");
            let object_typed = match ty {
                None => true,
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                Some(_) => false,
            };
            if !object_typed {
                return (
                    empty_object(),
                    Some(SchemaNote::Replaced(format!(
                        "root type {} is not object",
                        ty.map(Value::to_string).unwrap_or_default()
                    ))),
                );
            }
            out.insert("type".into(), Value::String("object".into()));
            match out.get("properties") {
                Some(Value::Object(_)) => {}
                _ => {
                    out.insert("properties".into(), Value::Object(Map::new()));
                }
            }
            (Value::Object(out), None)
        }
        ref other => (
            empty_object(),
            Some(SchemaNote::Replaced(format!(
                "schema is a {}, not an object",
                json_kind(other)
            ))),
        ),
    }
}

fn empty_object() -> Value {
    json!({"type": "object", "properties": {}})
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(schema: Value) -> Tool {
        Tool {
            name: "echo".into(),
            description: Some("Echoes".into()),
            input_schema: schema,
            annotations: None,
            title: None,
            output_schema: None,
            execution: None,
            icons: Vec::new(),
        }
    }

    #[test]
    fn keeps_a_good_schema() {
        let s = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let (d, note) = ToolDefinition::from_tool("demo", &tool(s.clone())).unwrap();
        assert_eq!(d.input_schema, s);
        assert!(note.is_none());
        assert_eq!(d.name.as_str(), "mcp__demo__echo");
    }

    #[test]
    fn handles_absent_boolean_and_odd_roots() {
        for s in [Value::Null, json!(true), json!({})] {
            let (n, note) = normalise_schema(&s);
            assert_eq!(n, json!({"type": "object", "properties": {}}));
            assert_eq!(note, Some(SchemaNote::Defaulted));
        }
        let (n, note) = normalise_schema(&json!(false));
        assert_eq!(n["type"], "object");
        assert!(matches!(note, Some(SchemaNote::Replaced(_))));
        let (n, note) = normalise_schema(&json!({"type": "string"}));
        assert_eq!(n["properties"], json!({}));
        assert!(matches!(note, Some(SchemaNote::Replaced(_))));
        let (n, note) = normalise_schema(&json!({"required": []}));
        assert_eq!(
            n,
            json!({"type": "object", "properties": {}, "required": []})
        );
        assert!(note.is_none());
        let (n, _) = normalise_schema(&json!({"type": "object", "properties": 3}));
        assert_eq!(n["properties"], json!({}));
        let (_, note) = normalise_schema(&json!(42));
        assert!(matches!(note, Some(SchemaNote::Replaced(_))));
    }

    #[test]
    fn renders_model_api_shapes() {
        let (d, _) = ToolDefinition::from_tool("demo", &tool(Value::Null)).unwrap();
        let o = d.to_openai_function();
        assert_eq!(o["type"], "function");
        assert_eq!(o["function"]["name"], "mcp__demo__echo");
        assert_eq!(o["function"]["parameters"]["type"], "object");
        let a = d.to_anthropic_tool();
        assert_eq!(a["name"], "mcp__demo__echo");
        assert_eq!(a["description"], "Echoes");
        assert_eq!(a["input_schema"]["properties"], json!({}));
    }

    #[test]
    fn invalid_tool_names_are_refused() {
        let mut t = tool(Value::Null);
        t.name = "has space".into();
        assert!(ToolDefinition::from_tool("demo", &t).is_err());
    }
}
