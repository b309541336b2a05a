//! How a host joins a cluster: its name, where it listens, whom it joins,
//! the shared cookie, TLS, and the heartbeat that decides a node is lost.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ClusterError;

/// The longest cookie file read: a cookie is a secret of a few dozen bytes.
const MAX_COOKIE_BYTES: u64 = 4096;

/// The shortest cookie taken: 32 characters are 128 bits as hex and more as
/// base64, so a cookie made as the message says cannot be guessed offline
/// from what an eavesdropper of a plaintext handshake sees.
pub const MIN_COOKIE_CHARS: usize = 32;

/// The longest node name: what another node names itself (or another) with
/// is dropped past it, before it is looked up or logged.
pub(crate) const MAX_NODE_NAME: usize = 128;

/// The secret every node of a cluster shares. Nodes that do not present it
/// are refused. Never shown: `Debug` prints a placeholder.
#[derive(Clone)]
pub struct Cookie(String);

impl Cookie {
    /// Reads the cookie from `path`: the file must be readable by its owner
    /// alone (mode 0600 or stricter), and hold one non-empty line.
    pub fn from_file(path: &Path) -> Result<Cookie, ClusterError> {
        let refuse = |reason: String| ClusterError::Cookie {
            path: path.to_path_buf(),
            reason,
        };
        // Never through a link; mode and owner from the opened file itself.
        let secret = mcpvisor_auth::private_file::read_secret(path, MAX_COOKIE_BYTES + 1)
            .map_err(|e| refuse(e.source.to_string()))?
            .ok_or_else(|| refuse("no such file".into()))?;
        let mode = secret.mode & 0o777;
        if mode & 0o077 != 0 {
            return Err(refuse(format!(
                "its mode is {mode:04o}; a cookie file must be readable by its owner alone (chmod 600)"
            )));
        }
        if !secret.is_private() {
            return Err(refuse(format!(
                "it belongs to uid {}, not to this user",
                secret.owner
            )));
        }
        if secret.text.len() as u64 > MAX_COOKIE_BYTES {
            return Err(refuse(format!(
                "it is longer than {MAX_COOKIE_BYTES} bytes, the most a cookie may be"
            )));
        }
        let text = secret.text;
        Cookie::new(text.trim()).map_err(|reason| refuse(reason.into()))
    }

    /// A cookie from its text: printable ASCII without whitespace, at least
    /// [`MIN_COOKIE_CHARS`] characters.
    pub fn new(text: &str) -> Result<Cookie, &'static str> {
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the cookie must be printable ASCII without spaces");
        }
        if text.len() < MIN_COOKIE_CHARS {
            return Err(
                "the cookie is shorter than 32 characters (128 bits as hex); make one with `head -c 32 /dev/urandom | base64`",
            );
        }
        Ok(Cookie(text.to_string()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cookie(<redacted>)")
    }
}

/// TLS between nodes: each node presents `cert` (with `key`) and accepts
/// only peers whose certificate `ca` signed, in both directions.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// This node's certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The authority that signs every node's certificate (PEM).
    pub ca: PathBuf,
}

/// A host's place in a cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// This node's name, unique in the cluster (defaults to the listen address).
    pub node_name: Option<String>,
    /// Where this node listens for other nodes.
    pub listen: SocketAddr,
    /// Nodes to join (`host:port`); kept trying while they cannot be reached.
    pub join: Vec<String>,
    /// The shared secret.
    pub cookie: Cookie,
    /// TLS between nodes; plain TCP when `None`, which only a loopback
    /// `listen` may use unless `insecure_plaintext` is set.
    pub tls: Option<TlsFiles>,
    /// Allows plain TCP on an address other than loopback: the cookie then
    /// keeps strangers out, but anyone on the path reads every message, can
    /// alter it, and can guess the cookie offline from the handshake.
    pub insecure_plaintext: bool,
    /// How often this node tells each other node it is alive.
    pub heartbeat: Duration,
    /// A node not heard from for this long is lost: its routes are withdrawn
    /// and calls to it fail with `NodeLost`.
    pub lost_after: Duration,
    /// The largest message between nodes, either way (a call's arguments or
    /// result, a node's advertisement). A peer that sends more is disconnected.
    pub max_message_bytes: usize,
    /// Calls another node may have running here at once; past it they are
    /// refused as overloaded.
    pub max_inbound_calls: usize,
    /// Where this node's gateway serves MCP over HTTP, told to the other
    /// nodes (which pass on requests that must be answered here). An
    /// unspecified IP (`0.0.0.0`) is read by them as the IP this node's
    /// cluster session comes from.
    pub http: Option<SocketAddr>,
}

impl ClusterOptions {
    /// Options with the defaults: heartbeat every 250 ms, lost after 2 s of
    /// silence, messages up to 8 MiB, 1,024 calls from each node at once.
    pub fn new(listen: SocketAddr, cookie: Cookie) -> Self {
        ClusterOptions {
            node_name: None,
            listen,
            join: Vec::new(),
            cookie,
            tls: None,
            insecure_plaintext: false,
            heartbeat: Duration::from_millis(250),
            lost_after: Duration::from_secs(2),
            max_message_bytes: 8 * 1024 * 1024,
            max_inbound_calls: 1024,
            http: None,
        }
    }

    /// The node's name: as given, else its listen address.
    pub fn name(&self) -> String {
        self.node_name
            .clone()
            .unwrap_or_else(|| self.listen.to_string())
    }

    pub(crate) fn check(&self) -> Result<(), ClusterError> {
        let name = self.name();
        if name.is_empty()
            || name.len() > MAX_NODE_NAME
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b))
        {
            return Err(ClusterError::NodeName(name));
        }
        if self.listen.ip().is_unspecified() {
            // It is the address every other node dials, as this node
            // advertises it: it must name one interface.
            return Err(ClusterError::Listen(self.listen));
        }
        if self.tls.is_none() && !self.insecure_plaintext && !self.listen.ip().is_loopback() {
            return Err(ClusterError::Plaintext(self.listen));
        }
        if self.heartbeat.is_zero() || self.lost_after <= self.heartbeat {
            return Err(ClusterError::Heartbeat {
                heartbeat: self.heartbeat,
                lost_after: self.lost_after,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path =
            std::env::temp_dir().join(format!("mcpvisor-cookie-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_cookie_file_others_can_read_is_refused() {
        let path = file("open", "s3cret-cookie-0123456789abcdef0123\n", 0o644);
        let e = Cookie::from_file(&path).unwrap_err();
        assert!(e.to_string().contains("0644"), "{e}");
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let path = file("group", "s3cret-cookie-0123456789abcdef0123\n", 0o640);
        assert!(Cookie::from_file(&path).is_err());
    }

    #[test]
    fn a_linked_cookie_file_is_not_followed() {
        let target = file("target", "s3cret-cookie-0123456789abcdef0123\n", 0o600);
        let link = target.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = Cookie::from_file(&link).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }

    #[test]
    fn a_private_cookie_file_is_read_and_never_shown() {
        let path = file("private", "s3cret-cookie-0123456789abcdef0123\n", 0o600);
        let cookie = Cookie::from_file(&path).unwrap();
        assert_eq!(cookie.expose(), "s3cret-cookie-0123456789abcdef0123");
        assert!(!format!("{cookie:?}").contains("s3cret"));
        let options = ClusterOptions::new("127.0.0.1:1".parse().unwrap(), cookie);
        assert!(!format!("{options:?}").contains("s3cret"));
    }

    #[test]
    fn empty_spaced_or_short_cookies_are_refused() {
        assert!(Cookie::from_file(&file("empty", "\n", 0o600)).is_err());
        let spaced = "a b".repeat(16);
        assert!(Cookie::from_file(&file("spaced", &spaced, 0o600)).is_err());
        let short = Cookie::from_file(&file("short", "0123456789abcdef0123456789abcde\n", 0o600))
            .unwrap_err()
            .to_string();
        assert!(
            short.contains("head -c 32 /dev/urandom | base64"),
            "{short}"
        );
        assert!(!short.contains("0123456789abcdef"), "{short}");
        assert!(Cookie::new("0123456789abcdef0123456789abcdef").is_ok());
    }

    fn cookie() -> Cookie {
        Cookie::new("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn plaintext_off_loopback_needs_to_be_asked_for() {
        let mut options = ClusterOptions::new("192.0.2.1:9001".parse().unwrap(), cookie());
        assert!(matches!(options.check(), Err(ClusterError::Plaintext(_))));
        options.insecure_plaintext = true;
        assert!(options.check().is_ok());
        let loopback = ClusterOptions::new("[::1]:9001".parse().unwrap(), cookie());
        assert!(loopback.check().is_ok());
    }

    #[test]
    fn a_heartbeat_slower_than_the_loss_is_refused() {
        let mut options = ClusterOptions::new("127.0.0.1:1".parse().unwrap(), cookie());
        options.lost_after = options.heartbeat;
        assert!(matches!(
            options.check(),
            Err(ClusterError::Heartbeat { .. })
        ));
        options.node_name = Some("bad name".into());
        assert!(matches!(options.check(), Err(ClusterError::NodeName(_))));
        let open = ClusterOptions::new("0.0.0.0:9001".parse().unwrap(), cookie());
        assert!(matches!(open.check(), Err(ClusterError::Listen(_))));
    }
}
