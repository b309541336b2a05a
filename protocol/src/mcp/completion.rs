//! `completion/complete`: suggestions for one argument of a prompt or a
//! resource template, as a person types it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::mcp::messages::{ResultError, methods};

/// What the argument belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// A prompt, by its name on its server.
    Prompt(String),
    /// A resource template, by its URI template.
    ResourceTemplate(String),
}

impl CompletionRef {
    fn to_value(&self) -> Value {
        match self {
            CompletionRef::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
            CompletionRef::ResourceTemplate(uri) => json!({"type": "ref/resource", "uri": uri}),
        }
    }
}

/// Parameters of `completion/complete` for argument `name` whose value so far is `value`.
pub fn complete_params(reference: &CompletionRef, name: &str, value: &str) -> Value {
    json!({
        "ref": reference.to_value(),
        "argument": {"name": name, "value": value},
    })
}

/// The suggestions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 values, best first.
    pub values: Vec<String>,
    /// How many there are in all, if the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these, if the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Most values a completion may carry (the specification's limit).
pub const MAX_VALUES: usize = 100;

impl Completion {
    /// Reads a `completion/complete` result; more than [`MAX_VALUES`] values is malformed.
    pub fn parse(value: Value) -> Result<Completion, ResultError> {
        let err = |detail: String| ResultError {
            what: methods::COMPLETE,
            detail,
        };
        let Some(completion) = value.get("completion") else {
            return Err(err("`completion` missing".into()));
        };
        let completion: Completion = serde_json::from_value(completion.clone())
            .map_err(|e| err(format!("`completion`: {e}")))?;
        if completion.values.len() > MAX_VALUES {
            return Err(err(format!(
                "{} values, more than the {MAX_VALUES} allowed",
                completion.values.len()
            )));
        }
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_name_the_reference_and_argument() {
        let p = complete_params(&CompletionRef::Prompt("p".into()), "city", "Ber");
        assert_eq!(p["ref"], json!({"type": "ref/prompt", "name": "p"}));
        assert_eq!(p["argument"], json!({"name": "city", "value": "Ber"}));
        let t = complete_params(
            &CompletionRef::ResourceTemplate("x://{id}".into()),
            "id",
            "",
        );
        assert_eq!(t["ref"]["type"], "ref/resource");
    }

    #[test]
    fn results_are_bounded() {
        let ok =
            Completion::parse(json!({"completion": {"values": ["a"], "hasMore": true}})).unwrap();
        assert_eq!(ok.has_more, Some(true));
        let nulls = json!({"completion": {"values": [], "total": null, "hasMore": null}});
        assert_eq!(Completion::parse(nulls).unwrap().has_more, None);
        let many: Vec<String> = (0..101).map(|i| i.to_string()).collect();
        assert!(Completion::parse(json!({"completion": {"values": many}})).is_err());
        assert!(Completion::parse(json!({"completion": {"values": [1]}})).is_err());
        assert!(Completion::parse(json!({})).is_err());
    }
}
