//! Multi-round-trip requests (2026-07-28): a `tools/call`, `resources/read` or
//! `prompts/get` may be answered with `resultType: "input_required"`, the
//! questions (`inputRequests`: elicitation, sampling, roots, each under a key)
//! and an opaque `requestState`. The client sends the same request again,
//! under a new id, with one answer per key (`inputResponses`) and the state
//! exactly as it came (and none if none came).
//!
//! Bounded: a server asks at most [`MAX_INPUT_REQUESTS`] questions a round,
//! under keys of at most [`MAX_KEY_BYTES`], with a state of at most
//! [`MAX_REQUEST_STATE_BYTES`]; a client goes at most [`MAX_ROUNDS`] rounds.

use serde_json::{Map, Value};

/// Questions one round may ask.
pub const MAX_INPUT_REQUESTS: usize = 16;
/// The longest key of a question.
pub const MAX_KEY_BYTES: usize = 256;
/// The largest `requestState` kept and sent back.
pub const MAX_REQUEST_STATE_BYTES: usize = 256 * 1024;
/// Rounds a client goes before it gives up on a request.
pub const MAX_ROUNDS: usize = 8;

/// The methods that may be asked in rounds.
pub const METHOD_ELICIT: &str = "elicitation/create";
/// Sampling.
pub const METHOD_SAMPLE: &str = "sampling/createMessage";
/// The host's roots.
pub const METHOD_ROOTS: &str = "roots/list";

/// The requests that may be answered with questions.
pub const ASKING_METHODS: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

/// One question of a round.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// Its key, under which the answer goes back.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: &'static str,
    /// Its params, as a server→client request of that method would carry them.
    pub params: Value,
}

/// A round's questions and state.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// The questions, in key order (none: retry at once, the server was busy).
    pub requests: Vec<InputRequest>,
    /// The state to send back exactly, if the server sent one.
    pub request_state: Option<String>,
}

/// An `input_required` result that cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputRequiredError {
    /// Neither questions nor a state: nothing to retry with.
    #[error("an input_required result with neither inputRequests nor requestState")]
    Empty,
    /// `inputRequests` or one of its entries is not an object, or a method is
    /// missing.
    #[error("inputRequests is not a map of {{method, params}} objects")]
    Malformed,
    /// A question of a method that cannot be asked this way.
    #[error("input request {key:?} asks {method:?}, which is not elicitation, sampling or roots")]
    UnknownMethod {
        /// The question's key (shortened).
        key: String,
        /// Its method (shortened).
        method: String,
    },
    /// More questions than a round may ask, or too long a key.
    #[error(
        "{0} input requests (or a key over {MAX_KEY_BYTES} bytes); a round asks at most {MAX_INPUT_REQUESTS}"
    )]
    TooMany(usize),
    /// A `requestState` that is not a string, or too large to keep.
    #[error("requestState is not a string of at most {MAX_REQUEST_STATE_BYTES} bytes")]
    BadState,
    /// The request asked for input on a method that cannot ask.
    #[error("{0} cannot be answered with input_required")]
    NotAsking(String),
    /// Past the round limit.
    #[error("the server still asked for input after {MAX_ROUNDS} rounds")]
    TooManyRounds,
}

fn short(s: &str) -> String {
    s.chars().take(60).collect()
}

impl InputRequired {
    /// Reads the `input_required` result of a `method` request.
    pub fn parse(method: &str, result: &Value) -> Result<InputRequired, InputRequiredError> {
        if !ASKING_METHODS.contains(&method) {
            return Err(InputRequiredError::NotAsking(short(method)));
        }
        let request_state = match result.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.len() <= MAX_REQUEST_STATE_BYTES => Some(s.clone()),
            Some(_) => return Err(InputRequiredError::BadState),
        };
        let requests = match result.get("inputRequests") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => read_requests(map)?,
            Some(_) => return Err(InputRequiredError::Malformed),
        };
        if requests.is_empty() && request_state.is_none() {
            return Err(InputRequiredError::Empty);
        }
        Ok(InputRequired {
            requests,
            request_state,
        })
    }

    /// The params of the retry: the request's own params (`original`), its
    /// `_meta` left for the caller to stamp anew, with `answers` as
    /// `inputResponses` (none: none are sent) and the state exactly as it came.
    pub fn retry_params(&self, original: &Value, answers: Map<String, Value>) -> Value {
        let mut params = match original {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        // A retry carries this round's answers only.
        params.remove("inputResponses");
        params.remove("requestState");
        if !answers.is_empty() {
            params.insert("inputResponses".into(), Value::Object(answers));
        }
        if let Some(state) = &self.request_state {
            params.insert("requestState".into(), Value::String(state.clone()));
        }
        Value::Object(params)
    }
}

fn read_requests(map: &Map<String, Value>) -> Result<Vec<InputRequest>, InputRequiredError> {
    if map.len() > MAX_INPUT_REQUESTS || map.keys().any(|k| k.len() > MAX_KEY_BYTES) {
        return Err(InputRequiredError::TooMany(map.len()));
    }
    map.iter()
        .map(|(key, request)| {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or(InputRequiredError::Malformed)?;
            let method = [METHOD_ELICIT, METHOD_SAMPLE, METHOD_ROOTS]
                .into_iter()
                .find(|m| *m == method)
                .ok_or_else(|| InputRequiredError::UnknownMethod {
                    key: short(key),
                    method: short(method),
                })?;
            let params = match request.get("params") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(p @ Value::Object(_)) => p.clone(),
                Some(_) => return Err(InputRequiredError::Malformed),
            };
            Ok(InputRequest {
                key: key.clone(),
                method,
                params,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_round_is_read_and_its_retry_echoes_the_state_exactly() {
        let state = r#"{"step":1, "nonce":"a b"}"#;
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {
                "confirm": {"method": "elicitation/create", "params": {
                    "message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}},
                "where": {"method": "roots/list"},
            },
            "requestState": state,
        });
        let round = InputRequired::parse("tools/call", &result).unwrap();
        let keys: Vec<_> = round
            .requests
            .iter()
            .map(|r| (r.key.as_str(), r.method))
            .collect();
        assert_eq!(keys, [("confirm", METHOD_ELICIT), ("where", METHOD_ROOTS)]);
        assert_eq!(round.requests[1].params, json!({}));

        let original = json!({"name": "deploy", "arguments": {"env": "prod"},
                              "inputResponses": {"old": {}}, "requestState": "old"});
        let mut answers = Map::new();
        answers.insert("confirm".into(), json!({"action": "accept", "content": {}}));
        let retry = round.retry_params(&original, answers);
        assert_eq!(retry["name"], "deploy");
        assert_eq!(retry["arguments"], json!({"env": "prod"}));
        assert_eq!(retry["requestState"], state, "byte for byte");
        assert_eq!(
            retry["inputResponses"],
            json!({"confirm": {"action": "accept", "content": {}}}),
            "this round's answers only"
        );
    }

    #[test]
    fn without_a_state_none_is_sent_back() {
        let round = InputRequired::parse(
            "prompts/get",
            &json!({"inputRequests": {"q": {"method": "sampling/createMessage", "params": {}}}}),
        )
        .unwrap();
        assert_eq!(round.request_state, None);
        let retry = round.retry_params(&json!({"name": "p", "requestState": "stale"}), Map::new());
        assert!(retry.get("requestState").is_none());
        assert!(retry.get("inputResponses").is_none());
    }

    #[test]
    fn what_cannot_be_answered_is_refused_typed() {
        let parse = |v: Value| InputRequired::parse("tools/call", &v);
        assert_eq!(
            parse(json!({"resultType": "input_required"})),
            Err(InputRequiredError::Empty)
        );
        assert!(matches!(
            parse(json!({"inputRequests": {"k": {"method": "tools/call"}}})),
            Err(InputRequiredError::UnknownMethod { .. })
        ));
        assert_eq!(
            parse(json!({"inputRequests": ["not", "a", "map"]})),
            Err(InputRequiredError::Malformed)
        );
        assert_eq!(
            parse(json!({"inputRequests": {"k": {"params": {}}}})),
            Err(InputRequiredError::Malformed)
        );
        let many: Map<String, Value> = (0..=MAX_INPUT_REQUESTS)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        assert_eq!(
            parse(json!({ "inputRequests": many })),
            Err(InputRequiredError::TooMany(MAX_INPUT_REQUESTS + 1))
        );
        assert_eq!(
            parse(json!({"requestState": "x".repeat(MAX_REQUEST_STATE_BYTES + 1)})),
            Err(InputRequiredError::BadState)
        );
        assert_eq!(
            parse(json!({"requestState": 5})),
            Err(InputRequiredError::BadState)
        );
        assert_eq!(
            InputRequired::parse("tools/list", &json!({"requestState": "s"})),
            Err(InputRequiredError::NotAsking("tools/list".into()))
        );
    }
}
