//! Which call errors a fault explains. A call on the faulted server may fail,
//! but only the way that fault makes it fail: a connection that is down
//! explains no route and no connection; a dead process, its exit and the
//! broken pipes; a hung one, timeouts; an oversize frame, the frame limit; a
//! cut or reset HTTP connection, the HTTP errors. Garbage explains nothing:
//! malformed lines are ignored. An answer with the wrong text is never
//! explained.

use mcpvisor::FaultKind;

/// The errors of a server whose connection is down or coming back.
const DOWN: [&str; 3] = ["unavailable", "unknown-tool", "connection-closed"];
/// A process that is gone: its exit, a write to its closed pipe, the read side ending.
const GONE: [&str; 4] = [
    "transport/Exited",
    "transport/Write",
    "transport/Read",
    "transport/Closed",
];
/// A server that does not answer in time.
const HUNG: [&str; 2] = ["timeout", "connection-timed-out"];
/// An answer over the frame limit (stdio) or the message limit (HTTP).
const OVERSIZE: [&str; 2] = ["transport/FrameTooLarge", "transport/MessageTooLarge"];
/// An HTTP connection or stream that went away, or a session gone with it.
const HTTP_GONE: [&str; 5] = [
    "transport/Http",
    "transport/NoResponse",
    "transport/SessionExpired",
    "transport/Closed",
    "transport/Read",
];

/// Whether `kind` explains a call on its server ending with `error` (an
/// [`error_kind`](crate::error_kind)).
pub fn explains(kind: FaultKind, error: &str) -> bool {
    let caused: &[&str] = match kind {
        FaultKind::Garbage => return false,
        FaultKind::Kill | FaultKind::CloseStdin | FaultKind::ExitDuringInitialize => &GONE,
        // A delay longer than a call's timeout times it out.
        FaultKind::Stop | FaultKind::DropAnswers | FaultKind::DelayAnswers => &HUNG,
        FaultKind::Oversize => &OVERSIZE,
        FaultKind::CutStream | FaultKind::ResetConnections => &HTTP_GONE,
        // A kind this engine does not know yet: it cannot hold it to anything.
        _ => return error != crate::callers::WRONG_ANSWER,
    };
    DOWN.contains(&error) || caused.contains(&error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_explains_its_own_errors_only() {
        assert!(explains(FaultKind::Kill, "transport/Exited"));
        assert!(explains(FaultKind::Kill, "unavailable"));
        assert!(!explains(FaultKind::Kill, "timeout"));
        assert!(explains(FaultKind::DropAnswers, "timeout"));
        assert!(explains(FaultKind::Oversize, "transport/FrameTooLarge"));
        assert!(!explains(FaultKind::Garbage, "unavailable"));
        assert!(explains(FaultKind::ResetConnections, "transport/Http"));
        for kind in FaultKind::ALL {
            assert!(!explains(kind, "wrong-answer"), "{kind}");
            assert!(!explains(kind, "rpc/-32602"), "{kind}");
        }
    }
}
