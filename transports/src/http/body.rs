//! Reading HTTP answers without unbounded buffers: JSON bodies and SSE streams.

use mcpvisor_protocol::sse::{SseError, SseParser};
use mcpvisor_protocol::{Incoming, Message, RequestId};

use crate::error::TransportError;
use crate::event::{TransportEvent, TransportSink};

/// Longest body excerpt kept in an error.
const EXCERPT: usize = 512;

/// What kind of answer a response carries.
pub(crate) enum Kind {
    Json,
    Sse,
    Other(String),
}

pub(crate) fn kind(resp: &reqwest::Response) -> Kind {
    let ct = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ct.starts_with("application/json") {
        Kind::Json
    } else if ct.starts_with("text/event-stream") {
        Kind::Sse
    } else {
        Kind::Other(ct)
    }
}

pub(crate) fn http_error(e: reqwest::Error) -> TransportError {
    // Without the URL: a query string may carry a credential.
    TransportError::Http(e.without_url().to_string())
}

/// Reads a whole body, failing once it passes `limit` bytes.
pub(crate) async fn read_bounded(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http_error)? {
        if body.len() + chunk.len() > limit {
            return Err(TransportError::MessageTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of a body, for an error message.
pub(crate) async fn excerpt(mut resp: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        body.extend_from_slice(&chunk[..chunk.len().min(EXCERPT - body.len())]);
        if body.len() >= EXCERPT {
            break;
        }
    }
    String::from_utf8_lossy(&body).trim().to_string()
}

/// True when `incoming` holds the answer to `id`.
pub(crate) fn answers(incoming: &Incoming, id: &RequestId) -> bool {
    let hit = |m: &Message| match m {
        Message::Response(r) => &r.id == id,
        Message::Error(e) => e.id.as_ref() == Some(id),
        _ => false,
    };
    match incoming {
        Incoming::Single(m) => hit(m),
        Incoming::Batch(items) => items.iter().any(|m| m.as_ref().is_ok_and(hit)),
    }
}

/// Hands every message of a JSON body to the sink; true if one answered `want`.
pub(crate) async fn deliver_json<S: TransportSink>(
    body: &[u8],
    sink: &S,
    want: Option<&RequestId>,
) -> Result<bool, TransportError> {
    match Message::parse(body) {
        Ok(incoming) => {
            let answered = want.is_some_and(|id| answers(&incoming, id));
            if !sink.deliver(TransportEvent::Message(incoming)).await {
                return Err(TransportError::Closed);
            }
            Ok(answered)
        }
        Err(e) => {
            sink.deliver(TransportEvent::Malformed(e)).await;
            Ok(false)
        }
    }
}

/// Reads an SSE stream, handing each message to the sink, until it ends or
/// carries the answer to `want` (then the rest is not read).
pub(crate) async fn pump_sse<S: TransportSink>(
    resp: &mut reqwest::Response,
    parser: &mut SseParser,
    sink: &S,
    want: Option<&RequestId>,
) -> Result<bool, TransportError> {
    let mut events = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http_error)? {
        let pushed = parser.push(&chunk, |e| events.push(e));
        for event in events.drain(..) {
            // Priming events and keep-alives carry no message.
            if event.data.trim().is_empty() {
                continue;
            }
            if deliver_json(event.data.as_bytes(), sink, want).await? {
                return Ok(true);
            }
        }
        if let Err(e) = pushed {
            return Err(match e {
                SseError::EventTooLarge { limit } => TransportError::MessageTooLarge { limit },
                other => TransportError::Http(other.to_string()),
            });
        }
    }
    Ok(false)
}
