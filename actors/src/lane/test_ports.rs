//! The lane's ports for unit tests: what it writes and what it reports, each
//! to a channel, so a test sees exactly what the lane did, with no actor alive.

use mcpvisor_protocol::state::calls::RequestIds;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::RequestId;
use mcpvisor_transports::{Outbound, TransportError};
use tokio::sync::mpsc;

use super::{CallLane, LaneReport, LaneWrite};

/// What the lane wrote.
#[derive(Debug)]
pub(crate) enum Wrote {
    Send(Outbound),
    Abandon(RequestId),
}

/// What the lane told its connection.
#[derive(Debug)]
pub(crate) enum Told {
    TimedOut { id: i64, after: Duration },
    WriteFailed(TransportError),
}

struct Recording {
    wrote: mpsc::UnboundedSender<Wrote>,
    told: mpsc::UnboundedSender<Told>,
}

impl LaneWrite for Recording {
    fn write(&self, out: Outbound) -> Result<(), TransportError> {
        self.wrote
            .send(Wrote::Send(out))
            .map_err(|_| TransportError::Closed)
    }

    fn abandon(&self, id: RequestId) {
        let _ = self.wrote.send(Wrote::Abandon(id));
    }
}

impl LaneReport for Recording {
    fn call_timed_out(&self, id: i64, after: Duration) -> bool {
        self.told.send(Told::TimedOut { id, after }).is_ok()
    }

    fn write_failed(&self, error: TransportError) {
        let _ = self.told.send(Told::WriteFailed(error));
    }
}

/// A lane of server `server` allowing `max_in_flight` calls, whose ports record.
pub(crate) fn recorded_lane(
    server: &str,
    max_in_flight: usize,
) -> (
    Arc<CallLane>,
    mpsc::UnboundedReceiver<Wrote>,
    mpsc::UnboundedReceiver<Told>,
) {
    let (wrote, wrote_rx) = mpsc::unbounded_channel();
    let (told, told_rx) = mpsc::unbounded_channel();
    let ports = Arc::new(Recording { wrote, told });
    let lane = Arc::new(CallLane::new(
        Arc::from(server),
        ports.clone(),
        ports,
        RequestIds::new(),
        max_in_flight,
    ));
    lane.bind();
    (lane, wrote_rx, told_rx)
}
