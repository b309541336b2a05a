//! What a session is told of the supervisor's events: `list_changed`
//! (coalesced), server logs at the level it asked for, and everything when it
//! watches.

use std::sync::Weak;
use std::time::Duration;

use futures::{Stream, StreamExt};
use mcpvisor::HostEvent;
use mcpvisor_protocol::mcp::logging::LogLevel;

use crate::session::Session;
use crate::wire::Changed;

/// A log level's rank, least severe first (RFC 5424 as MCP names them).
pub(crate) fn level_rank(level: &str) -> Option<usize> {
    level.parse::<LogLevel>().ok().map(|l| l as usize)
}

/// Forwards events to a session until it is gone. Changes to a list become
/// one `list_changed` at most `coalesce` after the first of them, however many
/// other events (progress, logs) keep coming.
pub(crate) async fn watch_events(
    session: Weak<Session>,
    events: impl Stream<Item = HostEvent>,
    coalesce: Duration,
) {
    let mut events = std::pin::pin!(events);
    let mut due: Option<tokio::time::Instant> = None;
    let mut pending = Changed::default();
    loop {
        let event = match due {
            Some(at) => tokio::select! {
                event = events.next() => event,
                () = tokio::time::sleep_until(at) => {
                    due = None;
                    match session.upgrade() {
                        Some(s) => s.lists_changed(std::mem::take(&mut pending)),
                        None => return,
                    }
                    continue;
                }
            },
            None => events.next().await,
        };
        let (Some(event), Some(session)) = (event, session.upgrade()) else {
            return;
        };
        let changed = session.on_event(&event);
        pending.add(changed);
        if changed.any() && due.is_none() {
            due = Some(tokio::time::Instant::now() + coalesce);
        }
    }
}
