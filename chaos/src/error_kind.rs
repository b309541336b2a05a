//! Short stable names for the ways a call fails, as the report counts them
//! (`timeout`, `transport/Exited`, …).

use mcpvisor::CallError;
use mcpvisor::TransportError;

/// The kind of a call error, for the report's counts.
pub fn error_kind(e: &CallError) -> String {
    match e {
        CallError::UnknownTool(_) => "unknown-tool".into(),
        CallError::UnknownServer(_) => "unknown-server".into(),
        CallError::ServerUnavailable { .. } => "unavailable".into(),
        CallError::Timeout { .. } => "timeout".into(),
        CallError::ConnectionTimedOut { .. } => "connection-timed-out".into(),
        CallError::Transport { source, .. } => format!("transport/{}", transport_kind(source)),
        CallError::ConnectionClosed { .. } => "connection-closed".into(),
        CallError::Cancelled => "cancelled".into(),
        CallError::Overloaded { .. } => "overloaded".into(),
        CallError::Rpc { error, .. } => format!("rpc/{}", error.code),
        CallError::InvalidResult { .. } => "invalid-result".into(),
        CallError::OutputMismatch { .. } => "output-mismatch".into(),
        CallError::Shutdown => "shutdown".into(),
        CallError::NodeLost { .. } => "node-lost".into(),
        CallError::Remote { .. } => "remote".into(),
        _ => "other".into(),
    }
}

/// The variant's name: the transport error is non-exhaustive and its Debug
/// form starts with it.
fn transport_kind(e: &TransportError) -> String {
    let debug = format!("{e:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn kinds_name_the_variant() {
        let server: Arc<str> = Arc::from("s");
        let timeout = CallError::Timeout {
            server: server.clone(),
            after: Duration::from_secs(1),
        };
        assert_eq!(error_kind(&timeout), "timeout");
        let closed = CallError::Transport {
            server,
            source: TransportError::Closed,
        };
        assert_eq!(error_kind(&closed), "transport/Closed");
    }
}
