//! One request over POST: the answer as JSON or SSE, session renewal, and
//! resuming a cut SSE answer with GET and `Last-Event-ID`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcpvisor_protocol::wire::sse::SseParser;
use mcpvisor_protocol::{Incoming, Message, RequestId};
use reqwest::StatusCode;

use super::backoff::retry_delay;
use super::body::{Kind, answers, deliver_json, drain_sse, excerpt, kind, pump_sse, read_bounded};
use super::{Shared, stateless};
use crate::error::TransportError;
use crate::event::{Outbound, TransportEvent, TransportSink};
use mcpvisor_protocol::mcp::modern_errors::refuses_initialize_as_modern;
use mcpvisor_protocol::mcp::route_headers::RouteHeaders;

/// Delay before resuming a cut stream when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long an answered SSE stream may stay open before it is closed.
const ANSWERED_STREAM_DRAIN: Duration = Duration::from_secs(2);

/// Sends a request and delivers what comes back; a failure of this request alone
/// is reported as `RequestFailed`, and an unreachable server as the end of the
/// connection too.
pub(crate) async fn post_request<S: TransportSink>(
    shared: Arc<Shared>,
    sink: Arc<S>,
    out: Outbound,
    id: RequestId,
) {
    if !out.listing {
        shared.stream_answered().await;
    }
    let body = Bytes::from(out.line);
    let sent = match &out.route {
        Some(route) => exchange_stateless(&shared, &*sink, &body, route, &id).await,
        None => exchange(&shared, &*sink, &body, out.initialize, &id).await,
    };
    match sent {
        Ok(()) | Err(TransportError::Closed) => {}
        Err(error) => {
            tracing::debug!(server = %shared.server, %id, "request failed: {error}");
            let down = error.is_unreachable().then(|| error.clone());
            if sink
                .deliver(TransportEvent::RequestFailed { id, error })
                .await
                && let Some(error) = down
            {
                // The server is down, not this request: the connection ends,
                // and its supervisor reconnects with backoff.
                sink.deliver(TransportEvent::Closed(error)).await;
            }
        }
    }
}

/// One POST at a stateless revision: the answer, or the refusal's
/// JSON-RPC error as the answer; never a session, never a resumption.
async fn exchange_stateless<S: TransportSink>(
    shared: &Shared,
    sink: &S,
    body: &Bytes,
    route: &RouteHeaders,
    id: &RequestId,
) -> Result<(), TransportError> {
    let resp = shared.post_routed(body, route, None).await?;
    if resp.status() == StatusCode::OK {
        return read_answer(shared, sink, resp, id, false).await;
    }
    stateless::refused(sink, resp, id).await
}

async fn exchange<S: TransportSink>(
    shared: &Shared,
    sink: &S,
    body: &Bytes,
    initialize: bool,
    id: &RequestId,
) -> Result<(), TransportError> {
    let mut renewed = false;
    loop {
        let generation = shared.session.generation();
        let (resp, had_session) = shared.post(body, None).await?;
        if initialize {
            shared.session.capture(resp.headers())?;
        }
        let status = resp.status();
        if status == StatusCode::OK {
            return read_answer(shared, sink, resp, id, true).await;
        }
        if initialize && status.is_client_error() {
            return refused_initialize(sink, resp, id).await;
        }
        if !had_session || initialize || renewed {
            return Err(status_error(resp).await);
        }
        let expired = if status == StatusCode::NOT_FOUND {
            true
        } else if status == StatusCode::BAD_REQUEST {
            // Some servers (the TypeScript SDK's among them) answer a deleted session
            // with 400 and a JSON-RPC error about the session instead of 404.
            let body = excerpt(resp).await;
            if !mentions_session(&body) {
                return Err(TransportError::HttpStatus { status: 400, body });
            }
            true
        } else {
            return Err(status_error(resp).await);
        };
        if expired {
            shared.renew(generation).await?;
            renewed = true;
            sink.deliver(TransportEvent::SessionRenewed).await;
        }
    }
}

/// `initialize` was refused with a 4xx: when its body holds the error a
/// server of MCP 2026-07-28 alone refuses it with, that error is the
/// answer (the era logic reaches the server statelessly on it); any other
/// refusal is the status, as it always was.
async fn refused_initialize<S: TransportSink>(
    sink: &S,
    resp: reqwest::Response,
    id: &RequestId,
) -> Result<(), TransportError> {
    let status = resp.status().as_u16();
    let body = excerpt_bytes(resp).await;
    match stateless::error_of(&body) {
        Some(e) if refuses_initialize_as_modern(&e.error) => {
            stateless::deliver_error(sink, e, id).await
        }
        _ => Err(TransportError::HttpStatus {
            status,
            body: String::from_utf8_lossy(&body).trim().to_string(),
        }),
    }
}

/// The start of a refusal's body (enough for a JSON-RPC error).
async fn excerpt_bytes(resp: reqwest::Response) -> Vec<u8> {
    read_bounded(resp, REFUSAL_EXCERPT)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

/// How much of a refused `initialize`'s body is read.
const REFUSAL_EXCERPT: usize = 16 * 1024;

async fn status_error(resp: reqwest::Response) -> TransportError {
    let status = resp.status().as_u16();
    TransportError::HttpStatus {
        status,
        body: excerpt(resp).await,
    }
}

fn mentions_session(body: &str) -> bool {
    let Ok(Incoming::Single(Message::Error(e))) = Message::parse(body.as_bytes()) else {
        return false;
    };
    e.error.message.to_ascii_lowercase().contains("session")
}

/// Reads the answer to `id`; a stream that ends first is resumed only where
/// the revision has resumption (`resumable`).
async fn read_answer<S: TransportSink>(
    shared: &Shared,
    sink: &S,
    mut resp: reqwest::Response,
    id: &RequestId,
    resumable: bool,
) -> Result<(), TransportError> {
    let limit = shared.options.message_limit;
    if shared.faults.take_cut() {
        if !resumable {
            return Err(TransportError::Http(
                "the answer stream was cut before the answer (fault injected)".into(),
            ));
        }
        return cut(shared, sink, resp, id).await;
    }
    match kind(&resp) {
        Kind::Json => {
            let body = read_bounded(resp, limit).await?;
            if deliver_json(&body, sink, Some(id)).await? {
                Ok(())
            } else {
                Err(TransportError::NoResponse)
            }
        }
        Kind::Sse => {
            let mut parser = SseParser::new(limit);
            if pump_sse(&mut resp, &mut parser, sink, Some(id)).await? {
                drain_sse(resp, &mut parser, sink, ANSWERED_STREAM_DRAIN).await;
                return Ok(());
            }
            drop(resp);
            if !resumable {
                return Err(TransportError::NoResponse);
            }
            resume(shared, sink, &mut parser, id).await
        }
        Kind::Other(ct) => Err(TransportError::UnexpectedContentType(ct)),
    }
}

/// The fault "answer stream cut": the stream closes after its headers, before
/// the answer, and what follows is what follows any cut stream.
async fn cut<S: TransportSink>(
    shared: &Shared,
    sink: &S,
    resp: reqwest::Response,
    id: &RequestId,
) -> Result<(), TransportError> {
    let sse = matches!(kind(&resp), Kind::Sse);
    drop(resp);
    tracing::debug!(server = %shared.server, %id, "fault: answer stream cut");
    if sse {
        let mut parser = SseParser::new(shared.options.message_limit);
        return resume(shared, sink, &mut parser, id).await;
    }
    Err(TransportError::Http(
        "the answer stream was cut before the answer (fault injected)".into(),
    ))
}

/// The answer's stream ended before the answer: reconnect with GET and
/// `Last-Event-ID` after the server's `retry:` delay, as the spec describes.
async fn resume<S: TransportSink>(
    shared: &Shared,
    sink: &S,
    parser: &mut SseParser,
    id: &RequestId,
) -> Result<(), TransportError> {
    for _ in 0..shared.options.resume_attempts {
        let Some(last) = parser.last_event_id().map(str::to_string) else {
            return Err(TransportError::NoResponse);
        };
        let delay = parser.retry().map(retry_delay).unwrap_or(DEFAULT_RETRY);
        tokio::time::sleep(delay).await;
        let mut resp = shared.get(Some(&last)).await?;
        if resp.status() != StatusCode::OK {
            return Err(status_error(resp).await);
        }
        if !matches!(kind(&resp), Kind::Sse) {
            return Err(TransportError::UnexpectedContentType(
                "GET answer is not an event stream".into(),
            ));
        }
        if pump_sse(&mut resp, parser, sink, Some(id)).await? {
            drain_sse(resp, parser, sink, ANSWERED_STREAM_DRAIN).await;
            return Ok(());
        }
    }
    Err(TransportError::NoResponse)
}

/// Sends a notification or response; a 202 (or 200) is all that comes back.
pub(crate) async fn post_notification(shared: &Shared, body: Bytes) -> Result<(), TransportError> {
    let (resp, _) = shared
        .post(&body, Some(shared.options.exchange_timeout))
        .await?;
    match resp.status() {
        StatusCode::ACCEPTED | StatusCode::OK => Ok(()),
        _ => Err(status_error(resp).await),
    }
}

/// Sends a notification at a stateless revision, with its mirrored headers.
pub(crate) async fn post_routed_notification(
    shared: &Shared,
    body: Bytes,
    route: &RouteHeaders,
) -> Result<(), TransportError> {
    let resp = shared
        .post_routed(&body, route, Some(shared.options.exchange_timeout))
        .await?;
    match resp.status() {
        StatusCode::ACCEPTED | StatusCode::OK => Ok(()),
        _ => Err(status_error(resp).await),
    }
}

/// Opens a session again: replays `initialize`, checks the answer, sends `initialized`.
pub(crate) async fn reinitialize(shared: &Shared) -> Result<(), TransportError> {
    let init = shared
        .session
        .init_line()
        .ok_or_else(|| TransportError::SessionExpired("no initialize to replay".into()))?;
    let (init, init_id) = match Message::parse(&init) {
        // The new session is asked for the revision the connection settled on,
        // not the first one offered when it began.
        Ok(Incoming::Single(Message::Request(mut r))) => {
            if let (Some(revision), Some(params)) = (
                shared.protocol.get(),
                r.params.as_mut().and_then(|p| p.as_object_mut()),
            ) {
                params.insert("protocolVersion".into(), revision.as_str().into());
            }
            let id = r.id.clone();
            (Bytes::from(Message::Request(r).to_vec()), id)
        }
        _ => {
            return Err(TransportError::SessionExpired(
                "stored initialize is unreadable".into(),
            ));
        }
    };
    let resp = shared.post_sessionless(&init).await?;
    if resp.status() != StatusCode::OK {
        return Err(TransportError::SessionExpired(
            status_error(resp).await.to_string(),
        ));
    }
    let previous = shared.session.current().0;
    shared.session.capture(resp.headers())?;
    let settled = settle_renewal(shared, resp, &init_id).await;
    if settled.is_err() {
        // A session this client refused or never finished is not used: requests
        // keep the old id, meet its expiry and renew again.
        shared.session.restore(previous);
    }
    settled
}

/// Checks the renewing `initialize`'s answer and completes the handshake.
async fn settle_renewal(
    shared: &Shared,
    mut resp: reqwest::Response,
    init_id: &RequestId,
) -> Result<(), TransportError> {
    let init_id = init_id.clone();
    // The answer is checked here and not delivered: the session above this
    // transport already completed its handshake.
    let collector = Collector::default();
    let answered = match kind(&resp) {
        Kind::Json => {
            let body = read_bounded(resp, shared.options.message_limit).await?;
            deliver_json(&body, &collector, Some(&init_id)).await?
        }
        Kind::Sse => {
            let mut parser = SseParser::new(shared.options.message_limit);
            pump_sse(&mut resp, &mut parser, &collector, Some(&init_id)).await?
        }
        Kind::Other(ct) => return Err(TransportError::UnexpectedContentType(ct)),
    };
    let result = collector.take_result(&init_id);
    if !answered || result.is_none() {
        return Err(TransportError::SessionExpired(
            "new session's initialize was not answered".into(),
        ));
    }
    // The new session must settle on the revision the connection runs at.
    let accepted = shared
        .protocol
        .get()
        .map(|r| mcpvisor_protocol::mcp::revision::Versions::only(*r))
        .unwrap_or_default();
    if let Some(Err(e)) = result
        .map(|r| mcpvisor_protocol::mcp::messages::InitializeResult::validate_for(r, &accepted))
    {
        return Err(TransportError::SessionExpired(e.to_string()));
    }
    let initialized = Message::Notification(mcpvisor_protocol::wire::jsonrpc::Notification::new(
        mcpvisor_protocol::mcp::messages::methods::INITIALIZED,
        None,
    ));
    post_notification(shared, initialized.to_vec().into()).await
}

/// A sink that keeps messages instead of passing them on (for the renewal handshake).
#[derive(Default)]
struct Collector(parking_lot::Mutex<Vec<Incoming>>);

impl Collector {
    fn take_result(&self, id: &RequestId) -> Option<serde_json::Value> {
        let all = std::mem::take(&mut *self.0.lock());
        all.into_iter().find_map(|incoming| match incoming {
            Incoming::Single(Message::Response(r)) if &r.id == id => Some(r.result),
            i if answers(&i, id) => None,
            _ => None,
        })
    }
}

impl TransportSink for Collector {
    async fn deliver(&self, event: TransportEvent) -> bool {
        if let TransportEvent::Message(m) = event {
            self.0.lock().push(m);
        }
        true
    }
}
