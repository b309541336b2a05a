//! Streamable HTTP at a stateless revision (2026-07-28): each message is one
//! POST with the headers mirrored from its body and no session; an answer
//! stream that ends early is not resumed (the revision has no
//! `Last-Event-ID`); a JSON-RPC error in the body of a refusal (400 with
//! -32020, -32021 or -32022, 404 with -32601) is the request's answer, so
//! what reaches the server's era logic is the error, not a status.

use bytes::Bytes;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::route_headers::{PARAM_HEADER_PREFIX, RouteHeaders};
use mcpvisor_protocol::wire::jsonrpc::ErrorResponse;
use mcpvisor_protocol::{Incoming, Message, RequestId};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::body::{EXCERPT, read_bounded};
use super::{Shared, VERSION_HEADER};
use crate::error::TransportError;
use crate::event::{TransportEvent, TransportSink};

const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// The most of a refusal's body read for its JSON-RPC error.
const REFUSAL_LIMIT: usize = 64 * 1024;

/// Whether a message at a stateless revision is sent at all: over HTTP a
/// cancellation is the closed answer stream, never `notifications/cancelled`.
pub(crate) fn is_sent(route: &RouteHeaders) -> bool {
    route.method != methods::CANCELLED
}

/// `route`'s headers, as they go on the wire.
pub(crate) fn route_headers(route: &RouteHeaders) -> Result<HeaderMap, TransportError> {
    let value = |v: &str, what: &str| {
        HeaderValue::from_str(v)
            .map_err(|_| TransportError::Http(format!("the {what} header value cannot be sent")))
    };
    let mut map = HeaderMap::with_capacity(3 + route.params.len());
    map.insert(
        VERSION_HEADER,
        HeaderValue::from_static(route.version.as_str()),
    );
    map.insert(METHOD_HEADER, value(&route.method, "Mcp-Method")?);
    if let Some(name) = &route.name {
        // A resource URI may hold a credential in its query.
        let mut name = value(name, "Mcp-Name")?;
        name.set_sensitive(true);
        map.insert(NAME_HEADER, name);
    }
    for (name, text) in &route.params {
        let header = HeaderName::from_bytes(format!("{PARAM_HEADER_PREFIX}{name}").as_bytes())
            .map_err(|_| TransportError::Http("an Mcp-Param header name cannot be sent".into()))?;
        let mut text = value(text, "Mcp-Param")?;
        // What a caller passed: kept out of header tables and debug output.
        text.set_sensitive(true);
        map.insert(header, text);
    }
    Ok(map)
}

/// A stateless request was refused with `resp`: a JSON-RPC error in its
/// body is delivered as the request's answer (under the request's id, which
/// a server that could not read it gives as null); anything else is the
/// status, as at a dated revision.
pub(crate) async fn refused<S: TransportSink>(
    sink: &S,
    resp: reqwest::Response,
    id: &RequestId,
) -> Result<(), TransportError> {
    let status = resp.status().as_u16();
    let body = read_bounded(resp, REFUSAL_LIMIT)
        .await
        .map_err(|_| TransportError::HttpStatus {
            status,
            body: String::new(),
        })?;
    match error_of(&body) {
        Some(error) => deliver_error(sink, error, id).await,
        None => Err(TransportError::HttpStatus {
            status,
            body: String::from_utf8_lossy(&body[..body.len().min(EXCERPT)])
                .trim()
                .to_string(),
        }),
    }
}

/// The JSON-RPC error response `body` holds, if it is one.
pub(crate) fn error_of(body: &[u8]) -> Option<ErrorResponse> {
    match Message::parse(body) {
        Ok(Incoming::Single(Message::Error(e))) => Some(e),
        _ => None,
    }
}

/// Hands `error` to the sink as the answer to `id`.
pub(crate) async fn deliver_error<S: TransportSink>(
    sink: &S,
    mut error: ErrorResponse,
    id: &RequestId,
) -> Result<(), TransportError> {
    error.id = Some(id.clone());
    let event = TransportEvent::Message(Incoming::Single(Message::Error(error)));
    if sink.deliver(event).await {
        Ok(())
    } else {
        Err(TransportError::Closed)
    }
}

impl Shared {
    /// POSTs `body` at a stateless revision: the configured headers and
    /// `route`'s, no session. A `timeout` bounds the whole exchange.
    pub(crate) async fn post_routed(
        &self,
        body: &Bytes,
        route: &RouteHeaders,
        timeout: Option<std::time::Duration>,
    ) -> Result<reqwest::Response, TransportError> {
        self.post_routed_with(&self.client, body, route, timeout)
            .await
    }

    /// [`Shared::post_routed`] on `client` (the streams' own, for a listen).
    pub(crate) async fn post_routed_with(
        &self,
        client: &reqwest::Client,
        body: &Bytes,
        route: &RouteHeaders,
        timeout: Option<std::time::Duration>,
    ) -> Result<reqwest::Response, TransportError> {
        let mirrored = route_headers(route)?;
        self.send_authorized(client, || {
            let req = client
                .post(self.url.clone())
                .header(
                    reqwest::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )
                .header(
                    reqwest::header::ACCEPT,
                    HeaderValue::from_static("application/json, text/event-stream"),
                )
                .body(body.clone());
            let req = match timeout {
                Some(t) => req.timeout(t),
                None => req,
            };
            let req = if self.headers.map().is_empty() {
                req
            } else {
                req.headers(self.headers.map().clone())
            };
            req.headers(mirrored.clone())
        })
        .await
    }
}
