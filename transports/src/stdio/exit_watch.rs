//! Noticing that a server's leader has exited, without reaping it.
//!
//! End of output is not death: a launcher that forks (`npx`, `uvx`,
//! `sh -c '…; true'`) leaves its pipes open in the real server, so killing the
//! launcher closes nothing. The leader's own exit counts as the server's, and
//! it is noticed while the leader is still a zombie: its pid, which is also its
//! group's id, stays reserved until it is reaped, so the group can be ended
//! without a chance of signalling another process's.

use std::io;

use nix::errno::Errno;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

/// Watches one leader; resolves [`ExitWatch::exited`] once it has exited.
pub(crate) struct ExitWatch {
    pid: Pid,
    how: Watching,
    /// Whether it has been asked once whether the leader exited already: a
    /// SIGCHLD from before the watch began is not seen again.
    looked: bool,
}

enum Watching {
    /// A pidfd of the leader (Linux): readable once it has exited.
    #[cfg(target_os = "linux")]
    Pidfd(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>),
    /// SIGCHLD, where there is no pidfd: each one is a reason to look.
    Sigchld(tokio::signal::unix::Signal),
}

impl ExitWatch {
    /// Watches `pid` through a duplicate of its pidfd.
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    pub(crate) fn pidfd(pid: u32, pidfd: &std::os::fd::OwnedFd) -> io::Result<ExitWatch> {
        // SAFETY: the duplicate is owned by the AsyncFd, which neither replaces
        // nor closes it while registered.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                pidfd.try_clone()?,
                tokio::io::Interest::READABLE,
            )?
        };
        Ok(ExitWatch {
            pid: leader(pid)?,
            how: Watching::Pidfd(fd),
            looked: true,
        })
    }

    /// Watches `pid`, a child not yet reaped, by SIGCHLD. Needs a Tokio runtime.
    pub(crate) fn sigchld(pid: u32) -> io::Result<ExitWatch> {
        let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?;
        Ok(ExitWatch {
            pid: leader(pid)?,
            how: Watching::Sigchld(signal),
            looked: false,
        })
    }

    /// Resolves once the leader has exited (or was reaped already); never, if
    /// the watch itself breaks, so end of output still ends the connection.
    /// Cancel-safe; a wait on a pidfd makes no system call.
    pub(crate) async fn exited(&mut self) {
        if !self.looked {
            self.looked = true;
            if has_exited(self.pid) {
                return;
            }
        }
        match &mut self.how {
            #[cfg(target_os = "linux")]
            Watching::Pidfd(fd) => match fd.readable().await {
                // Readable for good once the process has exited.
                Ok(_) => (),
                Err(_) => std::future::pending().await,
            },
            Watching::Sigchld(signal) => loop {
                // Any child's exit raises it: look whether it was this one's.
                if signal.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
                if has_exited(self.pid) {
                    return;
                }
            },
        }
    }

    /// Ends what is left of the leader's group. Called after
    /// [`ExitWatch::exited`] and before the leader is reaped, so the group id
    /// cannot have been reused.
    pub(crate) fn end_group(&self) {
        let _ = nix::sys::signal::killpg(self.pid, nix::sys::signal::Signal::SIGKILL);
    }
}

fn leader(pid: u32) -> io::Result<Pid> {
    i32::try_from(pid)
        .map(Pid::from_raw)
        .map_err(|_| io::Error::other("pid out of range"))
}

/// Whether `pid` has exited, leaving it to be reaped by its owner.
fn has_exited(pid: Pid) -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        // Reaped already (by teardown): gone.
        Err(Errno::ECHILD) => true,
        Err(_) => false,
    }
}
