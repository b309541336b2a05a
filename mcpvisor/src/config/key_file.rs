//! Reading an `oauth.privateKeyFile`: only a regular file, not through a symbolic
//! link, and only so much of it. A path in a configuration file can name a FIFO
//! (which would block forever), `/dev/zero` (which never ends) or a link planted
//! to another file; none of them is read.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;

/// The largest key file read: a PEM private key is a few kilobytes.
pub const KEY_FILE_LIMIT: u64 = 64 * 1024;

/// Why a key file was not read. Never carries the file's content.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The path is a symbolic link.
    #[error("it is a symbolic link; name the file itself")]
    Symlink,
    /// The path is not a regular file (a FIFO, a device, a directory).
    #[error("it is not a regular file")]
    NotRegular,
    /// The file is larger than [`KEY_FILE_LIMIT`].
    #[error("it is larger than {KEY_FILE_LIMIT} bytes")]
    TooLarge,
    /// The file is not UTF-8 text.
    #[error("it is not text (PEM)")]
    NotText,
    /// It could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads the key file at `path` under the rules above.
pub fn read_key_file(path: &Path) -> Result<String, KeyFileError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => KeyFileError::Symlink,
            _ => KeyFileError::Io(e),
        })?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(KeyFileError::NotRegular);
    }
    let mut bytes = Vec::new();
    file.take(KEY_FILE_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > KEY_FILE_LIMIT {
        return Err(KeyFileError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| KeyFileError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpvisor-keyfile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_regular_file() {
        let dir = scratch("ok");
        std::fs::write(dir.join("k.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
        assert!(
            read_key_file(&dir.join("k.pem"))
                .unwrap()
                .starts_with("-----BEGIN")
        );
    }

    #[test]
    fn refuses_fifos_devices_links_and_large_files() {
        let dir = scratch("bad");
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read_key_file(&fifo),
            Err(KeyFileError::NotRegular)
        ));
        assert!(matches!(
            read_key_file(Path::new("/dev/zero")),
            Err(KeyFileError::NotRegular)
        ));
        std::fs::write(dir.join("real.pem"), "key").unwrap();
        std::os::unix::fs::symlink(dir.join("real.pem"), dir.join("link.pem")).unwrap();
        assert!(matches!(
            read_key_file(&dir.join("link.pem")),
            Err(KeyFileError::Symlink)
        ));
        std::fs::write(dir.join("big.pem"), vec![b'a'; KEY_FILE_LIMIT as usize + 1]).unwrap();
        assert!(matches!(
            read_key_file(&dir.join("big.pem")),
            Err(KeyFileError::TooLarge)
        ));
        assert!(matches!(
            read_key_file(&dir.join("none.pem")),
            Err(KeyFileError::Io(_))
        ));
    }
}
