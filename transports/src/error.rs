//! Transport errors: one enum a host can match on.

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::Arc;

/// How a server process ended, as far as is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo(pub Option<ExitStatus>);

impl ExitInfo {
    /// The exit code, if the process exited normally.
    pub fn code(&self) -> Option<i32> {
        self.0.and_then(|s| s.code())
    }

    /// The signal that ended the process, if one did.
    pub fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.0.and_then(|s| s.signal())
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code(), self.signal()) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(sig)) => write!(f, "killed by signal {sig}"),
            (None, None) => f.write_str("exit status unknown"),
        }
    }
}

/// Why a transport failed. Cheap to clone, so one failure can end many pending calls.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server's definition is unusable (bad URL, bad header).
    #[error("invalid server definition: {0}")]
    Config(String),
    /// The server process could not be started.
    #[error("failed to start `{command}`: {source}")]
    Spawn {
        /// The command (never its environment).
        command: String,
        /// Why.
        source: Arc<io::Error>,
    },
    /// The server sent a line longer than the frame limit.
    #[error("server sent a frame over the {limit}-byte limit")]
    FrameTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The server closed its output; the process ended with `status`.
    #[error("server process closed the connection ({status}){}", stderr_suffix(.stderr_tail))]
    Exited {
        /// How it ended.
        status: ExitInfo,
        /// The last lines it wrote to stderr.
        stderr_tail: String,
    },
    /// Writing to the server failed.
    #[error("writing to the server failed: {0}")]
    Write(Arc<io::Error>),
    /// The server has left this many bytes unread: the message was not queued.
    #[error("the server is not reading its input: over {limit} bytes wait to be written")]
    Backlog {
        /// The backlog limit in bytes.
        limit: usize,
    },
    /// The HTTP server has not accepted this many notifications yet: this one was
    /// not queued.
    #[error("the server has not accepted the last {limit} notifications; this one was dropped")]
    NoticesBacklog {
        /// The queue's length.
        limit: usize,
    },
    /// Reading from the server failed.
    #[error("reading from the server failed: {0}")]
    Read(Arc<io::Error>),
    /// The transport was already shut down.
    #[error("transport is closed")]
    Closed,
    /// The HTTP server answered with a status this transport cannot use.
    #[error("server answered HTTP {status}{}", body_suffix(.body))]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the body, for diagnosis (bounded).
        body: String,
    },
    /// The server answered with a redirect, which is never followed: it would carry
    /// the configured headers, the session id and the token to another place.
    #[error("server answered HTTP {status} (a redirect{}); redirects are not followed", location_suffix(.location))]
    Redirected {
        /// The status code (3xx).
        status: u16,
        /// Where it pointed, with its query and user info redacted.
        location: Option<String>,
    },
    /// The HTTP request failed below HTTP (TLS, I/O, a timeout).
    #[error("HTTP request failed: {0}")]
    Http(String),
    /// The HTTP server cannot be reached: the connection was refused, could
    /// not be made, or was reset or cut mid-answer. The connection is over; the
    /// server is taken for down until it is reached again.
    #[error("HTTP server unreachable: {0}")]
    Unreachable(String),
    /// An HTTP body or SSE event exceeded the message limit.
    #[error("server sent a message over the {limit}-byte limit")]
    MessageTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The answer had a content type that is neither JSON nor SSE.
    #[error(
        "server answered with content type {0:?}, expected application/json or text/event-stream"
    )]
    UnexpectedContentType(String),
    /// The answer ended without a response to the request.
    #[error("server ended its answer without a response to the request")]
    NoResponse,
    /// The server's session id has characters outside visible ASCII.
    #[error("server sent an invalid Mcp-Session-Id")]
    InvalidSessionId,
    /// Authorization failed (a login is required, discovery failed, …).
    #[error("authorization: {0}")]
    Auth(mcpvisor_auth::AuthError),
    /// The session expired and could not be renewed.
    #[error("HTTP session expired and could not be renewed: {0}")]
    SessionExpired(String),
}

impl TransportError {
    /// Whether this failure says the server is down, not that one request failed.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, TransportError::Unreachable(_))
    }
}

fn body_suffix(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

fn location_suffix(location: &Option<String>) -> String {
    match location {
        Some(l) => format!(" to {l}"),
        None => String::new(),
    }
}

fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; stderr: {tail}")
    }
}
