//! The endpoint's accept loop: a cap on connections taken at accept, and
//! HTTP/1 connections whose request heads must arrive within a deadline (which
//! also closes a connection that stays silent). A peer that opens many
//! connections, trickles bytes or never speaks holds a bounded number of
//! descriptors for a bounded time.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::hushed::Hushed;

/// Limits of the accept loop.
pub(crate) struct Accepting {
    /// Connections open at once; more are closed at accept.
    pub(crate) max_connections: usize,
    /// A request head (line and headers) must arrive whole within this long,
    /// counted from when the connection is ready for one: a connection idle
    /// this long between requests is closed too.
    pub(crate) header_timeout: Duration,
}

/// The cap on connections that the process's descriptors can hold: at most
/// half of the soft `RLIMIT_NOFILE`, so connections alone can never take the
/// descriptors the servers' pipes, the local socket and the CLI need.
fn within_descriptors(cap: usize) -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, _)) => cap
            .min(usize::try_from(soft / 2).unwrap_or(usize::MAX))
            .max(1),
        Err(_) => cap,
    }
}

/// Serves `router` on `listener` until `stop` resolves; then lets open
/// connections finish for up to `drain`.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: Accepting,
    stop: impl std::future::Future<Output = ()>,
    drain: Duration,
) -> std::io::Result<()> {
    let cap = within_descriptors(limits.max_connections);
    if cap < limits.max_connections {
        tracing::info!(
            asked = limits.max_connections,
            cap,
            "HTTP connections capped at half the open-file limit"
        );
    }
    let open = Arc::new(Semaphore::new(cap));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let service = TowerToHyperService::new(router);
    let (mut full, mut failing) = (Hushed::new(), Hushed::new());
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, most likely: wait for some to close
                // instead of spinning on the same error.
                if let Some(held) = failing.due(Instant::now()) {
                    tracing::warn!(error = %e, held_back = held, "HTTP accept failed");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            drop(stream);
            if let Some(held) = full.due(Instant::now()) {
                tracing::warn!(
                    limit = cap,
                    held_back = held,
                    "HTTP connection closed at accept: too many open"
                );
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = builder.serve_connection(TokioIo::new(stream), service.clone());
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A connection's end (a timeout, a reset) is the peer's business.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(drain, graceful.shutdown()).await;
    Ok(())
}
