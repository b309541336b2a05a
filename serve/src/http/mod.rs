//! `serve --http`: Streamable HTTP (MCP 2025-03-26, server side) on axum.
//!
//! POST carries client messages: notifications and answers get `202`; a
//! request gets its answer as JSON, or as an SSE stream when progress (or
//! another message) comes before it, or the body was a batch. GET opens the
//! session's stream of unsolicited messages (`list_changed`, logs); DELETE
//! ends the session. Every request passes the DNS-rebinding checks and, when
//! configured, the bearer token before anything else is read: these, the
//! media types, the named session and the body's bounds are the router's
//! layers (`layers.rs`), not steps each handler must remember.

mod answer;
mod guard;
mod layers;
mod listen;
mod relay;
mod screen;
mod sessions;
mod stateless_post;
mod token;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use mcpvisor_protocol::wire::jsonrpc::{Message, error_codes};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub use guard::is_loopback;
pub use token::{BearerToken, TokenFileError};

use crate::gateway::Gateway;
use crate::ingress::Ingress;
use crate::session::{Session, error_message};
use crate::tools::Naming;
use answer::{answer, answer_one, sse_event};
use layers::{Named, ReadBody};
use screen::{Parsed, Refused, refuse};
pub use screen::{ScreenLimits, Screened, screen_post};
use sessions::{HttpSession, Sessions, Touching};

/// The session header.
// Names, not strings: a string is parsed into a name at every lookup.
const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

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
    /// The token is the cluster's, shared by every node (`--token-file`): a
    /// request another node must answer may be passed on to it with this
    /// token. Without it (a token made for this node alone) nothing is
    /// passed on, so no node ever holds another's own token.
    pub shared_token: bool,
    /// Origins accepted besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Tool names for HTTP sessions.
    pub naming: Naming,
    /// Connections open at once; more are closed as they are accepted.
    pub max_connections: usize,
    /// A request's line and headers must arrive within this long (counted
    /// from when the connection is ready for a request, so a connection
    /// silent this long is closed).
    pub header_timeout: Duration,
    /// A request's body must arrive whole within this long (`408` otherwise).
    pub body_timeout: Duration,
    /// A write to a client that makes no progress this long (it stopped
    /// reading) ends the connection.
    pub write_timeout: Duration,
    /// Bytes of request bodies being read at once, over all connections; a
    /// body that does not fit waits (up to `body_timeout`), then gets `503`.
    pub body_budget: usize,
    /// A session that has not sent `notifications/initialized` this long
    /// after `initialize`, with nothing in flight, is closed.
    pub init_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_sessions: 64,
            max_body: 4 * 1024 * 1024,
            idle: Duration::from_secs(30 * 60),
            token: None,
            shared_token: false,
            allowed_origins: Vec::new(),
            naming: Naming::Qualified,
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            body_budget: 64 * 1024 * 1024,
            init_timeout: Duration::from_secs(10),
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
    /// The port bound: an Origin on another loopback port is another site.
    port: u16,
    /// Bytes of bodies being read now (see [`HttpOptions::body_budget`]).
    bodies: tokio::sync::Semaphore,
    /// Where requests go that another node of the cluster must answer
    /// (none when the token is not the cluster's, or no client could be made).
    relay_client: Option<reqwest::Client>,
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
        let port = self.listener.local_addr()?.port();
        let relay_client = relay::client(&self.options);
        let endpoint = Arc::new(Endpoint {
            sessions: Sessions::new(self.options.max_sessions),
            gateway,
            bodies: tokio::sync::Semaphore::new(
                self.options
                    .body_budget
                    .clamp(self.options.max_body, tokio::sync::Semaphore::MAX_PERMITS),
            ),
            options: self.options,
            loopback: self.loopback,
            port,
            relay_client,
        });
        let router = router(endpoint.clone());
        let reaper = tokio::spawn(reap(endpoint.clone()));
        let gateway = endpoint.gateway.clone();
        let limits = listen::Accepting {
            max_connections: endpoint.options.max_connections,
            header_timeout: endpoint.options.header_timeout,
            write_timeout: endpoint.options.write_timeout,
        };
        let stopped = async move { gateway.stopped().await };
        let served = listen::serve(
            self.listener,
            router,
            limits,
            stopped,
            Duration::from_secs(3),
        )
        .await;
        reaper.abort();
        endpoint.sessions.close_all();
        served
    }
}

/// The endpoint's router: [`routes`] inside the door, which wraps every
/// route and fallback `routes` returns (an axum layer wraps only what exists
/// when it is added, so no route may be added here, after it).
fn router(endpoint: Arc<Endpoint>) -> axum::Router {
    routes(endpoint.clone())
        .layer(from_fn_with_state(endpoint.clone(), layers::door))
        .with_state(endpoint)
}

/// Every route, each with the checks of its method as route layers (which,
/// unlike `layer`, leave the 405 for a method not routed to the door alone).
fn routes(endpoint: Arc<Endpoint>) -> axum::Router<Arc<Endpoint>> {
    let state = || endpoint.clone();
    let posts = post(on_post)
        .route_layer(from_fn_with_state(state(), layers::bounded_body))
        .route_layer(from_fn_with_state(state(), layers::named_session))
        .route_layer(from_fn(layers::json_media));
    let others = get(on_get)
        .delete(on_delete)
        .route_layer(from_fn_with_state(state(), layers::named_session));
    axum::Router::new().route("/mcp", posts.merge(others))
}

/// Closes idle sessions, checking a few times per idle period, and sessions
/// that never finished initializing (a slot taken and never used).
async fn reap(endpoint: Arc<Endpoint>) {
    let (idle, init) = (endpoint.options.idle, endpoint.options.init_timeout);
    let every = (idle.min(init) / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let closed = endpoint.sessions.expire(idle, init);
        if closed > 0 {
            tracing::info!(closed, "idle or never-initialized HTTP sessions expired");
        }
    }
}

/// What the session's revision asks of a request: an `MCP-Protocol-Version`
/// header, when sent, names it; no batch where the revision has none.
fn speaks(session: &HttpSession, headers: &HeaderMap, batch: bool) -> Result<(), Refused> {
    let revision = session.session.revision();
    if let Some(sent) = headers
        .get(&VERSION_HEADER)
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

/// The id of the one request a body held, which a refusal answers.
fn request_id(messages: &[Message], batch: bool) -> Option<mcpvisor_protocol::RequestId> {
    match messages {
        [Message::Request(r)] if !batch => Some(r.id.clone()),
        _ => None,
    }
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
    Named(named): Named,
    headers: HeaderMap,
    ReadBody(bytes): ReadBody,
) -> Response {
    let named = named.map(|(_, session)| session);
    let max_batch = endpoint.gateway.options().max_in_flight;
    let Parsed {
        mut messages,
        batch,
        initialize,
    } = match screen::parse(&bytes, max_batch, named.is_some()) {
        Ok(parsed) => parsed,
        Err(refusal) => return refusal.into_response(),
    };
    // The messages own what they hold; the body's bytes can go now.
    drop(bytes);

    let (session_id, session) = if initialize {
        // An initialize the session would refuse opens none (it would hold a
        // slot, and its id would go back with the error).
        if let Some(Message::Request(request)) = messages.first()
            && let Err(why) = crate::handshake::initialize_params(
                request.params.as_ref(),
                &endpoint.gateway.options().protocol_versions,
            )
        {
            let refusal = error_message(Some(request.id.clone()), error_codes::INVALID_PARAMS, why);
            return (StatusCode::BAD_REQUEST, answer::json_body(refusal)).into_response();
        }
        let gateway = endpoint.gateway.clone();
        let naming = endpoint.options.naming;
        let queue = gateway.options().outbound_queue;
        // With a token required, every request of the session presented it.
        let ingress = Ingress::Http {
            token: endpoint.options.token.is_some(),
        };
        match endpoint
            .sessions
            .insert(|tx| Session::open(gateway, naming, ingress, tx), queue)
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
        let Some(session) = named else {
            if stateless_post::is_stateless(&headers, &messages) {
                return stateless_post::answer(&endpoint, &headers, messages, batch).await;
            }
            return Refused(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                "Mcp-Session-Id header is required (send initialize first; or, at protocol 2026-07-28, name the version in `_meta` and the MCP-Protocol-Version header)".into(),
            )
            .answering(request_id(&messages, batch));
        };
        if let Err(refusal) = speaks(&session, &headers, batch) {
            return refusal.answering(request_id(&messages, batch));
        }
        (None, session)
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
            let ok = |_: &Message| StatusCode::OK;
            answer_one(answering, tx, rx, sse, Touching(session.clone()), ok).await
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

async fn on_get(
    State(endpoint): State<Arc<Endpoint>>,
    named: Named,
    headers: HeaderMap,
) -> Response {
    let session = match named.required(&headers) {
        Ok((_, session)) => session,
        Err(refusal) => return *refusal,
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

async fn on_delete(
    State(endpoint): State<Arc<Endpoint>>,
    named: Named,
    headers: HeaderMap,
) -> Response {
    let (id, session) = match named.required(&headers) {
        Ok(named) => named,
        Err(refusal) => return *refusal,
    };
    // A DELETE naming another revision than the session's is refused like any request.
    if let Err(refusal) = speaks(&session, &headers, false) {
        return refusal.into_response();
    }
    if endpoint.sessions.remove(&id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        refuse(
            StatusCode::NOT_FOUND,
            -32001,
            "session not found (it ended or expired)",
        )
    }
}
