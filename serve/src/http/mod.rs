//! `serve --http`: Streamable HTTP (MCP 2025-03-26, server side) on axum.
//!
//! POST carries client messages: notifications and answers get `202`; a
//! request gets its answer as JSON, or as an SSE stream when progress (or
//! another message) comes before it, or the body was a batch. GET opens the
//! session's stream of unsolicited messages (`list_changed`, logs); DELETE
//! ends the session. Every request passes the DNS-rebinding checks and, when
//! configured, the bearer token before anything else is read.

mod answer;
mod guard;
mod sessions;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use mcpvisor_protocol::jsonrpc::{Incoming, Message, error_codes};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub use guard::{BearerToken, TokenFileError, is_loopback};

use crate::gateway::Gateway;
use crate::lines::parse_error;
use crate::reach::Reach;
use crate::session::{Session, error_message};
use crate::tools::Naming;
use answer::{answer, answer_one, json_body, sse_event};
use guard::Refusal;
use sessions::{HttpSession, Sessions, Touching};

/// The session header.
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Settings of the HTTP endpoint.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Sessions open at once; more are refused with `503`.
    pub max_sessions: usize,
    /// Largest request body; larger ones get `413`.
    pub max_body: usize,
    /// A session with no request, no call in flight and no GET stream for this
    /// long is closed; its id then gets `404`.
    pub idle: Duration,
    /// Required as `Authorization: Bearer …` when set (always, off loopback).
    pub token: Option<BearerToken>,
    /// Origins accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Tool names for HTTP sessions.
    pub naming: Naming,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_sessions: 64,
            max_body: 4 * 1024 * 1024,
            idle: Duration::from_secs(30 * 60),
            token: None,
            allowed_origins: Vec::new(),
            naming: Naming::Qualified,
        }
    }
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback address without a token.
    #[error(
        "{0} is not a loopback address: serving it needs --token-file (a 0600 file holding a bearer token)"
    )]
    TokenRequired(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

struct Endpoint {
    gateway: Arc<Gateway>,
    sessions: Sessions,
    options: HttpOptions,
    loopback: bool,
}

/// A bound HTTP endpoint, not yet serving. Bind before starting the servers,
/// so a bad address costs nothing.
pub struct HttpEndpoint {
    listener: TcpListener,
    options: HttpOptions,
    loopback: bool,
}

impl HttpEndpoint {
    /// Binds `addr`; refuses a non-loopback address without a token.
    pub async fn bind(addr: SocketAddr, options: HttpOptions) -> Result<HttpEndpoint, HttpError> {
        let loopback = is_loopback(&addr);
        if !loopback && options.token.is_none() {
            return Err(HttpError::TokenRequired(addr));
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        Ok(HttpEndpoint {
            listener,
            options,
            loopback,
        })
    }

    /// The bound address (the port, when 0 was asked).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `gateway` until it stops; then closes every session.
    pub async fn serve(self, gateway: Arc<Gateway>) -> std::io::Result<()> {
        let endpoint = Arc::new(Endpoint {
            sessions: Sessions::new(self.options.max_sessions),
            gateway,
            options: self.options,
            loopback: self.loopback,
        });
        let router = axum::Router::new()
            .route("/mcp", post(on_post).get(on_get).delete(on_delete))
            .with_state(endpoint.clone());
        let reaper = tokio::spawn(reap(endpoint.clone()));
        let gateway = endpoint.gateway.clone();
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { gateway.stopped().await })
            .await;
        reaper.abort();
        endpoint.sessions.close_all();
        served
    }
}

/// Closes idle sessions, checking a few times per idle period.
async fn reap(endpoint: Arc<Endpoint>) {
    let idle = endpoint.options.idle;
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let closed = endpoint.sessions.expire(idle);
        if closed > 0 {
            tracing::info!(closed, "idle HTTP sessions expired");
        }
    }
}

/// A request turned away before it reached a session: its status and a
/// JSON-RPC error body, so every refusal reads the same way.
struct Refused(StatusCode, i64, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        refuse(self.0, self.1, self.2)
    }
}

/// A JSON-RPC error as a whole HTTP answer.
fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    let body = error_message(None, code, message).to_vec();
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
    response
}

fn admit(endpoint: &Endpoint, headers: &HeaderMap) -> Result<(), Refused> {
    guard::check(
        headers,
        endpoint.loopback,
        &endpoint.options.allowed_origins,
        endpoint.options.token.as_ref(),
    )
    .map_err(|refusal| {
        let (status, message) = match refusal {
            Refusal::Host => (
                StatusCode::FORBIDDEN,
                "Host header does not name this machine (DNS rebinding protection)",
            ),
            Refusal::Origin => (
                StatusCode::FORBIDDEN,
                "Origin not allowed (add it with --allow-origin)",
            ),
            Refusal::Token => (StatusCode::UNAUTHORIZED, "a valid bearer token is required"),
        };
        Refused(status, -32000, message.into())
    })
}

fn session_of(endpoint: &Endpoint, headers: &HeaderMap) -> Result<Arc<HttpSession>, Refused> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err(Refused(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            "Mcp-Session-Id header is required (send initialize first)".into(),
        ));
    };
    let session = endpoint.sessions.get(id).ok_or_else(|| {
        Refused(
            StatusCode::NOT_FOUND,
            -32001,
            "session not found (it ended or expired); initialize a new one".into(),
        )
    })?;
    session.touch();
    Ok(session)
}

/// What the session's revision asks of a request: an `MCP-Protocol-Version`
/// header, when sent, names it; no batch where the revision has none.
fn speaks(session: &HttpSession, headers: &HeaderMap, batch: bool) -> Result<(), Refused> {
    let revision = session.session.revision();
    if let Some(sent) = headers
        .get(VERSION_HEADER)
        .filter(|_| revision.rules().version_header)
    {
        let sent = sent.to_str().unwrap_or("");
        if sent != revision.as_str() {
            return Err(Refused(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                format!(
                    "MCP-Protocol-Version {:?} is not this session's revision ({revision})",
                    sent.chars().take(40).collect::<String>()
                ),
            ));
        }
    }
    if batch && !revision.rules().batches {
        return Err(Refused(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            format!("protocol {revision} has no JSON-RPC batches; send one message per request"),
        ));
    }
    Ok(())
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
}

async fn on_post(
    State(endpoint): State<Arc<Endpoint>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(refusal) = admit(&endpoint, &headers) {
        return refusal.into_response();
    }
    let limit = endpoint.options.max_body;
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            error_codes::INVALID_REQUEST,
            format!("request body larger than {limit} bytes"),
        );
    };
    let (mut messages, batch) = match Message::parse(&bytes) {
        Ok(Incoming::Single(m)) => (vec![m], false),
        // A batch holds no more than a session may have in flight, so its
        // refusals always fit the answer channel.
        Ok(Incoming::Batch(items)) if items.len() > endpoint.gateway.options().max_in_flight => {
            let limit = endpoint.gateway.options().max_in_flight;
            return refuse(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                format!("a batch may hold at most {limit} messages"),
            );
        }
        Ok(Incoming::Batch(items)) => match items.into_iter().collect::<Result<Vec<_>, _>>() {
            Ok(messages) => (messages, true),
            Err(e) => {
                return (StatusCode::BAD_REQUEST, json_body(parse_error(&e))).into_response();
            }
        },
        Err(e) => return (StatusCode::BAD_REQUEST, json_body(parse_error(&e))).into_response(),
    };
    let initialize = messages
        .iter()
        .any(|m| matches!(m, Message::Request(r) if r.method == "initialize"));
    let (session_id, session) = if initialize {
        if messages.len() != 1 {
            return refuse(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                "initialize must be sent alone",
            );
        }
        if headers.contains_key(SESSION_HEADER) {
            return refuse(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                "initialize opens a new session: send it without Mcp-Session-Id",
            );
        }
        // A malformed initialize opens no session (it would hold a slot until it expired).
        let versioned = matches!(&messages[0], Message::Request(r)
            if r.params.as_ref().and_then(|p| p.get("protocolVersion")).is_some_and(|v| v.is_string()));
        if !versioned {
            return refuse(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_PARAMS,
                "initialize needs a string `protocolVersion`",
            );
        }
        let gateway = endpoint.gateway.clone();
        let naming = endpoint.options.naming;
        let queue = gateway.options().outbound_queue;
        // With a token required, every request of the session presented it.
        let reach = Reach::Http {
            token: endpoint.options.token.is_some(),
        };
        match endpoint
            .sessions
            .insert(|tx| Session::open(gateway, naming, reach, tx), queue)
        {
            Ok((id, session)) => (Some(id), session),
            Err(full) => {
                return refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    -32000,
                    format!(
                        "{} sessions are open, the limit; close one (DELETE) or wait for one to expire",
                        full.limit
                    ),
                );
            }
        }
    } else {
        match session_of(&endpoint, &headers) {
            Ok(session) => {
                if let Err(refusal) = speaks(&session, &headers, batch) {
                    return refusal.into_response();
                }
                (None, session)
            }
            Err(refusal) => return refusal.into_response(),
        }
    };
    let requests = messages
        .iter()
        .filter(|m| matches!(m, Message::Request(_)))
        .count();
    let (tx, rx) = mpsc::channel(endpoint.gateway.options().outbound_queue);
    let sse = accepts_sse(&headers);
    let mut response = match messages.pop() {
        // The common case, one request: answered in this handler's own future,
        // without a task or a channel between the call and the response.
        Some(Message::Request(request)) if !batch => {
            let answering = session.session.answer_inline(request, tx.clone());
            answer_one(answering, tx, rx, sse, Touching(session.clone())).await
        }
        last => {
            for message in messages.into_iter().chain(last) {
                if let Some(refusal) = session.session.receive(message, &tx) {
                    let _ = tx.try_send(refusal);
                }
            }
            drop(tx);
            if requests == 0 {
                StatusCode::ACCEPTED.into_response()
            } else {
                answer(rx, requests, batch, sse, Touching(session.clone())).await
            }
        }
    };
    if let Some(id) = session_id
        && let Ok(value) = HeaderValue::from_str(&id)
    {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

async fn on_get(State(endpoint): State<Arc<Endpoint>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = admit(&endpoint, &headers) {
        return refusal.into_response();
    }
    let session = match session_of(&endpoint, &headers) {
        Ok(s) => s,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = speaks(&session, &headers, false) {
        return refusal.into_response();
    }
    if !accepts_sse(&headers) {
        return refuse(
            StatusCode::NOT_ACCEPTABLE,
            error_codes::INVALID_REQUEST,
            "the GET stream is text/event-stream; accept it",
        );
    }
    let Ok(mut notices) = session.notices.clone().try_lock_owned() else {
        return refuse(
            StatusCode::CONFLICT,
            error_codes::INVALID_REQUEST,
            "this session already has a GET stream open",
        );
    };
    let gateway = endpoint.gateway.clone();
    let stream = async_stream::stream! {
        let touching = Touching(session);
        loop {
            let message = tokio::select! {
                m = notices.recv() => m,
                () = touching.0.ended() => None,
                () = gateway.stopped() => None,
            };
            match message {
                Some(m) => yield Ok::<Event, Infallible>(sse_event(&m)),
                None => break,
            }
        }
    };
    Sse::new(stream.boxed())
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

async fn on_delete(State(endpoint): State<Arc<Endpoint>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = admit(&endpoint, &headers) {
        return refusal.into_response();
    }
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            "Mcp-Session-Id header is required",
        );
    };
    // A DELETE naming another revision than the session's is refused like any request.
    if let Some(session) = endpoint.sessions.get(id) {
        if let Err(refusal) = speaks(&session, &headers, false) {
            return refusal.into_response();
        }
    }
    if endpoint.sessions.remove(id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        refuse(
            StatusCode::NOT_FOUND,
            -32001,
            "session not found (it ended or expired)",
        )
    }
}
