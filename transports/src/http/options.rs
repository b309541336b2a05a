//! Limits and timings of HTTP connections, and the client they are made with.

use std::time::Duration;

use crate::error::TransportError;

/// Limits and timings of HTTP connections; start from the default and set
/// fields (it will grow).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Largest JSON body or SSE event accepted.
    pub message_limit: usize,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed for the DELETE at teardown.
    pub delete_timeout: Duration,
    /// Time allowed for an exchange that is not an answer stream: a notification
    /// or response POST, whose answer is a bare 202, and the `initialize` that
    /// renews an expired session.
    pub exchange_timeout: Duration,
    /// How often a cut SSE answer is resumed before the request fails.
    pub resume_attempts: u32,
    /// First delay before reopening a dropped GET stream (when the server gave no `retry:`).
    pub get_backoff_initial: Duration,
    /// Longest delay between GET stream attempts.
    pub get_backoff_max: Duration,
    /// How long the first GET may take before requests go on without it
    /// (the listings that make a connection ready never wait for it).
    pub stream_open_wait: Duration,
    /// Most idle kept-alive connections kept per origin. A burst of requests
    /// opens as many connections as it needs; past this many, each is closed
    /// when its request ends instead of being kept with its buffers (about
    /// 20 KiB each) for [`idle_timeout`](Self::idle_timeout). 64 keeps a
    /// server's usual 64 calls in flight on kept-alive connections.
    pub idle_connections_per_origin: usize,
    /// How long a kept-alive connection may sit idle before it is closed. The
    /// pool looks at this pace, so an idle connection goes between one and
    /// two of these after its last request. Below a server's own keep-alive
    /// timeout, the client closes first, so a request is not sent on a
    /// connection the server is closing.
    pub idle_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            message_limit: 4 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            delete_timeout: Duration::from_secs(2),
            exchange_timeout: Duration::from_secs(30),
            resume_attempts: 3,
            get_backoff_initial: Duration::from_millis(500),
            get_backoff_max: Duration::from_secs(30),
            stream_open_wait: Duration::from_secs(2),
            idle_connections_per_origin: 64,
            idle_timeout: Duration::from_secs(90),
        }
    }
}

/// A client for HTTP transports: one per host, shared by its servers, so
/// connections are reused.
pub fn http_client(options: &HttpOptions) -> Result<reqwest::Client, TransportError> {
    client_builder(options)
        .build()
        .map_err(|e| TransportError::Config(format!("HTTP client: {}", e.without_url())))
}

pub(super) fn client_builder(options: &HttpOptions) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        // A followed redirect would carry the configured headers, the session id and
        // the bearer token to wherever `Location` points: a 3xx is an error instead.
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .connect_timeout(options.connect_timeout)
        .pool_idle_timeout(options.idle_timeout)
        .pool_max_idle_per_host(options.idle_connections_per_origin)
        .tcp_nodelay(true)
}
