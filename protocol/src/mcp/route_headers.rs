//! The headers a Streamable HTTP POST carries at a stateless revision
//! (2026-07-28), mirrored from its body so that a load balancer or gateway
//! can route without reading it: `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name` (the tool or prompt name, the resource URI, the task id) and
//! the `Mcp-Param-*` values a tool's schema designates (see
//! [`super::param_headers`]). Values outside the header-safe set go in the
//! revision's Base64 sentinel form.

use base64::Engine as _;
use serde_json::Value;

use super::messages::methods;
use super::request_meta::PROTOCOL_VERSION_KEY;
use super::revision::Revision;

/// What opens a Base64-encoded header value.
pub const SENTINEL_PREFIX: &str = "=?base64?";
/// What closes a Base64-encoded header value.
pub const SENTINEL_SUFFIX: &str = "?=";
/// What each mirrored parameter's header name starts with.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// The headers of one message at a stateless revision, values encoded.
#[derive(Clone, PartialEq, Eq)]
pub struct RouteHeaders {
    /// `MCP-Protocol-Version`: the revision the body's `_meta` names.
    pub version: Revision,
    /// `Mcp-Method`.
    pub method: String,
    /// `Mcp-Name`, where the method has one.
    pub name: Option<String>,
    /// `Mcp-Param-{name}` headers: the name part and the value.
    pub params: Vec<(String, String)>,
}

impl std::fmt::Debug for RouteHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values come from a caller's arguments and may be anything it
        // passed: only the names are shown.
        let params: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RouteHeaders")
            .field("version", &self.version)
            .field("method", &self.method)
            .field("named", &self.name.is_some())
            .field("params", &params)
            .finish()
    }
}

impl RouteHeaders {
    /// The headers of `method` sent at `version` with `params`: `Mcp-Name`
    /// from the field the method names its target by.
    pub fn new(version: Revision, method: &str, params: Option<&Value>) -> RouteHeaders {
        let field = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => Some("name"),
            methods::RESOURCES_READ => Some("uri"),
            m if m.starts_with("tasks/") => Some("taskId"),
            _ => None,
        };
        let name = field
            .and_then(|f| params?.get(f)?.as_str())
            .map(encode_value);
        RouteHeaders {
            version,
            method: method.to_string(),
            name,
            params: Vec::new(),
        }
    }

    /// The headers of a message whose `params._meta` names a stateless
    /// revision; `None` for any other (a session's messages carry none).
    pub fn stamped(method: &str, params: Option<&Value>) -> Option<RouteHeaders> {
        let named = params?.get("_meta")?.get(PROTOCOL_VERSION_KEY)?.as_str()?;
        let version = Revision::ALL
            .into_iter()
            .find(|r| r.as_str() == named && r.rules().stateless)?;
        Some(RouteHeaders::new(version, method, params))
    }

    /// With the mirrored parameters `params` (name part, encoded value).
    pub fn with_params(mut self, params: Vec<(String, String)>) -> RouteHeaders {
        self.params = params;
        self
    }
}

/// `value` as a header carries it: as it is when every byte is visible
/// ASCII, space or tab with no space or tab at either end, and it does not
/// look like an encoded value; else `=?base64?{standard, padded}?=`.
pub fn encode_value(value: &str) -> String {
    let safe = value
        .bytes()
        .all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t'));
    let edges = [' ', '\t'];
    let padded = value.starts_with(edges) || value.ends_with(edges);
    let sentinel = value.starts_with(SENTINEL_PREFIX) && value.ends_with(SENTINEL_SUFFIX);
    if safe && !padded && !sentinel {
        value.to_string()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("{SENTINEL_PREFIX}{encoded}{SENTINEL_SUFFIX}")
    }
}

/// The value a header carries: decoded from the sentinel form, else the
/// header as sent; `None` for a sentinel that is not base64 of UTF-8.
pub fn decode_value(header: &str) -> Option<String> {
    match header
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|rest| rest.strip_suffix(SENTINEL_SUFFIX))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(header.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_encoded_as_the_revision_says() {
        // The examples of the Streamable HTTP page's value-encoding table.
        for (value, header) in [
            ("us-west1", "us-west1"),
            ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            (" padded ", "=?base64?IHBhZGRlZCA=?="),
            ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
            ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
            ("internal space", "internal space"),
            ("", ""),
        ] {
            assert_eq!(encode_value(value), header, "{value:?}");
        }
        assert!(encode_value("\tlead").starts_with(SENTINEL_PREFIX));
        assert!(encode_value("trail ").starts_with(SENTINEL_PREFIX));
        assert!(encode_value("a\u{7f}b").starts_with(SENTINEL_PREFIX));
        // Only the sentinel's own shape is encoded, not each half of it.
        assert_eq!(encode_value("=?base64?abc"), "=?base64?abc");
        for value in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "=?base64?literal?=",
            "",
        ] {
            assert_eq!(decode_value(&encode_value(value)).as_deref(), Some(value));
        }
        assert_eq!(decode_value("=?base64?not base64!?="), None);
        assert_eq!(decode_value("=?base64?/w==?="), None, "not UTF-8");
    }

    #[test]
    fn the_name_header_comes_from_the_field_the_method_names() {
        let v = Revision::V2026_07_28;
        let call = RouteHeaders::new(v, "tools/call", Some(&json!({"name": "get_weather"})));
        assert_eq!(call.name.as_deref(), Some("get_weather"));
        let read = RouteHeaders::new(v, "resources/read", Some(&json!({"uri": "file:///a b"})));
        assert_eq!(read.name.as_deref(), Some("file:///a b"));
        let prompt = RouteHeaders::new(v, "prompts/get", Some(&json!({"name": "résumé"})));
        assert!(prompt.name.unwrap().starts_with(SENTINEL_PREFIX));
        let task = RouteHeaders::new(v, "tasks/get", Some(&json!({"taskId": "t-1"})));
        assert_eq!(task.name.as_deref(), Some("t-1"));
        assert_eq!(RouteHeaders::new(v, "tools/list", None).name, None);
    }

    #[test]
    fn only_a_message_stamped_with_a_stateless_revision_has_them() {
        let stamped = json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}, "name": "t"});
        let headers = RouteHeaders::stamped("tools/call", Some(&stamped)).unwrap();
        assert_eq!(headers.version, Revision::V2026_07_28);
        assert_eq!(headers.method, "tools/call");
        let dated = json!({"_meta": {PROTOCOL_VERSION_KEY: "2025-11-25"}});
        assert_eq!(RouteHeaders::stamped("tools/call", Some(&dated)), None);
        assert_eq!(RouteHeaders::stamped("tools/call", Some(&json!({}))), None);
        assert_eq!(RouteHeaders::stamped("tools/call", None), None);
    }

    #[test]
    fn debug_shows_no_value() {
        let headers = RouteHeaders::new(
            Revision::V2026_07_28,
            "tools/call",
            Some(&json!({"name": "secret-tool"})),
        )
        .with_params(vec![("Token".into(), "s3cr3t".into())]);
        let shown = format!("{headers:?}");
        assert!(shown.contains("Token") && !shown.contains("s3cr3t"));
        assert!(!shown.contains("secret-tool"));
    }
}
