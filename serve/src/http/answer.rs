//! How the answers to one POST go back: plain JSON when that is all there
//! is, else an SSE stream of the related messages ending with the answers.

use std::convert::Infallible;
use std::future::Future;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mcpvisor_protocol::wire::jsonrpc::Message;
use tokio::sync::mpsc;

/// Answers a POST's one request: JSON when the answer comes before any other
/// message (or the client takes no SSE), else an SSE stream of the request's
/// progress that ends with its answer. `replies` is the request's progress
/// channel (held so that it stays open while the answer is awaited).
pub(super) async fn answer_one(
    answering: impl Future<Output = Option<Message>> + Send + 'static,
    replies: mpsc::Sender<Message>,
    mut rx: mpsc::Receiver<Message>,
    sse: bool,
    until_done: impl Send + 'static,
    status: fn(&Message) -> StatusCode,
) -> Response {
    let mut answering = Box::pin(answering);
    let first = if sse {
        tokio::select! {
            biased;
            answer = &mut answering => Err(answer),
            first = rx.recv() => Ok(first),
        }
    } else {
        Err(answering.as_mut().await)
    };
    let first = match first {
        // Answered before anything else was sent: plain JSON (progress that
        // raced the answer is dropped, as progress may be).
        Err(Some(answer)) if rx.is_empty() || !sse => {
            return (status(&answer), json_body(answer)).into_response();
        }
        Err(Some(answer)) => {
            let mut pending: Vec<Message> = Vec::new();
            while let Ok(m) = rx.try_recv() {
                pending.push(m);
            }
            pending.push(answer);
            let stream =
                futures::stream::iter(pending).map(|m| Ok::<Event, Infallible>(sse_event(&m)));
            return Sse::new(stream).into_response();
        }
        // Cancelled, or the session closed.
        Err(None) => return StatusCode::ACCEPTED.into_response(),
        Ok(first) => first,
    };
    let stream = async_stream::stream! {
        let _replies = replies;
        let _until_done = until_done;
        if let Some(first) = first {
            yield Ok::<Event, Infallible>(sse_event(&first));
        }
        loop {
            tokio::select! {
                biased;
                m = rx.recv() => match m {
                    Some(m) => yield Ok(sse_event(&m)),
                    None => break,
                },
                answer = &mut answering => {
                    while let Ok(m) = rx.try_recv() {
                        yield Ok(sse_event(&m));
                    }
                    if let Some(answer) = answer {
                        yield Ok(sse_event(&answer));
                    }
                    break;
                }
            }
        }
    };
    Sse::new(stream).into_response()
}

/// Answers the requests of one POST from `rx`: JSON when the only message is
/// the one answer (or the client takes no SSE), else an SSE stream that ends
/// after the last answer.
pub(super) async fn answer(
    mut rx: mpsc::Receiver<Message>,
    requests: usize,
    batch: bool,
    sse: bool,
    until_done: impl Send + 'static,
) -> Response {
    let is_answer = |m: &Message| matches!(m, Message::Response(_) | Message::Error(_));
    if !sse {
        let mut answers = Vec::with_capacity(requests);
        while answers.len() < requests {
            match rx.recv().await {
                Some(m) if is_answer(&m) => answers.push(m),
                Some(_) => {}
                None => break,
            }
        }
        return match (batch, answers.len()) {
            (_, 0) => StatusCode::ACCEPTED.into_response(),
            (false, _) => json_body(answers.remove(0)).into_response(),
            (true, _) => {
                let items: Vec<serde_json::Value> = answers
                    .iter()
                    .filter_map(|m| serde_json::from_slice(&m.to_vec()).ok())
                    .collect();
                let mut r = serde_json::to_vec(&items)
                    .unwrap_or_default()
                    .into_response();
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                r
            }
        };
    }
    let first = rx.recv().await;
    let Some(first) = first else {
        // Every request was cancelled before answering.
        return StatusCode::ACCEPTED.into_response();
    };
    if !batch && is_answer(&first) {
        return json_body(first).into_response();
    }
    let stream = async_stream::stream! {
        let _until_done = until_done;
        let mut left = requests;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            if is_answer(&message) {
                left -= 1;
            }
            yield Ok::<Event, Infallible>(sse_event(&message));
            if left == 0 {
                break;
            }
            next = rx.recv().await;
        }
    };
    Sse::new(stream).into_response()
}

pub(super) fn sse_event(message: &Message) -> Event {
    let data = String::from_utf8(message.to_vec()).unwrap_or_default();
    Event::default().event("message").data(data)
}

pub(super) fn json_body(message: Message) -> Response {
    let mut r = message.to_vec().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}
