//! Approvals: which servers of which project `.mcp.json` may run.
//!
//! An approval is keyed by the canonical absolute path of the `.mcp.json` and
//! the server's name — not by a fingerprint of its definition — so editing a
//! definition keeps its approval, and the same name in another project is not
//! approved. The file lives under the configured home; every change is a
//! read–modify–write under an exclusive file lock, written to a temporary file
//! and renamed into place, so concurrent `enable`s never lose each other's work
//! or leave half a file. A corrupt file is an error, never silently reset.
//! The directory, the file and its lock are
//! [`private_file`](mcpvisor_auth::private_file)s: 0700 and 0600, never opened
//! through a symbolic link.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpvisor_auth::private_file::{self, FileLock, PrivateFileError};
use serde::{Deserialize, Serialize};

const FILE: &str = "approvals.json";
const LOCK: &str = "approvals.lock";
const VERSION: u32 = 1;
/// The largest approvals file read.
const APPROVALS_LIMIT: u64 = 16 * 1024 * 1024;

/// Why approvals could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// Reading, writing or creating a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// Which file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file exists but is not a valid approvals file. It is left as it is.
    #[error("{}:{line}:{column}: approvals file is corrupt ({reason}); fix or remove it", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line (0 when not known).
        line: usize,
        /// 1-based column (0 when not known).
        column: usize,
        /// What is wrong.
        reason: String,
    },
    /// The `.mcp.json` path could not be made canonical (it does not exist?).
    #[error("cannot resolve {}: {source}", path.display())]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Approved,
    Denied,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsFile {
    version: u32,
    /// Canonical `.mcp.json` path → server name → decision.
    projects: BTreeMap<String, BTreeMap<String, Decision>>,
}

/// The approvals stored under one home directory.
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    dir: PathBuf,
}

impl ApprovalStore {
    /// The store in `home` (created on first write, mode 0700).
    pub fn new(home: &Path) -> Self {
        ApprovalStore {
            dir: home.to_path_buf(),
        }
    }

    /// The approvals file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The key of a `.mcp.json`: its canonical absolute path.
    pub fn key_of(config: &Path) -> Result<String, ApprovalError> {
        let canonical = std::fs::canonicalize(config).map_err(|source| ApprovalError::Path {
            path: config.to_path_buf(),
            source,
        })?;
        Ok(canonical.to_string_lossy().into_owned())
    }

    /// Whether `server` of the project keyed `key` is approved.
    pub fn is_approved(&self, key: &str, server: &str) -> Result<bool, ApprovalError> {
        let file = self.read()?;
        Ok(file.projects.get(key).and_then(|p| p.get(server)) == Some(&Decision::Approved))
    }

    /// Records a decision for `server` of the project keyed `key`.
    pub fn set(&self, key: &str, server: &str, approved: bool) -> Result<(), ApprovalError> {
        self.create_dir()?;
        let _lock = self.lock()?;
        let mut file = self.read()?;
        let decision = if approved {
            Decision::Approved
        } else {
            Decision::Denied
        };
        file.projects
            .entry(key.to_string())
            .or_default()
            .insert(server.to_string(), decision);
        file.version = VERSION;
        self.write(&file)
    }

    /// Removes any decision for `server` of the project keyed `key` (nothing
    /// to do when there is no approvals file).
    pub fn forget(&self, key: &str, server: &str) -> Result<(), ApprovalError> {
        if !self.path().exists() {
            return Ok(());
        }
        let _lock = self.lock()?;
        let mut file = self.read()?;
        let Some(project) = file.projects.get_mut(key) else {
            return Ok(());
        };
        if project.remove(server).is_none() {
            return Ok(());
        }
        if project.is_empty() {
            file.projects.remove(key);
        }
        self.write(&file)
    }

    /// Withdraws every decision of the project keyed `key` for a server not
    /// in `names` (an entry removed from the file by hand): a new entry that
    /// takes the name later is not approved by the old decision. Returns the
    /// names withdrawn; writes only when there are some.
    pub fn retain(&self, key: &str, names: &[&str]) -> Result<Vec<String>, ApprovalError> {
        let stale = |file: &ApprovalsFile| -> Vec<String> {
            file.projects
                .get(key)
                .map(|p| {
                    p.keys()
                        .filter(|k| !names.contains(&k.as_str()))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        if !self.path().exists() || stale(&self.read()?).is_empty() {
            return Ok(Vec::new());
        }
        let _lock = self.lock()?;
        let mut file = self.read()?;
        let gone = stale(&file);
        if gone.is_empty() {
            return Ok(gone);
        }
        if let Some(project) = file.projects.get_mut(key) {
            project.retain(|k, _| names.contains(&k.as_str()));
            if project.is_empty() {
                file.projects.remove(key);
            }
        }
        self.write(&file)?;
        Ok(gone)
    }

    fn create_dir(&self) -> Result<(), ApprovalError> {
        Ok(private_file::create_dir(&self.dir)?)
    }

    fn lock(&self) -> Result<FileLock, ApprovalError> {
        Ok(FileLock::acquire(&self.dir.join(LOCK))?)
    }

    fn read(&self) -> Result<ApprovalsFile, ApprovalError> {
        let path = self.path();
        // Approvals are a few lines per project; a file past the limit is not ours.
        let Some(text) = private_file::read_to_string(&path, APPROVALS_LIMIT)? else {
            return Ok(ApprovalsFile::default());
        };
        let file: ApprovalsFile =
            serde_json::from_str(&text).map_err(|e| ApprovalError::Corrupt {
                path: path.clone(),
                line: e.line(),
                column: e.column(),
                reason: if e.is_data() {
                    "unexpected structure".into()
                } else {
                    "not valid JSON".into()
                },
            })?;
        if file.version != VERSION {
            return Err(ApprovalError::Corrupt {
                path,
                line: 0,
                column: 0,
                reason: format!("version {} is not {VERSION}", file.version),
            });
        }
        Ok(file)
    }

    fn write(&self, file: &ApprovalsFile) -> Result<(), ApprovalError> {
        let tmp = self.dir.join(format!("{FILE}.{}.tmp", std::process::id()));
        let body = serde_json::to_vec_pretty(file).unwrap_or_default();
        // A leftover from a crash, or a link planted to make this write land
        // elsewhere: unlinked (never followed), then the file is created anew.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ApprovalError::Io {
                    path: tmp,
                    source: e,
                });
            }
            _ => {}
        }
        Ok(private_file::replace(&self.path(), &tmp, &body)?)
    }
}

impl From<PrivateFileError> for ApprovalError {
    fn from(e: PrivateFileError) -> ApprovalError {
        ApprovalError::Io {
            path: e.path,
            source: e.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_home(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpvisor-approvals-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn decisions_for_entries_gone_from_the_file_are_withdrawn() {
        let home = temp_home("retain");
        let store = ApprovalStore::new(&home);
        store.set("p", "kept", true).unwrap();
        store.set("p", "gone", true).unwrap();
        store.set("other", "gone", true).unwrap();
        assert_eq!(
            store.retain("p", &["kept"]).unwrap(),
            vec!["gone".to_string()]
        );
        assert!(store.is_approved("p", "kept").unwrap());
        assert!(!store.is_approved("p", "gone").unwrap());
        assert!(
            store.is_approved("other", "gone").unwrap(),
            "another project's stays"
        );
        assert!(store.retain("p", &["kept"]).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn decisions_round_trip_and_files_are_private() {
        let home = temp_home("rt");
        let store = ApprovalStore::new(&home);
        assert!(!store.is_approved("/p/.mcp.json", "a").unwrap());
        store.set("/p/.mcp.json", "a", true).unwrap();
        store.set("/p/.mcp.json", "b", false).unwrap();
        assert!(store.is_approved("/p/.mcp.json", "a").unwrap());
        store.set("/p/.mcp.json", "c", true).unwrap();
        store.forget("/p/.mcp.json", "c").unwrap();
        assert!(!store.is_approved("/p/.mcp.json", "c").unwrap());
        assert!(
            !std::fs::read_to_string(store.path())
                .unwrap()
                .contains("\"c\"")
        );
        assert!(!store.is_approved("/p/.mcp.json", "b").unwrap());
        assert!(
            !store.is_approved("/other/.mcp.json", "a").unwrap(),
            "keyed by path"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&store.path()), 0o600);
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn a_link_planted_at_the_temporary_file_is_not_followed() {
        let home = temp_home("planted");
        let store = ApprovalStore::new(&home);
        store.create_dir().unwrap();
        let outside =
            std::env::temp_dir().join(format!("mcpvisor-precious-{}", std::process::id()));
        std::fs::write(&outside, "precious").unwrap();
        let tmp = store.dir.join(format!("{FILE}.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&outside, &tmp).unwrap();
        store.set("/p/.mcp.json", "a", true).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(store.is_approved("/p/.mcp.json", "a").unwrap());
        // The lock file is not followed either.
        std::fs::remove_file(store.dir.join(LOCK)).unwrap();
        std::os::unix::fs::symlink(&outside, store.dir.join(LOCK)).unwrap();
        assert!(store.set("/p/.mcp.json", "b", true).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        let _ = std::fs::remove_file(&outside);
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn a_corrupt_file_is_an_error_and_is_left_alone() {
        let home = temp_home("corrupt");
        std::fs::create_dir_all(&home).unwrap();
        let store = ApprovalStore::new(&home);
        std::fs::write(store.path(), "{\"version\": 1, \"projects\": {").unwrap();
        let err = store.is_approved("/p", "a").unwrap_err();
        assert!(matches!(err, ApprovalError::Corrupt { .. }), "{err}");
        assert!(store.set("/p", "a", true).is_err(), "never silently reset");
        assert_eq!(
            std::fs::read_to_string(store.path()).unwrap(),
            "{\"version\": 1, \"projects\": {"
        );
        std::fs::write(store.path(), "{\"version\": 7, \"projects\": {}}").unwrap();
        assert!(matches!(
            store.is_approved("/p", "a"),
            Err(ApprovalError::Corrupt { .. })
        ));
        let _ = std::fs::remove_dir_all(&home);
    }
}
