//! URLs as they may appear in errors, logs and terminals.
//!
//! A URL can carry a credential in its query (`?api_key=`), its user info, its
//! fragment, or its path (`/hooks/3f9a…`, a capability URL). What is shown is the
//! scheme, host, port and path, with long opaque path segments masked; a query is
//! only marked as present. Nothing else of the URL is ever printed.

use reqwest::Url;

/// Shown in place of a masked path segment or a query.
const REDACTED: &str = "[redacted]";

/// Path segments at least this long made only of token characters are masked,
/// unless they read as words (see [`opaque`]).
const OPAQUE_SEGMENT_LEN: usize = 24;

/// A URL for display: `scheme://host[:port]/path`, long opaque path segments
/// replaced by `[redacted]`, no user info, no fragment, and `?[redacted]` in
/// place of a query. Anything that does not parse as a URL is shown as
/// `[unparseable URL]`, never echoed.
///
/// ```
/// use mcpvisor_auth::display_url;
/// assert_eq!(
///     display_url("https://user:pw@api.example.com:8443/v1/mcp?api_key=s3cret#x"),
///     "https://api.example.com:8443/v1/mcp?[redacted]"
/// );
/// assert_eq!(
///     display_url("https://hooks.example.com/t/4f3c2a1b9e8d7c6b5a4f3e2d1c0b/mcp"),
///     "https://hooks.example.com/t/[redacted]/mcp"
/// );
/// ```
pub fn display_url(url: impl AsRef<str>) -> String {
    let Ok(url) = Url::parse(url.as_ref()) else {
        return "[unparseable URL]".to_string();
    };
    let mut out = format!("{}:", url.scheme());
    match url.host_str() {
        Some(host) => {
            out.push_str("//");
            out.push_str(host);
            if let Some(port) = url.port() {
                out.push_str(&format!(":{port}"));
            }
            match url.path_segments() {
                Some(segments) => {
                    for segment in segments {
                        out.push('/');
                        out.push_str(if opaque(segment) { REDACTED } else { segment });
                    }
                }
                None => out.push_str(REDACTED),
            }
        }
        // `mailto:`, `data:` and the like: nothing in them is for display.
        None => out.push_str(REDACTED),
    }
    if url.query().is_some() {
        out.push('?');
        out.push_str(REDACTED);
    }
    out
}

/// A segment that looks like a token rather than a name: long, made of token
/// characters, and either holding a digit or having no word separator at all
/// (so `oauth-authorization-server` stays readable).
fn opaque(segment: &str) -> bool {
    segment.len() >= OPAQUE_SEGMENT_LEN
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~%+=".contains(&b))
        && (segment.bytes().any(|b| b.is_ascii_digit())
            || !segment.bytes().any(|b| b"-_.".contains(&b)))
}

/// Server-supplied text (an OAuth `error`, `error_description`) made safe for a
/// terminal and a log line: control characters (C0, C1, and the bidirectional
/// overrides that can reorder what a reader sees) are escaped as `\u{..}`, and
/// the text is cut to `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_fragments_and_user_info_are_never_shown() {
        assert_eq!(
            display_url("https://u:p@example.com/mcp?token=abc&x=1#frag"),
            "https://example.com/mcp?[redacted]"
        );
        assert_eq!(
            display_url("http://127.0.0.1:8080/callback?code=c&state=s"),
            "http://127.0.0.1:8080/callback?[redacted]"
        );
        assert_eq!(display_url("https://example.com"), "https://example.com/");
    }

    #[test]
    fn opaque_path_segments_are_masked_and_names_kept() {
        assert_eq!(
            display_url("https://as.example.com/.well-known/oauth-authorization-server/tenant1"),
            "https://as.example.com/.well-known/oauth-authorization-server/tenant1"
        );
        assert_eq!(
            display_url("https://x.example.com/.well-known/oauth-protected-resource/mcp"),
            "https://x.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            display_url("https://x.example.com/s/ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345/mcp"),
            "https://x.example.com/s/[redacted]/mcp"
        );
        assert_eq!(
            display_url("https://x.example.com/k/abcdefghijklmnopqrstuvwxyzABCDEF"),
            "https://x.example.com/k/[redacted]"
        );
        // Short segments are names, whatever they hold.
        assert_eq!(
            display_url("https://x.example.com/v1/abc123"),
            "https://x.example.com/v1/abc123"
        );
    }

    #[test]
    fn server_text_loses_its_control_characters() {
        assert_eq!(
            printable("denied\x1b[2J\r\nfake: ok\u{202e}", 100),
            "denied\\u{1b}[2J\\u{d}\\u{a}fake: ok\\u{202e}"
        );
        assert_eq!(printable("abcdef", 3), "abc…");
    }

    #[test]
    fn odd_urls_show_nothing_of_themselves() {
        assert_eq!(display_url("not a url ?secret"), "[unparseable URL]");
        assert_eq!(
            display_url("mailto:someone@example.com?subject=s"),
            "mailto:[redacted]?[redacted]"
        );
        assert_eq!(display_url("http://[::1]:9000/a"), "http://[::1]:9000/a");
    }
}
