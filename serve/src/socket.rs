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
use crate::hushed::Hushed;
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
    /// The bearer token HTTP clients of this configuration's `serve` send
    /// (made by the first `serve --http` or `serve --print-token`).
    pub token: PathBuf,
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
            token: dir.join(format!("{name}.token")),
            dir,
        })
    }

    /// Makes the directory (0700) if needed and checks that only this user
    /// controls it and the home above it: a `run` that is a link or someone
    /// else's, or a home others may write to (where they could swap `run`),
    /// is refused.
    pub fn prepare(&self) -> Result<(), SocketError> {
        if let Some(home) = self.dir.parent() {
            mcpvisor_auth::private_file::create_dir(home).map_err(private_error)?;
            let meta = std::fs::metadata(home).map_err(io_error(home))?;
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(SocketError::Unsafe {
                    path: home.to_path_buf(),
                    why: "others may write to it (chmod go-w)",
                });
            }
            // Whoever owns it can swap `run` for one of theirs at any time.
            let owner = std::os::unix::fs::MetadataExt::uid(&meta);
            if owner != nix::unistd::geteuid().as_raw() && owner != 0 {
                return Err(SocketError::Unsafe {
                    path: home.to_path_buf(),
                    why: "another user owns it",
                });
            }
        }
        mcpvisor_auth::private_file::create_dir(&self.dir).map_err(private_error)?;
        mcpvisor_auth::private_file::close_dir(&self.dir).map_err(private_error)?;
        self.check_dir()
    }

    /// Checks the directory as it is, without making or changing anything:
    /// a real directory (not a link) owned by this user.
    pub fn check_dir(&self) -> Result<(), SocketError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(&self.dir).map_err(io_error(&self.dir))?;
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(SocketError::Unsafe {
                path: self.dir.clone(),
                why: "it is not a directory (a link?)",
            });
        }
        if meta.uid() != nix::unistd::geteuid().as_raw() {
            return Err(SocketError::Unsafe {
                path: self.dir.clone(),
                why: "another user owns it",
            });
        }
        Ok(())
    }
}

fn private_error(e: mcpvisor_auth::private_file::PrivateFileError) -> SocketError {
    SocketError::Io {
        path: e.path,
        source: e.source,
    }
}

/// One open connection in the count, however its task ends (a panic too).
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether the process at the other end of `stream` runs as this user.
fn same_user(stream: &UnixStream) -> bool {
    stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == nix::unistd::geteuid().as_raw())
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
    /// The directory or the home above it is not this user's alone.
    #[error("refusing {}: {why}", .path.display())]
    Unsafe {
        /// Which directory.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The process at the other end of the socket runs as another user.
    #[error("the process serving {} runs as another user; refusing to attach", .path.display())]
    ForeignPeer {
        /// The socket.
        path: PathBuf,
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
        place.prepare()?;
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
        let (mut failing, mut foreign, mut full) = (Hushed::new(), Hushed::new(), Hushed::new());
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = gateway.stopped() => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    if let Some(held) = failing.due(tokio::time::Instant::now()) {
                        tracing::warn!(error = %e, held_back = held, "socket accept failed");
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            // The socket is 0600, so this is a second lock on the same door.
            if !same_user(&stream) {
                if let Some(held) = foreign.due(tokio::time::Instant::now()) {
                    tracing::warn!(
                        held_back = held,
                        "socket connection refused: the peer runs as another user"
                    );
                }
                continue;
            }
            if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                open.fetch_sub(1, Ordering::SeqCst);
                if let Some(held) = full.due(tokio::time::Instant::now()) {
                    tracing::warn!(
                        limit = MAX_CONNECTIONS,
                        held_back = held,
                        "socket connection refused: too many open"
                    );
                }
                continue;
            }
            let gateway = gateway.clone();
            let counted = Counted(open.clone());
            tokio::spawn(async move {
                let (reader, writer) = stream.into_split();
                serve_lines(gateway, Naming::Qualified, reader, writer, |r| {
                    crate::lines::hung_up(std::os::fd::AsFd::as_fd(r.as_ref()))
                })
                .await;
                drop(counted);
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
/// one left by a `serve` that died). Refused when the directory is not this
/// user's alone or the process listening runs as someone else: whoever put a
/// socket there would see every call.
pub async fn connect(place: &SocketPlace) -> Result<Option<UnixStream>, SocketError> {
    match place.check_dir() {
        Err(SocketError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None);
        }
        checked => checked?,
    }
    match UnixStream::connect(&place.socket).await {
        Ok(stream) if same_user(&stream) => Ok(Some(stream)),
        Ok(_) => Err(SocketError::ForeignPeer {
            path: place.socket.clone(),
        }),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(io_error(&place.socket)(e)),
    }
}
