//! A result's `resultType` (2026-07-28): complete, a request for input (a
//! multi-round-trip request), or a task. A result without one is complete,
//! as every result of an older server is; one this client does not know is
//! an invalid result, not a complete one.

use serde_json::Value;

/// What a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    /// The answer.
    Complete,
    /// The server needs input (`inputRequests`) before it answers; the client
    /// sends the request again with the answers and the `requestState`.
    InputRequired,
    /// The server runs the request as a task (the tasks extension).
    Task,
}

/// A `resultType` that is not one of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown resultType {0:?}")]
pub struct UnknownResultType(pub String);

impl ResultType {
    /// The result type of `result`.
    pub fn of(result: &Value) -> Result<ResultType, UnknownResultType> {
        match result.get("resultType") {
            None | Some(Value::Null) => Ok(ResultType::Complete),
            Some(Value::String(s)) => match s.as_str() {
                "complete" => Ok(ResultType::Complete),
                "input_required" => Ok(ResultType::InputRequired),
                "task" => Ok(ResultType::Task),
                other => Err(UnknownResultType(other.chars().take(40).collect())),
            },
            Some(other) => Err(UnknownResultType(
                other.to_string().chars().take(40).collect(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_missing_result_type_is_complete_and_an_unknown_one_is_refused() {
        assert_eq!(
            ResultType::of(&json!({"content": []})),
            Ok(ResultType::Complete)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "complete"})),
            Ok(ResultType::Complete)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "input_required"})),
            Ok(ResultType::InputRequired)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "task"})),
            Ok(ResultType::Task)
        );
        assert!(ResultType::of(&json!({"resultType": "partial"})).is_err());
        assert!(ResultType::of(&json!({"resultType": 1})).is_err());
        let long = "x".repeat(10_000);
        let Err(UnknownResultType(shown)) = ResultType::of(&json!({ "resultType": long })) else {
            panic!("refused");
        };
        assert_eq!(
            shown.len(),
            40,
            "an error never carries a server's whole string"
        );
    }
}
