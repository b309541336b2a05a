//! Client notifications after the handshake (`notifications/cancelled`,
//! progress, responses to the server's requests): posted one after another, in
//! the order sent, by a task of their own, each within the exchange timeout.
//! A server that is slow to accept them delays only them, never a request.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Shared;
use super::post::post_notification;
use crate::error::TransportError;

/// Notifications waiting for the ones ahead of them; past this a new one is refused.
pub(crate) const NOTICE_QUEUE: usize = 256;

/// The sending side; dropping it stops the task and drops what still waits.
pub(crate) struct NoticeSender {
    queue: mpsc::Sender<Bytes>,
    task: JoinHandle<()>,
}

impl NoticeSender {
    pub(crate) fn spawn(shared: Arc<Shared>) -> NoticeSender {
        let (queue, mut rx) = mpsc::channel::<Bytes>(NOTICE_QUEUE);
        let task = tokio::spawn(async move {
            while let Some(body) = rx.recv().await {
                if let Err(e) = post_notification(&shared, body).await {
                    tracing::debug!(server = %shared.server, "notification not delivered: {e}");
                }
            }
        });
        NoticeSender { queue, task }
    }

    /// Queues `body`; a full queue refuses it rather than grow.
    pub(crate) fn send(&self, body: Bytes) -> Result<(), TransportError> {
        self.queue.try_send(body).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => TransportError::NoticesBacklog {
                limit: NOTICE_QUEUE,
            },
            mpsc::error::TrySendError::Closed(_) => TransportError::Closed,
        })
    }
}

impl Drop for NoticeSender {
    fn drop(&mut self) {
        self.task.abort();
    }
}
