//! JSON-RPC 2.0 messages as MCP uses them.
//!
//! Incoming bytes are classified into requests, notifications, responses and
//! error responses; anything else becomes a typed [`MessageError`], never a panic.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// Standard JSON-RPC error codes.
pub mod error_codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A request id: JSON-RPC allows numbers and strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id (the client always allocates these).
    Number(i64),
    /// A string id (servers may use these for their own requests).
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A request: expects a response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Correlates the response.
    pub id: RequestId,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// Parameters, if any.
    pub params: Option<Value>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// Parameters, if any.
    pub params: Option<Value>,
}

/// A successful response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result value.
    pub result: Value,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`error_codes`]).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// An error response. The id is absent when the peer could not read the request's id.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request this answers, if known.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// Any single JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// One parsed input: a single message or a batch (batches are accepted on input only).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A single message.
    Single(Message),
    /// A batch; each element is classified on its own.
    Batch(Vec<Result<Message, MessageError>>),
}

/// Why bytes could not be read as a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes are not JSON.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// The JSON is not an object (or array of objects for a batch).
    #[error("JSON-RPC message is not an object")]
    NotAnObject,
    /// The `jsonrpc` member is missing or not "2.0".
    #[error("wrong or missing jsonrpc version (expected \"2.0\")")]
    WrongVersion,
    /// An empty batch array.
    #[error("empty JSON-RPC batch")]
    EmptyBatch,
    /// The object matches none of request, notification, response or error.
    #[error("invalid JSON-RPC message: {0}")]
    Invalid(&'static str),
}

/// The wire shape: every member optional, classified after parsing.
#[derive(Deserialize)]
struct RawMessage {
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    error: Option<Value>,
}

/// Distinguishes a member that is present with `null` from an absent one.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Message {
    /// Parses one frame: a single message or a batch.
    pub fn parse(bytes: &[u8]) -> Result<Incoming, MessageError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        match first {
            Some(b'[') => {
                let items: Vec<Value> = serde_json::from_slice(bytes)
                    .map_err(|e| MessageError::InvalidJson(e.to_string()))?;
                if items.is_empty() {
                    return Err(MessageError::EmptyBatch);
                }
                Ok(Incoming::Batch(
                    items.into_iter().map(Message::from_value).collect(),
                ))
            }
            Some(b'{') => {
                let raw: RawMessage = serde_json::from_slice(bytes).map_err(|e| {
                    if e.is_data() {
                        MessageError::Invalid("member of the wrong type")
                    } else {
                        MessageError::InvalidJson(e.to_string())
                    }
                })?;
                Self::classify(raw).map(Incoming::Single)
            }
            _ => match serde_json::from_slice::<Value>(bytes) {
                Ok(_) => Err(MessageError::NotAnObject),
                Err(e) => Err(MessageError::InvalidJson(e.to_string())),
            },
        }
    }

    /// Classifies an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Message, MessageError> {
        if !value.is_object() {
            return Err(MessageError::NotAnObject);
        }
        let raw: RawMessage = serde_json::from_value(value)
            .map_err(|_| MessageError::Invalid("member of the wrong type"))?;
        Self::classify(raw)
    }

    fn classify(raw: RawMessage) -> Result<Message, MessageError> {
        if raw.jsonrpc.as_deref() != Some(JSONRPC_VERSION) {
            return Err(MessageError::WrongVersion);
        }
        let id = match raw.id {
            None => None,
            Some(Value::Null) => None,
            Some(v) => Some(parse_id(v)?),
        };
        if let Some(method) = raw.method {
            let params = raw.params;
            return Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            });
        }
        match (raw.result, raw.error) {
            (Some(result), None) => {
                let id = id.ok_or(MessageError::Invalid("response without id"))?;
                Ok(Message::Response(Response { id, result }))
            }
            (None, Some(error)) => {
                let error: ErrorObject = serde_json::from_value(error)
                    .map_err(|_| MessageError::Invalid("malformed error object"))?;
                Ok(Message::Error(ErrorResponse { id, error }))
            }
            (Some(_), Some(_)) => Err(MessageError::Invalid("both result and error")),
            (None, None) => Err(MessageError::Invalid("neither method, result nor error")),
        }
    }

    /// Serialises the message as one compact JSON object (no trailing newline).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        self.write_to(&mut out);
        out
    }

    /// Appends the message's compact JSON to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        #[derive(Serialize)]
        struct Wire<'a> {
            jsonrpc: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a RequestId>,
            #[serde(skip_serializing_if = "Option::is_none")]
            method: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a ErrorObject>,
        }
        let mut wire = Wire {
            jsonrpc: JSONRPC_VERSION,
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        };
        let null_id = Value::Null;
        let mut null_error_id = false;
        match self {
            Message::Request(r) => {
                wire.id = Some(&r.id);
                wire.method = Some(&r.method);
                wire.params = r.params.as_ref();
            }
            Message::Notification(n) => {
                wire.method = Some(&n.method);
                wire.params = n.params.as_ref();
            }
            Message::Response(r) => {
                wire.id = Some(&r.id);
                wire.result = Some(&r.result);
            }
            Message::Error(e) => {
                wire.id = e.id.as_ref();
                null_error_id = e.id.is_none();
                wire.error = Some(&e.error);
            }
        }
        if null_error_id {
            // JSON-RPC requires `"id": null` on an error whose request id is unknown.
            let mut v = serde_json::to_value(&wire).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut v {
                map.insert("id".into(), null_id);
            }
            let _ = serde_json::to_writer(&mut *out, &v);
        } else {
            // Serialising these plain types into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, &wire);
        }
    }
}

fn parse_id(v: Value) -> Result<RequestId, MessageError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(RequestId::Number)
            .ok_or(MessageError::Invalid("id is not an integer")),
        Value::String(s) => Ok(RequestId::String(s)),
        _ => Err(MessageError::Invalid("id is neither number nor string")),
    }
}

impl Request {
    /// Builds a request.
    pub fn new(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            id,
            method: method.into(),
            params,
        }
    }
}

impl Notification {
    /// Builds a notification.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }
}

impl ErrorResponse {
    /// Builds an error response for `id` with `code` and `message`.
    pub fn new(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Self {
        ErrorResponse {
            id,
            error: ErrorObject {
                code,
                message: message.into(),
                data: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn single(bytes: &str) -> Result<Message, MessageError> {
        match Message::parse(bytes.as_bytes())? {
            Incoming::Single(m) => Ok(m),
            Incoming::Batch(_) => panic!("unexpected batch"),
        }
    }

    #[test]
    fn numbers_parse_correctly_rounded_and_survive_a_round_trip() {
        // Found by the frame_decoder fuzz target: serde_json's fast float parsing
        // read this one ulp off, and writing it back changed the message.
        let line = r#"{"jsonrpc":"2.0","method":"m","params":{"x":444444444444444444444422}}"#;
        let m = single(line).unwrap();
        let Message::Notification(n) = &m else {
            panic!("{m:?}")
        };
        let x = n.params.as_ref().and_then(|p| p["x"].as_f64()).unwrap();
        assert_eq!(x, "444444444444444444444422".parse::<f64>().unwrap());
        let again = single(std::str::from_utf8(&m.to_vec()).unwrap()).unwrap();
        assert_eq!(again, m);
    }

    #[test]
    fn classifies_each_kind() {
        let r = single(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(matches!(
            r,
            Message::Request(Request {
                id: RequestId::Number(1),
                ..
            })
        ));
        let n = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n, Message::Notification(_)));
        let ok = single(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert_eq!(
            ok,
            Message::Response(Response {
                id: RequestId::String("a".into()),
                result: json!({})
            })
        );
        let err =
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
        assert!(matches!(
            err,
            Message::Error(ErrorResponse { id: None, .. })
        ));
    }

    #[test]
    fn null_result_is_a_response() {
        let m = single(r#"{"jsonrpc":"2.0","id":3,"result":null}"#).unwrap();
        assert_eq!(
            m,
            Message::Response(Response {
                id: RequestId::Number(3),
                result: Value::Null
            })
        );
    }

    #[test]
    fn rejects_bad_input_with_typed_errors() {
        assert!(matches!(single("{nope"), Err(MessageError::InvalidJson(_))));
        assert_eq!(single("42"), Err(MessageError::NotAnObject));
        assert_eq!(single(r#""str""#), Err(MessageError::NotAnObject));
        assert_eq!(
            single(r#"{"jsonrpc":"1.0","id":1,"result":{}}"#),
            Err(MessageError::WrongVersion)
        );
        assert_eq!(
            single(r#"{"id":1,"result":{}}"#),
            Err(MessageError::WrongVersion)
        );
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1}"#),
            Err(MessageError::Invalid(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":{"x":1},"result":1}"#),
            Err(MessageError::Invalid(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#),
            Err(MessageError::Invalid(_))
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":7}"#),
            Err(MessageError::Invalid(_))
        ));
        assert_eq!(Message::parse(b"[]"), Err(MessageError::EmptyBatch));
    }

    #[test]
    fn batch_elements_are_classified_individually() {
        let b = Message::parse(
            br#"[{"jsonrpc":"2.0","method":"a"}, 5, {"jsonrpc":"2.0","id":2,"result":1}]"#,
        )
        .unwrap();
        let Incoming::Batch(items) = b else {
            panic!("expected batch")
        };
        assert_eq!(items.len(), 3);
        assert!(items[0].is_ok());
        assert_eq!(items[1], Err(MessageError::NotAnObject));
        assert!(items[2].is_ok());
    }

    #[test]
    fn round_trips_through_bytes() {
        let msgs = vec![
            Message::Request(Request::new(
                RequestId::Number(7),
                "tools/list",
                Some(json!({"cursor":"c"})),
            )),
            Message::Notification(Notification::new("notifications/initialized", None)),
            Message::Response(Response {
                id: RequestId::String("x".into()),
                result: json!({"a":[1,2]}),
            }),
            Message::Error(ErrorResponse::new(Some(RequestId::Number(1)), -32601, "no")),
            Message::Error(ErrorResponse::new(None, -32700, "parse")),
        ];
        for m in msgs {
            let bytes = m.to_vec();
            assert_eq!(single(std::str::from_utf8(&bytes).unwrap()).unwrap(), m);
        }
        let e = Message::Error(ErrorResponse::new(None, -32700, "parse")).to_vec();
        assert!(std::str::from_utf8(&e).unwrap().contains("\"id\":null"));
    }
}
