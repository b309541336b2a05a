//! The HTTP session: its id, its generation, and what renewing it needs.

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use reqwest::header::{HeaderName, HeaderValue};

use crate::error::TransportError;

/// Header carrying the session id.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

#[derive(Default)]
struct State {
    id: Option<HeaderValue>,
    /// Bumped on every renewal, so concurrent failures renew once.
    generation: u64,
}

#[derive(Default)]
pub(crate) struct Session {
    state: RwLock<State>,
    /// Serialises renewals.
    pub(crate) renewing: tokio::sync::Mutex<()>,
    /// The `initialize` message, replayed to open a new session.
    init_line: Mutex<Option<Bytes>>,
}

impl Session {
    pub(crate) fn current(&self) -> (Option<HeaderValue>, u64) {
        let s = self.state.read();
        (s.id.clone(), s.generation)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.state.read().generation
    }

    /// Takes the session id from an `initialize` answer. A missing header means
    /// the server keeps no session; an id outside visible ASCII is refused.
    pub(crate) fn capture(
        &self,
        headers: &reqwest::header::HeaderMap,
    ) -> Result<(), TransportError> {
        let id = match headers.get(SESSION_HEADER) {
            None => None,
            Some(v) if is_visible_ascii(v.as_bytes()) => Some(v.clone()),
            Some(_) => return Err(TransportError::InvalidSessionId),
        };
        self.state.write().id = id;
        Ok(())
    }

    /// Marks a new session as established.
    pub(crate) fn renewed(&self) {
        self.state.write().generation += 1;
    }

    /// Puts back an id taken before a renewal that did not finish.
    pub(crate) fn restore(&self, id: Option<HeaderValue>) {
        self.state.write().id = id;
    }

    pub(crate) fn forget(&self) -> Option<HeaderValue> {
        self.state.write().id.take()
    }

    pub(crate) fn remember_init(&self, line: &[u8]) {
        *self.init_line.lock() = Some(Bytes::copy_from_slice(line));
    }

    pub(crate) fn init_line(&self) -> Option<Bytes> {
        self.init_line.lock().clone()
    }
}

fn is_visible_ascii(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    #[test]
    fn session_ids_must_be_visible_ascii() {
        let s = Session::default();
        let mut h = HeaderMap::new();
        h.insert(SESSION_HEADER, HeaderValue::from_static("abc-123_XYZ"));
        s.capture(&h).unwrap();
        assert_eq!(s.current().0.unwrap(), "abc-123_XYZ");
        for bad in ["has space", "tab\there"] {
            h.insert(SESSION_HEADER, HeaderValue::from_str(bad).unwrap());
            assert!(
                matches!(s.capture(&h), Err(TransportError::InvalidSessionId)),
                "{bad}"
            );
        }
        h.insert(
            SESSION_HEADER,
            HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert!(matches!(
            s.capture(&h),
            Err(TransportError::InvalidSessionId)
        ));
        h.clear();
        s.capture(&h).unwrap();
        assert!(s.current().0.is_none(), "no header: no session");
    }
}
