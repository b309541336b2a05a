//! The bearer token every HTTP request presents: read from a file only its
//! owner can read, or made at start (256 bits from the operating system's
//! CSPRNG) into such a file beside the local socket, reused while it exists.

use std::path::{Path, PathBuf};

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;

/// The shortest token accepted: 32 characters (128 bits as hex, the least a
/// guess should face).
const MIN_TOKEN_CHARS: usize = 32;

/// The longest token file read.
const TOKEN_FILE_LIMIT: u64 = 4096;

/// A bearer token. Its value never appears in `Debug` or errors.
#[derive(Clone)]
pub struct BearerToken(String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken([redacted])")
    }
}

/// Why a token file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// It could not be read or written (a link, not a regular file, missing).
    #[error("cannot use the token file {}: {source}", .path.display())]
    Read {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Others than its owner may read it.
    #[error("the token file {} has mode {mode:o}; it must be 0600 (chmod 600)", .path.display())]
    Permissions {
        /// Which file.
        path: PathBuf,
        /// Its mode.
        mode: u32,
    },
    /// Another user owns it: whoever that is chose the token.
    #[error("the token file {} belongs to uid {owner}, not to this user", .path.display())]
    Owner {
        /// Which file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// It holds no token.
    #[error("the token file {} is empty", .path.display())]
    Empty {
        /// Which file.
        path: PathBuf,
    },
    /// Its token is too short to stand a guess.
    #[error(
        "the token in {} is shorter than 32 characters; make one with `head -c 32 /dev/urandom | base64`",
        .path.display()
    )]
    Short {
        /// Which file.
        path: PathBuf,
    },
}

impl BearerToken {
    /// Reads a token from a regular file of this user's, mode 0600 or
    /// narrower, never through a link (surrounding whitespace trimmed).
    pub fn from_file(path: &Path) -> Result<BearerToken, TokenFileError> {
        let read = |source| TokenFileError::Read {
            path: path.to_path_buf(),
            source,
        };
        let secret = mcpvisor_auth::private_file::read_secret(path, TOKEN_FILE_LIMIT)
            .map_err(|e| read(e.source))?
            .ok_or_else(|| read(std::io::ErrorKind::NotFound.into()))?;
        if secret.owner != nix::unistd::geteuid().as_raw() {
            return Err(TokenFileError::Owner {
                path: path.to_path_buf(),
                owner: secret.owner,
            });
        }
        if secret.mode & 0o077 != 0 {
            return Err(TokenFileError::Permissions {
                path: path.to_path_buf(),
                mode: secret.mode & 0o777,
            });
        }
        let token = secret.text.trim();
        if token.is_empty() {
            return Err(TokenFileError::Empty {
                path: path.to_path_buf(),
            });
        }
        if token.len() < MIN_TOKEN_CHARS {
            return Err(TokenFileError::Short {
                path: path.to_path_buf(),
            });
        }
        Ok(BearerToken(token.to_string()))
    }

    /// The token in `path`, made there first when there is none: 256 bits
    /// from the operating system's CSPRNG as 64 hex digits, in a new 0600
    /// file (written whole, then linked into place, so a concurrent reader
    /// never sees half of it). A file that is there is read as
    /// [`BearerToken::from_file`] reads it.
    pub fn load_or_create(path: &Path) -> Result<BearerToken, TokenFileError> {
        let mut bytes = [0u8; 32];
        // Without an OS random source no token can be trusted; nothing is served.
        getrandom::fill(&mut bytes).map_err(|e| TokenFileError::Read {
            path: path.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let fresh: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        mcpvisor_auth::private_file::create_secret(path, format!("{fresh}\n").as_bytes()).map_err(
            |e| TokenFileError::Read {
                path: path.to_path_buf(),
                source: e.source,
            },
        )?;
        BearerToken::from_file(path)
    }

    /// A token from its value (for embedding hosts and tests).
    pub fn new(value: impl Into<String>) -> BearerToken {
        BearerToken(value.into())
    }

    /// The token's value, for the one place that hands it to the user
    /// (`serve --print-token`).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `headers` carry this token as `Authorization: Bearer …`.
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return false;
        };
        let value = value.as_bytes();
        let Some(presented) = value
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|_| &value[7..])
        else {
            return false;
        };
        equal_in_constant_time(presented, self.0.as_bytes())
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// alone. Eight bytes at a time: `subtle`'s per-byte comparison of a 64-byte
/// token was most of what the token check added to a gateway call.
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    // The length is no secret: every token serve makes has the same one.
    if a.len() != b.len() {
        return false;
    }
    // Whole words are loaded as words (a copy into a buffer called memcpy
    // twice a word); the few bytes past the last word, one at a time.
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
    let (words_a, words_b) = (a.chunks_exact(8), b.chunks_exact(8));
    let (rest_a, rest_b) = (words_a.remainder(), words_b.remainder());
    let mut same = subtle::Choice::from(1u8);
    for (x, y) in words_a.zip(words_b) {
        same &= word(x).ct_eq(&word(y));
    }
    same &= rest_a.ct_eq(rest_b);
    same.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mcpvisor-token-{tag}-{}-{}",
            std::process::id(),
            fastrand_like()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn fastrand_like() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }

    #[test]
    fn tokens_compare_equal_only_when_every_byte_is() {
        let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert!(equal_in_constant_time(token.as_bytes(), token.as_bytes()));
        for at in [0, 7, 8, 33, 63] {
            let mut other = token.as_bytes().to_vec();
            other[at] ^= 1;
            assert!(
                !equal_in_constant_time(&other, token.as_bytes()),
                "byte {at}"
            );
        }
        assert!(!equal_in_constant_time(
            &token.as_bytes()[..63],
            token.as_bytes()
        ));
        // Lengths that are no multiple of eight.
        assert!(equal_in_constant_time(b"abcdefghijk", b"abcdefghijk"));
        assert!(!equal_in_constant_time(b"abcdefghijk", b"abcdefghijj"));
        assert!(equal_in_constant_time(b"", b""));
    }

    #[test]
    fn a_made_token_is_256_bits_private_and_reused() {
        let dir = scratch("made");
        let path = dir.join("t.token");
        let first = BearerToken::load_or_create(&path).unwrap();
        assert_eq!(first.expose().len(), 64);
        assert!(first.expose().bytes().all(|b| b.is_ascii_hexdigit()));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = BearerToken::load_or_create(&path).unwrap();
        assert_eq!(first.expose(), again.expose());
        let other = BearerToken::load_or_create(&dir.join("u.token")).unwrap();
        assert_ne!(first.expose(), other.expose());
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_linked_or_open_token_file_is_refused() {
        let dir = scratch("linked");
        let target = dir.join("target");
        std::fs::write(&target, "planted\n").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.join("t.token");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            BearerToken::from_file(&link),
            Err(TokenFileError::Read { .. })
        ));
        // A planted link is neither followed nor replaced by a made token.
        assert!(BearerToken::load_or_create(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "planted\n");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = BearerToken::from_file(&target).unwrap_err();
        assert!(matches!(
            err,
            TokenFileError::Permissions { mode: 0o640, .. }
        ));
        assert!(!err.to_string().contains("planted"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_token_is_never_in_debug() {
        let token = BearerToken::new("s3cret");
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
