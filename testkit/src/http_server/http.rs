//! The HTTP side: recording, header and session checks, and the answer to each method.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::Value;

use super::mcp::{self, called_tool, error_response, is_request, method_of};
use super::script::{AnswerMode, GetMode, Knob, Script};
use super::{Recorded, Shared, sse};

const SESSION_HEADER: &str = "mcp-session-id";

pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().route("/mcp", any(serve)).with_state(shared)
}

/// Records the request, then answers it by method under the script in force now.
async fn serve(
    State(shared): State<Arc<Shared>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json: Option<Value> = serde_json::from_slice(&body).ok();
    let first = match &json {
        Some(Value::Array(messages)) => messages.first(),
        other => other.as_ref(),
    };
    let script = shared.script();
    // Long runs (the chaos harness) measure memory: their requests are not kept.
    if !script.unrecorded {
        shared.record(recorded(&method, &headers, first, json.clone()));
    }
    match method {
        Method::POST => post(&shared, &script, &headers, json).await,
        Method::GET => {
            if script.slow_get_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(script.slow_get_ms)).await;
            }
            get(&shared, &script, &headers)
        }
        Method::DELETE => delete(&shared, &script, &headers),
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

fn recorded(
    method: &Method,
    headers: &HeaderMap,
    first: Option<&Value>,
    body: Option<Value>,
) -> Recorded {
    Recorded {
        http_method: method.to_string(),
        rpc_method: first.and_then(method_of).map(str::to_string),
        rpc_id: first.and_then(|m| m.get("id")).cloned(),
        body,
        session: header_str(headers, SESSION_HEADER),
        last_event_id: header_str(headers, "last-event-id"),
        accept: header_str(headers, "accept"),
        content_type: header_str(headers, "content-type"),
        authorization: header_str(headers, "authorization"),
        x_api_key: header_str(headers, "x-api-key"),
        protocol_version: header_str(headers, "mcp-protocol-version"),
        at: Instant::now(),
    }
}

async fn post(
    shared: &Arc<Shared>,
    script: &Script,
    headers: &HeaderMap,
    body: Option<Value>,
) -> Response {
    let accept = header_str(headers, "accept").unwrap_or_default();
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        return rpc_failure(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        );
    }
    let content_type = header_str(headers, "content-type").unwrap_or_default();
    if !content_type.starts_with("application/json") {
        return rpc_failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let (messages, batched) = match body {
        Some(Value::Array(messages)) if !messages.is_empty() => (messages, true),
        Some(message @ Value::Object(_)) => (vec![message], false),
        _ => {
            let error = error_response(Value::Null, -32700, "Parse error");
            return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
        }
    };
    let new_session = if messages.iter().any(|m| method_of(m) == Some("initialize")) {
        tokio::time::sleep(std::time::Duration::from_millis(script.slow_initialize_ms)).await;
        Some(shared.new_session())
    } else {
        if let Err(refusal) = check_session(shared, script, headers) {
            return refusal.into_response();
        }
        None
    };
    let cancel_only = messages
        .iter()
        .all(|m| method_of(m) == Some("notifications/cancelled"));
    let requests: Vec<Value> = messages.into_iter().filter(is_request).collect();
    let mut response = if requests.is_empty() {
        if script.hang_notifications || (script.hang_cancels && cancel_only) {
            return std::future::pending().await;
        }
        StatusCode::ACCEPTED.into_response()
    } else {
        answer(shared, script, requests, batched).await
    };
    if let Some(id) = new_session {
        let value = HeaderValue::from_str(&id).expect("session ids are ASCII");
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

/// The answer to a POST's requests: a tool knob's if the POST is that single call,
/// else the script's answer mode.
async fn answer(
    shared: &Arc<Shared>,
    script: &Script,
    requests: Vec<Value>,
    batched: bool,
) -> Response {
    let knob = match requests.as_slice() {
        [single]
            if !batched
                && script.hang_resource_reads
                && method_of(single) == Some("resources/read") =>
        {
            Some(Knob::Hang)
        }
        [single] if !batched => called_tool(single).and_then(|tool| script.knob_for(tool)),
        _ => None,
    };
    let json_mode = matches!(script.answer, AnswerMode::Json | AnswerMode::JsonBatch);
    match knob {
        Some(Knob::FailStatus(status)) => {
            let status = StatusCode::from_u16(status).expect("a valid HTTP status");
            let mut response = (status, "fixture failure").into_response();
            let text = HeaderValue::from_static("text/plain; charset=utf-8");
            response.headers_mut().insert(header::CONTENT_TYPE, text);
            response
        }
        Some(Knob::Hang) if json_mode => std::future::pending().await,
        Some(Knob::Hang) => sse::hanging(shared.clone(), script.answer),
        Some(Knob::Cut) => {
            let response = mcp::respond(script, &requests[0]).await;
            let prime_id = shared.add_cut(response);
            sse::cut(shared.clone(), prime_id)
        }
        Some(Knob::Garbage) => {
            let response = mcp::respond(script, &requests[0]).await;
            sse::garbage_then(shared.next_post_event_id(), response)
        }
        Some(Knob::HugeEvent) => {
            let response = mcp::respond(script, &requests[0]).await;
            sse::huge_event_then(shared.next_post_event_id(), response)
        }
        None if json_mode => {
            let mut out = Vec::with_capacity(requests.len() + 1);
            if script.answer == AnswerMode::JsonBatch {
                out.push(mcp::log_notification("before the answer"));
            }
            for request in &requests {
                out.push(mcp::respond(script, request).await);
            }
            let body = if batched || script.answer == AnswerMode::JsonBatch {
                Value::Array(out)
            } else {
                out.pop().expect("one response")
            };
            axum::Json(body).into_response()
        }
        None => sse::answers(shared.clone(), script.clone(), requests),
    }
}

fn get(shared: &Arc<Shared>, script: &Script, headers: &HeaderMap) -> Response {
    let accept = header_str(headers, "accept").unwrap_or_default();
    if !accept.contains("text/event-stream") {
        return rpc_failure(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    let session = match check_session(shared, script, headers) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let last_event_id = header_str(headers, "last-event-id");
    // A resumption of a cut POST stream is served whatever the GET mode.
    if let Some((event_id, response)) = last_event_id
        .as_deref()
        .and_then(|id| shared.resume_cut(id))
    {
        return sse::resumed(event_id, response);
    }
    match script.get {
        GetMode::NotAllowed => StatusCode::METHOD_NOT_ALLOWED.into_response(),
        GetMode::Conflict => rpc_failure(
            StatusCode::CONFLICT,
            "Conflict: Only one SSE stream is allowed per session",
        ),
        GetMode::Stream {
            events,
            then_close,
            interval_ms,
        } => {
            let resume_after = last_event_id
                .as_deref()
                .and_then(|id| id.strip_prefix("g-"))
                .and_then(|n| n.parse::<u64>().ok());
            sse::get_stream(
                shared.clone(),
                session,
                resume_after,
                sse::GetPlan {
                    events: events as u64,
                    then_close,
                    interval_ms,
                },
            )
        }
        GetMode::RetryThenClose { retry_ms } => (
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            format!("retry: {retry_ms}\n\n"),
        )
            .into_response(),
        GetMode::Redirect(to) => (
            StatusCode::TEMPORARY_REDIRECT,
            [(axum::http::header::LOCATION, to)],
        )
            .into_response(),
    }
}

fn delete(shared: &Arc<Shared>, script: &Script, headers: &HeaderMap) -> Response {
    if script.delete_not_allowed {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    match check_session(shared, script, headers) {
        Ok(session) => {
            shared.forget_session(&session);
            StatusCode::OK.into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// The live session a request names, or why it is refused.
fn check_session(
    shared: &Shared,
    script: &Script,
    headers: &HeaderMap,
) -> Result<String, SessionRefusal> {
    let Some(session) = header_str(headers, SESSION_HEADER) else {
        return Err(SessionRefusal::Missing);
    };
    if shared.session_alive(&session) {
        Ok(session)
    } else if script.dead_session_400 {
        Err(SessionRefusal::DeadAs400)
    } else {
        Err(SessionRefusal::Dead)
    }
}

/// Why a request's session id is refused; answered as real servers do.
enum SessionRefusal {
    /// 400: no `Mcp-Session-Id` header.
    Missing,
    /// 404: an unknown, deleted or expired session.
    Dead,
    /// 400 with a JSON-RPC error, as the TypeScript SDK answers a dead session.
    DeadAs400,
}

impl IntoResponse for SessionRefusal {
    fn into_response(self) -> Response {
        match self {
            SessionRefusal::Missing => rpc_failure(
                StatusCode::BAD_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            ),
            SessionRefusal::Dead => {
                let error = error_response(Value::Null, -32001, "Session not found");
                (StatusCode::NOT_FOUND, axum::Json(error)).into_response()
            }
            SessionRefusal::DeadAs400 => rpc_failure(
                StatusCode::BAD_REQUEST,
                "Bad Request: No valid session ID provided",
            ),
        }
    }
}

/// A transport-level refusal with a JSON-RPC error body, as the TypeScript SDK sends.
fn rpc_failure(status: StatusCode, message: &str) -> Response {
    let error = error_response(Value::Null, -32000, message);
    (status, axum::Json(error)).into_response()
}

/// A header's value; repeated lines joined with ", " as HTTP lists are.
fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<_> = headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}
