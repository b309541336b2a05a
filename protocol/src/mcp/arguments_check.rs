//! A call's arguments against the tool's `inputSchema`, for clients that
//! check before they send (the CLI does): the same compile rules as output
//! schemas (no `$ref` fetched from anywhere), a few problems named by where
//! they are.

use serde_json::Value;

/// Most problems reported.
const MAX_PROBLEMS: usize = 5;

/// Checks `arguments` against `schema`. `Err` lists what does not fit, each
/// at its JSON pointer; a schema that does not compile is not held against
/// the arguments (the server is the judge then).
pub fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), Vec<String>> {
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Ok(());
    };
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(MAX_PROBLEMS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let text: String = e.to_string().chars().take(200).collect();
            if at.is_empty() {
                text
            } else {
                format!("{at}: {text}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_mistyped_arguments_are_named() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
            "required": ["s"]});
        assert!(check_arguments(&schema, &json!({"s": "x", "n": 3})).is_ok());
        let problems = check_arguments(&schema, &json!({"n": "three"})).unwrap_err();
        let all = problems.join("; ");
        assert!(all.contains("\"s\" is a required property"), "{all}");
        assert!(all.contains("/n:"), "{all}");
        // An unusable schema is the server's problem.
        assert!(check_arguments(&json!({"type": 12}), &json!({})).is_ok());
    }
}
