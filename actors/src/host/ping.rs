//! `ping` to one server: the cheapest request a server must answer, for a
//! host (or a chaos run) that wants to know a connection is alive without
//! calling one of its tools.

use std::time::{Duration, Instant};

use mcpvisor_protocol::mcp::messages::methods;

use super::Host;
use crate::error::CallError;

impl Host {
    /// Sends `ping` to `server` and returns how long the answer took. It goes
    /// on the server's call lane, so it follows the calls' rules: past
    /// `timeout` (the server's request timeout when `None`) it fails with
    /// [`CallError::Timeout`] and the connection is restarted; dropping the
    /// future cancels it.
    pub async fn ping(
        &self,
        server: &str,
        timeout: Option<Duration>,
    ) -> Result<Duration, CallError> {
        let link = self.link(server)?;
        let started = Instant::now();
        let timeout = timeout.unwrap_or(link.request_timeout);
        link.lane.ask(methods::PING, None, timeout).await?;
        Ok(started.elapsed())
    }
}
