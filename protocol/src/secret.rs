//! Values that must never be printed: environment values, header values, tokens.

use std::fmt;

/// A string that prints as `[redacted]` in `Debug` and `Display`.
///
/// The only way to read it is [`SecretString::expose`], which makes every use
/// that could leak it easy to find.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        SecretString(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for SecretString {
    fn from(value: String) -> Self {
        SecretString(value)
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = SecretString::new("hunter2-secret");
        assert_eq!(
            format!("{s:?} {s} {:#?}", s),
            "[redacted] [redacted] [redacted]"
        );
        assert_eq!(s.expose(), "hunter2-secret");
    }
}
