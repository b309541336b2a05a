//! Reaching the server: the first step (`initialize`, or a `server/discover`
//! probe at 2026-07-28), each switch between them, and the deadlines the
//! connection keeps until it is ready (the startup, the probe's wait, a
//! re-listing), with the one timer they share.

use std::time::Duration;

use mcpvisor_protocol::mcp::revision::Versions;
use mcpvisor_protocol::state::session::{Handled, SessionEvent};
use mcpvisor_protocol::state::setup_deadlines::Overdue;
use ractor::ActorRef;
use tokio::time::Instant;

use super::{Connection, Pending};
use crate::context::HostContext;
use crate::error::ConnectionError;
use crate::messages::ServerMsg;
use crate::options::ServerSpec;

impl Connection {
    /// How long a `server/discover` probe waits before the server is taken
    /// for an older one that ignores methods it does not know.
    pub(super) fn probe_timeout(&self) -> Duration {
        (self.startup_timeout() / 2).min(PROBE_TIMEOUT)
    }

    /// After a step of reaching the server (the first, or a switch between
    /// a probe and `initialize`): sends what it says, keeps the probe's
    /// deadline, and fails the connection when no revision is left.
    pub(super) fn after_step(&mut self, myself: &ActorRef<ServerMsg>, handled: Handled<Pending>) {
        if let Some(reply) = &handled.reply {
            self.send(reply);
        }
        if self.session.is_probing() {
            self.deadlines.probing(Instant::now(), self.probe_timeout());
        } else {
            self.deadlines.probed();
        }
        if let SessionEvent::InitializeFailed(f) = handled.event {
            self.fail(myself, ConnectionError::Initialize(f));
        }
    }

    /// A setup deadline may have passed: the connection ends for what did.
    pub(crate) fn setup_due(&mut self, myself: &ActorRef<ServerMsg>) {
        while let Some(overdue) = self.deadlines.expire(Instant::now()) {
            match overdue {
                Overdue::Startup { after } if !self.ready => {
                    return self.fail(myself, ConnectionError::StartupTimeout(after));
                }
                Overdue::Probe => {
                    if let Some(handled) = self.session.probe_unanswered() {
                        tracing::debug!(server = %self.name, "server/discover unanswered: initializing");
                        self.after_step(myself, handled);
                        if self.stopping {
                            return;
                        }
                    }
                }
                Overdue::Relisting { generation, after }
                    if self
                        .listing
                        .as_ref()
                        .is_some_and(|l| l.generation == generation) =>
                {
                    return self.fail(myself, ConnectionError::RequestTimeout(after));
                }
                _ => {}
            }
        }
        self.arm_deadlines(myself);
    }

    /// Sets the one timer for the earliest deadline standing (and drops the old).
    pub(super) fn arm_deadlines(&mut self, myself: &ActorRef<ServerMsg>) {
        if let Some(timer) = self.deadline_timer.take() {
            timer.abort();
        }
        if let Some(at) = self.deadlines.next_deadline() {
            let wait = at.saturating_duration_since(Instant::now());
            self.deadline_timer = Some(myself.send_after(wait, || ServerMsg::SetupDue));
        }
    }

    /// Opens the connection: the first step of reaching the server, under
    /// the startup deadline.
    pub(crate) fn begin(&mut self, myself: &ActorRef<ServerMsg>) {
        self.deadlines
            .starting(Instant::now(), self.startup_timeout());
        match self.session.open() {
            Ok(handled) => self.after_step(myself, handled),
            Err(e) => tracing::error!(server = %self.name, "cannot initialize: {e}"),
        }
        self.arm_deadlines(myself);
    }
}

/// The longest a `server/discover` probe waits (less when the startup
/// timeout is shorter: half of it).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The revisions this connection may use: its entry's, else the host's.
pub(super) fn connection_versions(spec: &ServerSpec, ctx: &HostContext) -> Versions {
    spec.protocol_versions
        .clone()
        .unwrap_or_else(|| ctx.options.protocol_versions.clone())
}
