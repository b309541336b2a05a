//! Token files: private to this crate, reached only through the `OAuth` facade.
//!
//! One file per server and resource under `<home>/oauth/`, directories 0700 and
//! files 0600 from the moment they exist (created with those modes, never
//! widened), replaced atomically. A lock per server is held across
//! read–refresh–write: in-process by a mutex, across processes by a lock file,
//! so two processes never refresh the same token twice or interleave writes.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use nix::fcntl::{Flock, FlockArg};

use crate::error::AuthError;
use crate::tokens::StoredTokens;

/// Held while a server's tokens are read, refreshed and written.
pub(crate) struct StoreLock {
    _file: Flock<File>,
    _local: tokio::sync::OwnedMutexGuard<()>,
}

pub(crate) struct TokenStore {
    dir: PathBuf,
}

/// One async mutex per token file in this process; the file lock covers other processes.
fn local_locks() -> &'static parking_lot::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>> {
    static LOCKS: OnceLock<parking_lot::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        OnceLock::new();
    LOCKS.get_or_init(Default::default)
}

impl TokenStore {
    pub(crate) fn new(home: &Path) -> TokenStore {
        TokenStore {
            dir: home.join("oauth"),
        }
    }

    /// `<server>-<hash of resource>`: tokens of one URL never answer for another.
    fn stem(server: &str, resource: &str) -> String {
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in resource.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
        let safe: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{safe}-{h:016x}")
    }

    pub(crate) fn path(&self, server: &str, resource: &str) -> PathBuf {
        self.dir
            .join(format!("{}.json", Self::stem(server, resource)))
    }

    fn ensure_dir(&self) -> Result<(), AuthError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| AuthError::storage(&self.dir, e))
    }

    /// Takes the lock of one server's tokens (waits for other tasks and processes).
    pub(crate) async fn lock(&self, server: &str, resource: &str) -> Result<StoreLock, AuthError> {
        self.ensure_dir()?;
        let path = self
            .dir
            .join(format!("{}.lock", Self::stem(server, resource)));
        let local = local_locks()
            .lock()
            .entry(path.clone())
            .or_default()
            .clone();
        let local = local.lock_owned().await;
        let file = tokio::task::spawn_blocking(move || {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| AuthError::storage(&path, e))?;
            Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, errno)| AuthError::storage(&path, errno.into()))
        })
        .await
        .map_err(|e| AuthError::Storage(format!("lock task: {e}")))??;
        Ok(StoreLock {
            _file: file,
            _local: local,
        })
    }

    /// The stored tokens, if any; a file that does not parse is an error, never ignored.
    pub(crate) fn load(
        &self,
        server: &str,
        resource: &str,
    ) -> Result<Option<StoredTokens>, AuthError> {
        let path = self.path(server, resource);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(AuthError::storage(&path, e)),
        };
        let tokens: StoredTokens =
            serde_json::from_str(&text).map_err(|e| AuthError::CorruptTokenFile {
                server: server.to_string(),
                path: path.clone(),
                line: e.line(),
                column: e.column(),
            })?;
        if tokens.resource != resource {
            return Err(AuthError::CorruptTokenFile {
                server: server.to_string(),
                path,
                line: 0,
                column: 0,
            });
        }
        Ok(Some(tokens))
    }

    /// Replaces the stored tokens atomically (a 0600 temporary file renamed into place).
    pub(crate) fn save(&self, server: &str, tokens: &StoredTokens) -> Result<(), AuthError> {
        self.ensure_dir()?;
        let path = self.path(server, &tokens.resource);
        let tmp = path.with_extension(format!(
            "json.{}.{}.tmp",
            std::process::id(),
            fastrand::u32(..)
        ));
        let body =
            serde_json::to_vec_pretty(tokens).map_err(|e| AuthError::Storage(e.to_string()))?;
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| AuthError::storage(&tmp, e))?;
        file.write_all(&body)
            .and_then(|_| file.sync_all())
            .map_err(|e| AuthError::storage(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| AuthError::storage(&path, e))
    }

    pub(crate) fn remove(&self, server: &str, resource: &str) -> Result<bool, AuthError> {
        let path = self.path(server, resource);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(AuthError::storage(&path, e)),
        }
    }
}
