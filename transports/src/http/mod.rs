//! The Streamable HTTP transport of MCP 2025-03-26.
//!
//! Every client message is a POST with `Content-Type: application/json` and
//! `Accept: application/json, text/event-stream`; the answer is JSON (a message
//! or a batch) or an SSE stream that may carry server notifications before the
//! response. The `Mcp-Session-Id` from the `initialize` answer goes on every
//! later request; a 404 on it (or the 400 some servers send) renews the session
//! once and retries. Requests run concurrently; notifications are sent in order.
//! A best-effort GET stream carries server-initiated messages. Shutdown stops
//! the stream, abandons requests in flight and DELETEs the session.
//!
//! At MCP 2026-07-28 (a message whose [`Outbound::route`] is set) there is
//! no session, no GET stream and no resumption: see `stateless`.

mod backoff;
mod body;
mod notices;
mod notifications;
mod options;
mod post;
mod requests;
mod session;
mod stateless;
mod stream_open;
mod streams;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use mcpvisor_protocol::RequestId;
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderName};
use tokio::task::{AbortHandle, JoinSet};

use crate::error::TransportError;
use crate::event::{Outbound, TransportEvent, TransportSink};
use crate::fault::WireFaults;
use crate::headers::HttpHeaders;
use crate::secret::SecretString;
use mcpvisor_auth::OAuth;
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::mcp::route_headers::RouteHeaders;
use notices::NoticeSender;
use notifications::{NotificationListener, Opening};
use options::client_builder;
pub use options::{HttpOptions, http_client};
use session::Session;
pub(crate) use stream_open::StreamOpen;
pub use streams::StreamRuntime;

/// The header that names the negotiated revision (from 2025-06-18 on).
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Where a Streamable HTTP server is and what to send it.
#[derive(Clone)]
pub struct HttpSpec {
    /// The MCP endpoint, `http` or `https`.
    pub url: String,
    /// Extra headers, as literal values (already expanded).
    pub headers: Vec<(String, SecretString)>,
    /// OAuth for a protected server; shared across reconnections.
    pub oauth: Option<Arc<OAuth>>,
}

impl HttpSpec {
    /// A spec for `url` with no headers and no OAuth.
    pub fn new(url: impl Into<String>) -> HttpSpec {
        HttpSpec {
            url: url.into(),
            headers: Vec::new(),
            oauth: None,
        }
    }
}

impl PartialEq for HttpSpec {
    fn eq(&self, other: &Self) -> bool {
        let same_oauth = match (&self.oauth, &other.oauth) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.url == other.url && self.headers == other.headers && same_oauth
    }
}

impl Eq for HttpSpec {}

impl fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, _)| format!("{k}: [redacted]"))
            .collect();
        f.debug_struct("HttpSpec")
            .field("url", &redact_url(&self.url))
            .field("headers", &headers)
            .finish()
    }
}

/// The URL for display: a query string, user info or a long opaque path segment
/// may hold a credential (see [`mcpvisor_auth::display_url`]).
pub fn redact_url(url: &str) -> String {
    mcpvisor_auth::display_url(url)
}

/// Parses an MCP endpoint URL: it must be `http` or `https`.
pub fn endpoint_url(url: &str) -> Result<Url, TransportError> {
    let parsed = Url::parse(url).map_err(|e| {
        TransportError::Config(format!("`url` {} is not a valid URL: {e}", redact_url(url)))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TransportError::Config(format!(
            "`url` scheme `{}` is not http or https",
            parsed.scheme()
        )));
    }
    Ok(parsed)
}

pub(crate) struct Shared {
    pub(crate) server: Arc<str>,
    client: reqwest::Client,
    url: Url,
    headers: HttpHeaders,
    pub(crate) options: HttpOptions,
    pub(crate) session: Session,
    oauth: Option<Arc<OAuth>>,
    /// The revision the handshake settled on, once it has.
    pub(crate) protocol: std::sync::OnceLock<Revision>,
    /// The server's wire faults (the cut answer stream is made here).
    pub(crate) faults: Arc<WireFaults>,
    /// Where the notification stream's first GET stands; requests other than
    /// listings wait for it.
    pub(crate) stream: tokio::sync::watch::Sender<StreamOpen>,
}

/// A Streamable HTTP connection.
pub struct HttpTransport<S> {
    shared: Arc<Shared>,
    sink: Arc<S>,
    /// Each request's task yields its id when it ends.
    requests: JoinSet<RequestId>,
    /// Requests still running, to abandon one when its caller gave up.
    in_flight: HashMap<RequestId, AbortHandle>,
    listener: Option<NotificationListener>,
    /// The thread GET streams run on (the host's, else one of this connection's own).
    streams: Option<Arc<StreamRuntime>>,
    /// After the handshake, notifications are posted in order by their own task.
    notices: Option<NoticeSender>,
    down: bool,
}

impl<S> fmt::Debug for HttpTransport<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("server", &self.shared.server)
            .field("url", &redact_url(self.shared.url.as_str()))
            .field("headers", &self.shared.headers)
            .finish()
    }
}

impl<S: TransportSink> HttpTransport<S> {
    /// Prepares a connection (nothing is sent until the first message).
    pub fn new(
        server: &str,
        spec: &HttpSpec,
        client: reqwest::Client,
        options: &HttpOptions,
        sink: Arc<S>,
    ) -> Result<Self, TransportError> {
        let url = endpoint_url(&spec.url)?;
        let headers =
            HttpHeaders::new(&spec.headers).map_err(|e| TransportError::Config(e.to_string()))?;
        if spec.oauth.is_some() && headers.map().contains_key(AUTHORIZATION) {
            // Two credentials, two `Authorization` headers on the wire: refuse, do not guess.
            return Err(TransportError::Config(
                "a static `Authorization` header and OAuth are both configured".into(),
            ));
        }
        let shared = Arc::new(Shared {
            server: Arc::from(server),
            client,
            url,
            headers,
            options: options.clone(),
            session: Session::default(),
            oauth: spec.oauth.clone(),
            protocol: std::sync::OnceLock::new(),
            faults: Arc::default(),
            stream: tokio::sync::watch::Sender::new(StreamOpen::NotAsked),
        });
        Ok(HttpTransport {
            shared,
            sink,
            requests: JoinSet::new(),
            in_flight: HashMap::new(),
            listener: None,
            streams: None,
            notices: None,
            down: false,
        })
    }

    /// Puts the connection under `faults` (the server's, kept across connections).
    pub fn with_faults(mut self, faults: Arc<WireFaults>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.faults = faults;
        }
        self
    }

    /// Runs the GET stream on `streams`, shared with the host's other connections.
    pub fn with_streams(mut self, streams: Arc<StreamRuntime>) -> Self {
        self.streams = Some(streams);
        self
    }

    /// The fault "connections reset": every request in flight loses its
    /// connection and fails, and the GET stream drops and reconnects (resuming
    /// after its last event), as when a proxy or the network resets them.
    pub async fn reset_connections(&mut self) {
        if self.down {
            return;
        }
        self.reap();
        let cut: Vec<RequestId> = self
            .in_flight
            .drain()
            .map(|(id, task)| {
                task.abort();
                id
            })
            .collect();
        if !cut.is_empty() {
            let sink = self.sink.clone();
            tokio::spawn(async move {
                for id in cut {
                    let error = TransportError::Http("connection reset (fault injected)".into());
                    if !sink
                        .deliver(TransportEvent::RequestFailed { id, error })
                        .await
                    {
                        return;
                    }
                }
            });
        }
        if let Some(mut listener) = self.listener.take() {
            listener.stop().await;
            // The notices queued for the server (cancellations, answers to its
            // requests) are kept: only the stream is reset.
            self.start_notifications().await;
        }
    }

    /// Sends one message. Requests run concurrently and report their own
    /// failures; notifications and responses are sent in order, before the next message.
    pub async fn send(&mut self, out: Outbound) -> Result<(), TransportError> {
        if self.down {
            return Err(TransportError::Closed);
        }
        self.reap();
        if out.initialize {
            self.shared.session.remember_init(&out.line);
        }
        if let (Some(route), Some(id)) = (&out.route, &out.id)
            && route.method == mcpvisor_protocol::mcp::subscriptions::LISTEN
        {
            let (route, id) = (route.clone(), id.clone());
            self.listen(out, route, id).await;
            return Ok(());
        }
        match out.id.clone() {
            Some(id) => {
                let (shared, sink) = (self.shared.clone(), self.sink.clone());
                let key = id.clone();
                let task = self.requests.spawn(async move {
                    post::post_request(shared, sink, out, id.clone()).await;
                    id
                });
                self.in_flight.insert(key, task);
                Ok(())
            }
            // During the handshake in line: `initialized` must be accepted before
            // the first request goes out. Afterwards on their own task, so a server
            // slow to accept a notification never holds up the requests.
            None => match (&out.route, &self.notices) {
                // A cancellation over HTTP at a stateless revision is the
                // closed answer stream (`abandon`): nothing is posted.
                (Some(route), _) if !stateless::is_sent(route) => Ok(()),
                (Some(route), _) => {
                    post::post_routed_notification(&self.shared, out.line.into(), route).await
                }
                (None, Some(notices)) => notices.send(out.line.into()),
                (None, None) => post::post_notification(&self.shared, out.line.into()).await,
            },
        }
    }

    /// Stops the request `id` (its caller cancelled it): its POST is dropped, which
    /// closes that connection, so a server that never answers cannot make
    /// cancelled requests pile up.
    pub fn abandon(&mut self, id: &RequestId) {
        self.reap();
        if let Some(task) = self.in_flight.remove(id) {
            task.abort();
        }
    }

    /// Forgets requests that have ended.
    fn reap(&mut self) {
        while let Some(ended) = self.requests.try_join_next() {
            if let Ok(id) = ended {
                self.in_flight.remove(&id);
            }
        }
        // Aborted tasks yield no id; their entries were removed when aborted.
    }

    /// The handshake settled on `revision`: later requests say so where it asks.
    pub fn set_protocol(&mut self, revision: Revision) {
        let _ = self.shared.protocol.set(revision);
    }

    /// Opens the GET notification stream (after the handshake). Requests sent
    /// after this, listings excepted, wait (at most `options.stream_open_wait`
    /// from now) until the server has answered it, each in its own task, so
    /// they cannot be mistaken for the stream's own: a server that resumes a cut
    /// answer on "the next GET" sees the resumption, not this stream (the
    /// conformance scenario `sse-retry` is such a server: a GET sent while a
    /// request's answer is cut is taken for its resumption). The listings that
    /// make the connection ready go out at once: a spec-following server
    /// resumes only a GET with `Last-Event-ID`, which this one lacks, and an
    /// answer a server did replay on it is delivered from the stream all the
    /// same. Not waiting here saves the GET's round trip (a new connection)
    /// on every connect.
    pub async fn start_notifications(&mut self) {
        if self.listener.is_some() || self.down {
            return;
        }
        if self
            .shared
            .protocol
            .get()
            .is_some_and(|r| r.rules().stateless)
        {
            // The revision has no GET stream (`subscriptions/listen` replaces it).
            return;
        }
        if self.notices.is_none() {
            self.notices = Some(NoticeSender::spawn(self.shared.clone()));
        }
        let streams = match &self.streams {
            Some(s) => s.clone(),
            None => match StreamRuntime::start("mcpvisor-sse", &self.shared.options) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(server = %self.shared.server, "notification stream not started: {e}");
                    return;
                }
            },
        };
        let until = tokio::time::Instant::now() + self.shared.options.stream_open_wait;
        self.shared
            .stream
            .send_replace(StreamOpen::Opening { until });
        self.listener = Some(NotificationListener::spawn(
            self.shared.clone(),
            self.sink.clone(),
            streams,
            Opening::Get,
        ));
    }

    /// At a stateless revision: `out` is a `subscriptions/listen` request,
    /// whose answer stream is the notification stream. It replaces the one
    /// open (a new filter), and runs where the GET stream would.
    async fn listen(&mut self, out: Outbound, route: Box<RouteHeaders>, id: RequestId) {
        if let Some(mut listener) = self.listener.take() {
            listener.stop().await;
        }
        let streams = match self.stream_runtime() {
            Some(s) => s,
            None => return,
        };
        self.listener = Some(NotificationListener::spawn(
            self.shared.clone(),
            self.sink.clone(),
            streams,
            Opening::Listen {
                body: out.line.into(),
                route,
                id,
            },
        ));
    }

    /// The thread notification streams run on (the host's, else this
    /// connection's own, started now).
    fn stream_runtime(&mut self) -> Option<Arc<StreamRuntime>> {
        if let Some(s) = &self.streams {
            return Some(s.clone());
        }
        match StreamRuntime::start("mcpvisor-sse", &self.shared.options) {
            Ok(s) => {
                self.streams = Some(s.clone());
                Some(s)
            }
            Err(e) => {
                tracing::warn!(server = %self.shared.server, "notification stream not started: {e}");
                None
            }
        }
    }

    /// Stops the GET stream (joining its thread), abandons requests in flight and
    /// DELETEs the session. Idempotent.
    pub async fn shutdown(&mut self) {
        if self.down {
            return;
        }
        self.down = true;
        if let Some(mut listener) = self.listener.take() {
            listener.stop().await;
        }
        self.notices = None;
        // The host's stream thread ends once no connection holds it.
        self.streams = None;
        self.requests.abort_all();
        while self.requests.join_next().await.is_some() {}
        self.in_flight.clear();
        self.shared.delete_session().await;
    }
}
