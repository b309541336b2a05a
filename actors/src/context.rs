//! What every actor of one supervisor shares.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ractor::ActorRef;

use crate::events::EventBus;
use crate::options::SupervisorOptions;
use crate::registry::RegistryMsg;
use crate::status::StatusBoard;

pub(crate) struct HostContext {
    pub(crate) options: SupervisorOptions,
    pub(crate) bus: EventBus,
    pub(crate) status: Arc<StatusBoard>,
    pub(crate) registry: ActorRef<RegistryMsg>,
    /// Set once shutdown begins: pending calls then fail with `CallError::Shutdown`.
    pub(crate) shutting_down: AtomicBool,
}
