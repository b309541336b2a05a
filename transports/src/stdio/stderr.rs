//! A server's stderr: each line goes to `tracing`, the last few are kept for errors.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::net::unix::pipe;

/// Longest stderr line kept or logged; the rest of a longer line is dropped.
pub(crate) const MAX_LINE: usize = 4096;
/// Longest stderr excerpt put into an error message.
pub(crate) const MAX_JOINED: usize = 1024;

/// The last lines a server wrote to stderr, bounded in count and length.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: VecDeque<String>,
    capacity: usize,
}

impl StderrTail {
    pub(crate) fn new(capacity: usize) -> Self {
        // Grown as lines come: most servers write little or nothing to stderr,
        // and an idle connection should not hold room for a tail it never fills.
        StderrTail {
            lines: VecDeque::new(),
            capacity,
        }
    }

    fn push(&mut self, line: String) {
        if self.capacity == 0 {
            return;
        }
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    /// The kept lines joined with ` | `, for one-line error messages: at most
    /// [`MAX_JOINED`] bytes, keeping the end, where the cause usually is.
    pub(crate) fn joined(&self) -> String {
        let all = self
            .lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ");
        if all.len() <= MAX_JOINED {
            return all;
        }
        let mut cut = all.len() - MAX_JOINED;
        while !all.is_char_boundary(cut) {
            cut += 1;
        }
        format!("…{}", &all[cut..])
    }
}

/// Reads `stderr` to its end, line by line, never holding more than [`MAX_LINE`] bytes of a line.
pub(crate) async fn pump_stderr(
    stderr: pipe::Receiver,
    server: Arc<str>,
    tail: Arc<Mutex<StderrTail>>,
) {
    let mut line: Vec<u8> = Vec::new();
    let mut truncated = false;
    let emit = |line: &mut Vec<u8>, truncated: &mut bool| {
        let mut text = String::from_utf8_lossy(line)
            .trim_end_matches('\r')
            .to_string();
        if *truncated {
            text.push('…');
        }
        tracing::debug!(target: "mcpvisor::server_stderr", server = %server, "{text}");
        tail.lock().push(text);
        line.clear();
        *truncated = false;
    };
    'output: loop {
        if stderr.readable().await.is_err() {
            break;
        }
        // Like stdout: a quiet server's connection holds no read buffer.
        let mut buf: Vec<u8> = Vec::with_capacity(8192);
        loop {
            buf.clear();
            let n = match stderr.try_read_buf(&mut buf) {
                Ok(0) => break 'output,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => break 'output,
            };
            for part in buf[..n].split_inclusive(|&b| b == b'\n') {
                let (body, complete) = match part.strip_suffix(b"\n") {
                    Some(body) => (body, true),
                    None => (part, false),
                };
                let room = MAX_LINE.saturating_sub(line.len());
                if body.len() > room {
                    truncated = true;
                }
                line.extend_from_slice(&body[..body.len().min(room)]);
                if complete {
                    emit(&mut line, &mut truncated);
                }
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line, &mut truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_a_bounded_tail_of_bounded_lines() {
        let mut input = Vec::new();
        for i in 0..100 {
            input.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        input.extend(std::iter::repeat_n(b'y', MAX_LINE * 3));
        input.extend_from_slice(b"\nlast");
        let tail = Arc::new(Mutex::new(StderrTail::new(3)));
        let (mut tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        let writer = tokio::spawn(async move {
            tokio::io::AsyncWriteExt::write_all(&mut tx, &input)
                .await
                .unwrap();
        });
        pump_stderr(rx, Arc::from("s"), tail.clone()).await;
        writer.await.unwrap();
        let t = tail.lock();
        assert_eq!(t.lines.len(), 3);
        assert_eq!(t.lines[0], "line 99");
        assert_eq!(t.lines[1].len(), MAX_LINE + '…'.len_utf8());
        assert_eq!(t.lines[2], "last");
        let joined = t.joined();
        assert!(joined.len() <= MAX_JOINED + '…'.len_utf8());
        assert!(joined.ends_with(" | last"), "the end is kept");
    }
}
