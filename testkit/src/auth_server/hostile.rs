//! What the authorization server can be told to do wrong, for the hardening
//! tests: redirect or never answer one of its endpoints, serve altered metadata,
//! add parameters to its authorization response; and [`Witness`], a second
//! origin on 127.0.0.1 that records whatever reaches it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::{Shared, lock};

/// The authorization server's endpoints a test can make misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// RFC 9728 protected-resource metadata (every resource's).
    ResourceMetadata,
    /// RFC 8414 authorization-server metadata.
    ServerMetadata,
    /// RFC 7591 registration.
    Registration,
    /// The token endpoint.
    Token,
}

impl Endpoint {
    fn of(path: &str) -> Option<Endpoint> {
        match path {
            p if p.starts_with("/.well-known/oauth-protected-resource") => {
                Some(Endpoint::ResourceMetadata)
            }
            "/.well-known/oauth-authorization-server" => Some(Endpoint::ServerMetadata),
            "/register" => Some(Endpoint::Registration),
            "/token" => Some(Endpoint::Token),
            _ => None,
        }
    }
}

/// How one endpoint misbehaves.
#[derive(Clone, Debug)]
pub enum Misbehaviour {
    /// Answers with this 3xx status and `Location`.
    Redirect(u16, String),
    /// Reads the request and never answers.
    Hang,
    /// Answers `404`, as a server without that endpoint.
    Missing,
}

/// The test's changes to what the server serves.
#[derive(Default)]
pub(super) struct Hostility {
    pub(super) endpoints: HashMap<Endpoint, Misbehaviour>,
    /// Fields set in (or, when `null`, removed from) the authorization-server metadata.
    pub(super) server_metadata: Map<String, Value>,
    /// Fields set in (or, when `null`, removed from) the protected-resource metadata.
    pub(super) resource_metadata: Map<String, Value>,
    /// Parameters added to every authorization response.
    pub(super) callback_params: Vec<(String, String)>,
    /// The issuer the identity provider's OpenID configuration names instead of its own.
    pub(super) idp_issuer: Option<String>,
}

/// Applies `changes` to a metadata document: `null` removes a field.
pub(super) fn apply(doc: &mut Value, changes: &Map<String, Value>) {
    let Some(doc) = doc.as_object_mut() else {
        return;
    };
    for (key, value) in changes {
        if value.is_null() {
            doc.remove(key);
        } else {
            doc.insert(key.clone(), value.clone());
        }
    }
}

/// The layer in front of every route: a misbehaving endpoint answers here.
pub(super) async fn misbehave(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let chosen = Endpoint::of(request.uri().path())
        .and_then(|e| lock(&shared.hostility).endpoints.get(&e).cloned());
    match chosen {
        Some(Misbehaviour::Redirect(status, location)) => (
            StatusCode::from_u16(status).expect("a 3xx status"),
            [(header::LOCATION, location)],
        )
            .into_response(),
        Some(Misbehaviour::Hang) => std::future::pending().await,
        Some(Misbehaviour::Missing) => StatusCode::NOT_FOUND.into_response(),
        None => next.run(request).await,
    }
}

/// One request that reached a [`Witness`].
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// A second origin (on 127.0.0.1 unless told otherwise) that records every
/// request and answers `200 {}`.
pub struct Witness {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    accept_loop: JoinHandle<()>,
}

impl Witness {
    pub async fn start() -> Witness {
        Witness::start_on(std::net::Ipv4Addr::LOCALHOST.into()).await
    }

    /// A witness on a free port of `ip` (an address of this machine off
    /// loopback, for the checks that reach only loopback over plain http).
    pub async fn start_on(ip: std::net::IpAddr) -> Witness {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind the witness");
        let base = format!("http://{}", listener.local_addr().expect("its address"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().fallback(record).with_state(seen.clone());
        let accept_loop = super::serve(listener, app);
        Witness {
            base,
            seen,
            accept_loop,
        }
    }

    /// Every request that reached this origin, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.seen).clone()
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

async fn record(
    State(seen): State<Arc<Mutex<Vec<Seen>>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    lock(&seen).push(Seen {
        method: method.to_string(),
        target: uri.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let mut resp = Response::new(Body::from("{}"));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}
