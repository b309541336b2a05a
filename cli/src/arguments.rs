//! A call's arguments from the command line, in whichever form they come: a
//! JSON object (`'{"a":1}'`), `-` (a JSON object on stdin), `@file.json`, or
//! `key=value` pairs (positional or `--arg`, repeatable; `key:=<json>` for a
//! raw JSON value). JSON is read before any server starts; pairs are typed
//! by the tool's `inputSchema` once it is known (`count=3` is a number where
//! the schema says integer), and the whole is checked against the schema
//! before the call goes out.

use std::io::Read;

use serde_json::{Map, Number, Value};

/// The most bytes read from stdin or a file.
const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// One `key=value` (or `key:=json`).
#[derive(Debug, Clone, PartialEq)]
struct Pair {
    key: String,
    value: PairValue,
}

#[derive(Debug, Clone, PartialEq)]
enum PairValue {
    /// Typed by the schema.
    Text(String),
    /// Given as JSON.
    Json(Value),
}

/// Arguments as given, read and checked for form.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Given {
    object: Map<String, Value>,
    pairs: Vec<Pair>,
}

/// Why arguments could not be read (exit code 2: a usage error).
pub(crate) type Problem = String;

impl Given {
    /// Reads `positional` (one JSON form, or pairs) and `flagged` (`--arg` pairs).
    pub(crate) fn read(positional: &[String], flagged: &[String]) -> Result<Given, Problem> {
        let mut given = Given::default();
        let mut words: Vec<&String> = Vec::new();
        match positional {
            [one] if one.trim_start().starts_with('{') => {
                given.object = object(one, "the arguments")?
            }
            [one] if one == "-" => {
                given.object = object(&bounded(std::io::stdin(), "stdin")?, "stdin")?
            }
            [one] if one.starts_with('@') => {
                let path = &one[1..];
                let file = std::fs::File::open(path)
                    .map_err(|e| format!("cannot read arguments from `{path}`: {e}"))?;
                given.object = object(&bounded(file, path)?, path)?;
            }
            [one] if one.trim_start().starts_with('[') => {
                return Err("the arguments must be a JSON object, not an array".into());
            }
            many => words.extend(many),
        }
        words.extend(flagged);
        for word in words {
            let pair = pair(word)?;
            if given.object.contains_key(&pair.key) || given.pairs.iter().any(|p| p.key == pair.key)
            {
                return Err(format!("argument `{}` is given twice", pair.key));
            }
            given.pairs.push(pair);
        }
        Ok(given)
    }

    /// The arguments object for a tool with `schema` (its `inputSchema`),
    /// checked against it.
    pub(crate) fn build(self, schema: &Value) -> Result<Value, Problem> {
        let mut object = self.object;
        for pair in self.pairs {
            let value = match pair.value {
                PairValue::Json(v) => v,
                PairValue::Text(text) => typed(&pair.key, text, schema)?,
            };
            object.insert(pair.key, value);
        }
        let arguments = Value::Object(object);
        mcpvisor_protocol::mcp::arguments_check::check_arguments(schema, &arguments).map_err(
            |problems| {
                format!(
                    "the arguments do not fit the tool's input schema: {}",
                    problems.join("; ")
                )
            },
        )?;
        Ok(arguments)
    }
}

fn object(text: &str, from: &str) -> Result<Map<String, Value>, Problem> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(format!("{from}: the arguments must be a JSON object")),
        Err(e) => Err(format!("{from}: not valid JSON: {e}")),
    }
}

fn bounded(reader: impl Read, from: &str) -> Result<String, Problem> {
    let mut text = String::new();
    reader
        .take(MAX_INPUT + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read arguments from {from}: {e}"))?;
    if text.len() as u64 > MAX_INPUT {
        return Err(format!(
            "arguments from {from} are larger than {MAX_INPUT} bytes"
        ));
    }
    Ok(text)
}

fn pair(word: &str) -> Result<Pair, Problem> {
    let Some(at) = word.find('=') else {
        return Err(format!(
            "`{}` is not an argument: give `key=value` pairs, or one JSON object",
            crate::output::clean_line(word)
        ));
    };
    let (key, value) = (&word[..at], &word[at + 1..]);
    let (key, value) = match key.strip_suffix(':') {
        Some(key) => {
            let json = serde_json::from_str(value)
                .map_err(|e| format!("`{key}:=`: not valid JSON: {e}"))?;
            (key, PairValue::Json(json))
        }
        None => (key, PairValue::Text(value.to_string())),
    };
    if key.is_empty() {
        return Err(format!(
            "`{}` has no key before `=`",
            crate::output::clean_line(word)
        ));
    }
    Ok(Pair {
        key: key.to_string(),
        value,
    })
}

/// `text` as the schema types property `key`; text when the schema says
/// nothing more.
fn typed(key: &str, text: String, schema: &Value) -> Result<Value, Problem> {
    let property = &schema["properties"][key];
    let kinds: Vec<&str> = match &property["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let wrong = |kind: &str| {
        format!(
            "`{key}` must be {kind}, not `{}`",
            crate::output::clean_line(&text)
        )
    };
    if kinds.is_empty() || kinds.contains(&"string") {
        return Ok(Value::String(text));
    }
    for kind in &kinds {
        let parsed = match *kind {
            "integer" => text.parse::<i64>().ok().map(Value::from),
            "number" => text
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(|n| match text.parse::<i64>() {
                    Ok(i) => Value::from(i),
                    Err(_) => Value::Number(n),
                }),
            "boolean" => match text.as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "null" => (text == "null").then_some(Value::Null),
            "array" | "object" => serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|v| v.is_array() == (*kind == "array") && (v.is_array() || v.is_object())),
            _ => None,
        };
        if let Some(value) = parsed {
            return Ok(value);
        }
    }
    Err(match kinds.as_slice() {
        ["integer"] => wrong("an integer"),
        ["number"] => wrong("a number"),
        ["boolean"] => wrong("true or false"),
        ["array"] => wrong("a JSON array"),
        ["object"] => wrong("a JSON object"),
        other => wrong(&format!("one of {}", other.join(", "))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(all: &[&str]) -> Vec<String> {
        all.iter().map(|s| s.to_string()).collect()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "count": {"type": "integer"}, "ratio": {"type": "number"}, "on": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}}, "name": {"type": "string"},
            "maybe": {"type": ["integer", "null"]}},
            "required": ["name"]})
    }

    #[test]
    fn pairs_are_typed_by_the_schema() {
        let given = Given::read(
            &words(&[
                "name=ada",
                "count=3",
                "ratio=0.5",
                "on=true",
                r#"tags=["a","b"]"#,
            ]),
            &words(&["maybe=null", "extra:={\"k\":1}"]),
        )
        .unwrap();
        let built = given.build(&schema()).unwrap();
        assert_eq!(
            built,
            json!({"name": "ada", "count": 3, "ratio": 0.5, "on": true, "tags": ["a", "b"],
                "maybe": null, "extra": {"k": 1}})
        );
        // A number-typed `3` stays an integer on the wire.
        let built = Given::read(&words(&["name=x", "ratio=3"]), &[])
            .unwrap()
            .build(&schema());
        assert_eq!(built.unwrap()["ratio"], json!(3));
    }

    #[test]
    fn wrong_types_missing_fields_and_bad_forms_are_usage_errors() {
        let e = Given::read(&words(&["name=a", "count=three"]), &[])
            .unwrap()
            .build(&schema());
        assert_eq!(e.unwrap_err(), "`count` must be an integer, not `three`");
        let e = Given::read(&words(&["count=3"]), &[])
            .unwrap()
            .build(&schema());
        assert!(e.unwrap_err().contains("\"name\" is a required property"));
        assert!(
            Given::read(&words(&["nokey"]), &[])
                .unwrap_err()
                .contains("key=value")
        );
        assert!(
            Given::read(&words(&["=v"]), &[])
                .unwrap_err()
                .contains("no key")
        );
        assert!(
            Given::read(&words(&["a=1", "a=2"]), &[])
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            Given::read(&words(&["{not json"]), &[])
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(
            Given::read(&words(&["[1]"]), &[])
                .unwrap_err()
                .contains("must be a JSON object, not an array")
        );
        assert!(
            Given::read(&words(&["@/no/such/file.json"]), &[])
                .unwrap_err()
                .contains("/no/such/file.json")
        );
    }

    #[test]
    fn a_json_object_and_flags_merge() {
        let given = Given::read(&words(&[r#"{"name": "ada"}"#]), &words(&["count=2"])).unwrap();
        assert_eq!(
            given.build(&schema()).unwrap(),
            json!({"name": "ada", "count": 2})
        );
        assert_eq!(
            Given::read(&[], &[]).unwrap().build(&json!({})).unwrap(),
            json!({})
        );
    }
}
