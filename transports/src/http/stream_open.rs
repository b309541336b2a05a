//! Where a connection's notification stream stands while its first GET is
//! out, and the wait requests other than listings make for its answer (so no
//! request can be cut, and its resumption mistaken for that GET, before the
//! stream is open).

use super::Shared;

/// Where the notification stream's first GET stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamOpen {
    /// No stream was asked for (the handshake is not over, or it never will be).
    NotAsked,
    /// The GET is sent and not answered yet; requests stop waiting for it at
    /// this instant, answered or not.
    Opening { until: tokio::time::Instant },
    /// The server answered it (a stream, a refusal or a failure).
    Answered,
}

impl StreamOpen {
    fn opening(&self) -> Option<tokio::time::Instant> {
        match self {
            StreamOpen::Opening { until } => Some(*until),
            _ => None,
        }
    }
}

impl Shared {
    /// Waits until the notification stream's first GET has an answer, or until
    /// the wait it was given is over. Returns at once when no GET is opening.
    pub(crate) async fn stream_answered(&self) {
        let Some(until) = self.stream.borrow().opening() else {
            return;
        };
        let mut state = self.stream.subscribe();
        let answered = state.wait_for(|s| s.opening().is_none());
        let _ = tokio::time::timeout_at(until, answered).await;
    }
}
