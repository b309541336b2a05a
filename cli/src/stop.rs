//! The signals that stop the CLI: SIGINT (Ctrl-C), SIGTERM (a service manager,
//! `kill`) and SIGHUP (the terminal went away). Each one ends the command the
//! same way: calls are cancelled, every server's process group is torn down,
//! and the exit code says which signal it was (128 + its number).

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Watches the stopping signals from before any server starts, so none is lost.
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    /// Registers the handlers (the default action, dying on the spot, would leave
    /// the servers running).
    pub(crate) fn watch() -> std::io::Result<StopSignals> {
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next stopping signal; returns the exit code for it.
    pub(crate) async fn recv(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => 128 + 2,
            _ = self.terminate.recv() => 128 + 15,
            _ = self.hangup.recv() => 128 + 1,
        }
    }

    /// For a daemon (`serve`): SIGHUP asks for a reload (`None`), SIGINT and
    /// SIGTERM stop it (`Some(exit code)`).
    pub(crate) async fn recv_or_reload(&mut self) -> Option<u8> {
        tokio::select! {
            _ = self.interrupt.recv() => Some(128 + 2),
            _ = self.terminate.recv() => Some(128 + 15),
            _ = self.hangup.recv() => None,
        }
    }
}
