//! What every downstream session shares: the supervised host, the options,
//! and the signal that the gateway is stopping.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{Host, ReloadReport, ServerSpec};
use tokio::sync::watch;

/// Limits and choices of `mcpvisor serve` that apply to every session.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Requests one session may have in flight; more are refused with an error.
    pub max_in_flight: usize,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Route changes within this window become one `notifications/tools/list_changed`.
    pub coalesce: Duration,
    /// Messages queued for a session's reader before notifications are dropped
    /// (progress, logs, events; answers wait instead).
    pub outbound_queue: usize,
    /// How long `tools/list` and `tools/call` wait, after the gateway starts,
    /// for the servers' first start to settle (so a host that connects at once
    /// sees the tools instead of an empty list).
    pub first_start: Duration,
    /// Revisions a downstream session may speak (its own when listed, else the
    /// first). Default: 2025-03-26 alone.
    pub protocol_versions: mcpvisor_protocol::mcp::revision::Versions,
    /// `subscriptions/listen` streams open at once, over every transport;
    /// more are refused (each holds a connection and its subscriptions).
    pub max_listens: usize,
    /// Whether trusted sessions may deal faults to the servers with
    /// `mcpvisor/inject` (`mcpvisor serve --allow-faults`). Off by default: a
    /// gateway in daily use must not be one request away from killing its servers.
    pub allow_faults: bool,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            max_in_flight: 64,
            page_size: 1000,
            coalesce: Duration::from_millis(50),
            outbound_queue: 256,
            first_start: Duration::from_secs(30),
            protocol_versions: Default::default(),
            max_listens: 64,
            allow_faults: false,
        }
    }
}

/// Reads the servers' definitions again (the `.mcp.json`, its approvals); an
/// error is a sentence for the person who asked for the reload.
pub type Reloader = Arc<dyn Fn() -> Result<Vec<ServerSpec>, String> + Send + Sync>;

/// The supervised host behind every session, and the stop signal.
pub struct Gateway {
    host: Host,
    options: GatewayOptions,
    stopping: watch::Sender<bool>,
    settled: watch::Sender<bool>,
    reloader: Option<Reloader>,
    /// Calls in flight per server, when servers' requests are forwarded downstream.
    callers: Option<Arc<crate::forward::Callers>>,
    /// One reload at a time: two overlapping ones would race on the file.
    reloading: tokio::sync::Mutex<()>,
    /// How many sessions subscribed to each resource.
    pub(crate) subscribers: crate::subscriptions::Subscribers,
    /// Stateless calls waiting for their clients' answers.
    pub(crate) bridge: crate::bridge::Bridge,
    /// One permit per `subscriptions/listen` stream open.
    pub(crate) listens: Arc<tokio::sync::Semaphore>,
}

impl Gateway {
    /// A gateway in front of `host`.
    /// `callers` is the table of [`crate::forward::forwarder`] when the host
    /// was started with its handler, so servers' requests reach the sessions.
    pub fn new(
        host: Host,
        options: GatewayOptions,
        reloader: Option<Reloader>,
        callers: Option<Arc<crate::forward::Callers>>,
    ) -> Arc<Gateway> {
        let listens = Arc::new(tokio::sync::Semaphore::new(options.max_listens));
        let host_node = host.node_name();
        let gateway = Arc::new(Gateway {
            host,
            options,
            stopping: watch::channel(false).0,
            settled: watch::channel(false).0,
            reloader,
            callers,
            reloading: tokio::sync::Mutex::new(()),
            subscribers: Default::default(),
            bridge: crate::bridge::Bridge::new(host_node),
            listens,
        });
        let weak = Arc::downgrade(&gateway);
        let (host, wait) = (gateway.host.clone(), gateway.options.first_start);
        tokio::spawn(async move {
            host.wait_ready(wait).await;
            if let Some(gateway) = weak.upgrade() {
                gateway.settled.send_replace(true);
            }
        });
        gateway
    }

    /// Reads the definitions again, applies the difference to the host, and
    /// waits (as long as a first start may) for the started servers to settle,
    /// so whoever asked sees their tools next.
    pub async fn reload(&self) -> Result<ReloadReport, String> {
        let Some(reloader) = &self.reloader else {
            return Err("this gateway was started without a configuration to reload".into());
        };
        let _one = self.reloading.lock().await;
        let specs = reloader()?;
        let report = self.host.reload(specs).await.map_err(|e| e.to_string())?;
        self.host.wait_ready(self.options.first_start).await;
        Ok(report)
    }

    /// Restarts the servers named `name` that are down or failed, and waits (as
    /// long as a first start may) for them to settle, so the next call finds
    /// them ready. Returns how many were restarted.
    pub async fn restart(&self, name: &str) -> Result<usize, mcpvisor::CallError> {
        let restarted = self.host.restart(name).await?;
        let settled = || {
            self.host
                .servers()
                .iter()
                .filter(|s| &*s.name == name)
                .all(|s| s.state.is_settled())
        };
        let deadline = tokio::time::Instant::now() + self.options.first_start;
        while restarted > 0 && !settled() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(restarted)
    }

    /// Resolves once every server's first start settled (ready, failed or
    /// waiting for a login), [`GatewayOptions::first_start`] passed, or the
    /// gateway is stopping.
    pub async fn first_start_settled(&self) {
        let mut settled = self.settled.subscribe();
        tokio::select! {
            _ = settled.wait_for(|s| *s) => {}
            () = self.stopped() => {}
        }
    }

    /// The supervised host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Where servers' requests are forwarded, if they are.
    pub(crate) fn callers(&self) -> Option<&Arc<crate::forward::Callers>> {
        self.callers.as_ref()
    }

    /// The options every session follows.
    pub fn options(&self) -> &GatewayOptions {
        &self.options
    }

    /// Starts stopping: calls in flight are answered with a shutdown error and
    /// listeners stop accepting.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// True once [`Gateway::stop`] was called.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Resolves once [`Gateway::stop`] was called.
    pub async fn stopped(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}
