//! What every actor of one supervisor shares.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

use mcpvisor_transports::{StreamRuntime, TransportError, http_client};

use parking_lot::RwLock;
use ractor::ActorRef;

use crate::events::EventBus;
use crate::options::SupervisorOptions;
use crate::registry_msg::RegistryMsg;
use crate::status::StatusBoard;

pub(crate) struct HostContext {
    pub(crate) options: SupervisorOptions,
    pub(crate) bus: EventBus,
    pub(crate) status: Arc<StatusBoard>,
    /// The registry; replaced when the supervisor restarts a registry that died.
    pub(crate) registry: RwLock<ActorRef<RegistryMsg>>,
    /// Set once shutdown begins: pending calls then fail with `CallError::Shutdown`.
    pub(crate) shutting_down: AtomicBool,
    /// One HTTP client for every HTTP server of this host, made on first use.
    pub(crate) http_client: OnceLock<reqwest::Client>,
    /// The one thread every GET stream of this host runs on, made on first use.
    pub(crate) streams: parking_lot::Mutex<Option<Arc<StreamRuntime>>>,
    /// The host's current roots (`None`: not offered), shared with the `Host`.
    pub(crate) roots: Arc<RwLock<Option<Arc<[mcpvisor_protocol::mcp::messages::Root]>>>>,
    /// Subscriptions and log levels to renew on every new connection.
    pub(crate) restart_replay: Arc<crate::restart_replay::RestartReplay>,
    /// Each server's injected faults, shared with the `Host`.
    pub(crate) faults: Arc<crate::fault_board::FaultBoard>,
}

impl HostContext {
    /// Sends `msg` to the current registry.
    pub(crate) fn to_registry(&self, msg: RegistryMsg) {
        // A registry that just died drops this; the supervisor has every server
        // report again to the one it starts instead.
        let _ = self.registry.read().cast(msg);
    }

    /// The current registry.
    pub(crate) fn registry(&self) -> ActorRef<RegistryMsg> {
        self.registry.read().clone()
    }

    pub(crate) fn streams(&self) -> Result<Arc<StreamRuntime>, TransportError> {
        let mut streams = self.streams.lock();
        if let Some(s) = &*streams {
            return Ok(s.clone());
        }
        let started = StreamRuntime::start("mcpvisor-sse", &self.options.http)?;
        *streams = Some(started.clone());
        Ok(started)
    }

    pub(crate) fn http_client(&self) -> Result<reqwest::Client, TransportError> {
        if let Some(c) = self.http_client.get() {
            return Ok(c.clone());
        }
        let client = http_client(&self.options.http)?;
        Ok(self.http_client.get_or_init(|| client).clone())
    }
}
