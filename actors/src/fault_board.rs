//! Each server's fault state and where its live connection can be reached,
//! shared by the host (which deals faults) and the server actors (which
//! register their connections). A server's entry outlives its connections,
//! so a fault set while it restarts meets the next one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use mcpvisor_transports::{Faulty, WireFaults};
use parking_lot::Mutex;
use ractor::{ActorId, ActorRef};
use tokio::task::JoinHandle;

use crate::inbound::InboundSink;
use crate::messages::TransportMsg;

/// Every server's fault state, by name.
#[derive(Default)]
pub(crate) struct FaultBoard {
    servers: Mutex<HashMap<Arc<str>, Arc<ServerFaults>>>,
}

impl FaultBoard {
    /// The entry of `name`, made on first use.
    pub(crate) fn server(&self, name: &str) -> Arc<ServerFaults> {
        let mut servers = self.servers.lock();
        if let Some(f) = servers.get(name) {
            return f.clone();
        }
        let f = Arc::new(ServerFaults::default());
        servers.insert(Arc::from(name), f.clone());
        f
    }

    /// Forgets a server that left the host's configuration.
    pub(crate) fn remove(&self, name: &str) {
        if let Some(f) = self.servers.lock().remove(name) {
            f.clear();
        }
    }
}

/// A live connection, as fault injection reaches it.
#[derive(Clone)]
pub(crate) struct LiveConnection {
    pub(crate) actor: ActorId,
    pub(crate) transport: ActorRef<TransportMsg>,
    pub(crate) sink: Arc<Faulty<InboundSink>>,
}

const UNKNOWN: u8 = 0;
const STDIO: u8 = 1;
const HTTP: u8 = 2;

/// One server's faults.
#[derive(Default)]
pub(crate) struct ServerFaults {
    /// Applied in the transport layer of every connection of the server.
    pub(crate) wire: Arc<WireFaults>,
    exit_on_initialize: AtomicBool,
    transport: AtomicU8,
    live: Mutex<Option<LiveConnection>>,
    /// The SIGCONT that ends a stop.
    resume: Mutex<Option<JoinHandle<()>>>,
}

impl ServerFaults {
    /// A connection started: faults now reach it.
    pub(crate) fn attach(&self, http: bool, live: LiveConnection) {
        self.transport
            .store(if http { HTTP } else { STDIO }, Ordering::Relaxed);
        *self.live.lock() = Some(live);
    }

    /// The connection of `actor` ended.
    pub(crate) fn detach(&self, actor: ActorId) {
        let mut live = self.live.lock();
        if live.as_ref().is_some_and(|l| l.actor == actor) {
            *live = None;
            // Counted faults belong to the connection they were dealt to: what
            // is left of them must not swallow the next one's handshake.
            self.wire.connection_ended();
        }
    }

    /// `Some(true)` for HTTP, once a connection has started.
    pub(crate) fn is_http(&self) -> Option<bool> {
        match self.transport.load(Ordering::Relaxed) {
            UNKNOWN => None,
            t => Some(t == HTTP),
        }
    }

    pub(crate) fn live(&self) -> Option<LiveConnection> {
        self.live.lock().clone()
    }

    pub(crate) fn arm_exit_on_initialize(&self) {
        self.exit_on_initialize.store(true, Ordering::Relaxed);
    }

    /// True once, for the start that is to exit during `initialize`.
    pub(crate) fn take_exit_on_initialize(&self) -> bool {
        self.exit_on_initialize.swap(false, Ordering::Relaxed)
    }

    /// Keeps the timer that ends a stop, replacing (and cancelling) an earlier one.
    pub(crate) fn set_resume(&self, timer: JoinHandle<()>) {
        if let Some(old) = self.resume.lock().replace(timer) {
            old.abort();
        }
    }

    /// Ends every fault: wire faults, an armed start, a stop (the server
    /// continues at once; a continue to a running server does nothing).
    pub(crate) fn clear(&self) {
        self.wire.clear();
        self.exit_on_initialize.store(false, Ordering::Relaxed);
        if let Some(timer) = self.resume.lock().take() {
            timer.abort();
        }
        if let Some(live) = self.live().filter(|_| self.is_http() == Some(false)) {
            let _ = live.transport.cast(TransportMsg::Fault(
                crate::messages::TransportFault::Continue,
                None,
            ));
        }
    }
}
