//! The connections this node handed to ractor_cluster, and what it knows of
//! each: the peer's address and certificate, whether its session
//! authenticated and as which node.
//!
//! It also admits inbound connections: a stranger may hold only so many
//! connections that have not authenticated, from one address and in all,
//! so it cannot take every slot a joining node needs (each is closed at the
//! gate's deadline anyway, see `gate`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio_rustls::rustls::pki_types::CertificateDer;

/// Inbound connections that have not authenticated, in all.
pub(crate) const MAX_UNAUTHENTICATED: usize = 64;

/// Inbound connections that have not authenticated, from one address.
pub(crate) const MAX_UNAUTHENTICATED_PER_IP: usize = 8;

/// One connection, from the moment it is handed to ractor_cluster until its
/// stream is dropped.
pub(crate) struct Conn {
    /// The other end's address.
    pub(crate) peer: SocketAddr,
    /// How ractor_cluster names the session (its `peer_addr`): unique per connection.
    pub(crate) label: String,
    /// The peer's certificate (under TLS).
    pub(crate) certificate: Option<CertificateDer<'static>>,
    authenticated: AtomicBool,
    /// The node its session authenticated as, once checked.
    node: Mutex<Option<Arc<str>>>,
    /// Its place among the unauthenticated connections (inbound ones).
    ticket: Mutex<Option<Ticket>>,
}

impl Conn {
    /// Whether its session authenticated (and, under TLS, its certificate names its node).
    pub(crate) fn authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// The node its session authenticated as.
    pub(crate) fn node(&self) -> Option<Arc<str>> {
        self.node.lock().clone()
    }

    /// Its session authenticated as `node`: the gate opens and its place
    /// among the unauthenticated is freed.
    pub(crate) fn authenticate(&self, node: Arc<str>) {
        *self.node.lock() = Some(node);
        self.authenticated.store(true, Ordering::Release);
        self.ticket.lock().take();
    }
}

/// A place among the unauthenticated connections; freed when dropped.
pub(crate) struct Ticket {
    ip: IpAddr,
    table: Weak<Connections>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            table.release(self.ip);
        }
    }
}

#[derive(Default)]
struct Table {
    /// Handed to ractor_cluster, its session not yet opened, by label.
    handed: HashMap<String, Weak<Conn>>,
    /// By ractor_cluster's id of the session (the `node_id` in a remote
    /// actor's id), until ractor_cluster says it closed.
    sessions: HashMap<u64, Arc<Conn>>,
    unauthenticated: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Every connection of this node (see the module).
#[derive(Default)]
pub(crate) struct Connections {
    table: Mutex<Table>,
    next: AtomicU64,
}

impl Connections {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Connections::default())
    }

    /// A place for a new inbound connection from `ip`, unless it or everyone
    /// already holds as many unauthenticated connections as they may.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Ticket> {
        let mut table = self.table.lock();
        let from_ip = table.per_ip.get(&ip).copied().unwrap_or(0);
        if table.unauthenticated >= MAX_UNAUTHENTICATED || from_ip >= MAX_UNAUTHENTICATED_PER_IP {
            return None;
        }
        table.unauthenticated += 1;
        *table.per_ip.entry(ip).or_default() += 1;
        Some(Ticket {
            ip,
            table: Arc::downgrade(self),
        })
    }

    fn release(&self, ip: IpAddr) {
        let mut table = self.table.lock();
        table.unauthenticated = table.unauthenticated.saturating_sub(1);
        if let Some(n) = table.per_ip.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                table.per_ip.remove(&ip);
            }
        }
    }

    /// A connection about to be handed to ractor_cluster.
    pub(crate) fn register(
        &self,
        peer: SocketAddr,
        certificate: Option<CertificateDer<'static>>,
        ticket: Option<Ticket>,
    ) -> Arc<Conn> {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            peer,
            label: format!("{peer} #{seq}"),
            certificate,
            authenticated: AtomicBool::new(false),
            node: Mutex::new(None),
            ticket: Mutex::new(ticket),
        });
        let mut table = self.table.lock();
        // Connections whose session never opened (ractor_cluster dropped them).
        table.handed.retain(|_, c| c.strong_count() > 0);
        table
            .handed
            .insert(conn.label.clone(), Arc::downgrade(&conn));
        conn
    }

    /// ractor_cluster opened the session `node_id` for the connection `label`.
    pub(crate) fn opened(&self, label: &str, node_id: u64) -> Option<Arc<Conn>> {
        let mut table = self.table.lock();
        let conn = table.handed.remove(label)?.upgrade()?;
        table.sessions.insert(node_id, conn.clone());
        Some(conn)
    }

    /// The connection of session `node_id`, while it lives.
    pub(crate) fn session(&self, node_id: u64) -> Option<Arc<Conn>> {
        self.table.lock().sessions.get(&node_id).cloned()
    }

    /// Session `node_id` closed.
    pub(crate) fn closed(&self, node_id: u64) -> Option<Arc<Conn>> {
        self.table.lock().sessions.remove(&node_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unauthenticated_connections_are_capped_per_address_and_freed() {
        let table = Connections::new();
        let one: IpAddr = "127.0.0.2".parse().unwrap();
        let mut tickets: Vec<Ticket> = (0..MAX_UNAUTHENTICATED_PER_IP)
            .map(|_| table.admit(one).unwrap())
            .collect();
        assert!(table.admit(one).is_none());
        assert!(table.admit("127.0.0.3".parse().unwrap()).is_some());
        let conn = table.register("127.0.0.2:1".parse().unwrap(), None, tickets.pop());
        assert!(table.admit(one).is_none());
        conn.authenticate(Arc::from("b"));
        assert!(table.admit(one).is_some());
        drop(tickets);
        assert_eq!(table.table.lock().unauthenticated, 0);
    }
}
