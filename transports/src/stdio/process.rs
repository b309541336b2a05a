//! A server's process, however it was started: waited for, reaped once, and
//! killed if dropped while alive.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// The leader of a server's process group.
pub(crate) enum ServerProcess {
    /// Started by Tokio's `Command` (no parent-death signal, or not Linux).
    Spawned(tokio::process::Child),
    /// Started by [`super::launch`] and watched through a pidfd.
    #[cfg(target_os = "linux")]
    Launched(Launched),
}

impl ServerProcess {
    /// Waits until the process has exited and reaps it.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            ServerProcess::Spawned(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            ServerProcess::Launched(launched) => launched.wait().await,
        }
    }

    /// A watch that notices the process exiting without reaping it. Needs a
    /// Tokio runtime.
    pub(crate) fn exit_watch(&self, pid: u32) -> io::Result<super::exit_watch::ExitWatch> {
        match self {
            ServerProcess::Spawned(_) => super::exit_watch::ExitWatch::sigchld(pid),
            #[cfg(target_os = "linux")]
            ServerProcess::Launched(launched) => {
                super::exit_watch::ExitWatch::pidfd(pid, launched.exited.get_ref())
            }
        }
    }

    /// The exit status if the process has exited (reaping it), else `None`.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            ServerProcess::Spawned(child) => child.try_wait(),
            #[cfg(target_os = "linux")]
            ServerProcess::Launched(launched) => launched.try_wait(),
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{Launched, pidfd_available};

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod linux {
    use std::os::fd::{FromRawFd, OwnedFd};

    use nix::libc;
    use tokio::io::unix::AsyncFd;

    use super::*;

    /// Whether this kernel (and sandbox: seccomp filters, emulators) gives
    /// pidfds; asked once per process.
    pub(crate) fn pidfd_available() -> bool {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            // SAFETY: pidfd_open on this very process; the fd is closed at once.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
            if fd < 0 {
                return false;
            }
            // SAFETY: just opened, owned by nobody else.
            drop(unsafe { OwnedFd::from_raw_fd(fd as i32) });
            true
        })
    }

    /// A child started by [`crate::stdio::launch`]: its pid, and a pidfd that
    /// becomes readable when it exits (no SIGCHLD handling needed).
    pub(crate) struct Launched {
        pid: libc::pid_t,
        pub(in crate::stdio) exited: AsyncFd<OwnedFd>,
        status: Option<ExitStatus>,
    }

    impl Launched {
        /// Watches `pid`, a child of this process not yet reaped. Needs a
        /// Tokio runtime.
        pub(crate) fn watch(pid: libc::pid_t) -> io::Result<Launched> {
            // SAFETY: pidfd_open on our own unreaped child; the fd is ours.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: just opened and owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
            // SAFETY: the pidfd is owned by the AsyncFd, which neither
            // replaces nor closes it while registered.
            let exited =
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)? };
            Ok(Launched {
                pid,
                exited,
                status: None,
            })
        }

        pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
            reap(self.pid, &mut self.status, libc::WNOHANG)
        }

        pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
            loop {
                if let Some(status) = reap(self.pid, &mut self.status, libc::WNOHANG)? {
                    return Ok(status);
                }
                let mut ready = self.exited.readable().await?;
                if let Some(status) = reap(self.pid, &mut self.status, libc::WNOHANG)? {
                    return Ok(status);
                }
                ready.clear_ready();
            }
        }
    }

    /// Reaps `pid` once; later calls answer the status kept.
    fn reap(
        pid: libc::pid_t,
        status: &mut Option<ExitStatus>,
        flags: libc::c_int,
    ) -> io::Result<Option<ExitStatus>> {
        if let Some(done) = status {
            return Ok(Some(*done));
        }
        let mut raw = 0;
        // SAFETY: waitpid on our own child, which only this value reaps.
        let reaped = unsafe { libc::waitpid(pid, &mut raw, flags) };
        match reaped {
            0 => Ok(None),
            r if r == pid => {
                *status = Some(ExitStatus::from_raw(raw));
                Ok(*status)
            }
            _ => Err(io::Error::last_os_error()),
        }
    }

    impl Drop for Launched {
        fn drop(&mut self) {
            if self.status.is_some() {
                return;
            }
            // Not reaped, so the pid is still this child's: safe to signal.
            // SAFETY: kill on our own unreaped child.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            if matches!(reap(self.pid, &mut self.status, libc::WNOHANG), Ok(Some(_))) {
                return;
            }
            // It dies in a moment; reap it then, off this thread, so no zombie stays.
            let pid = self.pid;
            let reaper = move || {
                let mut raw = 0;
                // SAFETY: blocking waitpid on our own child, just killed.
                unsafe { libc::waitpid(pid, &mut raw, 0) };
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn_blocking(reaper);
                }
                Err(_) => {
                    let _ = std::thread::Builder::new()
                        .name("mcpvisor-reaper".into())
                        .spawn(reaper);
                }
            }
        }
    }
}
