//! What a POST must be before it reaches a session, as plain functions of
//! its headers and body: the refusals' shapes, the media types, the declared
//! length, the JSON-RPC messages and the rules for `initialize`. The
//! router's layers (`layers.rs`) and then the handler run them in order;
//! [`screen_post`] runs the same ones at once, for the fuzzer.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpvisor_protocol::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Incoming, Message, RequestId, error_codes,
};

use super::answer::json_body;
use super::guard::{self, Admission, Refusal};
use super::token::BearerToken;
use crate::lines::parse_error;
use crate::session::error_message;

/// A request turned away before it reached a session: its status and a
/// JSON-RPC error body, so every refusal reads the same way.
pub(crate) struct Refused(pub(crate) StatusCode, pub(crate) i64, pub(crate) String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        refuse(self.0, self.1, self.2)
    }
}

impl Refused {
    /// The refusal as the answer to request `id` (when the body was read and
    /// held one request): the client can tell which request it answers.
    pub(crate) fn answering(self, id: Option<RequestId>) -> Response {
        refuse_to(self.0, id, self.1, self.2)
    }
}

/// A JSON-RPC error as a whole HTTP answer.
pub(crate) fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    refuse_to(status, None, code, message)
}

/// [`refuse`], as the answer to request `id` when it is known.
pub(crate) fn refuse_to(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    refuse_with(status, error_message(id, code, message))
}

/// A refusal whose JSON-RPC error is `error` (with its `data`), answering `id`.
pub(crate) fn refuse_error(status: StatusCode, id: RequestId, error: ErrorObject) -> Response {
    refuse_with(
        status,
        Message::Error(ErrorResponse {
            id: Some(id),
            error,
        }),
    )
}

fn refuse_with(status: StatusCode, refusal: Message) -> Response {
    let body = refusal.to_vec();
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    // A peer the door turned away gets one answer per connection, so it
    // cannot keep a connection (and its place under the cap) by asking again.
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The answer to a request the door checks turned away.
pub(crate) fn turned_away(refusal: Refusal) -> Refused {
    let (status, message) = match refusal {
        Refusal::Host => (
            StatusCode::FORBIDDEN,
            "Host header missing, malformed or not naming this machine (DNS rebinding protection)",
        ),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "Origin not allowed (add it with --allow-origin)",
        ),
        Refusal::Token => (StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
    };
    Refused(status, -32000, message.into())
}

/// What a POST must say of itself, as the transport asks: a JSON body
/// (`Content-Type: application/json`, which a page cannot send another site
/// without the browser asking first) and an `Accept` listing both answer forms.
pub(crate) fn posted_json(headers: &HeaderMap) -> Result<(), Refused> {
    let content_type = headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes());
    // What every client sends, compared whole before anything is split.
    let json = content_type.is_some_and(|v| v.eq_ignore_ascii_case(b"application/json"))
        || content_type
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            error_codes::INVALID_REQUEST,
            "Content-Type must be application/json".into(),
        ));
    }
    let mut accepts = headers.get_all(header::ACCEPT).iter();
    if let (Some(only), None) = (accepts.next(), accepts.next()) {
        let only = only.as_bytes();
        if only.eq_ignore_ascii_case(b"application/json, text/event-stream")
            || only.eq_ignore_ascii_case(b"text/event-stream, application/json")
        {
            return Ok(());
        }
    }
    let accepted = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|v| v.split(';').next())
        .map(str::trim);
    let (mut json, mut sse) = (false, false);
    for media in accepted {
        let any = media == "*/*";
        json |= any
            || ["application/json", "application/*"]
                .iter()
                .any(|m| media.eq_ignore_ascii_case(m));
        sse |= any
            || ["text/event-stream", "text/*"]
                .iter()
                .any(|m| media.eq_ignore_ascii_case(m));
    }
    if !(json && sse) {
        return Err(Refused(
            StatusCode::NOT_ACCEPTABLE,
            error_codes::INVALID_REQUEST,
            "Accept must list both application/json and text/event-stream".into(),
        ));
    }
    Ok(())
}

/// The refusal of a body over `limit` bytes.
pub(crate) fn too_large(limit: usize) -> Refused {
    Refused(
        StatusCode::PAYLOAD_TOO_LARGE,
        error_codes::INVALID_REQUEST,
        format!("request body larger than {limit} bytes"),
    )
}

/// The bytes a body may take, from its `Content-Length` (the limit when it
/// is chunked); one that says it is larger than `limit` is refused unread.
pub(crate) fn declared_length(headers: &HeaderMap, limit: usize) -> Result<usize, Refused> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().parse::<u64>());
    match declared {
        Some(Ok(n)) if n > limit as u64 => Err(too_large(limit)),
        Some(Ok(n)) => Ok(n as usize),
        Some(Err(_)) => Err(Refused(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            "Content-Length is not a number".into(),
        )),
        None => Ok(limit),
    }
}

/// Why a body's messages were not taken.
pub(crate) enum NotParsed {
    /// A rule of the transport or of `initialize`.
    Refused(Refused),
    /// Not JSON-RPC: the parse error as JSON-RPC says to answer it.
    Invalid(Message),
}

impl NotParsed {
    fn status(&self) -> StatusCode {
        match self {
            NotParsed::Refused(r) => r.0,
            NotParsed::Invalid(_) => StatusCode::BAD_REQUEST,
        }
    }
}

impl IntoResponse for NotParsed {
    fn into_response(self) -> Response {
        match self {
            NotParsed::Refused(r) => r.into_response(),
            NotParsed::Invalid(m) => (StatusCode::BAD_REQUEST, json_body(m)).into_response(),
        }
    }
}

/// A POST's messages, as they reach a session.
pub(crate) struct Parsed {
    pub(crate) messages: Vec<Message>,
    pub(crate) batch: bool,
    /// It is an `initialize` (alone, with a string `protocolVersion`).
    pub(crate) initialize: bool,
}

/// The body's messages: one, or a batch of at most `max_batch`; an
/// `initialize` must come alone, without a session (`named`), and say its
/// version (a malformed one would hold a session slot until it expired).
pub(crate) fn parse(bytes: &[u8], max_batch: usize, named: bool) -> Result<Parsed, NotParsed> {
    let bad = |code, message: &str| {
        NotParsed::Refused(Refused(StatusCode::BAD_REQUEST, code, message.to_string()))
    };
    let (messages, batch) = match Message::parse(bytes) {
        Ok(Incoming::Single(m)) => (vec![m], false),
        // A batch holds no more than a session may have in flight, so its
        // refusals always fit the answer channel.
        Ok(Incoming::Batch(items)) if items.len() > max_batch => {
            return Err(bad(
                error_codes::INVALID_REQUEST,
                &format!("a batch may hold at most {max_batch} messages"),
            ));
        }
        Ok(Incoming::Batch(items)) => match items.into_iter().collect::<Result<Vec<_>, _>>() {
            Ok(messages) => (messages, true),
            Err(e) => {
                return Err(NotParsed::Invalid(parse_error(&e)));
            }
        },
        Err(e) => return Err(NotParsed::Invalid(parse_error(&e))),
    };
    // A stateless client's `initialize` is a request for a removed method,
    // answered as such, not the opening of a session.
    let initialize = messages.iter().any(|m| {
        matches!(m, Message::Request(r)
            if r.method == "initialize" && !crate::stateless::is_modern_initialize(r))
    });
    if initialize {
        if messages.len() != 1 {
            return Err(bad(
                error_codes::INVALID_REQUEST,
                "initialize must be sent alone",
            ));
        }
        if named {
            return Err(bad(
                error_codes::INVALID_REQUEST,
                "initialize opens a new session: send it without Mcp-Session-Id",
            ));
        }
        let versioned = matches!(&messages[0], Message::Request(r)
            if r.params.as_ref().and_then(|p| p.get("protocolVersion")).is_some_and(|v| v.is_string()));
        if !versioned {
            return Err(bad(
                error_codes::INVALID_PARAMS,
                "initialize needs a string `protocolVersion`",
            ));
        }
    }
    Ok(Parsed {
        messages,
        batch,
        initialize,
    })
}

/// What [`screen_post`] checks a request against.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ScreenLimits {
    /// The endpoint listens on loopback, on this port.
    pub loopback: bool,
    /// Its port.
    pub port: u16,
    /// The token, if one is required.
    pub token: Option<BearerToken>,
    /// Origins listed with `--allow-origin`.
    pub allowed_origins: Vec<String>,
    /// The largest body.
    pub max_body: usize,
    /// The largest batch.
    pub max_batch: usize,
}

/// What got through [`screen_post`].
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screened {
    /// Messages for the session.
    pub messages: usize,
    /// They came as a batch.
    pub batch: bool,
    /// It opens a session.
    pub initialize: bool,
}

/// Every check a POST meets before a session sees it, in the handler's
/// order, on a body already in memory: the status it is refused with, or
/// what passes. For the fuzzer: the handler runs the same functions.
#[doc(hidden)]
pub fn screen_post(
    headers: &HeaderMap,
    body: &[u8],
    limits: &ScreenLimits,
) -> Result<Screened, StatusCode> {
    let admission = Admission {
        loopback: limits.loopback,
        port: limits.port,
        allowed_origins: &limits.allowed_origins,
        token: limits.token.as_ref(),
    };
    guard::check(headers, &admission).map_err(|r| turned_away(r).0)?;
    posted_json(headers).map_err(|r| r.0)?;
    let expected = declared_length(headers, limits.max_body).map_err(|r| r.0)?;
    if body.len() > limits.max_body.min(expected) {
        return Err(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let named = headers.contains_key("mcp-session-id");
    let parsed = parse(body, limits.max_batch, named).map_err(|r| r.status())?;
    Ok(Screened {
        messages: parsed.messages.len(),
        batch: parsed.batch,
        initialize: parsed.initialize,
    })
}
