//! Prompts as servers list and fill them in. Every member a server sends is
//! kept (`extra`), so a host or a gateway passes entries on whole.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp::messages::{ResultError, methods};

/// A prompt as `prompts/list` names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its name on its server (a route component once qualified).
    pub name: String,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// Everything else the server sent (title, icons…).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// One content block (text, image, audio, embedded resource), kept as sent.
    pub content: Value,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPromptResult {
    /// A description of the filled-in prompt.
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
    /// The result as the server sent it.
    pub raw: Value,
}

impl GetPromptResult {
    /// Reads a `prompts/get` result.
    pub fn parse(value: Value) -> Result<GetPromptResult, ResultError> {
        let err = |detail: String| ResultError {
            what: methods::PROMPTS_GET,
            detail,
        };
        let messages = match value.get("messages") {
            Some(m @ Value::Array(_)) => serde_json::from_value::<Vec<PromptMessage>>(m.clone())
                .map_err(|e| err(format!("`messages`: {e}")))?,
            _ => return Err(err("`messages` missing or not an array".into())),
        };
        let description = match value.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(err("`description` is not a string".into())),
        };
        Ok(GetPromptResult {
            description,
            messages,
            raw: value,
        })
    }
}

/// Parameters of `prompts/get`.
pub fn get_prompt_params(name: &str, arguments: &Map<String, Value>) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.to_string()));
    if !arguments.is_empty() {
        params.insert("arguments".into(), Value::Object(arguments.clone()));
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::pages::Page;
    use serde_json::json;

    #[test]
    fn prompts_list_with_arguments() {
        let page = Page::<Prompt>::parse(
            json!({"prompts": [
                {"name": "simple"},
                {"name": "args", "title": "With args", "arguments": [
                    {"name": "city", "required": true}, {"name": "state"}
                ]},
                {"name": 3}
            ]}),
            methods::PROMPTS_LIST,
            "prompts",
        )
        .unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.rejected.len(), 1);
        let args = &page.items[1].arguments;
        assert!(args[0].required && !args[1].required);
        assert_eq!(page.items[1].extra["title"], "With args");
    }

    #[test]
    fn get_results_need_messages() {
        let r = GetPromptResult::parse(json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}}
        ]}))
        .unwrap();
        assert_eq!(r.messages[0].content["text"], "hi");
        assert!(GetPromptResult::parse(json!({"messages": [{"role": "user"}]})).is_err());
        assert!(GetPromptResult::parse(json!({})).is_err());
        assert!(GetPromptResult::parse(json!({"messages": [], "description": 1})).is_err());
    }
}
