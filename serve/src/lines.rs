//! A session over newline-delimited JSON-RPC: `serve --stdio` and every
//! connection to the local socket.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::wire::frame::{FrameDecoder, FrameError};
use mcpvisor_protocol::wire::jsonrpc::{Incoming, Message, MessageError, error_codes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::gateway::Gateway;
use crate::ingress::Ingress;
use crate::session::{Outbound, Session, error_message};
use crate::tools::Naming;

/// The longest line a downstream client may send.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// How long a stopping gateway waits for a session's answers to be written.
const DRAIN: Duration = Duration::from_secs(2);

/// Runs one session on `reader`/`writer` until the client closes its side or
/// the gateway stops. Calls still in flight then have two seconds to answer
/// (a stopping gateway answers them with a shutdown error at once), unless
/// `peer_gone` says the client can read nothing more (it exited, or was
/// killed): then they are cancelled upstream at once, as what is left after
/// the two seconds is.
pub async fn serve_lines<R, W>(
    gateway: Arc<Gateway>,
    naming: Naming,
    mut reader: R,
    writer: W,
    peer_gone: impl FnOnce(&R) -> bool,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(gateway.options().outbound_queue);
    let session = Session::open(gateway.clone(), naming, Ingress::Local, tx.clone());
    let writer = tokio::spawn(write_lines(rx, writer));
    let mut decoder = FrameDecoder::new(MAX_LINE);
    let mut buf = vec![0u8; 16 * 1024];
    let mut frames: Vec<Vec<u8>> = Vec::new();
    loop {
        let read = tokio::select! {
            read = reader.read(&mut buf) => read,
            () = gateway.stopped() => break,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let pushed = decoder.push(&buf[..n], |line| frames.push(line.to_vec()));
        for frame in frames.drain(..) {
            receive(&session, &frame, &tx).await;
        }
        if let Err(FrameError::TooLarge { limit }) = pushed {
            let refusal = error_message(
                None,
                error_codes::INVALID_REQUEST,
                format!("message longer than {limit} bytes; it was skipped"),
            );
            let _ = tx.send(refusal).await;
        }
    }
    // A stopping gateway's calls answer with a shutdown error of their own
    // accord; a client that closed its side after its last request (a piped
    // script) gets the answers that come soon. The rest are cancelled.
    let deadline = tokio::time::Instant::now() + DRAIN;
    let gone = session.in_flight() > 0 && peer_gone(&reader);
    while !gone && session.in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    session.close();
    drop(session);
    drop(tx);
    let _ = writer.await;
}

/// Whether `fd`, the client's end of a socket or the pipe answers are written
/// to, can carry nothing more to it: a socket whose peer closed both ways (a
/// peer that only stopped writing can still read), a pipe with no reader.
pub fn hung_up(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)),
        Err(_) => false,
    }
}

async fn receive(session: &Arc<Session>, frame: &[u8], tx: &Outbound) {
    // Refusals and parse errors are sent from here, on the reader's own time: a
    // client that does not read its answers stops being read.
    let items = match Message::parse(frame) {
        Ok(Incoming::Single(message)) => vec![Ok(message)],
        Ok(Incoming::Batch(items)) => {
            let revision = session.revision();
            // `initialize` goes alone: the revision a batch would need is not known yet.
            let refused = if items
                .iter()
                .any(|i| matches!(i, Ok(Message::Request(r)) if r.method == methods::INITIALIZE))
            {
                Some("`initialize` must be sent alone, not in a batch".to_string())
            } else if !revision.rules().batches {
                Some(format!(
                    "protocol {revision} has no JSON-RPC batches; send one message per line"
                ))
            } else {
                None
            };
            match refused {
                Some(why) => {
                    let refusal = error_message(None, error_codes::INVALID_REQUEST, why);
                    let _ = tx.send(refusal).await;
                    return;
                }
                // Each member is answered on its own line (a batch is rare on stdio).
                None => items,
            }
        }
        Err(e) => vec![Err(e)],
    };
    for item in items {
        let refusal = match item {
            Ok(message) => session.receive(message, tx),
            Err(e) => Some(parse_error(&e)),
        };
        if let Some(refusal) = refusal {
            let _ = tx.send(refusal).await;
        }
    }
}

/// The answer to bytes that are not a JSON-RPC message.
pub(crate) fn parse_error(e: &MessageError) -> Message {
    let code = match e {
        MessageError::InvalidJson(_) => error_codes::PARSE_ERROR,
        _ => error_codes::INVALID_REQUEST,
    };
    error_message(None, code, e.to_string())
}

async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Message>, mut writer: W) {
    let mut out = Vec::with_capacity(4096);
    while let Some(message) = rx.recv().await {
        out.clear();
        message.write_to(&mut out);
        out.push(b'\n');
        // Whatever else is ready goes out in the same write.
        while out.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(next) => {
                    next.write_to(&mut out);
                    out.push(b'\n');
                }
                Err(_) => break,
            }
        }
        if writer.write_all(&out).await.is_err() || writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    use super::hung_up;

    #[test]
    fn a_peer_that_closed_both_ways_has_hung_up_one_that_stopped_writing_has_not() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        assert!(!hung_up(ours.as_fd()));
        theirs.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(!hung_up(ours.as_fd()), "it can still read its answers");
        drop(theirs);
        assert!(hung_up(ours.as_fd()));
    }

    #[test]
    fn a_pipe_without_a_reader_has_hung_up() {
        let (reader, writer) = std::io::pipe().unwrap();
        assert!(!hung_up(writer.as_fd()));
        drop(reader);
        assert!(hung_up(writer.as_fd()));
    }
}
