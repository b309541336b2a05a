//! What the supervisor does when a server goes down: restart it after a
//! backoff, give it up to slow probing when its budget is spent, wait for a
//! login it needs, or restart it at once when a host asks by name.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use ractor::{ActorId, ActorRef};

use super::{SupervisorState, stop_actor};
use crate::error::{CallError, ConnectionError, DownReason};
use crate::events::HostEvent;
use crate::messages::SupervisorMsg;
use crate::registry_msg::RegistryMsg;
use crate::restart::RestartDecision;
use crate::status::{ServerId, ServerState};

impl SupervisorState {
    pub(super) fn on_down(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        id: ServerId,
        reason: ConnectionError,
    ) {
        let reason: DownReason = Arc::new(reason);
        self.ctx.to_registry(RegistryMsg::Remove(id));
        if self.ctx.shutting_down.load(Ordering::Relaxed) {
            return;
        }
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        if let Some(reason) = slot.login_required.take() {
            self.wait_for_login(id, reason);
            return;
        }
        let policy = &self.ctx.options.restart;
        // A failed server's try that failed again goes back to waiting.
        let decision = if slot.tracker.probing() {
            RestartDecision::GiveUp { restarts: 0 }
        } else {
            slot.tracker
                .on_failure(policy, Instant::now(), fastrand::f64())
        };
        let total = slot.tracker.total();
        match decision {
            RestartDecision::Restart { attempt, backoff } => {
                slot.attempt = attempt;
                slot.generation += 1;
                let generation = slot.generation;
                let state = ServerState::Restarting {
                    attempt,
                    backoff,
                    reason: reason.clone(),
                };
                self.ctx.status.update(id, &slot.name, |s| {
                    s.state = state;
                    s.pid = None;
                    s.restarts = total;
                    s.next_try = Some(std::time::SystemTime::now() + backoff);
                });
                tracing::info!(server = %slot.name, attempt, ?backoff, "restarting: {reason}");
                self.ctx.bus.emit(HostEvent::ServerRestarting {
                    server: slot.name.clone(),
                    attempt,
                    backoff,
                    reason,
                });
                myself.send_after(backoff, move || SupervisorMsg::Restart { id, generation });
            }
            RestartDecision::GiveUp { .. } => {
                let first = !slot.tracker.probing();
                let probe = slot.tracker.next_probe(policy, fastrand::f64());
                if first {
                    tracing::error!(
                        server = %slot.name,
                        budget = policy.max_restarts,
                        window = ?policy.window,
                        next_try = ?probe,
                        "restart budget spent; marked failed: {reason}"
                    );
                } else {
                    tracing::info!(server = %slot.name, next_try = ?probe, "still failing: {reason}");
                }
                self.ctx.status.update(id, &slot.name, |s| {
                    s.state = ServerState::Failed {
                        reason: reason.clone(),
                    };
                    s.pid = None;
                    s.next_try = probe.map(|p| std::time::SystemTime::now() + p);
                });
                if let Some(delay) = probe {
                    slot.generation += 1;
                    let generation = slot.generation;
                    myself.send_after(delay, move || SupervisorMsg::Restart { id, generation });
                }
                if first {
                    self.ctx.bus.emit(HostEvent::ServerFailed {
                        server: slot.name.clone(),
                        reason,
                    });
                }
            }
        }
    }

    /// A server's connection is ending for want of authorization.
    pub(super) fn on_login_required(&mut self, id: ServerId, actor: ActorId, reason: DownReason) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return;
        };
        match &slot.actor {
            // Usually the exit follows, and `on_down` sees the mark.
            Some(a) if a.get_id() == actor => slot.login_required = Some(reason),
            Some(_) => {}
            // Supervision events outrank messages, so the exit may have come first
            // and scheduled a restart: a new generation cancels it.
            None => {
                slot.generation += 1;
                self.wait_for_login(id, reason);
            }
        }
    }

    /// Marks a server as waiting for a login; it is not restarted until a host asks.
    pub(super) fn wait_for_login(&mut self, id: ServerId, reason: DownReason) {
        let Some(slot) = self.slots.get(&id) else {
            return;
        };
        tracing::warn!(server = %slot.name, "login required; not restarting: {reason}");
        self.ctx.status.update(id, &slot.name, |s| {
            s.state = ServerState::LoginRequired {
                reason: reason.clone(),
            };
            s.pid = None;
        });
        self.ctx.bus.emit(HostEvent::LoginRequired {
            server: slot.name.clone(),
            reason,
        });
    }

    pub(super) async fn restart_by_name(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        name: &str,
    ) -> Result<usize, CallError> {
        let ids: Vec<ServerId> = self
            .slots
            .iter()
            .filter(|(_, s)| &*s.name == name)
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return Err(CallError::UnknownServer(name.to_string()));
        }
        let mut restarted = 0;
        let budget = self.stop_budget();
        for id in ids {
            // A running server is stopped first (after an upgrade, say): its
            // exit is not a failure, and a restart already scheduled is voided.
            let running = self.slots.get_mut(&id).and_then(|slot| {
                slot.generation += 1;
                slot.actor.take()
            });
            if let Some(actor) = running {
                self.ctx.to_registry(RegistryMsg::Remove(id));
                stop_actor(actor, budget).await;
            }
            let Some(slot) = self.slots.get_mut(&id) else {
                continue;
            };
            slot.tracker.reset();
            slot.attempt = 0;
            slot.generation += 1;
            self.start_server(myself, id).await;
            restarted += 1;
        }
        Ok(restarted)
    }
}
