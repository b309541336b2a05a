//! Requests another node must answer: behind a load balancer a 2026-07-28
//! client's rounds land on any node, but a call parked for its client's
//! answers lives on one node, and its `requestState` names it
//! (`<node>~<handle>`). A call whose server asks is parked on the node that
//! supervises that server (the one that can ask its client), so a call for
//! another node's server whose client may be asked goes there from its first
//! round, and a retry to the node its state names. Such a request is passed,
//! as it came, to that node's own HTTP endpoint, where the cluster says it
//! serves, and its answer is passed back as it streams.
//!
//! Only a node of this cluster is reached (its advertised address, on the
//! address its cluster session comes from), never an address a client
//! wrote; a relayed request carries the cluster's shared bearer token (the
//! one `--token-file` gives every node; a token a node made for itself is
//! never passed on) and a mark that stops it from being relayed again; the
//! other node checks it as it checks any request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::mcp::route_headers::PARAM_HEADER_PREFIX;
use mcpvisor_protocol::wire::jsonrpc::{Message, Request, error_codes};

use super::Endpoint;
use super::screen::refuse_error;
use crate::bridge::owner_of;

/// Marks a request one node relayed to another: it is answered where it lands.
pub(super) const RELAYED_HEADER: HeaderName = HeaderName::from_static("mcpvisor-relayed");

/// How long connecting to the other node may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);
/// The longest silence of the other node's answer (its calls are bounded by
/// their own deadlines, well under this): past it the relay ends.
const SILENT_FOR: Duration = Duration::from_secs(10 * 60);
/// The most of a node's name an error repeats.
const NAME_SHOWN: usize = 64;
/// The requests whose retry may name another node (those the bridge parks).
const RETRIED: [&str; 3] = [
    methods::TOOLS_CALL,
    methods::RESOURCES_READ,
    methods::PROMPTS_GET,
];

/// The node that must answer `request`, and where it serves HTTP, when that
/// is another node of this cluster: the node a retry's `requestState` names
/// (where its call waits), or the node whose server a `tools/call` is for
/// when its client may be asked mid-call (it declared elicitation, sampling
/// or roots: the questions are asked by that node's gateway, and the call
/// waits there). `None` when the request is this node's to answer (a call
/// whose client cannot be asked goes to the other node's server by the
/// cluster, as any call does); an error when the node it names is not
/// reachable so.
pub(super) fn elsewhere(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    request: &Request,
    client: ClientCapabilities,
) -> Option<Result<(Arc<str>, SocketAddr), String>> {
    if headers.contains_key(&RELAYED_HEADER) || !RETRIED.contains(&request.method.as_str()) {
        return None;
    }
    let host = endpoint.gateway.host();
    let params = request.params.as_ref();
    let state = params
        .and_then(|p| p.get("requestState"))
        .and_then(|s| s.as_str());
    if let Some(state) = state {
        let node = owner_of(state)?;
        if host.node_name().as_deref() == Some(node) {
            return None;
        }
        let shown: String = node.chars().take(NAME_SHOWN).collect();
        if endpoint.relay_client.is_none() {
            return Some(Err(format!(
                "`requestState` names a call waiting on node `{shown}`; this node passes retries on only with the cluster's shared token (--token-file)"
            )));
        }
        let found = host.nodes().into_iter().find(|n| &*n.node == node);
        return Some(
            match found.and_then(|n| n.http.map(|a| (n.node.clone(), a))) {
                Some(target) => Ok(target),
                None => Err(format!(
                    "`requestState` names a call waiting on node `{shown}`, which this node cannot reach over HTTP (not in the cluster, or serving no HTTP)"
                )),
            },
        );
    }
    endpoint.relay_client.as_ref()?;
    let askable = client.sampling || client.elicitation || client.elicitation_url || client.roots;
    if request.method != methods::TOOLS_CALL || !askable {
        return None;
    }
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())?;
    let route = crate::tools::route_of(host, endpoint.options.naming, name)?;
    let node = host.routes().get(&route)?.node.clone()?;
    let http = host.nodes().into_iter().find(|n| n.node == node)?.http?;
    // Never this node itself (an address another node wrongly claims).
    let own = http.port() == endpoint.port && http.ip().is_loopback() && endpoint.loopback;
    (!own).then_some(Ok((node, http)))
}

/// Passes `request` to `addr` (node `node`'s endpoint) and its answer back.
pub(super) async fn relay(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    request: Request,
    node: &str,
    addr: SocketAddr,
) -> Response {
    let id = request.id.clone();
    let failed = |why: String| {
        let error = mcpvisor_protocol::wire::jsonrpc::ErrorObject {
            code: error_codes::INTERNAL_ERROR,
            message: why,
            data: None,
        };
        refuse_error(StatusCode::BAD_GATEWAY, id.clone(), error)
    };
    let body = Message::Request(request).to_vec();
    let Some(client) = &endpoint.relay_client else {
        return failed("this node passes nothing on to other nodes".into());
    };
    let mut sent = client
        .post(format!("http://{addr}/mcp"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(&RELAYED_HEADER, HeaderValue::from_static("1"))
        .body(body);
    // What the revision's headers say goes on as the client said it.
    for (name, value) in headers {
        let name_text = name.as_str();
        let passed = name == header::ACCEPT
            || name_text == "mcp-protocol-version"
            || name_text == "mcp-method"
            || name_text == "mcp-name"
            || name_text.starts_with(&PARAM_HEADER_PREFIX.to_ascii_lowercase());
        if passed {
            sent = sent.header(name, value);
        }
    }
    if let Some(token) = &endpoint.options.token {
        sent = sent.bearer_auth(token.expose());
    }
    let answer = match sent.send().await {
        Ok(answer) => answer,
        Err(e) => {
            return failed(format!(
                "node `{node}`, where this call waits, could not be reached: {}",
                e.without_url()
            ));
        }
    };
    let mut response = Response::builder().status(answer.status());
    if let Some(kind) = answer.headers().get(header::CONTENT_TYPE) {
        response = response.header(header::CONTENT_TYPE, kind);
    }
    let stream = answer.bytes_stream().map_err(std::io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

/// The client every relay goes out on: kept-alive connections to the other
/// nodes, straight (no proxy from the environment: the token goes to the
/// node alone), no redirects followed, bounds on connecting and on silence.
/// None when the token is this node's own (it is never shown to another),
/// or when no such client can be made.
pub(super) fn client(options: &super::HttpOptions) -> Option<reqwest::Client> {
    if options.token.is_some() && !options.shared_token {
        return None;
    }
    reqwest::Client::builder()
        .connect_timeout(CONNECT_WITHIN)
        .read_timeout(SILENT_FOR)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()
}
