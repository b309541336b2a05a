//! The endpoint's accept loop: a cap on connections taken at accept, and
//! HTTP/1 connections whose request heads must arrive within a deadline (which
//! also closes a connection that stays silent), whose writes must make
//! progress within another (a peer that stops reading is let go), and whose
//! buffers are small. A peer that opens many connections, trickles bytes,
//! never speaks or never reads holds a bounded number of descriptors for a
//! bounded time; and when the cap is reached, a connection that never
//! presented the token gives its place to the new one.

use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};

use futures::task::AtomicWaker;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::hushed::Hushed;

/// Limits of the accept loop.
pub(crate) struct Accepting {
    /// Connections open at once; past it, a connection that never presented
    /// the token is closed to make room, or else the new one is.
    pub(crate) max_connections: usize,
    /// A request head (line and headers) must arrive whole within this long,
    /// counted from when the connection is ready for one: a connection idle
    /// this long between requests is closed too.
    pub(crate) header_timeout: Duration,
    /// A write that makes no progress for this long (the peer stopped
    /// reading) ends the connection.
    pub(crate) write_timeout: Duration,
}

/// The most a connection buffers of a request head, or of answers its peer
/// has not read yet, beyond the socket's own buffers.
const MAX_BUFFER: usize = 64 * 1024;

/// One accepted connection, as its requests see it (a request extension).
#[derive(Debug)]
pub(crate) struct Admitted {
    /// A request on it passed the door checks (the token, when one is required).
    passed: AtomicBool,
    opened: Instant,
    /// Ends the connection's task (set once it is spawned): an eviction
    /// costs nothing on the request path, unlike a future polled on every wake.
    task: Mutex<Option<tokio::task::AbortHandle>>,
    /// The endpoint is stopping: the connection finishes what it is answering
    /// and closes. A flag and a waker, looked at on each wake of the
    /// connection's task for the price of an atomic load (a watch channel
    /// registered anew on every wake cost ~500 instructions a request).
    stopping: AtomicBool,
    wake_on_stop: AtomicWaker,
}

impl Admitted {
    /// Marks the connection as one whose peer passed the door checks.
    pub(crate) fn passed(&self) {
        self.passed.store(true, Ordering::Relaxed);
    }

    fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake_on_stop.wake();
    }

    /// Resolves once [`Admitted::stop`] was called.
    fn stopped(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.stopping.load(Ordering::Acquire) {
                return std::task::Poll::Ready(());
            }
            self.wake_on_stop.register(cx.waker());
            if self.stopping.load(Ordering::Acquire) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }
}

/// The open connections, for choosing one to close when the cap is reached.
#[derive(Default)]
struct Open(Mutex<Vec<std::sync::Weak<Admitted>>>);

impl Open {
    fn add(&self, admitted: &Arc<Admitted>) {
        let mut all = self.0.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(admitted));
    }

    /// Tells every open connection that the endpoint is stopping.
    fn stop_all(&self) {
        for admitted in self.0.lock().iter().filter_map(std::sync::Weak::upgrade) {
            admitted.stop();
        }
    }

    /// Ends the tasks of connections still open.
    fn abort_all(&self) {
        for admitted in self.0.lock().iter().filter_map(std::sync::Weak::upgrade) {
            if let Some(task) = admitted.task.lock().take() {
                task.abort();
            }
        }
    }

    /// Tells the oldest connection that never passed the door checks to close;
    /// false when every open one did.
    fn evict_one(&self) -> bool {
        let all = self.0.lock();
        let oldest = all
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .filter(|a| !a.passed.load(Ordering::Relaxed) && a.task.lock().is_some())
            .min_by_key(|a| a.opened);
        match oldest {
            Some(a) => match a.task.lock().take() {
                Some(task) => {
                    task.abort();
                    true
                }
                None => false,
            },
            None => false,
        }
    }
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
    let permits = Arc::new(Semaphore::new(cap));
    let open = Open::default();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_BUFFER)
        .keep_alive(true);
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
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            // Full: a connection that never showed the token makes room, if
            // there is one (its task gives the permit back as it ends).
            Err(_) if open.evict_one() => {
                tokio::time::timeout(Duration::from_millis(200), permits.clone().acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
            }
            Err(_) => None,
        };
        let Some(permit) = permit else {
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
        let admitted = Arc::new(Admitted {
            passed: AtomicBool::new(false),
            opened: Instant::now(),
            task: Mutex::new(None),
            stopping: AtomicBool::new(false),
            wake_on_stop: AtomicWaker::new(),
        });
        open.add(&admitted);
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let mark = admitted.clone();
        let service = router
            .clone()
            .map_request(move |mut request: axum::extract::Request<_>| {
                request.extensions_mut().insert(mark.clone());
                request
            });
        let connection = builder.serve_connection(
            TokioIo::new(Box::pin(stream)),
            TowerToHyperService::new(service),
        );
        let watched = admitted.clone();
        let task = tokio::spawn(async move {
            // A connection's end (a timeout, a reset, an eviction) is the peer's business.
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                biased;
                _ = connection.as_mut() => {}
                () = watched.stopped() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(permit);
        });
        *admitted.task.lock() = Some(task.abort_handle());
    }
    drop(listener);
    // Idle connections close at once; those answering get `drain` to finish.
    open.stop_all();
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(drain, permits.acquire_many(all)).await;
    open.abort_all();
    Ok(())
}
