//! `text/event-stream` bodies written byte for byte, so tests control ids, `retry:`
//! fields, malformed input and how the bytes are chunked.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_stream::stream;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::Shared;
use super::mcp;
use super::script::{AnswerMode, Script};

const KEEPALIVE: &[u8] = b": keepalive\n\n";
const BEFORE_THE_ANSWER: &str = "before the answer";
const HUGE_DATA_LEN: usize = 10 * 1024 * 1024;
const HUGE_CHUNK_LEN: usize = 64 * 1024;

/// One event: `id: <id>\ndata: <compact json>\n\n`.
fn event(id: &str, message: &Value) -> Bytes {
    Bytes::from(format!("id: {id}\ndata: {message}\n\n"))
}

/// A 200 `text/event-stream` response streaming `chunks` as they come.
fn respond(chunks: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(chunks.map(Ok::<_, Infallible>)))
        .expect("a valid SSE response")
}

/// The responses to `requests`, one event each, after a log event in
/// [`AnswerMode::SseNotifyFirst`]; then the end of the stream.
pub(super) fn answers(shared: Arc<Shared>, script: Script, requests: Vec<Value>) -> Response {
    respond(stream! {
        if script.answer == AnswerMode::SseNotifyFirst {
            let notice = mcp::log_notification(BEFORE_THE_ANSWER);
            yield event(&shared.next_post_event_id(), &notice);
        }
        for request in &requests {
            let response = mcp::respond(&script, request).await;
            yield event(&shared.next_post_event_id(), &response);
        }
        if script.end_delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(script.end_delay_ms)).await;
        }
    })
}

/// Headers (and the log event in [`AnswerMode::SseNotifyFirst`]), then nothing, ever.
pub(super) fn hanging(shared: Arc<Shared>, mode: AnswerMode) -> Response {
    respond(stream! {
        if mode == AnswerMode::SseNotifyFirst {
            let notice = mcp::log_notification(BEFORE_THE_ANSWER);
            yield event(&shared.next_post_event_id(), &notice);
        }
        std::future::pending::<()>().await;
    })
}

/// The priming event (an id, `retry: 500`, empty data), then the end of the stream.
pub(super) fn cut(shared: Arc<Shared>, prime_id: String) -> Response {
    respond(stream! {
        yield Bytes::from(format!("id: {prime_id}\nretry: 500\ndata: \n\n"));
        // The body is polled again once the priming event is written: the cut is now.
        shared.mark_cut(&prime_id);
    })
}

/// A GET resuming a cut stream: the held response as one event, then the end of the
/// stream (the spec has a stream end once its response is sent).
pub(super) fn resumed(event_id: String, response: Value) -> Response {
    respond(futures::stream::iter([event(&event_id, &response)]))
}

/// Malformed lines and events, then `response` as event `id`, split over two chunks.
pub(super) fn garbage_then(id: String, response: Value) -> Response {
    let valid = event(&id, &response);
    respond(stream! {
        yield Bytes::from_static(b"\xff\xfe\x80 not utf-8 \xc3\x28\n\n");
        yield Bytes::from_static(b"data: {not json\n\n");
        yield Bytes::from_static(b"data: [1,2]\n\n");
        yield Bytes::from_static(b"fieldwithoutcolon\n\n");
        yield Bytes::from_static(b": a comment\n\n");
        let middle = valid.len() / 2;
        yield valid.slice(..middle);
        // A pause so the two halves arrive in separate reads.
        tokio::time::sleep(Duration::from_millis(20)).await;
        yield valid.slice(middle..);
    })
}

/// One event whose data line is 10 MiB of `x`, then `response` as event `id`.
pub(super) fn huge_event_then(id: String, response: Value) -> Response {
    let filler = Bytes::from(vec![b'x'; HUGE_CHUNK_LEN]);
    respond(stream! {
        yield Bytes::from_static(b"data: ");
        for _ in 0..HUGE_DATA_LEN / HUGE_CHUNK_LEN {
            yield filler.clone();
        }
        yield Bytes::from_static(b"\n\n");
        yield event(&id, &response);
    })
}

/// The shape of a [`GetMode::Stream`](super::GetMode::Stream).
pub(super) struct GetPlan {
    pub(super) events: u64,
    pub(super) then_close: bool,
    pub(super) interval_ms: u64,
}

/// The GET stream of `session`: numbered log events, then either the end or
/// keepalives and pushed messages until the session is gone.
pub(super) fn get_stream(
    shared: Arc<Shared>,
    session: String,
    resume_after: Option<u64>,
    plan: GetPlan,
) -> Response {
    // Subscribed before answering, so no push sent after the GET arrived is lost.
    let mut pushes = shared.pushes.subscribe();
    let mut ended = shared.stream_epoch.subscribe();
    let numbers = &shared.next_get_event;
    let first = match resume_after {
        Some(k) => {
            numbers.fetch_max(k + 1 + plan.events, Ordering::SeqCst);
            k + 1
        }
        None => numbers.fetch_add(plan.events, Ordering::SeqCst),
    };
    respond(stream! {
        for n in first..first + plan.events {
            if n > first {
                tokio::time::sleep(Duration::from_millis(plan.interval_ms)).await;
            }
            if !shared.session_alive(&session) {
                return;
            }
            let id = format!("g-{n}");
            yield event(&id, &mcp::log_notification(&id));
        }
        if plan.then_close {
            return;
        }
        let mut keepalive = tokio::time::interval(Duration::from_secs(1));
        keepalive.tick().await;
        loop {
            let pushed = tokio::select! {
                _ = keepalive.tick() => None,
                pushed = pushes.recv() => Some(pushed),
                _ = ended.changed() => break,
            };
            if !shared.session_alive(&session) {
                break;
            }
            match pushed {
                None => yield Bytes::from_static(KEEPALIVE),
                Some(Ok(message)) => {
                    let n = shared.next_get_event.fetch_add(1, Ordering::SeqCst);
                    yield event(&format!("g-{n}"), &message);
                }
                Some(Err(RecvError::Lagged(_))) => {}
                Some(Err(RecvError::Closed)) => break,
            }
        }
    })
}
