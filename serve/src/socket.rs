//! The local socket a running `serve` listens on, where the CLI attaches.
//!
//! One per configuration: `<home>/run/<digest>.sock`, the digest taken from the
//! canonical path of the `.mcp.json`. The directory is 0700 and the socket
//! 0600, so only the owner reaches the supervisor. A `<digest>.lock` held with
//! `flock` for the life of the `serve` makes it one per configuration; a
//! socket left by a `serve` that died is found unlocked and replaced.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};
use tokio::net::{UnixListener, UnixStream};

use crate::gateway::Gateway;
use crate::lines::serve_lines;
use crate::tools::Naming;

/// Connections the socket serves at once; more are closed at accept.
pub const MAX_CONNECTIONS: usize = 64;

/// Where the socket and its lock live for one configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketPlace {
    /// The 0700 directory.
    pub dir: PathBuf,
    /// The socket.
    pub socket: PathBuf,
    /// The lock a running `serve` holds.
    pub lock: PathBuf,
}

impl SocketPlace {
    /// The place for `config` (a `.mcp.json`, canonicalised here) under `home`;
    /// without a configuration (the built-in demo server), the place of the
    /// current directory.
    pub fn for_config(home: &Path, config: Option<&Path>) -> io::Result<SocketPlace> {
        let key = match config {
            Some(path) => format!("config:{}", std::fs::canonicalize(path)?.display()),
            None => format!("demo:{}", std::env::current_dir()?.display()),
        };
        let digest = Sha256::digest(key.as_bytes());
        let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let dir = home.join("run");
        Ok(SocketPlace {
            socket: dir.join(format!("{name}.sock")),
            lock: dir.join(format!("{name}.lock")),
            dir,
        })
    }
}

/// Why the socket could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// Another `serve` for this configuration holds the lock.
    #[error("an `mcpvisor serve` for this configuration is already running (socket {})", .socket.display())]
    AlreadyServing {
        /// Its socket.
        socket: PathBuf,
    },
    /// A file operation failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// Which file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SocketError + '_ {
    move |source| SocketError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A bound socket, owned while the lock is held; the socket file is removed on drop.
#[derive(Debug)]
pub struct SocketListener {
    listener: UnixListener,
    place: SocketPlace,
    _lock: Flock<File>,
}

impl SocketListener {
    /// Takes the lock and binds the socket (replacing a stale one).
    pub fn bind(place: &SocketPlace) -> Result<SocketListener, SocketError> {
        mcpvisor_auth::private_file::create_dir(&place.dir)
            .and_then(|()| mcpvisor_auth::private_file::close_dir(&place.dir).map(|_| ()))
            .map_err(|e| SocketError::Io {
                path: place.dir.clone(),
                source: io::Error::other(e.to_string()),
            })?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&place.lock)
            .map_err(io_error(&place.lock))?;
        let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(SocketError::AlreadyServing {
                    socket: place.socket.clone(),
                });
            }
            Err((_, errno)) => return Err(io_error(&place.lock)(errno.into())),
        };
        // Nobody serves (the lock is ours): whatever is there is stale.
        match std::fs::remove_file(&place.socket) {
            Ok(()) => tracing::info!(socket = %place.socket.display(), "replaced a stale socket"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&place.socket)(e)),
        }
        let listener = UnixListener::bind(&place.socket).map_err(io_error(&place.socket))?;
        std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o600))
            .map_err(io_error(&place.socket))?;
        Ok(SocketListener {
            listener,
            place: place.clone(),
            _lock: lock,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.place.socket
    }

    /// Serves every connection as one session until the gateway stops and the
    /// sessions have ended.
    pub async fn serve(&self, gateway: Arc<Gateway>) {
        let open = Arc::new(AtomicUsize::new(0));
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = gateway.stopped() => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                open.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!(
                    limit = MAX_CONNECTIONS,
                    "socket connection refused: too many open"
                );
                continue;
            }
            let gateway = gateway.clone();
            let open = open.clone();
            tokio::spawn(async move {
                let (reader, writer) = stream.into_split();
                serve_lines(gateway, Naming::Qualified, reader, writer).await;
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
        // Each session answers its calls in flight with a shutdown error and
        // ends; wait for them (bounded), so the answers are written before exit.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
        while open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}

impl Drop for SocketListener {
    fn drop(&mut self) {
        // The lock is still ours here, so no newer `serve` owns this file yet.
        let _ = std::fs::remove_file(&self.place.socket);
    }
}

/// Connects to the `serve` for `place`: `None` when none runs (no socket, or
/// one left by a `serve` that died).
pub async fn connect(place: &SocketPlace) -> io::Result<Option<UnixStream>> {
    match UnixStream::connect(&place.socket).await {
        Ok(stream) => Ok(Some(stream)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
