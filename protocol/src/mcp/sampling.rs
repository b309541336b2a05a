//! `sampling/createMessage`: a server asks the host's model for a completion.
//! The request is read before the host sees it and the host's result checked
//! before it goes back, so neither side gets a shape it cannot use.

use serde_json::{Map, Value};

/// The most messages one request may carry.
pub const MAX_MESSAGES: usize = 1024;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (or the server on the user's behalf).
    User,
    /// The model.
    Assistant,
}

impl Role {
    fn parse(value: Option<&Value>) -> Option<Role> {
        match value.and_then(Value::as_str)? {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }

    /// The role as MCP writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of the conversation to complete.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its content: one block (an object) or, from 2025-11-25, a list of them.
    pub content: Value,
}

/// A `sampling/createMessage` request, read.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateMessage {
    /// The conversation, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the server wants back (`maxTokens`). MCP requires it;
    /// a server that leaves it out is still answered, and the host chooses.
    pub max_tokens: Option<u64>,
    /// The system prompt the server asks for, if any.
    pub system_prompt: Option<String>,
    /// The tools the model may call (2025-11-25), as the server sent them.
    pub tools: Option<Vec<Value>>,
    params: Value,
}

/// Why a sampling request or result was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplingError {
    /// The parameters or the result are not a JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// A member is missing or has the wrong type.
    #[error("`{0}` {1}")]
    Member(&'static str, &'static str),
    /// More messages than [`MAX_MESSAGES`].
    #[error("{0} messages (at most {MAX_MESSAGES})")]
    TooManyMessages(usize),
}

fn content(value: Option<&Value>) -> Option<Value> {
    value
        .filter(|v| matches!(v, Value::Object(_) | Value::Array(_)))
        .cloned()
}

impl CreateMessage {
    /// Reads a request's parameters.
    pub fn parse(params: &Value) -> Result<CreateMessage, SamplingError> {
        let map = params.as_object().ok_or(SamplingError::NotAnObject)?;
        let listed = map
            .get("messages")
            .and_then(Value::as_array)
            .ok_or(SamplingError::Member("messages", "must be a list"))?;
        if listed.len() > MAX_MESSAGES {
            return Err(SamplingError::TooManyMessages(listed.len()));
        }
        let messages = listed
            .iter()
            .map(|m| {
                Some(SamplingMessage {
                    role: Role::parse(m.get("role"))?,
                    content: content(m.get("content"))?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(SamplingError::Member(
                "messages",
                "must each have a role (user or assistant) and content",
            ))?;
        let max_tokens = match map.get("maxTokens") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or(SamplingError::Member(
                "maxTokens",
                "must be a non-negative integer",
            ))?),
        };
        let system_prompt = match map.get("systemPrompt") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(SamplingError::Member("systemPrompt", "must be a string")),
        };
        let tools = match map.get("tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(tools)) => Some(tools.clone()),
            Some(_) => return Err(SamplingError::Member("tools", "must be a list")),
        };
        Ok(CreateMessage {
            messages,
            max_tokens,
            system_prompt,
            tools,
            params: params.clone(),
        })
    }

    /// The parameters as the server sent them, members this type does not
    /// name included (for a host that relays the request, as `serve` does).
    pub fn params(&self) -> &Value {
        &self.params
    }
}

/// The host's completion: a `CreateMessageResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingResult {
    /// Who wrote it (the model: `Assistant`).
    pub role: Role,
    /// One content block, or a list of them (2025-11-25: text and tool uses).
    pub content: Value,
    /// The model that wrote it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, `toolUse`, …), if said.
    pub stop_reason: Option<String>,
    /// Members this type does not name (`_meta`, …), passed on as they are.
    pub extra: Map<String, Value>,
}

impl SamplingResult {
    /// A plain text completion by `model`, ended on its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> SamplingResult {
        SamplingResult {
            role: Role::Assistant,
            content: serde_json::json!({"type": "text", "text": text.into()}),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
            extra: Map::new(),
        }
    }

    /// Reads a result (a relayed client's, a sampling command's).
    pub fn parse(value: &Value) -> Result<SamplingResult, SamplingError> {
        let map = value.as_object().ok_or(SamplingError::NotAnObject)?;
        let role = Role::parse(map.get("role")).ok_or(SamplingError::Member(
            "role",
            "must be \"assistant\" or \"user\"",
        ))?;
        let model = map
            .get("model")
            .and_then(Value::as_str)
            .ok_or(SamplingError::Member("model", "must be a string"))?
            .to_string();
        let content = content(map.get("content"))
            .ok_or(SamplingError::Member("content", "must be a content block"))?;
        let stop_reason = match map.get("stopReason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(SamplingError::Member("stopReason", "must be a string")),
        };
        let mut extra = map.clone();
        for named in ["role", "model", "content", "stopReason"] {
            extra.remove(named);
        }
        Ok(SamplingResult {
            role,
            content,
            model,
            stop_reason,
            extra,
        })
    }

    /// The result as it goes to the server.
    pub fn to_value(&self) -> Value {
        let mut map = self.extra.clone();
        map.insert("role".into(), self.role.as_str().into());
        map.insert("content".into(), self.content.clone());
        map.insert("model".into(), self.model.clone().into());
        if let Some(reason) = &self.stop_reason {
            map.insert("stopReason".into(), reason.clone().into());
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_is_read_and_keeps_what_it_does_not_name() {
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 50, "systemPrompt": "be brief", "temperature": 0.2});
        let read = CreateMessage::parse(&params).unwrap();
        assert_eq!(read.messages[0].role, Role::User);
        assert_eq!(read.max_tokens, Some(50));
        assert_eq!(read.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(read.params()["temperature"], json!(0.2));
        assert!(CreateMessage::parse(&json!({"messages": []})).is_ok());
    }

    #[test]
    fn a_malformed_request_is_refused_with_the_member_named() {
        for (params, said) in [
            (json!([]), "not a JSON object"),
            (json!({}), "`messages` must be a list"),
            (
                json!({"messages": [{"role": "system", "content": {}}]}),
                "`messages`",
            ),
            (json!({"messages": [{"role": "user"}]}), "`messages`"),
            (json!({"messages": [], "maxTokens": -1}), "`maxTokens`"),
            (json!({"messages": [], "tools": {}}), "`tools`"),
        ] {
            let refused = CreateMessage::parse(&params).unwrap_err().to_string();
            assert!(refused.contains(said), "{params}: {refused}");
        }
        let many = vec![json!({"role": "user", "content": {}}); MAX_MESSAGES + 1];
        assert!(matches!(
            CreateMessage::parse(&json!({ "messages": many })),
            Err(SamplingError::TooManyMessages(_))
        ));
    }

    #[test]
    fn a_result_round_trips_and_a_malformed_one_is_refused() {
        let sent = json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
            "content": [{"type": "tool_use", "id": "1", "name": "t", "input": {}}], "_meta": {"k": 1}});
        let read = SamplingResult::parse(&sent).unwrap();
        assert_eq!(read.stop_reason.as_deref(), Some("toolUse"));
        assert_eq!(read.to_value(), sent);
        assert_eq!(
            SamplingResult::text("m", "hello").to_value(),
            json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
                "content": {"type": "text", "text": "hello"}})
        );
        for (bad, said) in [
            (json!("x"), "not a JSON object"),
            (
                json!({"role": "bot", "model": "m", "content": {}}),
                "`role`",
            ),
            (json!({"role": "user", "content": {}}), "`model`"),
            (
                json!({"role": "user", "model": "m", "content": "x"}),
                "`content`",
            ),
        ] {
            let refused = SamplingResult::parse(&bad).unwrap_err().to_string();
            assert!(refused.contains(said), "{bad}: {refused}");
        }
    }
}
