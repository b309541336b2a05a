//! The gate every connection passes before its session authenticates.
//!
//! ractor_cluster reads a connection's frames (a `u64` big-endian length,
//! then that many bytes) and only then asks whether the session may send
//! them: left alone, a stranger could make it buffer a whole frame of the
//! post-authentication size (8 MiB) on each of many connections, or hold a
//! connection open for ever. So the stream handed to ractor_cluster reads
//! through [`Gated`]: until the session authenticates, a frame longer than
//! [`PREAUTH_FRAME_BYTES`] ends the connection, and so does the deadline.
//! [`FrameBound`] is the frame accounting alone, fed bytes and nothing else.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::connections::Conn;

/// The longest frame a session takes before it authenticates. The handshake's
/// frames (a name, a challenge, a digest) and the first control frames a
/// peer sends once its own side authenticated (its actors and groups: one
/// agent, one group per node) are well under it.
pub const PREAUTH_FRAME_BYTES: u64 = 8 * 1024;

/// The length prefix of every ractor_cluster frame.
const HEADER_BYTES: usize = 8;

/// A frame announced longer than the gate takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a cluster frame of {length} bytes before authentication; at most {limit} are taken")]
pub struct FrameTooLarge {
    /// The length the frame announced.
    pub length: u64,
    /// The most the gate takes.
    pub limit: u64,
}

/// Where a stream of frames stands: in a length prefix, or in a body.
#[derive(Debug, Clone, Default)]
pub struct FrameBound {
    header: [u8; HEADER_BYTES],
    header_filled: usize,
    body_left: u64,
}

impl FrameBound {
    /// A stream at the start of its first frame.
    pub fn new() -> Self {
        FrameBound::default()
    }

    /// Takes the next `bytes` of the stream; refuses the first frame whose
    /// announced length is over `limit` (the bytes after it are not looked at).
    pub fn admit(&mut self, mut bytes: &[u8], limit: u64) -> Result<(), FrameTooLarge> {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let take = self.body_left.min(bytes.len() as u64);
                self.body_left -= take;
                bytes = &bytes[take as usize..];
                continue;
            }
            let take = (HEADER_BYTES - self.header_filled).min(bytes.len());
            self.header[self.header_filled..self.header_filled + take]
                .copy_from_slice(&bytes[..take]);
            self.header_filled += take;
            bytes = &bytes[take..];
            if self.header_filled == HEADER_BYTES {
                let length = u64::from_be_bytes(self.header);
                if length > limit {
                    return Err(FrameTooLarge { length, limit });
                }
                self.header_filled = 0;
                self.body_left = length;
            }
        }
        Ok(())
    }

    /// Whether the stream stands between two frames.
    pub fn between_frames(&self) -> bool {
        self.header_filled == 0 && self.body_left == 0
    }
}

/// The read half ractor_cluster reads a connection through (see the module).
pub(crate) struct Gated<R> {
    inner: R,
    conn: Arc<Conn>,
    bound: FrameBound,
    /// Until the session authenticates; `None` once it has.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<R> Gated<R> {
    pub(crate) fn new(inner: R, conn: Arc<Conn>, deadline: Instant) -> Self {
        Gated {
            inner,
            conn,
            bound: FrameBound::new(),
            deadline: Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }
}

fn refused(kind: std::io::ErrorKind, why: impl ToString) -> std::io::Error {
    std::io::Error::new(kind, why.to_string())
}

impl<R: AsyncRead + Unpin> AsyncRead for Gated<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.deadline.is_some() && this.conn.authenticated() {
            // Past the gate: from here on ractor_cluster's own bound applies.
            this.deadline = None;
        }
        let Some(deadline) = this.deadline.as_mut() else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(refused(
                std::io::ErrorKind::TimedOut,
                "the cluster session did not authenticate in time",
            )));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &read {
            if let Err(e) = this
                .bound
                .admit(&buf.filled()[before..], PREAUTH_FRAME_BYTES)
            {
                return Poll::Ready(Err(refused(std::io::ErrorKind::InvalidData, e)));
            }
        }
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(length: u64, body: &[u8]) -> Vec<u8> {
        let mut bytes = length.to_be_bytes().to_vec();
        bytes.extend_from_slice(body);
        bytes
    }

    #[test]
    fn small_frames_pass_in_any_pieces() {
        let mut stream = frame(3, b"abc");
        stream.extend(frame(0, b""));
        stream.extend(frame(5, b"hello"));
        for piece in 1..stream.len() {
            let mut bound = FrameBound::new();
            for chunk in stream.chunks(piece) {
                bound.admit(chunk, 8).unwrap();
            }
            assert!(bound.between_frames());
        }
    }

    #[test]
    fn a_frame_announced_over_the_limit_is_refused_before_its_body() {
        let mut bound = FrameBound::new();
        bound.admit(&frame(4, b"ok!!"), 8).unwrap();
        let big = frame(8 * 1024 * 1024, b"");
        bound.admit(&big[..5], 8).unwrap();
        assert_eq!(
            bound.admit(&big[5..], 8),
            Err(FrameTooLarge {
                length: 8 * 1024 * 1024,
                limit: 8
            })
        );
    }
}
