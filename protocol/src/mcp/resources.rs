//! Resources as servers list and serve them. Every member a server sends is
//! kept (`extra`), so a host or a gateway passes entries on whole.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp::messages::{ResultError, methods};

/// A resource as `resources/list` names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI, unique on its server (not across servers).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else the server sent (size, annotations, title…).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource template (`resources/templates/list`): URIs a server can serve
/// by filling in an RFC 6570 template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// What its resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Their media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Everything else the server sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One part of a read resource.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceContents {
    /// Text.
    Text {
        /// The URI these contents are of.
        uri: String,
        /// Their media type.
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary data, base64 as sent.
    Blob {
        /// The URI these contents are of.
        uri: String,
        /// Their media type.
        mime_type: Option<String>,
        /// Base64 data.
        blob: String,
    },
}

impl ResourceContents {
    fn from_value(v: &Value) -> Option<ResourceContents> {
        let s = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let uri = s("uri")?;
        let mime_type = s("mimeType");
        if let Some(text) = s("text") {
            return Some(ResourceContents::Text {
                uri,
                mime_type,
                text,
            });
        }
        s("blob").map(|blob| ResourceContents::Blob {
            uri,
            mime_type,
            blob,
        })
    }

    /// The URI these contents are of.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResourceResult {
    /// The parts read (a directory-like resource may have several).
    pub contents: Vec<ResourceContents>,
    /// The result as the server sent it.
    pub raw: Value,
}

impl ReadResourceResult {
    /// Reads a `resources/read` result: every part must be text or blob with a URI.
    pub fn parse(value: Value) -> Result<ReadResourceResult, ResultError> {
        let err = |detail: String| ResultError {
            what: methods::RESOURCES_READ,
            detail,
        };
        let Some(Value::Array(parts)) = value.get("contents") else {
            return Err(err("`contents` missing or not an array".into()));
        };
        let mut contents = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().enumerate() {
            match ResourceContents::from_value(part) {
                Some(c) => contents.push(c),
                None => {
                    return Err(err(format!(
                        "contents[{i}] has no `uri` string, or neither `text` nor `blob`"
                    )));
                }
            }
        }
        Ok(ReadResourceResult {
            contents,
            raw: value,
        })
    }
}

/// Parameters of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
pub fn uri_params(uri: &str) -> Value {
    serde_json::json!({ "uri": uri })
}

/// `notifications/resources/updated`: which resource changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceUpdated {
    /// The resource's URI.
    pub uri: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::pages::Page;
    use serde_json::json;

    #[test]
    fn a_listing_keeps_every_member_and_sets_bad_entries_aside() {
        let page = Page::<Resource>::parse(
            json!({"resources": [
                {"uri": "file:///a", "name": "a", "mimeType": "text/plain", "size": 3, "title": "A"},
                {"name": "no uri"}
            ], "nextCursor": "2"}),
            methods::RESOURCES_LIST,
            "resources",
        )
        .unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.rejected.len(), 1);
        assert!(page.rejected[0].starts_with("resources[1]"));
        let a = &page.items[0];
        assert_eq!(a.mime_type.as_deref(), Some("text/plain"));
        assert_eq!(a.extra["size"], 3);
        let back = serde_json::to_value(a).unwrap();
        assert_eq!(back["title"], "A");
        assert_eq!(back["mimeType"], "text/plain");
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
    }

    #[test]
    fn read_results_are_text_or_blob() {
        let r = ReadResourceResult::parse(json!({"contents": [
            {"uri": "x://1", "text": "hi"},
            {"uri": "x://2", "mimeType": "image/png", "blob": "AAAA"}
        ]}))
        .unwrap();
        assert_eq!(r.contents.len(), 2);
        assert!(matches!(&r.contents[0], ResourceContents::Text { text, .. } if text == "hi"));
        assert!(matches!(&r.contents[1], ResourceContents::Blob { blob, .. } if blob == "AAAA"));
        assert!(ReadResourceResult::parse(json!({"contents": [{"uri": "x://1"}]})).is_err());
        assert!(ReadResourceResult::parse(json!({"contents": {}})).is_err());
        assert!(ReadResourceResult::parse(json!([])).is_err());
    }
}
