//! A new set of servers for a running host: only the difference moves.
//!
//! Servers are matched by name (the k-th of a name with the k-th of the same
//! name). A matched server whose spec is unchanged keeps running untouched —
//! its process, its routes, calls in flight. A changed one is stopped and
//! started again with the new spec and a fresh restart budget; a removed one
//! is stopped and forgotten; an added one starts like any other.

use std::sync::Arc;

use futures::future::join_all;
use ractor::ActorRef;

use super::{Slot, SupervisorState, stop_actor};
use crate::events::HostEvent;
use crate::messages::{ReloadReport, SupervisorMsg};
use crate::options::ServerSpec;
use crate::registry_msg::RegistryMsg;
use crate::status::ServerId;

impl SupervisorState {
    pub(super) async fn reload(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        specs: Vec<ServerSpec>,
    ) -> ReloadReport {
        let mut report = ReloadReport::default();
        let mut incoming: Vec<Option<ServerSpec>> = specs.into_iter().map(Some).collect();
        let mut gone = Vec::new();
        let mut changed = Vec::new();
        for (id, slot) in &self.slots {
            let matched = incoming
                .iter_mut()
                .find(|s| s.as_ref().is_some_and(|s| *s.name == *slot.name));
            match matched.and_then(Option::take) {
                Some(spec) if spec == *slot.spec => report.unchanged.push(slot.name.clone()),
                Some(spec) => changed.push((*id, spec)),
                None => gone.push(*id),
            }
        }
        // Stop what leaves or changes, side by side.
        let budget = self.stop_budget();
        let mut stops = Vec::new();
        for id in gone.iter().chain(changed.iter().map(|(id, _)| id)) {
            if let Some(slot) = self.slots.get_mut(id) {
                // A new generation voids a restart already scheduled for the old spec.
                slot.generation += 1;
                if let Some(actor) = slot.actor.take() {
                    stops.push(stop_actor(actor, budget));
                }
            }
            self.ctx.to_registry(RegistryMsg::Remove(*id));
        }
        join_all(stops).await;
        for id in gone {
            if let Some(slot) = self.slots.remove(&id) {
                self.ctx.status.remove(id);
                self.ctx.faults.remove(&slot.name);
                self.ctx.bus.emit(HostEvent::ServerStopped {
                    server: slot.name.clone(),
                });
                report.removed.push(slot.name);
            }
        }
        let mut starts: Vec<ServerId> = Vec::new();
        for (id, spec) in changed {
            let name = Arc::from(spec.name.as_str());
            let generation = self.slots.get(&id).map_or(0, |s| s.generation);
            let mut slot = Slot::new(spec);
            slot.generation = generation;
            self.slots.insert(id, slot);
            self.ctx.status.update(id, &name, |s| s.restarts = 0);
            report.restarted.push(name);
            starts.push(id);
        }
        for spec in incoming.into_iter().flatten() {
            let id = ServerId(self.next_id);
            self.next_id += 1;
            let slot = Slot::new(spec);
            self.ctx.status.update(id, &slot.name, |_| {});
            report.added.push(slot.name.clone());
            self.slots.insert(id, slot);
            starts.push(id);
        }
        self.start_servers(myself, &starts).await;
        report
    }
}
