//! Reading HTTP answers without unbounded buffers: JSON bodies and SSE streams.

use std::time::Duration;

use bytes::Bytes;
use mcpvisor_protocol::wire::sse::{SseError, SseParser};
use mcpvisor_protocol::{Incoming, Message, RequestId};

use crate::error::TransportError;
use crate::event::{TransportEvent, TransportSink};

/// Longest body excerpt kept in an error.
pub(crate) const EXCERPT: usize = 512;

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
        .unwrap_or("");
    let starts = |prefix: &str| {
        ct.get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
    };
    if starts("application/json") {
        Kind::Json
    } else if starts("text/event-stream") {
        Kind::Sse
    } else {
        Kind::Other(ct.to_ascii_lowercase())
    }
}

pub(crate) fn http_error(e: reqwest::Error) -> TransportError {
    // Without the URL: a query string may carry a credential. With the causes
    // below it ("connection refused", "dns error"), which reqwest's own text
    // leaves out; they name no URL.
    let e = e.without_url();
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !more.is_empty() && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    let text = text.chars().take(400).collect();
    if unreachable(&e) {
        TransportError::Unreachable(text)
    } else {
        TransportError::Http(text)
    }
}

/// A connection refused or not made, or reset or cut before its answer ended:
/// the server (or the way to it) is down, which a request's own failure (a
/// timeout, a bad certificate, a body too large) does not say.
fn unreachable(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind;
    if e.is_connect() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        if c.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Reads a whole body, failing once it passes `limit` bytes. A body that
/// arrives in one chunk (the usual small answer) is returned without a copy.
pub(crate) async fn read_bounded(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Bytes, TransportError> {
    let too_large = TransportError::MessageTooLarge { limit };
    let mut first = None;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http_error)? {
        let held = first.as_ref().map_or(0, Bytes::len) + body.len();
        if held + chunk.len() > limit {
            return Err(too_large);
        }
        match first.take() {
            None if body.is_empty() => first = Some(chunk),
            Some(earlier) => {
                body.extend_from_slice(&earlier);
                body.extend_from_slice(&chunk);
            }
            None => body.extend_from_slice(&chunk),
        }
    }
    Ok(first.unwrap_or_else(|| body.into()))
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
            sink.deliver(TransportEvent::unparsed(body, e)).await;
            Ok(false)
        }
    }
}

/// Reads an SSE stream, handing each message to the sink, until it ends or
/// carries the answer to `want` (then the rest of that chunk is delivered and
/// the stream is left for [`drain_sse`]).
pub(crate) async fn pump_sse<S: TransportSink>(
    resp: &mut reqwest::Response,
    parser: &mut SseParser,
    sink: &S,
    want: Option<&RequestId>,
) -> Result<bool, TransportError> {
    let mut events = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http_error)? {
        let pushed = parser.push(&chunk, |e| events.push(e));
        let mut answered = false;
        for event in events.drain(..) {
            // Priming events and keep-alives carry no message.
            if event.data.trim().is_empty() {
                continue;
            }
            answered |= deliver_json(event.data.as_bytes(), sink, want).await?;
        }
        if answered {
            return Ok(true);
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

/// After the answer, reads the rest of an SSE stream (the server closes it
/// once it has answered) for at most `within`, delivering any message on it.
/// Reading to the end hands the connection back to the pool; a stream left
/// half-read would be closed, and the next request would pay a new connection.
/// Errors here no longer matter to the request, which has its answer.
pub(crate) async fn drain_sse<S: TransportSink>(
    mut resp: reqwest::Response,
    parser: &mut SseParser,
    sink: &S,
    within: Duration,
) {
    let rest = pump_sse(&mut resp, parser, sink, None);
    if tokio::time::timeout(within, rest).await.is_err() {
        tracing::debug!("an answered SSE stream stayed open; closing it");
    }
}
