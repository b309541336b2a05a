//! The GET (SSE) streams a benchmark HTTP server holds open, counted by the
//! server itself and read back over HTTP: the memory probe checks that every
//! client really has its stream open before it reads its own RSS.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use futures::StreamExt;

/// Where a server answers how many GET streams it holds open (plain text).
pub const STREAMS_PATH: &str = "/streams";

/// The count of open GET streams, shared by the middleware and its route.
#[derive(Debug, Clone, Default)]
pub struct OpenStreams(Arc<AtomicUsize>);

impl OpenStreams {
    /// `router` with its GETs counted while their answer's body is alive, and
    /// [`STREAMS_PATH`] answering the count.
    pub fn around(&self, router: Router) -> Router {
        let count = self.0.clone();
        router
            .route_layer(middleware::from_fn_with_state(self.clone(), track))
            .route(
                STREAMS_PATH,
                get(move || async move { count.load(Ordering::SeqCst).to_string() }),
            )
    }
}

/// Held by a GET answer's body: the stream counts as open until the server
/// drops it (client gone, server done).
struct Held(Arc<AtomicUsize>);

impl Held {
    fn new(count: Arc<AtomicUsize>) -> Held {
        count.fetch_add(1, Ordering::SeqCst);
        Held(count)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn track(State(open): State<OpenStreams>, request: Request, next: Next) -> Response {
    let is_get = request.method() == Method::GET;
    let response = next.run(request).await;
    if !is_get || !response.status().is_success() {
        return response;
    }
    let held = Held::new(open.0.clone());
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _ = &held;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// The URL of the count for the MCP endpoint `mcp_url` (`…/mcp`).
fn count_url(mcp_url: &str) -> String {
    let base = mcp_url.strip_suffix("/mcp").unwrap_or(mcp_url);
    format!("{base}{STREAMS_PATH}")
}

/// How many GET streams the server at `mcp_url` holds open now.
pub async fn open_streams(client: &reqwest::Client, mcp_url: &str) -> anyhow::Result<usize> {
    let text = client.get(count_url(mcp_url)).send().await?.text().await?;
    text.trim()
        .parse()
        .with_context(|| format!("the stream count was {text:?}"))
}

/// Waits until the server at `mcp_url` holds at least `n` GET streams open.
pub async fn wait_for_streams(
    client: &reqwest::Client,
    mcp_url: &str,
    n: usize,
    within: Duration,
) -> anyhow::Result<()> {
    match wait_until(client, mcp_url, within, |open| open >= n).await? {
        Ok(_) => Ok(()),
        Err(open) => bail!("{open} GET streams open after {within:?}, expected {n}"),
    }
}

/// Waits (at most `within`) until the server at `mcp_url` holds no GET stream
/// open, as when the connections of an earlier probe have all gone, and
/// returns how many it still holds.
pub async fn settle_streams(
    client: &reqwest::Client,
    mcp_url: &str,
    within: Duration,
) -> anyhow::Result<usize> {
    Ok(
        match wait_until(client, mcp_url, within, |open| open == 0).await? {
            Ok(open) | Err(open) => open,
        },
    )
}

/// Polls the count until `done` holds (`Ok`) or `within` has passed (`Err`), with the last count.
async fn wait_until(
    client: &reqwest::Client,
    mcp_url: &str,
    within: Duration,
    done: impl Fn(usize) -> bool,
) -> anyhow::Result<Result<usize, usize>> {
    let deadline = Instant::now() + within;
    loop {
        let open = open_streams(client, mcp_url).await?;
        if done(open) {
            return Ok(Ok(open));
        }
        if Instant::now() > deadline {
            return Ok(Err(open));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
