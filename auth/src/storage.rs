//! Token files: private to this crate, reached only through the `OAuth` facade.
//!
//! One file per server and key (its configured URL, see `OAuth`) under
//! `<home>/oauth/`, directories 0700 and files 0600 from the moment they exist
//! (created with those modes, never widened), replaced atomically. A lock per
//! server is held across read–refresh–write: in-process by a mutex, across
//! processes by a lock file, so two processes never refresh the same token twice
//! or interleave writes.
//!
//! A local attacker who can write to `<home>/oauth/` could plant a symbolic link
//! where a token or lock file goes, to have tokens written or files created
//! elsewhere: token and lock files are [`private_file`]s (`O_NOFOLLOW`, regular
//! files only), and an existing directory open to group or others is closed to
//! 0700 with a warning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::error::AuthError;
use crate::private_file::{self, FileLock};
use crate::tokens::StoredTokens;

/// Largest token file read: far above any real one, and no unbounded read.
const MAX_TOKEN_FILE: u64 = 1024 * 1024;

/// Held while a server's tokens are read, refreshed and written.
pub(crate) struct StoreLock {
    _file: FileLock,
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

    /// `<server>-<hash of key>`: tokens of one URL never answer for another.
    fn stem(server: &str, key: &str) -> String {
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in key.as_bytes() {
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

    pub(crate) fn path(&self, server: &str, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Self::stem(server, key)))
    }

    /// Creates the directory 0700; an existing one open to group or others is
    /// closed to 0700 with a warning rather than refused: the tokens in it are
    /// exposed until then, and closing it is what the user would do anyway.
    fn ensure_dir(&self) -> Result<(), AuthError> {
        private_file::create_dir(&self.dir)?;
        if let Some(mode) = private_file::close_dir(&self.dir)? {
            tracing::warn!(
                dir = %self.dir.display(),
                "the token directory was open to other users (mode {mode:o}); set to 0700. \
                 Tokens stored in it may have been read: log out and in again if that matters"
            );
        }
        Ok(())
    }

    /// Takes the lock of one server's tokens (waits for other tasks and processes).
    pub(crate) async fn lock(&self, server: &str, key: &str) -> Result<StoreLock, AuthError> {
        self.ensure_dir()?;
        let path = self.dir.join(format!("{}.lock", Self::stem(server, key)));
        let local = local_locks()
            .lock()
            .entry(path.clone())
            .or_default()
            .clone();
        let local = local.lock_owned().await;
        let file = tokio::task::spawn_blocking(move || FileLock::acquire(&path))
            .await
            .map_err(|e| AuthError::Storage(format!("lock task: {e}")))??;
        Ok(StoreLock {
            _file: file,
            _local: local,
        })
    }

    /// The stored tokens, if any; a file that does not parse is an error, never ignored.
    pub(crate) fn load(&self, server: &str, key: &str) -> Result<Option<StoredTokens>, AuthError> {
        let path = self.path(server, key);
        let Some(text) = private_file::read_to_string(&path, MAX_TOKEN_FILE)? else {
            return Ok(None);
        };
        let corrupt = |line, column| AuthError::CorruptTokenFile {
            server: server.to_string(),
            path: path.clone(),
            line,
            column,
        };
        let tokens: StoredTokens =
            serde_json::from_str(&text).map_err(|e| corrupt(e.line(), e.column()))?;
        // Files written before keys were recorded carry the key as their resource.
        if tokens.key.as_deref().unwrap_or(&tokens.resource) != key {
            return Err(corrupt(0, 0));
        }
        Ok(Some(tokens))
    }

    /// Replaces the stored tokens atomically (a 0600 temporary file renamed into
    /// place); a symbolic link where the file goes is refused.
    pub(crate) fn save(
        &self,
        server: &str,
        key: &str,
        tokens: &StoredTokens,
    ) -> Result<(), AuthError> {
        self.ensure_dir()?;
        let path = self.path(server, key);
        let mut tokens = tokens.clone();
        tokens.key = Some(key.to_string());
        let body =
            serde_json::to_vec_pretty(&tokens).map_err(|e| AuthError::Storage(e.to_string()))?;
        private_file::replace(&path, &private_file::temp_path(&path), &body)?;
        Ok(())
    }

    /// Removes the token file (a symbolic link in its place is removed, not followed).
    pub(crate) fn remove(&self, server: &str, key: &str) -> Result<bool, AuthError> {
        let path = self.path(server, key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(AuthError::storage(&path, e)),
        }
    }
}
