//! The notification stream: the GET stream of a session, or at a stateless
//! revision (2026-07-28) the answer stream of a `subscriptions/listen` POST;
//! best effort, off the host's runtime.
//!
//! It runs on the host's [`StreamRuntime`]: a thread with an isolated
//! current-thread Tokio runtime shared by the host's GET streams, so a slow or
//! broken stream never competes with the host's runtime; it stops, and is
//! waited for, on shutdown. Nothing here can fail a POST:
//! 405 means the server offers no stream (no retry); a server that cannot be
//! reached ends the connection (it is down); other failures reconnect with
//! backoff, honouring `retry:` and sending `Last-Event-ID` (GET only: a
//! listen is posted again as it was). A listen the server answers (it ended
//! the stream itself, or refused it) is not posted again.

use std::sync::Arc;

use bytes::Bytes;
use mcpvisor_protocol::RequestId;
use mcpvisor_protocol::mcp::route_headers::RouteHeaders;
use mcpvisor_protocol::wire::sse::SseParser;
use reqwest::StatusCode;
use tokio::sync::watch;

use super::backoff::{HEALTHY_FOR, StreamBackoff};
use super::body::{Kind, kind, pump_sse};
use super::streams::StreamRuntime;
use super::{Shared, StreamOpen};
use crate::event::{TransportEvent, TransportSink};
use mcpvisor_protocol::{Incoming, Message};

/// How the stream is opened.
pub(crate) enum Opening {
    /// GET on the session.
    Get,
    /// POST of a `subscriptions/listen` request, with its headers.
    Listen {
        body: Bytes,
        route: Box<RouteHeaders>,
        id: RequestId,
    },
}

pub(crate) struct NotificationListener {
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Keeps the streams' thread while this stream lives.
    _runtime: Arc<StreamRuntime>,
}

impl NotificationListener {
    /// Starts the stream on `runtime`; `shared.stream` becomes `Answered` once
    /// the first GET has an answer (a stream, a refusal or a failure), or the
    /// listener ends without one.
    pub(crate) fn spawn<S: TransportSink>(
        shared: Arc<Shared>,
        sink: Arc<S>,
        runtime: Arc<StreamRuntime>,
        opening: Opening,
    ) -> NotificationListener {
        let (stop, stopped) = watch::channel(false);
        let client = runtime.client();
        let task = runtime.handle().spawn(async move {
            match client.get() {
                Some(client) => listen(&shared, sink, stopped, client.clone(), &opening).await,
                None => tracing::debug!(server = %shared.server, "no notification stream: the streams' HTTP client could not be made"),
            }
            // Nothing waits for a stream that is gone.
            shared.stream.send_replace(StreamOpen::Answered);
        });
        NotificationListener {
            stop,
            task: Some(task),
            _runtime: runtime,
        }
    }

    /// Stops the stream and waits until it has ended.
    pub(crate) async fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for NotificationListener {
    fn drop(&mut self) {
        // The task notices and ends on its own; nothing blocks in a destructor.
        let _ = self.stop.send(true);
    }
}

enum Outcome {
    /// 405 (or 404), or a listen refused: the server has no such stream.
    Unsupported,
    /// The server ended a listen with its answer: not opened again.
    Ended,
    /// The stream ended or failed; try again later. `healthy`: it had stayed up.
    Retry { healthy: bool },
    /// The server cannot be reached: the connection is over.
    Unreachable(crate::error::TransportError),
}

/// Connections made by `client` belong to the streams' runtime, so streams
/// share their own pool instead of the POST client's, which lives on the host's.
async fn listen<S: TransportSink>(
    shared: &Shared,
    sink: Arc<S>,
    mut stopped: watch::Receiver<bool>,
    client: reqwest::Client,
    opening: &Opening,
) {
    let mut parser = SseParser::new(shared.options.message_limit);
    let mut backoff = StreamBackoff::new(
        shared.options.get_backoff_initial,
        shared.options.get_backoff_max,
    );
    loop {
        let attempt = async {
            match opening {
                Opening::Get => stream_once(shared, &client, &*sink, &mut parser).await,
                Opening::Listen { body, route, id } => {
                    let only = OnlyListen {
                        sink: sink.clone(),
                        id: id.clone(),
                    };
                    listen_once(shared, &client, &only, body, route, id).await
                }
            }
        };
        let outcome = tokio::select! {
            _ = stopped.changed() => return,
            outcome = attempt => outcome,
        };
        let delay = match outcome {
            Outcome::Unsupported => {
                tracing::debug!(server = %shared.server, "server offers no notification stream");
                return;
            }
            Outcome::Ended => {
                tracing::debug!(server = %shared.server, "the server ended its subscriptions/listen stream");
                return;
            }
            Outcome::Retry { healthy } => backoff.after(parser.retry(), healthy, fastrand::f64()),
            Outcome::Unreachable(error) => {
                tracing::debug!(server = %shared.server, "notification stream: {error}");
                sink.deliver(crate::event::TransportEvent::Closed(error))
                    .await;
                return;
            }
        };
        tokio::select! {
            _ = stopped.changed() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

async fn stream_once<S: TransportSink>(
    shared: &Shared,
    client: &reqwest::Client,
    sink: &S,
    parser: &mut SseParser,
) -> Outcome {
    let last = parser.last_event_id().map(str::to_string);
    let answer = shared.get_with(client, last.as_deref()).await;
    shared.stream.send_if_modified(|s| {
        let first = *s != StreamOpen::Answered;
        *s = StreamOpen::Answered;
        first
    });
    let mut resp = match answer {
        Ok(r) => r,
        Err(e) if e.is_unreachable() => return Outcome::Unreachable(e),
        Err(e) => {
            tracing::debug!(server = %shared.server, "notification stream: {e}");
            return Outcome::Retry { healthy: false };
        }
    };
    match resp.status() {
        StatusCode::METHOD_NOT_ALLOWED => return Outcome::Unsupported,
        StatusCode::OK if matches!(kind(&resp), Kind::Sse) => {}
        status => {
            tracing::debug!(server = %shared.server, %status, "notification stream refused");
            return Outcome::Retry { healthy: false };
        }
    }
    tracing::debug!(server = %shared.server, "notification stream open");
    let opened_at = tokio::time::Instant::now();
    if let Err(e) = pump_sse(&mut resp, parser, sink, None).await {
        tracing::debug!(server = %shared.server, "notification stream ended: {e}");
    }
    Outcome::Retry {
        healthy: opened_at.elapsed() >= HEALTHY_FOR,
    }
}

/// One `subscriptions/listen` POST: its stream is pumped until it ends; an
/// answer to it (the server's graceful end, or a refusal) is delivered and
/// ends the listening.
async fn listen_once<S: TransportSink>(
    shared: &Shared,
    client: &reqwest::Client,
    sink: &S,
    body: &Bytes,
    route: &RouteHeaders,
    id: &RequestId,
) -> Outcome {
    let mut resp = match shared.post_routed_with(client, body, route, None).await {
        Ok(r) => r,
        Err(e) if e.is_unreachable() => return Outcome::Unreachable(e),
        Err(e) => {
            tracing::debug!(server = %shared.server, "subscriptions/listen: {e}");
            return Outcome::Retry { healthy: false };
        }
    };
    match resp.status() {
        StatusCode::OK => {}
        StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_FOUND => return Outcome::Unsupported,
        // Passing refusals (a proxy's timeout, a rate limit): again, later.
        StatusCode::REQUEST_TIMEOUT | StatusCode::TOO_MANY_REQUESTS => {
            return Outcome::Retry { healthy: false };
        }
        status if status.is_client_error() => {
            // A JSON-RPC refusal is the request's answer; either way, not again.
            let _ = super::stateless::refused(sink, resp, id).await;
            return Outcome::Unsupported;
        }
        status => {
            tracing::debug!(server = %shared.server, %status, "subscriptions/listen refused");
            return Outcome::Retry { healthy: false };
        }
    }
    let opened_at = tokio::time::Instant::now();
    let answered = match kind(&resp) {
        Kind::Sse => {
            let mut parser = SseParser::new(shared.options.message_limit);
            pump_sse(&mut resp, &mut parser, sink, Some(id)).await
        }
        Kind::Json => match super::body::read_bounded(resp, shared.options.message_limit).await {
            Ok(body) => super::body::deliver_json(&body, sink, Some(id)).await,
            Err(e) => Err(e),
        },
        Kind::Other(ct) => Err(crate::error::TransportError::UnexpectedContentType(ct)),
    };
    match answered {
        Ok(true) => Outcome::Ended,
        Ok(false) => Outcome::Retry {
            healthy: opened_at.elapsed() >= HEALTHY_FOR,
        },
        Err(e) => {
            tracing::debug!(server = %shared.server, "subscriptions/listen stream ended: {e}");
            Outcome::Retry {
                healthy: opened_at.elapsed() >= HEALTHY_FOR,
            }
        }
    }
}

/// What a listen stream may carry: notifications, and the listen's own
/// answer. Anything else (an answer to another request) is dropped, so the
/// stream cannot complete a call, and nothing the host does for one runs on
/// the streams' thread.
struct OnlyListen<S> {
    sink: Arc<S>,
    id: RequestId,
}

impl<S: TransportSink> OnlyListen<S> {
    fn carries(&self, message: &Message) -> bool {
        match message {
            Message::Notification(_) => true,
            Message::Response(r) => r.id == self.id,
            Message::Error(e) => e.id.as_ref() == Some(&self.id),
            Message::Request(_) => false,
        }
    }
}

impl<S: TransportSink> TransportSink for OnlyListen<S> {
    async fn deliver(&self, event: TransportEvent) -> bool {
        let event = match event {
            TransportEvent::Message(Incoming::Single(m)) if !self.carries(&m) => {
                tracing::debug!("dropped a message that is not the listen stream's");
                return true;
            }
            TransportEvent::Message(Incoming::Batch(items)) => {
                let kept: Vec<_> = items
                    .into_iter()
                    .filter(|i| i.as_ref().is_ok_and(|m| self.carries(m)))
                    .collect();
                if kept.is_empty() {
                    return true;
                }
                TransportEvent::Message(Incoming::Batch(kept))
            }
            TransportEvent::UnreadableAnswer { id, .. } if id != self.id => return true,
            other => other,
        };
        self.sink.deliver(event).await
    }
}
