//! The thread every GET notification stream of a host runs on: one isolated
//! current-thread Tokio runtime, so a slow or broken stream never competes
//! with the host's runtime, and a host with many HTTP servers pays for one
//! thread and one connection pool instead of one of each per server.

use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::{HttpOptions, client_builder};
use crate::error::TransportError;

/// A thread with its own current-thread runtime for GET streams. It ends when
/// the last handle to it is dropped (the streams on it are dropped with it).
pub struct StreamRuntime {
    handle: Handle,
    /// The GET streams' own client: its connections belong to this runtime.
    /// The thread makes it before it runs any stream, off the path of the
    /// handshake (loading the system's root certificates takes milliseconds);
    /// empty if it could not be made.
    client: Arc<OnceLock<reqwest::Client>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for StreamRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRuntime").finish_non_exhaustive()
    }
}

impl StreamRuntime {
    /// Starts the thread; `name` names it (`mcpvisor-sse…`).
    pub fn start(name: &str, options: &HttpOptions) -> Result<Arc<StreamRuntime>, TransportError> {
        let io = |e: std::io::Error| TransportError::Config(format!("GET stream thread: {e}"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io)?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let client = Arc::new(OnceLock::new());
        let (made, builder) = (client.clone(), client_builder(options));
        let thread = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .spawn(move || {
                match builder.build() {
                    Ok(c) => {
                        let _ = made.set(c);
                    }
                    Err(e) => {
                        tracing::warn!("GET streams' HTTP client: {}", e.without_url());
                    }
                }
                // Drives every stream spawned onto it until the last handle goes;
                // dropping the runtime then drops the streams still on it.
                let _ = runtime.block_on(stopped);
            })
            .map_err(io)?;
        Ok(Arc::new(StreamRuntime {
            handle,
            client,
            stop: Some(stop),
            thread: Some(thread),
        }))
    }

    /// Stops the thread and waits (at most `within`) until it has ended, if
    /// this is the last handle; otherwise only lets go of this one.
    pub async fn close(this: Arc<StreamRuntime>, within: std::time::Duration) {
        let Ok(mut runtime) = Arc::try_unwrap(this) else {
            return;
        };
        if let Some(stop) = runtime.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = runtime.thread.take() {
            let joined = tokio::task::spawn_blocking(move || thread.join());
            let _ = tokio::time::timeout(within, joined).await;
        }
    }

    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Where the streams' client is. Only a task running on this runtime may
    /// look: the thread has made it (or failed to) before it runs any.
    pub(crate) fn client(&self) -> Arc<OnceLock<reqwest::Client>> {
        self.client.clone()
    }
}

impl Drop for StreamRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined: a destructor may run on the host's runtime and must not
        // block it; the thread ends as soon as it sees the signal.
        drop(self.thread.take());
    }
}
