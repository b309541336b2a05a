//! Log levels (RFC 5424, as MCP names them) for `logging/setLevel`.

use std::fmt;
use std::str::FromStr;

/// How severe a server's log message is; a server sends the level set and above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

const NAMES: [(&str, LogLevel); 8] = [
    ("debug", LogLevel::Debug),
    ("info", LogLevel::Info),
    ("notice", LogLevel::Notice),
    ("warning", LogLevel::Warning),
    ("error", LogLevel::Error),
    ("critical", LogLevel::Critical),
    ("alert", LogLevel::Alert),
    ("emergency", LogLevel::Emergency),
];

impl LogLevel {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        NAMES[self as usize].0
    }

    /// Parameters of `logging/setLevel`.
    pub fn params(self) -> serde_json::Value {
        serde_json::json!({ "level": self.as_str() })
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the eight levels.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown log level; use one of debug, info, notice, warning, error, critical, alert, emergency"
)]
pub struct UnknownLogLevel;

impl FromStr for LogLevel {
    type Err = UnknownLogLevel;

    fn from_str(s: &str) -> Result<LogLevel, UnknownLogLevel> {
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|(_, level)| *level)
            .ok_or(UnknownLogLevel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, level) in NAMES {
            assert_eq!(level.as_str(), name);
            assert_eq!(name.parse::<LogLevel>(), Ok(level));
        }
        assert_eq!("WARNING".parse::<LogLevel>(), Ok(LogLevel::Warning));
        assert!("warn".parse::<LogLevel>().is_err());
        assert!(LogLevel::Debug < LogLevel::Emergency);
    }
}
