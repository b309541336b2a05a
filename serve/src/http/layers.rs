//! The checks a request passes before a handler sees it, as layers of the
//! router, so a route added to it gets them too:
//!
//! - every request, on any path and any method: the door ([`door`]) — the
//!   `Host` and `Origin` (DNS rebinding), the request target's authority, and
//!   the bearer token when one is set;
//! - a POST to `/mcp`: JSON media types ([`json_media`]), then the session it
//!   names ([`named_session`]) before its body is read, then the body, bounded
//!   in size, in time and in the bytes all bodies may take at once
//!   ([`bounded_body`]);
//! - a GET or DELETE of `/mcp`: the session it names (route layers: a method
//!   `/mcp` does not route gets its `405` past the door alone).
//!
//! What a layer found reaches the handler as an extractor ([`Named`],
//! [`ReadBody`]) taken out of the request's extensions: a handler on a route
//! without the layer fails with `500` on its first request instead of
//! skipping the check.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mcpvisor_protocol::wire::jsonrpc::error_codes;

use super::guard::{self, Admission};
use super::listen;
use super::screen::{self, Refused};
use super::sessions::HttpSession;
use super::{Endpoint, SESSION_HEADER};

/// Every request: the door checks, before anything else is read.
pub(super) async fn door(
    State(endpoint): State<Arc<Endpoint>>,
    request: Request,
    next: Next,
) -> Response {
    let admission = Admission {
        loopback: endpoint.loopback,
        port: endpoint.port,
        allowed_origins: &endpoint.options.allowed_origins,
        token: endpoint.options.token.as_ref(),
    };
    let headers = request.headers();
    if let Err(refusal) = guard::check(headers, &admission) {
        return screen::turned_away(refusal).into_response();
    }
    // `POST http://other/mcp` with `Host: localhost`: the target's authority
    // is the one HTTP/1.1 says counts, so it must agree with the checked one.
    if let Some(target) = request.uri().authority()
        && headers.get(header::HOST).is_none_or(|h| {
            !h.as_bytes()
                .eq_ignore_ascii_case(target.as_str().as_bytes())
        })
    {
        return screen::turned_away(guard::Refusal::Host).into_response();
    }
    if let Some(connection) = request.extensions().get::<Arc<listen::Admitted>>() {
        connection.passed();
    }
    next.run(request).await
}

/// A POST: a JSON body, and an `Accept` listing both answer forms.
pub(super) async fn json_media(request: Request, next: Next) -> Response {
    match screen::posted_json(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// The session a request names (`Mcp-Session-Id`), if it names one.
#[derive(Clone)]
pub(super) struct Named(pub(super) Option<(String, Arc<HttpSession>)>);

impl Named {
    /// The session a GET or DELETE addresses. Without one there is nothing
    /// to address. A client of a session era (its `MCP-Protocol-Version`
    /// names a 2025 revision) forgot its session: `400`, as those revisions
    /// answer a request without one. Otherwise `405`, which is what 2026-07-28
    /// (no sessions, no GET stream) answers both methods with.
    pub(super) fn required(
        self,
        headers: &HeaderMap,
    ) -> Result<(String, Arc<HttpSession>), Box<Response>> {
        self.0.ok_or_else(|| Box::new(no_session(headers)))
    }
}

/// The answer to a GET or DELETE that names no session (see [`Named::required`]).
fn no_session(headers: &HeaderMap) -> Response {
    let session_era = headers
        .get(super::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mcpvisor_protocol::mcp::revision::Revision>().ok())
        .is_some_and(|r| r.initializes());
    if session_era {
        return screen::refuse(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            "GET and DELETE address a session: send the Mcp-Session-Id `initialize` gave",
        );
    }
    let mut refused = screen::refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        error_codes::INVALID_REQUEST,
        "GET and DELETE address a session: send Mcp-Session-Id (from `initialize`); \
             protocol 2026-07-28 has no sessions, only POST",
    );
    refused
        .headers_mut()
        .insert(header::ALLOW, axum::http::HeaderValue::from_static("POST"));
    refused
}

/// The session the request names: one that is not there (it ended or
/// expired) is answered `404` before the body is read; one that is is marked
/// as seen.
pub(super) async fn named_session(
    State(endpoint): State<Arc<Endpoint>>,
    mut request: Request,
    next: Next,
) -> Response {
    let named = match request.headers().get(&SESSION_HEADER) {
        None => None,
        Some(value) => {
            let found = value
                .to_str()
                .ok()
                .and_then(|id| Some((id.to_string(), endpoint.sessions.get(id)?)));
            let Some((id, session)) = found else {
                return Refused(
                    StatusCode::NOT_FOUND,
                    -32001,
                    "session not found (it ended or expired); initialize a new one".into(),
                )
                .into_response();
            };
            session.touch();
            Some((id, session))
        }
    };
    request.extensions_mut().insert(Named(named));
    next.run(request).await
}

/// A POST's body, read whole by [`bounded_body`].
#[derive(Clone)]
pub(super) struct ReadBody(pub(super) Bytes);

/// Reads a POST's body: refused at once when it says it is too large,
/// bounded in size and in time, and counted against the bytes all bodies
/// being read may take together. The handler gets it as [`ReadBody`].
pub(super) async fn bounded_body(
    State(endpoint): State<Arc<Endpoint>>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    match read(&endpoint, &parts.headers, body).await {
        Ok(bytes) => {
            parts.extensions.insert(ReadBody(bytes));
            next.run(Request::from_parts(parts, Body::empty())).await
        }
        Err(refusal) => refusal.into_response(),
    }
}

async fn read(endpoint: &Endpoint, headers: &HeaderMap, body: Body) -> Result<Bytes, Refused> {
    let limit = endpoint.options.max_body;
    let too_large = || screen::too_large(limit);
    let expected = match screen::declared_length(headers, limit) {
        Ok(n) => n,
        Err(refusal) => {
            // A body a little over the limit is read and dropped (never
            // kept), so its client gets the 413 instead of a reset; a larger
            // one is not read at all.
            let declared = headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            if declared.is_some_and(|n| n <= 2 * limit as u64) {
                let mut chunks = body.into_data_stream();
                let drained = async { while let Some(Ok(_)) = chunks.next().await {} };
                let _ = tokio::time::timeout(endpoint.options.body_timeout, drained).await;
            }
            return Err(refusal);
        }
    };
    let deadline = tokio::time::Instant::now() + endpoint.options.body_timeout;
    let permits = u32::try_from(expected.max(1)).unwrap_or(u32::MAX);
    let busy = || {
        Refused(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            "too many request bodies are being read; try again".into(),
        )
    };
    let _budget = tokio::time::timeout_at(deadline, endpoint.bodies.acquire_many(permits))
        .await
        .map_err(|_| busy())?
        .map_err(|_| busy())?;
    match tokio::time::timeout_at(deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(too_large()),
        Err(_) => Err(Refused(
            StatusCode::REQUEST_TIMEOUT,
            error_codes::INVALID_REQUEST,
            format!(
                "the request body did not arrive within {}s",
                endpoint.options.body_timeout.as_secs_f64()
            ),
        )),
    }
}

/// A route whose layer is missing: a fault of the router, not the client's.
fn unlayered(what: &str) -> Refused {
    tracing::error!(what, "an HTTP route is missing one of its layers");
    Refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        error_codes::INTERNAL_ERROR,
        format!("this route does not check {what}"),
    )
}

impl<S: Send + Sync> FromRequestParts<S> for Named {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Named, Refused> {
        parts
            .extensions
            .remove::<Named>()
            .ok_or_else(|| unlayered("the session it names"))
    }
}

impl<S: Send + Sync> FromRequest<S> for ReadBody {
    type Rejection = Refused;

    async fn from_request(mut request: Request, _: &S) -> Result<ReadBody, Refused> {
        request
            .extensions_mut()
            .remove::<ReadBody>()
            .ok_or_else(|| unlayered("its body's size"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use tower::ServiceExt;

    /// A handler on a route that lacks the layers fails closed.
    #[tokio::test]
    async fn a_route_without_its_layers_refuses_instead_of_skipping_the_checks() {
        let router = axum::Router::new()
            .route(
                "/body",
                post(|ReadBody(bytes): ReadBody| async move { bytes.len().to_string() }),
            )
            .route(
                "/named",
                post(|named: Named| async move { named.0.is_some().to_string() }),
            );
        for path in ["/body", "/named"] {
            let request = Request::post(path).body(Body::from("{}")).unwrap();
            let answer = router.clone().oneshot(request).await.unwrap();
            assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        }
    }
}
