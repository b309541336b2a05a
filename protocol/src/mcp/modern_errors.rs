//! The error codes 2026-07-28 gives meaning to, read into what they tell a
//! client: a header that does not match the body (-32020), a client
//! capability the request needs (-32021), a revision the server does not
//! speak, with the ones it does (-32022). Such an error is also how a client
//! knows it reached a modern server: anything else, on a probe or on
//! `initialize`, says nothing of the sort.

use serde_json::Value;

use super::revision::Revision;
use crate::wire::jsonrpc::ErrorObject;
use crate::wire::jsonrpc::error_codes::METHOD_NOT_FOUND;

/// A header does not match the body, or a required one is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability the client did not declare.
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
/// The request's revision is not one the server speaks.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The most revisions read from a `supported` list.
const MAX_SUPPORTED: usize = 16;

/// What a modern error says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModernError {
    /// -32020.
    HeaderMismatch,
    /// -32021, with the capabilities the server wants (as it sent them).
    MissingClientCapability(Option<Value>),
    /// -32022: the revisions the server speaks, those this client knows
    /// (what it does not know is left out), and whether it listed any at all.
    UnsupportedVersion {
        /// The known revisions it listed, in its order.
        supported: Vec<Revision>,
        /// It sent a `supported` list (possibly of revisions unknown here).
        listed: bool,
    },
}

impl ModernError {
    /// What `error` says, if it is one of the modern errors.
    pub fn read(error: &ErrorObject) -> Option<ModernError> {
        match error.code {
            HEADER_MISMATCH => Some(ModernError::HeaderMismatch),
            MISSING_CLIENT_CAPABILITY => Some(ModernError::MissingClientCapability(
                error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("requiredCapabilities"))
                    .filter(|c| c.is_object())
                    .cloned(),
            )),
            UNSUPPORTED_PROTOCOL_VERSION => {
                let list = error
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array);
                let supported = list
                    .into_iter()
                    .flatten()
                    .take(MAX_SUPPORTED)
                    .filter_map(Value::as_str)
                    .filter_map(|s| s.parse::<Revision>().ok())
                    .collect();
                Some(ModernError::UnsupportedVersion {
                    supported,
                    listed: list.is_some(),
                })
            }
            _ => None,
        }
    }
}

/// Whether `error`, the answer to `initialize`, says the server speaks only
/// stateless revisions: a -32022 whose `supported` list names only revisions
/// without a handshake, a -32020, or `initialize` not found (-32601, which a
/// modern server answers for a method it no longer has).
pub fn refuses_initialize_as_modern(error: &ErrorObject) -> bool {
    match ModernError::read(error) {
        Some(ModernError::UnsupportedVersion { supported, listed }) => {
            listed && !supported.is_empty() && supported.iter().all(|r| !r.initializes())
        }
        Some(ModernError::HeaderMismatch) => true,
        Some(ModernError::MissingClientCapability(_)) => false,
        None => error.code == METHOD_NOT_FOUND,
    }
}

/// Whether `error`, the answer to a stateless request (a `server/discover`
/// probe), is a modern error: the server is modern and the request is sent
/// again as it asks, never by falling back to `initialize`. Anything else
/// (method not found, invalid params, any other code) marks an older server.
pub fn identifies_modern_server(error: &ErrorObject) -> bool {
    ModernError::read(error).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(code: i64, data: Option<Value>) -> ErrorObject {
        ErrorObject {
            code,
            message: "m".into(),
            data,
        }
    }

    #[test]
    fn the_modern_codes_are_read_with_what_they_carry() {
        assert_eq!(
            ModernError::read(&error(
                -32022,
                Some(json!({"supported": ["2026-07-28", "2099-01-01", 5], "requested": "x"}))
            )),
            Some(ModernError::UnsupportedVersion {
                supported: vec![Revision::V2026_07_28],
                listed: true
            })
        );
        assert_eq!(
            ModernError::read(&error(
                -32021,
                Some(json!({"requiredCapabilities": {"sampling": {}}}))
            )),
            Some(ModernError::MissingClientCapability(Some(
                json!({"sampling": {}})
            )))
        );
        assert_eq!(
            ModernError::read(&error(-32020, None)),
            Some(ModernError::HeaderMismatch)
        );
        assert_eq!(ModernError::read(&error(-32602, None)), None);
    }

    #[test]
    fn only_a_modern_refusal_of_initialize_counts_as_one() {
        let modern_only = error(-32022, Some(json!({"supported": ["2026-07-28"]})));
        assert!(refuses_initialize_as_modern(&modern_only));
        assert!(refuses_initialize_as_modern(&error(-32601, None)));
        assert!(refuses_initialize_as_modern(&error(-32020, None)));
        // A server that also speaks an older revision is initialized at it instead.
        let both = error(
            -32022,
            Some(json!({"supported": ["2026-07-28", "2025-06-18"]})),
        );
        assert!(!refuses_initialize_as_modern(&both));
        // A -32022 naming nothing known, or nothing at all, proves nothing.
        assert!(!refuses_initialize_as_modern(&error(-32022, None)));
        assert!(!refuses_initialize_as_modern(&error(
            -32022,
            Some(json!({"supported": ["2099-01-01"]}))
        )));
        assert!(!refuses_initialize_as_modern(&error(-32602, None)));
        assert!(!refuses_initialize_as_modern(&error(-32603, None)));
    }

    #[test]
    fn a_probe_answered_with_anything_but_a_modern_error_marks_an_older_server() {
        assert!(identifies_modern_server(&error(-32022, None)));
        assert!(identifies_modern_server(&error(-32021, None)));
        assert!(!identifies_modern_server(&error(-32601, None)));
        assert!(!identifies_modern_server(&error(-32602, None)));
        assert!(!identifies_modern_server(&error(-32000, None)));
    }
}
