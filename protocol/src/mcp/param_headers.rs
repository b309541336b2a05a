//! The tool parameters a server asks to be mirrored into HTTP headers at
//! MCP 2026-07-28 (`x-mcp-header` in a property's schema), checked as the
//! Streamable HTTP page requires: a tool with an invalid annotation is not
//! offered at all, so one malformed definition costs only itself. A valid
//! annotation names a header token, unique without regard to case, on a
//! `string`, `integer` or `boolean` property reached from the schema's root
//! through `properties` alone.

use serde_json::{Map, Value};

use super::route_headers::encode_value;

/// The annotation's key.
pub const X_MCP_HEADER: &str = "x-mcp-header";
/// The longest header name part taken (a server's; longer is refused).
const MAX_NAME_BYTES: usize = 256;
/// The most of a server's text an error repeats.
const SHOWN: usize = 80;
/// The largest integer a header may carry (JavaScript's safe range).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;
/// How deep a schema is searched for annotations: deeper than any real
/// schema, and a bound on the walk whatever built the value.
const MAX_DEPTH: usize = 64;

/// Why a tool's `x-mcp-header` annotations make it unusable over HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamHeaderError {
    /// The annotation is not a non-empty string.
    #[error("x-mcp-header at {at} is empty or not a string")]
    Empty {
        /// Where it is.
        at: String,
    },
    /// The name is not an HTTP field-name token.
    #[error("x-mcp-header at {at} is not an HTTP header token (RFC 9110 tchar)")]
    NotToken {
        /// Where it is.
        at: String,
    },
    /// Two annotations name the same header (case aside).
    #[error("x-mcp-header {name:?} appears twice (header names ignore case)")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The property is not a string, integer or boolean.
    #[error(
        "x-mcp-header at {at} is on a property of type {found}, not string, integer or boolean"
    )]
    Type {
        /// Where it is.
        at: String,
        /// The type the property declares.
        found: String,
    },
    /// The annotation is not reached from the root through `properties` alone.
    #[error(
        "x-mcp-header at {at} is not reached from the schema's root through `properties` alone"
    )]
    Unreachable {
        /// Where it is.
        at: String,
    },
    /// The schema nests deeper than is searched.
    #[error("inputSchema nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Why an argument could not be mirrored as its header says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("argument `{path}` (mirrored as header Mcp-Param-{header}) must be {expected}")]
pub struct ParamValueError {
    /// The argument's property path, dotted.
    pub path: String,
    /// The header's name part.
    pub header: String,
    /// What it must be.
    pub expected: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Primitive {
    String,
    Integer,
    Boolean,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mirrored {
    header: String,
    path: Vec<String>,
    kind: Primitive,
}

/// A tool's mirrored parameters, as its schema declares them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeaders(Vec<Mirrored>);

impl ParamHeaders {
    /// The parameters `input_schema` mirrors (`None` when it mirrors none),
    /// or why the tool must not be offered.
    pub fn declared(input_schema: &Value) -> Result<Option<ParamHeaders>, ParamHeaderError> {
        let mut found = Vec::new();
        visit(input_schema, Some(&mut Vec::new()), 0, &mut found)?;
        if found.is_empty() {
            return Ok(None);
        }
        let mut seen = std::collections::HashSet::new();
        for m in &found {
            if !seen.insert(m.header.to_ascii_lowercase()) {
                return Err(ParamHeaderError::Duplicate {
                    name: shown(&m.header),
                });
            }
        }
        Ok(Some(ParamHeaders(found)))
    }

    /// The headers for a call with `arguments`: name part and encoded value
    /// of each mirrored parameter present and not null.
    pub fn extract(
        &self,
        arguments: Option<&Value>,
    ) -> Result<Vec<(String, String)>, ParamValueError> {
        let mut headers = Vec::with_capacity(self.0.len());
        for m in &self.0 {
            let value = m
                .path
                .iter()
                .try_fold(arguments, |at, key| at.map(|v| v.get(key)))
                .flatten();
            let Some(value) = value.filter(|v| !v.is_null()) else {
                continue;
            };
            let text = match (m.kind, value) {
                (Primitive::String, Value::String(s)) => Some(encode_value(s)),
                (Primitive::Boolean, Value::Bool(b)) => Some(b.to_string()),
                (Primitive::Integer, Value::Number(n)) => integer(n).map(|i| i.to_string()),
                _ => None,
            };
            let Some(text) = text else {
                return Err(ParamValueError {
                    path: m.path.join("."),
                    header: m.header.clone(),
                    expected: match m.kind {
                        Primitive::String => "a string",
                        Primitive::Integer => "an integer within ±(2^53 − 1)",
                        Primitive::Boolean => "a boolean",
                    },
                });
            };
            headers.push((m.header.clone(), text));
        }
        Ok(headers)
    }
}

/// An integral number within JavaScript's safe range (`42.0` counts).
fn integer(n: &serde_json::Number) -> Option<i64> {
    let i = match n.as_i64() {
        Some(i) => i,
        None => {
            let f = n.as_f64()?;
            if f.fract() != 0.0 || f.abs() > MAX_SAFE_INTEGER as f64 {
                return None;
            }
            f as i64
        }
    };
    (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER)
        .contains(&i)
        .then_some(i)
}

/// Searches `node` for annotations; `chain` is the `properties` path that
/// reached it, `None` once something else did.
fn visit(
    node: &Value,
    chain: Option<&mut Vec<String>>,
    depth: usize,
    found: &mut Vec<Mirrored>,
) -> Result<(), ParamHeaderError> {
    if depth > MAX_DEPTH {
        return Err(ParamHeaderError::TooDeep);
    }
    let object = match node {
        Value::Object(o) => o,
        Value::Array(items) => {
            for item in items {
                visit(item, None, depth + 1, found)?;
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let mut chain = chain;
    if let Some(name) = object.get(X_MCP_HEADER) {
        let at = chain
            .as_deref()
            .map_or_else(|| "a nested schema".to_string(), |c| where_(c));
        match chain.as_deref().map(Vec::as_slice) {
            // The root is no parameter, and what is reached otherwise is no
            // fixed place in the arguments.
            None | Some([]) => return Err(ParamHeaderError::Unreachable { at }),
            Some(path) => found.push(annotation(name, object, path, at)?),
        }
    }
    for (key, value) in object {
        match key.as_str() {
            X_MCP_HEADER => {}
            // Data, not schemas: a key there is no annotation.
            "const" | "enum" | "default" | "examples" | "example" => {}
            "properties" => {
                let Value::Object(properties) = value else {
                    continue;
                };
                for (name, schema) in properties {
                    match chain.as_deref_mut() {
                        Some(path) => {
                            path.push(name.clone());
                            let walked = visit(schema, Some(path), depth + 1, found);
                            path.pop();
                            walked?;
                        }
                        None => visit(schema, None, depth + 1, found)?,
                    }
                }
            }
            // Maps of schemas by name: each value is a schema.
            "$defs" | "definitions" | "patternProperties" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    for schema in map.values() {
                        visit(schema, None, depth + 1, found)?;
                    }
                }
            }
            _ => visit(value, None, depth + 1, found)?,
        }
    }
    Ok(())
}

fn annotation(
    name: &Value,
    schema: &Map<String, Value>,
    path: &[String],
    at: String,
) -> Result<Mirrored, ParamHeaderError> {
    let header = match name.as_str() {
        Some(s) if !s.is_empty() => s,
        _ => return Err(ParamHeaderError::Empty { at }),
    };
    if header.len() > MAX_NAME_BYTES || !header.bytes().all(is_tchar) {
        return Err(ParamHeaderError::NotToken { at });
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => primitive(t),
        // A nullable primitive: null is left out, the rest is mirrored.
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named.as_slice() {
                [one] if types.len() <= 2 && types.iter().all(Value::is_string) => primitive(one),
                _ => None,
            }
        }
        _ => None,
    };
    let Some(kind) = kind else {
        let found = schema
            .get("type")
            .map_or_else(|| "(none)".to_string(), |t| shown(&t.to_string()));
        return Err(ParamHeaderError::Type { at, found });
    };
    Ok(Mirrored {
        header: header.to_string(),
        path: path.to_vec(),
        kind,
    })
}

fn primitive(t: &str) -> Option<Primitive> {
    match t {
        "string" => Some(Primitive::String),
        "integer" => Some(Primitive::Integer),
        "boolean" => Some(Primitive::Boolean),
        _ => None,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn where_(path: &[String]) -> String {
    shown(&format!("properties.{}", path.join(".properties.")))
}

/// A server's text, shortened for an error.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn the_invalid_annotations_of_the_conformance_suite_are_refused() {
        let invalid = [
            json!({"value": {"type": "string", "x-mcp-header": ""}}),
            json!({"data": {"type": "object", "x-mcp-header": "Data"}}),
            json!({"items": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}}),
            json!({"nil": {"type": "null", "x-mcp-header": "Nil"}}),
            json!({"score": {"type": "number", "x-mcp-header": "Score"}}),
            json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}}),
            json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}),
            json!({"value": {"type": "string", "x-mcp-header": "My Region"}}),
            json!({"value": {"type": "string", "x-mcp-header": "Region:Primary"}}),
            json!({"value": {"type": "string", "x-mcp-header": "Région"}}),
            json!({"value": {"type": "string", "x-mcp-header": "Region\t1"}}),
            json!({"value": {"type": "string", "x-mcp-header": 7}}),
            json!({"value": {"x-mcp-header": "Untyped"}}),
        ];
        for properties in invalid {
            assert!(
                ParamHeaders::declared(&schema(properties.clone())).is_err(),
                "{properties}"
            );
        }
        let valid = schema(json!({"region": {"type": "string", "x-mcp-header": "Region"}}));
        assert!(ParamHeaders::declared(&valid).unwrap().is_some());
        assert_eq!(
            ParamHeaders::declared(&schema(json!({"q": {"type": "string"}}))),
            Ok(None)
        );
    }

    #[test]
    fn only_a_properties_chain_reaches_a_parameter() {
        let nested = schema(json!({"outer": {"type": "object", "properties": {
            "inner": {"type": "integer", "x-mcp-header": "Inner"}}}}));
        let headers = ParamHeaders::declared(&nested).unwrap().unwrap();
        assert_eq!(
            headers.extract(Some(&json!({"outer": {"inner": 42}}))),
            Ok(vec![("Inner".into(), "42".into())])
        );
        for unreachable in [
            json!({"type": "object", "items": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"type": "object", "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"type": "object", "$defs": {"d": {"type": "string", "x-mcp-header": "D"}}}),
            json!({"type": "object", "if": {"type": "string", "x-mcp-header": "I"}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"type": "string", "x-mcp-header": "Root"}),
        ] {
            assert!(
                matches!(
                    ParamHeaders::declared(&unreachable),
                    Err(ParamHeaderError::Unreachable { .. })
                ),
                "{unreachable}"
            );
        }
        // Data is not searched: an example object with that key annotates nothing.
        let example = json!({"type": "object", "examples": [{"x-mcp-header": "X"}],
            "properties": {"x-mcp-header": {"type": "string"}}});
        assert_eq!(ParamHeaders::declared(&example), Ok(None));
    }

    #[test]
    fn values_are_mirrored_by_type_and_null_or_absent_is_left_out() {
        let s = schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
            "text": {"type": "string", "x-mcp-header": "Text"},
            "query": {"type": "string"},
        }));
        let headers = ParamHeaders::declared(&s).unwrap().unwrap();
        let args = json!({"region": "us-west1", "priority": -7, "verbose": null,
            "text": " padded ", "query": "SELECT"});
        let mut got = headers.extract(Some(&args)).unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("Priority".into(), "-7".into()),
                ("Region".into(), "us-west1".into()),
                ("Text".into(), "=?base64?IHBhZGRlZCA=?=".into()),
            ]
        );
        let flags = headers.extract(Some(&json!({"verbose": false, "priority": 42.0})));
        let mut flags = flags.unwrap();
        flags.sort();
        assert_eq!(
            flags,
            vec![
                ("Priority".into(), "42".into()),
                ("Verbose".into(), "false".into())
            ]
        );
        assert_eq!(headers.extract(None), Ok(vec![]));
        assert_eq!(
            headers.extract(Some(&json!({"region": ""}))),
            Ok(vec![("Region".into(), String::new())])
        );
        for wrong in [
            json!({"priority": 1.5}),
            json!({"priority": 9007199254740992_i64}),
            json!({"region": 3}),
            json!({"verbose": "yes"}),
        ] {
            assert!(headers.extract(Some(&wrong)).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_schema_too_deep_is_refused_not_walked_without_end() {
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"not": deep});
        }
        assert_eq!(
            ParamHeaders::declared(&deep),
            Err(ParamHeaderError::TooDeep)
        );
    }
}
