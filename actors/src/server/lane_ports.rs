//! The call lane's two ports as a connection's actors provide them: lines go
//! through the transport actor (HTTP posts each request on its own task), and
//! what the lane reports goes to the server actor, which ends the connection.

use std::time::Duration;

use mcpvisor_protocol::RequestId;
use mcpvisor_transports::{Outbound, TransportError};
use ractor::ActorRef;

use crate::lane::{LaneReport, LaneWrite};
use crate::messages::{ServerMsg, TransportMsg};

impl LaneWrite for ActorRef<TransportMsg> {
    fn write(&self, mut out: Outbound) -> Result<(), TransportError> {
        // An HTTP body goes without the line's newline.
        out.line.pop();
        self.cast(TransportMsg::Send(out))
            .map_err(|_| TransportError::Closed)
    }

    fn abandon(&self, id: RequestId) {
        let _ = self.cast(TransportMsg::Abandon(id));
    }
}

impl LaneReport for ActorRef<ServerMsg> {
    fn call_timed_out(&self, id: i64, after: Duration) -> bool {
        self.cast(ServerMsg::CallTimedOut { id, after }).is_ok()
    }

    fn write_failed(&self, error: TransportError) {
        let _ = self.cast(ServerMsg::WriteFailed {
            error,
            confirmed: false,
        });
    }

    fn relisten(&self) {
        let _ = self.cast(ServerMsg::Relisten);
    }

    fn tools_stale(&self) {
        let _ = self.cast(ServerMsg::ToolsStale);
    }
}
