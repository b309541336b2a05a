//! `${VAR}` and `${VAR:-default}` expansion, in one pass.
//!
//! Expansion happens once, for enabled entries only. What a variable holds is
//! inserted literally: a value that itself contains `${OTHER}` is never expanded
//! again, so a secret cannot smuggle in a reference to another one.

/// Why a value could not be expanded. Never carries the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    /// `${NAME}` without a default, and `NAME` is not set.
    #[error("environment variable `{0}` is not set")]
    Missing(String),
    /// `${` without its closing `}`.
    #[error("`${{` without a closing `}}`")]
    Unterminated,
    /// `${…}` whose name is not a variable name. What it holds is not repeated:
    /// a value pasted between the braces by mistake is a secret.
    #[error("a `${{…}}` reference does not hold a variable name (letters, digits, `_`)")]
    InvalidName,
}

/// Expands every reference in `input`, looking variables up with `lookup`.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unterminated)?;
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if !is_variable_name(name) {
            return Err(ExpandError::InvalidName);
        }
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Missing(name.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("abc".into()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${TOKEN}".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_references_and_defaults() {
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer abc");
        assert_eq!(expand("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${TOKEN:-fallback}", &env).unwrap(), "abc");
        assert_eq!(
            expand("${EMPTY:-d}", &env).unwrap(),
            "",
            "set but empty is kept"
        );
        assert_eq!(expand("${NOPE:-}", &env).unwrap(), "");
        assert_eq!(
            expand("no refs $HOME {x}", &env).unwrap(),
            "no refs $HOME {x}"
        );
        assert_eq!(expand("${HOME}${TOKEN}", &env).unwrap(), "/home/uabc");
    }

    #[test]
    fn values_are_never_expanded_twice() {
        assert_eq!(expand("${NESTED}", &env).unwrap(), "${TOKEN}");
        // A default is literal too: the first `}` closes the reference.
        assert_eq!(expand("${NOPE:-${TOKEN}}", &env).unwrap(), "${TOKEN}");
    }

    #[test]
    fn errors_name_the_variable_not_a_value() {
        assert_eq!(
            expand("${MISSING}", &env),
            Err(ExpandError::Missing("MISSING".into()))
        );
        assert_eq!(expand("x ${TOKEN", &env), Err(ExpandError::Unterminated));
        assert_eq!(expand("${1X}", &env), Err(ExpandError::InvalidName));
        assert_eq!(expand("${}", &env), Err(ExpandError::InvalidName));
        let pasted = expand("Bearer ${ghp_4f9a-secret-token}", &env).unwrap_err();
        assert!(!pasted.to_string().contains("ghp_4f9a"), "{pasted}");
    }
}
