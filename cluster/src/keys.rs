//! Tying every message to the session it came on.
//!
//! ractor_cluster hands a cast to the agent without saying which session it
//! came on, and any node may name any other in a message's `from`. So each
//! agent gives every node it meets a [`Key`] of its own, sent to that
//! node's agent alone (its cell, reached through the session that
//! authenticated as that node); every message from that node must carry it
//! (in the cast's metadata), and one that does not is dropped. A key
//! offered in a `hello` is believed only once its giver confirms it (a
//! `confirm` call to the giver's agent, whose reply can come back only
//! through the giver's own session): a node cannot plant a key for another.

use std::fmt;

/// A key one node gives another: 128 bits from the operating system's CSPRNG.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key(u128);

impl Key {
    /// A new key; `None` if the operating system has no randomness to give.
    pub(crate) fn random() -> Option<Key> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).ok()?;
        Some(Key(u128::from_be_bytes(bytes)))
    }

    /// As it travels in a cast's metadata.
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        self.0.to_be_bytes().to_vec()
    }

    /// From a cast's metadata; `None` unless it is exactly 16 bytes.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Key> {
        Some(Key(u128::from_be_bytes(bytes.try_into().ok()?)))
    }

    /// As it travels in a `hello` or a `confirm`.
    pub(crate) fn to_text(self) -> String {
        format!("{:032x}", self.0)
    }

    /// From a `hello` or a `confirm`.
    pub(crate) fn from_text(text: &str) -> Option<Key> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(Key)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// A call id no other node can guess: 64 bits from the operating system's
/// CSPRNG (an answer is matched on its id and the key of its session).
pub(crate) fn call_id() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        // No randomness: the clock's nanoseconds still differ call to call.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_travels_as_bytes_and_as_text_and_is_never_shown() {
        let key = Key::random().unwrap();
        assert_eq!(Key::from_bytes(&key.to_bytes()), Some(key));
        assert_eq!(Key::from_text(&key.to_text()), Some(key));
        assert!(Key::from_bytes(&[1, 2, 3]).is_none());
        assert!(Key::from_text("zz").is_none());
        assert!(Key::from_text(&format!("+{}", &key.to_text()[1..])).is_none());
        assert!(!format!("{key:?}").contains(&key.to_text()));
        assert_ne!(Key::random(), Key::random());
        assert_ne!(call_id(), call_id());
    }
}
