//! An in-process MCP server over Streamable HTTP (protocol 2025-03-26) that the
//! integration tests script: how it answers (JSON, SSE, batches), what its GET stream
//! sends, and tools that cut, hang, send garbage, oversize events or fail. It records
//! every HTTP request it receives.
//!
//! It serves `POST`/`GET`/`DELETE` on `http://127.0.0.1:<random port>/mcp` from tasks on
//! the caller's tokio runtime; SSE bodies are written byte for byte. Dropping the
//! server (or [`HttpMcpServer::stop`]) closes the port and every open connection.

mod http;
mod mcp;
mod script;
mod sse;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tokio::task::{JoinHandle, JoinSet};

// Each test binary names only some of these.
#[allow(unused_imports)]
pub use script::{AnswerMode, GetMode, Script};

/// One HTTP request as the fixture received it. For a batch POST, `rpc_method` and
/// `rpc_id` are those of its first message; `body` holds all of it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub http_method: String,
    pub rpc_method: Option<String>,
    pub rpc_id: Option<Value>,
    /// The parsed JSON body of a POST (`None` when absent or not JSON).
    pub body: Option<Value>,
    pub session: Option<String>,
    pub last_event_id: Option<String>,
    pub accept: Option<String>,
    pub content_type: Option<String>,
    pub authorization: Option<String>,
    pub x_api_key: Option<String>,
    /// The `MCP-Protocol-Version` header.
    pub protocol_version: Option<String>,
    pub at: Instant,
}

/// A POST stream cut before its answer (see [`Script::cut_tool`]).
#[derive(Clone, Debug)]
pub struct Cut {
    /// The id of the priming event, which a resuming GET sends as `Last-Event-ID`.
    pub prime_id: String,
    /// When the stream was ended after the priming event.
    pub cut_at: Instant,
    /// When the first GET resuming from `prime_id` arrived.
    pub resumed_at: Option<Instant>,
    /// The JSON-RPC response the resuming GET carries, as event `prime_id + 1`.
    pub response: Value,
}

/// A running fixture server; see the module docs.
pub struct HttpMcpServer {
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    accept_loop: JoinHandle<()>,
}

impl HttpMcpServer {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start(script: Script) -> HttpMcpServer {
        Self::start_on(0, script).await
    }

    /// Starts on `port` of 127.0.0.1 (0: a free one), e.g. to bring a stopped
    /// server back at the same address with no sessions.
    pub async fn start_on(port: u16, script: Script) -> HttpMcpServer {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the HTTP fixture on 127.0.0.1");
        let addr = listener.local_addr().expect("fixture address");
        let shared = Arc::new(Shared::new(script));
        let app = http::router(shared.clone());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        let open = Arc::new(AtomicUsize::new(0));
        let open_now = open.clone();
        let accept_loop = tokio::spawn(async move {
            // Connections live in this set, so aborting this task drops them all.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                counter.fetch_add(1, Ordering::Relaxed);
                open_now.fetch_add(1, Ordering::Relaxed);
                let service = TowerToHyperService::new(app.clone());
                let open_now = open_now.clone();
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    open_now.fetch_sub(1, Ordering::Relaxed);
                });
                while connections.try_join_next().is_some() {}
            }
        });
        HttpMcpServer {
            url: format!("http://{addr}/mcp"),
            addr,
            shared,
            accepted,
            open,
            accept_loop,
        }
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }

    /// TCP connections open now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Every HTTP request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// The `Mcp-Session-Id` header of each DELETE received.
    pub fn deletes(&self) -> Vec<Option<String>> {
        self.requests_with("DELETE", |r| r.session.clone())
    }

    /// The `Last-Event-ID` header of each GET received.
    pub fn get_last_event_ids(&self) -> Vec<Option<String>> {
        self.requests_with("GET", |r| r.last_event_id.clone())
    }

    /// The JSON-RPC method of each POST received (first message of a batch).
    pub fn rpc_methods(&self) -> Vec<Option<String>> {
        self.requests_with("POST", |r| r.rpc_method.clone())
    }

    /// Every POST stream cut so far (see [`Script::cut_tool`]).
    pub fn cuts(&self) -> Vec<Cut> {
        lock(&self.shared.cuts).clone()
    }

    /// The ids of the sessions alive now.
    pub fn sessions(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.shared.sessions).iter().cloned().collect();
        ids.sort();
        ids
    }

    /// The script in force now.
    pub fn script(&self) -> Script {
        self.shared.script()
    }

    /// Changes behaviour for requests that arrive from now on.
    pub fn set_script(&self, script: Script) {
        *lock(&self.shared.script) = script;
    }

    /// Forgets every session: later requests carrying their ids get 404 (or 400 with
    /// [`Script::dead_session_400`]), and open GET streams end within a second.
    pub fn expire_sessions(&self) {
        lock(&self.shared.sessions).clear();
    }

    /// Ends every GET stream open now, keeping the sessions:
    /// a client that reconnects resumes with its `Last-Event-ID`.
    pub fn end_get_streams(&self) {
        self.shared.stream_epoch.send_modify(|epoch| *epoch += 1);
    }

    /// Sends `message` on every GET stream open now (in [`GetMode::Stream`] without
    /// `then_close`), as an event with the next `g-<n>` id; returns how many got it.
    pub fn push(&self, message: Value) -> usize {
        self.shared.pushes.send(message).unwrap_or(0)
    }

    /// Closes the port and every open connection at once, as a crashed server would.
    pub fn stop(&self) {
        self.accept_loop.abort();
    }

    fn requests_with<T>(&self, http_method: &str, field: impl Fn(&Recorded) -> T) -> Vec<T> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.http_method == http_method)
            .map(field)
            .collect()
    }
}

impl Drop for HttpMcpServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

/// State the request handlers share with the test.
struct Shared {
    script: Mutex<Script>,
    requests: Mutex<Vec<Recorded>>,
    sessions: Mutex<HashSet<String>>,
    sessions_made: AtomicU64,
    /// The last `<n>` used as an event id on a POST stream.
    post_events: AtomicU64,
    /// The next `g-<n>` for the GET streams.
    next_get_event: AtomicU64,
    /// Bumped by [`HttpMcpServer::end_get_streams`]; a GET stream ends once it changes.
    stream_epoch: tokio::sync::watch::Sender<u64>,
    cuts: Mutex<Vec<Cut>>,
    pushes: broadcast::Sender<Value>,
}

impl Shared {
    fn new(script: Script) -> Shared {
        Shared {
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
            sessions: Mutex::new(HashSet::new()),
            sessions_made: AtomicU64::new(0),
            post_events: AtomicU64::new(0),
            next_get_event: AtomicU64::new(1),
            stream_epoch: tokio::sync::watch::Sender::new(0),
            cuts: Mutex::new(Vec::new()),
            pushes: broadcast::channel(64).0,
        }
    }

    fn script(&self) -> Script {
        lock(&self.script).clone()
    }

    fn record(&self, request: Recorded) {
        lock(&self.requests).push(request);
    }

    fn new_session(&self) -> String {
        let id = format!(
            "sess-{}",
            self.sessions_made.fetch_add(1, Ordering::SeqCst) + 1
        );
        lock(&self.sessions).insert(id.clone());
        id
    }

    fn session_alive(&self, id: &str) -> bool {
        lock(&self.sessions).contains(id)
    }

    fn forget_session(&self, id: &str) -> bool {
        lock(&self.sessions).remove(id)
    }

    fn next_post_event_id(&self) -> String {
        (self.post_events.fetch_add(1, Ordering::SeqCst) + 1).to_string()
    }

    /// Keeps `response` for a resuming GET; returns the priming event's id.
    fn add_cut(&self, response: Value) -> String {
        let mut cuts = lock(&self.cuts);
        let prime_id = format!("p-{}", 2 * cuts.len() + 1);
        cuts.push(Cut {
            prime_id: prime_id.clone(),
            cut_at: Instant::now(),
            resumed_at: None,
            response,
        });
        prime_id
    }

    fn mark_cut(&self, prime_id: &str) {
        if let Some(cut) = lock(&self.cuts).iter_mut().find(|c| c.prime_id == prime_id) {
            cut.cut_at = Instant::now();
        }
    }

    /// The response a GET resuming from `last_event_id` replays, with its event id.
    fn resume_cut(&self, last_event_id: &str) -> Option<(String, Value)> {
        let mut cuts = lock(&self.cuts);
        let (k, cut) = cuts
            .iter_mut()
            .enumerate()
            .find(|(_, c)| c.prime_id == last_event_id)?;
        cut.resumed_at.get_or_insert_with(Instant::now);
        Some((format!("p-{}", 2 * k + 2), cut.response.clone()))
    }
}

/// Locks, ignoring poisoning: a panicking test thread must not hide the records.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
