//! Icons of tools, resources, templates and prompts (2025-11-25). mcpvisor
//! draws none, but hands them on (through `mcpvisor serve`) to clients that
//! will: only so many, of bounded size, fetched over `https` or inline as a
//! raster image (an inline SVG can carry script, so it is not kept; an
//! `https` one is the client's to render with care, as the spec asks). An
//! icon that fails a rule is left out; the item keeps the rest.
//!
//! Kept: `src` an `https:` URL or a `data:image/…` URI other than SVG;
//! `mimeType`, if any, an `image/` type; `sizes` short strings; `theme`
//! `light` or `dark`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The most icons kept per item.
pub const MAX_ICONS: usize = 8;
/// The longest `https:` URL kept.
pub const MAX_URL: usize = 8 * 1024;
/// The longest `data:` URI kept (the image inline).
pub const MAX_DATA: usize = 64 * 1024;

/// One icon, as checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `https:` URL or a `data:image/…` URI.
    pub src: String,
    /// Its image type, when the server named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes it suits (`48x48`, `any`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// `light` or `dark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

impl Icon {
    /// One entry of an `icons` array, if it passes the rules above.
    pub fn read(entry: &Value) -> Option<Icon> {
        let src = entry.get("src")?.as_str()?;
        let safe = if let Some(data) = src.strip_prefix("data:") {
            let kind = data
                .get(..data.find([';', ',']).unwrap_or(data.len()))
                .unwrap_or("");
            src.len() <= MAX_DATA
                && kind.starts_with("image/")
                && !kind.eq_ignore_ascii_case("image/svg+xml")
        } else {
            src.len() <= MAX_URL
                && src
                    .get(..8)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
                && !src.chars().any(char::is_control)
        };
        if !safe {
            return None;
        }
        let mime_type = match entry.get("mimeType") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) if m.starts_with("image/") && m.len() <= 100 => Some(m.clone()),
            Some(_) => return None,
        };
        let sizes = entry
            .get("sizes")
            .and_then(Value::as_array)
            .map(|sizes| {
                sizes
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|s| s.len() <= 32)
                    .take(16)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let theme = entry
            .get("theme")
            .and_then(Value::as_str)
            .filter(|t| matches!(*t, "light" | "dark"))
            .map(str::to_string);
        Some(Icon {
            src: src.to_string(),
            mime_type,
            sizes,
            theme,
        })
    }

    /// The icons of an `icons` member that pass, at most [`MAX_ICONS`].
    pub fn read_all(icons: &Value) -> Vec<Icon> {
        icons
            .as_array()
            .map(|all| all.iter().filter_map(Icon::read).take(MAX_ICONS).collect())
            .unwrap_or_default()
    }

    /// Replaces `icons` in an item's members with the icons that pass
    /// (removed when none does).
    pub fn clean(members: &mut Map<String, Value>) {
        let Some(icons) = members.remove("icons") else {
            return;
        };
        let kept = Icon::read_all(&icons);
        if !kept.is_empty() {
            if let Ok(value) = serde_json::to_value(kept) {
                members.insert("icons".into(), value);
            }
        }
    }
}

/// For `#[serde(deserialize_with)]`: any `icons` value, read with [`Icon::read_all`]
/// (a malformed one costs the icons, never the item).
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Icon>, D::Error> {
    Ok(Icon::read_all(&Value::deserialize(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_https_and_inline_images_pass_and_only_so_many() {
        let icons = json!([
            {"src": "https://example.com/a.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"},
            {"src": "data:image/png;base64,iVBORw0KGgo=", "theme": "sepia"},
            {"src": "data:image/svg+xml;base64,PHN2Zz4="},
            {"src": "data:IMAGE/SVG+XML,<svg onload=x>"},
            {"src": "http://example.com/a.png"},
            {"src": "javascript:alert(1)"},
            {"src": "file:///etc/passwd"},
            {"src": "data:text/html,<script>x</script>"},
            {"src": "https://example.com/b.png", "mimeType": "text/html"},
            {"src": "https://example.com/\u{1b}]0;x"},
            {"nosrc": true},
            "https://example.com/plain-string.png",
        ]);
        let kept = Icon::read_all(&icons);
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert_eq!(kept[0].theme.as_deref(), Some("dark"));
        assert_eq!(
            kept[1].theme, None,
            "an unknown theme is dropped, not the icon"
        );
        let many: Vec<Value> = (0..20)
            .map(|i| json!({"src": format!("https://e.com/{i}.png")}))
            .collect();
        assert_eq!(Icon::read_all(&Value::Array(many)).len(), MAX_ICONS);
        let huge = format!("data:image/png;base64,{}", "A".repeat(MAX_DATA));
        assert!(Icon::read(&json!({"src": huge})).is_none());
        assert!(Icon::read_all(&json!("not an array")).is_empty());
    }

    #[test]
    fn cleaning_keeps_what_passes_and_removes_the_rest() {
        let mut members = json!({"name": "n", "icons": [{"src": "javascript:x"}, {"src": "https://e.com/i.png"}]});
        Icon::clean(members.as_object_mut().unwrap());
        assert_eq!(members["icons"], json!([{"src": "https://e.com/i.png"}]));
        let mut members = json!({"name": "n", "icons": [{"src": "javascript:x"}]});
        Icon::clean(members.as_object_mut().unwrap());
        assert!(members.get("icons").is_none());
    }
}
