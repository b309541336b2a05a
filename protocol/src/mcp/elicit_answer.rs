//! The host's answer to `elicitation/create`: the person's action, and for an
//! accepted form what they filled in.

use serde_json::{Map, Value};

/// What the person did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    /// Sent the form, or agreed to open the page.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl ElicitAction {
    /// The action as MCP writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        }
    }
}

/// An `ElicitResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    /// What the person did.
    pub action: ElicitAction,
    /// For an accepted form, the fields given; mcpvisor fills the form's
    /// defaults into those left out and checks the whole against the form.
    /// Not sent with any other action, nor for a URL.
    pub content: Map<String, Value>,
    /// Members this type does not name (`_meta`, …), passed on with a form's answer.
    pub extra: Map<String, Value>,
}

/// Why an answer is not an `ElicitResult`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitAnswerError {
    /// Not a JSON object.
    #[error("the elicitation answer is not an object")]
    NotAnObject,
    /// No action mcpvisor knows.
    #[error("the elicitation answer has no action (accept, decline or cancel)")]
    NoAction,
    /// `content` is there but not an object.
    #[error("the elicitation answer's content is not an object")]
    Content,
}

impl ElicitAnswer {
    /// Accepts with `content` (the form's defaults fill what it leaves out).
    pub fn accept(content: Map<String, Value>) -> ElicitAnswer {
        ElicitAnswer::of(ElicitAction::Accept, content)
    }

    /// Declines.
    pub fn decline() -> ElicitAnswer {
        ElicitAnswer::of(ElicitAction::Decline, Map::new())
    }

    /// Cancels.
    pub fn cancel() -> ElicitAnswer {
        ElicitAnswer::of(ElicitAction::Cancel, Map::new())
    }

    fn of(action: ElicitAction, content: Map<String, Value>) -> ElicitAnswer {
        ElicitAnswer {
            action,
            content,
            extra: Map::new(),
        }
    }

    /// Reads an answer (a relayed client's).
    pub fn parse(value: &Value) -> Result<ElicitAnswer, ElicitAnswerError> {
        let map = value.as_object().ok_or(ElicitAnswerError::NotAnObject)?;
        let action = match map.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("decline") => ElicitAction::Decline,
            Some("cancel") => ElicitAction::Cancel,
            _ => return Err(ElicitAnswerError::NoAction),
        };
        let content = match map.get("content") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(content)) => content.clone(),
            Some(_) => return Err(ElicitAnswerError::Content),
        };
        let mut extra = map.clone();
        extra.remove("action");
        extra.remove("content");
        Ok(ElicitAnswer {
            action,
            content,
            extra,
        })
    }

    /// The answer as it goes to the server: `content` only with an accept.
    pub fn to_value(&self) -> Value {
        let mut map = self.extra.clone();
        map.insert("action".into(), self.action.as_str().into());
        if self.action == ElicitAction::Accept {
            map.insert("content".into(), Value::Object(self.content.clone()));
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_and_written_with_content_only_on_accept() {
        let read =
            ElicitAnswer::parse(&json!({"action": "accept", "content": {"n": 1}, "_meta": {}}))
                .unwrap();
        assert_eq!(read.action, ElicitAction::Accept);
        assert_eq!(
            read.to_value(),
            json!({"action": "accept", "content": {"n": 1}, "_meta": {}})
        );
        let declined =
            ElicitAnswer::parse(&json!({"action": "decline", "content": {"n": 1}})).unwrap();
        assert_eq!(declined.to_value(), json!({"action": "decline"}));
        assert_eq!(
            ElicitAnswer::cancel().to_value(),
            json!({"action": "cancel"})
        );
        assert_eq!(
            ElicitAnswer::accept(Map::new()).to_value(),
            json!({"action": "accept", "content": {}})
        );
    }

    #[test]
    fn an_answer_without_an_action_or_with_odd_content_is_refused() {
        assert_eq!(
            ElicitAnswer::parse(&json!([])),
            Err(ElicitAnswerError::NotAnObject)
        );
        assert_eq!(
            ElicitAnswer::parse(&json!({"content": {}})),
            Err(ElicitAnswerError::NoAction)
        );
        assert_eq!(
            ElicitAnswer::parse(&json!({"action": "yes"})),
            Err(ElicitAnswerError::NoAction)
        );
        assert_eq!(
            ElicitAnswer::parse(&json!({"action": "accept", "content": 3})),
            Err(ElicitAnswerError::Content)
        );
    }
}
