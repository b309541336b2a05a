//! `WWW-Authenticate: Bearer …` challenges (RFC 6750, RFC 9728).

use std::collections::BTreeMap;

/// What a `401` or `403` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected-resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the resource wants.
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// Reads the Bearer challenge from the values of `WWW-Authenticate` headers.
    /// Unknown schemes and malformed parameters are skipped, never an error.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut out = Challenge::default();
        for value in values {
            let Some(params) = bearer_params(value) else {
                continue;
            };
            out.resource_metadata = out
                .resource_metadata
                .or_else(|| params.get("resource_metadata").cloned());
            out.scope = out.scope.or_else(|| params.get("scope").cloned());
            out.error = out.error.or_else(|| params.get("error").cloned());
        }
        out
    }

    /// True for `error="insufficient_scope"`.
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The `auth-param`s of the first Bearer challenge in `value`.
fn bearer_params(value: &str) -> Option<BTreeMap<String, String>> {
    let start = find_scheme(value, "bearer")?;
    let mut rest = &value[start + "bearer".len()..];
    let mut params = BTreeMap::new();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        // A new scheme (a token followed by a space, no '=') ends this challenge.
        if name.is_empty() || name.contains(' ') {
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let (val, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            out.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            (out, &quoted[end.min(quoted.len())..])
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        };
        params.insert(name.to_ascii_lowercase(), val);
        rest = after;
    }
    Some(params)
}

fn find_scheme(value: &str, scheme: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',');
        let after = lower.as_bytes().get(at + scheme.len());
        if before_ok && matches!(after, None | Some(b' ')) {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bearer_parameters() {
        let c = Challenge::parse([
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://r.example/.well-known/oauth-protected-resource""#,
        ]);
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://r.example/.well-known/oauth-protected-resource")
        );
        assert!(c.insufficient_scope());
    }

    #[test]
    fn tolerates_other_schemes_tokens_and_escapes() {
        let c =
            Challenge::parse(["Basic realm=\"x\", Bearer realm=\"a\\\"b\", error=invalid_token"]);
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = Challenge::parse(["Basic realm=\"x\""]);
        assert_eq!(c, Challenge::default());
        let c = Challenge::parse(["bearer"]);
        assert_eq!(c, Challenge::default());
        let c = Challenge::parse(["Bearer scope=\"unterminated"]);
        assert_eq!(c.scope.as_deref(), Some("unterminated"));
    }
}
