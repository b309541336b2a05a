//! Files only their owner may read, as token storage and approvals keep them.
//!
//! Directories are created 0700 and files 0600 from the moment they exist
//! (created with those modes, never widened later). A local attacker who can
//! write to the directory could plant a symbolic link, a FIFO or a device where
//! a file goes, to have secrets written elsewhere or a read hang: every file is
//! opened with `O_NOFOLLOW` (a link is refused with `ELOOP`, see
//! [`PrivateFileError::is_symlink`]) and `O_NONBLOCK`, and must be a regular
//! file. Replacements go through a temporary file created anew, never one
//! that already exists, then renamed into place. Reads are bounded.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg, OFlag};

/// Why a private file or directory could not be used: the path and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct PrivateFileError {
    /// The file or directory.
    pub path: PathBuf,
    /// The cause; [`NotRegularFile`] inside an `InvalidInput` error when the
    /// path is a FIFO, a device or a directory.
    #[source]
    pub source: io::Error,
}

impl PrivateFileError {
    fn new(path: &Path, source: io::Error) -> PrivateFileError {
        PrivateFileError {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The path is a symbolic link, which was not followed.
    pub fn is_symlink(&self) -> bool {
        is_symlink_refusal(&self.source)
    }

    /// The path is there but is not a regular file.
    pub fn is_not_regular(&self) -> bool {
        self.source
            .get_ref()
            .is_some_and(|inner| inner.is::<NotRegularFile>())
    }
}

/// Whether `error` is an `O_NOFOLLOW` open refusing a symbolic link.
pub fn is_symlink_refusal(error: &io::Error) -> bool {
    error.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32)
}

/// The path names something other than a regular file.
#[derive(Debug, thiserror::Error)]
#[error("not a regular file; refusing to use it")]
pub struct NotRegularFile;

/// `O_NOFOLLOW`: a symbolic link is refused (`ELOOP`), never followed.
/// `O_NONBLOCK`: a FIFO planted in place of a file cannot hang the open.
fn no_follow() -> i32 {
    (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits()
}

/// Opened files must be regular files (not a FIFO, a device or a directory).
fn regular(file: File, path: &Path) -> Result<File, PrivateFileError> {
    let meta = file
        .metadata()
        .map_err(|e| PrivateFileError::new(path, e))?;
    if meta.is_file() {
        Ok(file)
    } else {
        Err(PrivateFileError::new(
            path,
            io::Error::new(io::ErrorKind::InvalidInput, NotRegularFile),
        ))
    }
}

/// Creates `dir` and any missing parents with mode 0700; an existing
/// directory is left as it is (see [`close_dir`]).
pub fn create_dir(dir: &Path) -> Result<(), PrivateFileError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| PrivateFileError::new(dir, e))
}

/// Closes an existing directory to its owner: a symbolic link is refused (an
/// `ELOOP` error), and a directory open to group or others is set to 0700.
/// Returns the mode it had when it had to be changed, so the caller can warn
/// that what it held may have been read.
pub fn close_dir(dir: &Path) -> Result<Option<u32>, PrivateFileError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| PrivateFileError::new(dir, e))?;
    if meta.file_type().is_symlink() {
        return Err(PrivateFileError::new(
            dir,
            io::Error::from_raw_os_error(nix::errno::Errno::ELOOP as i32),
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| PrivateFileError::new(dir, e))?;
    Ok(Some(mode))
}

/// Reads at most `limit` bytes of the text file at `path`; `None` when there
/// is none. A file longer than `limit` is cut there (it then fails to parse,
/// which the caller reports).
pub fn read_to_string(path: &Path, limit: u64) -> Result<Option<String>, PrivateFileError> {
    Ok(read_secret(path, limit)?.map(|secret| secret.text))
}

/// A secret read from its file, with what the opened file itself says of who
/// may read it (taken from the descriptor, so a file swapped in after a check
/// cannot pass it).
#[derive(Clone)]
pub struct SecretText {
    /// The file's text (at most the limit asked).
    pub text: String,
    /// Its permission bits.
    pub mode: u32,
    /// Its owner's uid.
    pub owner: u32,
}

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretText")
            .field("text", &"[redacted]")
            .field("mode", &format_args!("{:o}", self.mode))
            .field("owner", &self.owner)
            .finish()
    }
}

impl SecretText {
    /// Whether only this process's user can read it: owned by the effective
    /// uid, no bits for group or others.
    pub fn is_private(&self) -> bool {
        self.owner == nix::unistd::geteuid().as_raw() && self.mode & 0o077 == 0
    }
}

/// Reads a secret (a bearer token, a cluster cookie) like [`read_to_string`]:
/// never through a link, only a regular file, at most `limit` bytes; the mode
/// and owner come from the opened file. `None` when there is none.
pub fn read_secret(path: &Path, limit: u64) -> Result<Option<SecretText>, PrivateFileError> {
    use std::os::unix::fs::MetadataExt;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(path)
    {
        Ok(f) => regular(f, path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PrivateFileError::new(path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| PrivateFileError::new(path, e))?;
    let mut text = String::new();
    file.take(limit)
        .read_to_string(&mut text)
        .map_err(|e| PrivateFileError::new(path, e))?;
    Ok(Some(SecretText {
        text,
        mode: meta.mode() & 0o7777,
        owner: meta.uid(),
    }))
}

/// Writes `body` as a new 0600 file at `path` unless one is there: written
/// whole to a temporary file first and linked into place, so a reader never
/// sees it half written and two writers never both win. Returns false when a
/// file (or a link) was there already; it is left untouched.
pub fn create_secret(path: &Path, body: &[u8]) -> Result<bool, PrivateFileError> {
    let tmp = temp_path(path);
    let mut file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .custom_flags(no_follow())
        .open(&tmp)
        .map_err(|e| PrivateFileError::new(&tmp, e))?;
    let written = file.write_all(body).and_then(|_| file.sync_all());
    drop(file);
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(PrivateFileError::new(path, e)),
    }
}

/// An exclusive `flock` on a 0600 lock file, held until dropped; other
/// processes taking the same lock wait for it.
#[derive(Debug)]
pub struct FileLock {
    _file: Flock<File>,
}

impl FileLock {
    /// Creates the lock file at `path` if needed and blocks until the lock is
    /// this process's (from async code, call it on a blocking thread).
    pub fn acquire(path: &Path) -> Result<FileLock, PrivateFileError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(no_follow())
            .open(path)
            .map_err(|e| PrivateFileError::new(path, e))?;
        let file = regular(file, path)?;
        let file = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| PrivateFileError::new(path, errno.into()))?;
        Ok(FileLock { _file: file })
    }
}

/// A temporary name beside `path`, unique to this process and this write:
/// `<file name>.<pid>.<random>.tmp`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(
        "{name}.{}.{}.tmp",
        std::process::id(),
        fastrand::u32(..)
    ))
}

/// Replaces the file at `path` with `body` atomically: written to `tmp` (created
/// anew, 0600, failing if anything is there already), synced, renamed into
/// place. A symbolic link where the file goes is refused (an `ELOOP` error),
/// and `tmp` is removed when anything fails.
pub fn replace(path: &Path, tmp: &Path, body: &[u8]) -> Result<(), PrivateFileError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(PrivateFileError::new(
            path,
            io::Error::from_raw_os_error(nix::errno::Errno::ELOOP as i32),
        ));
    }
    let mut file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .custom_flags(no_follow())
        .open(tmp)
        .map_err(|e| PrivateFileError::new(tmp, e))?;
    let written = file.write_all(body).and_then(|_| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(tmp);
        return Err(PrivateFileError::new(tmp, e));
    }
    std::fs::rename(tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        PrivateFileError::new(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "mcpvisor-private-file-{tag}-{}-{}",
                std::process::id(),
                fastrand::u32(..)
            ));
            create_dir(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn directories_and_files_are_created_private() {
        let scratch = Scratch::new("modes");
        let dir = scratch.0.join("a/b");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&scratch.0.join("a")), 0o700);
        let file = dir.join("f.json");
        replace(&file, &temp_path(&file), b"{}").unwrap();
        assert_eq!(mode(&file), 0o600);
        let _lock = FileLock::acquire(&dir.join("f.lock")).unwrap();
        assert_eq!(mode(&dir.join("f.lock")), 0o600);
        assert_eq!(read_to_string(&file, 64).unwrap().as_deref(), Some("{}"));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["f.json", "f.lock"], "no temporary file left");
    }

    #[test]
    fn an_open_directory_is_closed_and_a_linked_one_refused() {
        let scratch = Scratch::new("close");
        std::fs::set_permissions(&scratch.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(close_dir(&scratch.0).unwrap(), Some(0o755));
        assert_eq!(mode(&scratch.0), 0o700);
        assert_eq!(close_dir(&scratch.0).unwrap(), None);
        let link = scratch.0.join("link");
        std::os::unix::fs::symlink(&scratch.0, &link).unwrap();
        assert!(close_dir(&link).unwrap_err().is_symlink());
    }

    #[test]
    fn links_are_never_followed() {
        let scratch = Scratch::new("links");
        let outside = scratch.0.join("outside");
        std::fs::write(&outside, "precious").unwrap();
        let link = scratch.0.join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();

        assert!(read_to_string(&link, 64).unwrap_err().is_symlink());
        assert!(FileLock::acquire(&link).unwrap_err().is_symlink());
        let error = replace(&link, &temp_path(&link), b"x").unwrap_err();
        assert!(error.is_symlink() && error.path == link, "{error}");
        // A link at the temporary name: create_new refuses whatever is there.
        let target = scratch.0.join("target");
        let tmp = scratch.0.join("t.tmp");
        std::os::unix::fs::symlink(&outside, &tmp).unwrap();
        let error = replace(&target, &tmp, b"x").unwrap_err();
        assert_eq!(error.path, tmp);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(!target.exists());
    }

    #[test]
    fn fifos_are_refused_without_hanging_and_reads_are_bounded() {
        let scratch = Scratch::new("fifo");
        let fifo = scratch.0.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let error = read_to_string(&fifo, 64).unwrap_err();
        assert!(error.is_not_regular(), "{error}");
        assert!(
            error
                .to_string()
                .ends_with("not a regular file; refusing to use it"),
            "{error}"
        );
        // Write-only with no reader, the open itself fails (ENXIO): refused all the same.
        assert!(FileLock::acquire(&fifo).is_err());
        assert!(
            read_to_string(&scratch.0.join("absent"), 64)
                .unwrap()
                .is_none()
        );
        let big = scratch.0.join("big");
        std::fs::write(&big, "a".repeat(100)).unwrap();
        assert_eq!(read_to_string(&big, 10).unwrap().unwrap().len(), 10);
    }

    #[test]
    fn the_lock_is_exclusive_until_dropped() {
        let scratch = Scratch::new("lock");
        let path = scratch.0.join("x.lock");
        let held = FileLock::acquire(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let lock = FileLock::acquire(&path).unwrap();
                tx.send(()).unwrap();
                drop(lock);
            })
        };
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "a second lock was granted while the first was held"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the lock is granted once released");
        waiter.join().unwrap();
    }
}
