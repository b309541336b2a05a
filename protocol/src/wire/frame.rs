//! Newline-delimited framing with a hard byte limit.
//!
//! MCP's stdio transport sends one JSON-RPC message per line. The decoder never
//! holds more than `limit` bytes of an unfinished line: a longer line is reported
//! as [`FrameError::TooLarge`] and the rest of it is skipped, not buffered.

/// The frame limit MCP stdio connections use: 1 MiB.
pub const STDIO_FRAME_LIMIT: usize = 1024 * 1024;

/// Why a frame could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A line exceeded the byte limit (the newline is not counted).
    #[error("frame exceeds the {limit}-byte limit")]
    TooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// The stream ended in the middle of a line.
    #[error("stream ended inside a frame ({len} bytes without a newline)")]
    TruncatedAtEof {
        /// Bytes of the unfinished line.
        len: usize,
    },
}

/// Splits a byte stream into newline-terminated frames.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    limit: usize,
    /// Set after an over-long line until its newline has been seen.
    skipping: bool,
}

impl FrameDecoder {
    /// A decoder that rejects lines longer than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            limit,
            skipping: false,
        }
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes currently held for an unfinished line (never more than the limit).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feeds `chunk`, calling `on_frame` for every complete non-blank line
    /// (without its `\n` or a trailing `\r`).
    ///
    /// Returns the first error met in this chunk; frames before it were delivered,
    /// and the decoder stays usable: the over-long line is skipped up to its newline.
    pub fn push(
        &mut self,
        mut chunk: &[u8],
        mut on_frame: impl FnMut(&[u8]),
    ) -> Result<(), FrameError> {
        let mut first_error = None;
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|&b| b == b'\n');
            let (part, rest, complete) = match newline {
                Some(i) => (&chunk[..i], &chunk[i + 1..], true),
                None => (chunk, &[][..], false),
            };
            chunk = rest;
            if self.skipping {
                if complete {
                    self.skipping = false;
                }
                continue;
            }
            if self.buf.len() + part.len() > self.limit {
                self.buf.clear();
                // Release the memory a near-limit line held.
                self.buf.shrink_to(64 * 1024);
                self.skipping = !complete;
                first_error.get_or_insert(FrameError::TooLarge { limit: self.limit });
                continue;
            }
            if !complete {
                self.buf.extend_from_slice(part);
                continue;
            }
            if self.buf.is_empty() {
                emit(part, &mut on_frame);
            } else {
                self.buf.extend_from_slice(part);
                let line = std::mem::take(&mut self.buf);
                emit(&line, &mut on_frame);
                self.buf = line;
                self.buf.clear();
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Call at end of stream: an unfinished line is an error.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        let len = self.buf.len();
        self.buf.clear();
        let skipping = std::mem::replace(&mut self.skipping, false);
        if len > 0 && !skipping {
            return Err(FrameError::TruncatedAtEof { len });
        }
        Ok(())
    }
}

fn emit(line: &[u8], on_frame: &mut impl FnMut(&[u8])) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.iter().all(u8::is_ascii_whitespace) {
        on_frame(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn collect(d: &mut FrameDecoder, chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<FrameError>) {
        let mut frames = Vec::new();
        let mut errors = Vec::new();
        for c in chunks {
            if let Err(e) = d.push(c, |f| frames.push(f.to_vec())) {
                errors.push(e);
            }
        }
        (frames, errors)
    }

    #[test]
    fn splits_lines_and_strips_cr_and_blank_lines() {
        let mut d = FrameDecoder::new(100);
        let (frames, errors) = collect(&mut d, &[b"{\"a\":1}\n\n{\"b\"", b":2}\r\n  \n"]);
        assert!(errors.is_empty());
        assert_eq!(frames, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
        assert_eq!(d.finish(), Ok(()));
    }

    #[test]
    fn line_at_limit_passes_and_one_byte_more_fails() {
        let mut d = FrameDecoder::new(8);
        let (frames, errors) = collect(&mut d, &[b"12345678\n123456789\nok\n"]);
        assert_eq!(frames, vec![b"12345678".to_vec(), b"ok".to_vec()]);
        assert_eq!(errors, vec![FrameError::TooLarge { limit: 8 }]);
    }

    #[test]
    fn over_long_line_is_not_buffered_past_the_limit() {
        let mut d = FrameDecoder::new(1024);
        let chunk = vec![b'x'; 4096];
        let mut errs = 0;
        for _ in 0..256 {
            if d.push(&chunk, |_| panic!("no frame expected")).is_err() {
                errs += 1;
            }
            assert!(d.buffered() <= 1024);
        }
        assert_eq!(errs, 1, "one error per over-long line");
        let (frames, _) = collect(&mut d, &[b"tail\n{}\n"]);
        assert_eq!(frames, vec![b"{}".to_vec()]);
    }

    #[test]
    fn eof_inside_a_frame_is_reported() {
        let mut d = FrameDecoder::new(100);
        let (frames, _) = collect(&mut d, &[b"{}\n{\"part"]);
        assert_eq!(frames.len(), 1);
        assert_eq!(d.finish(), Err(FrameError::TruncatedAtEof { len: 6 }));
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_frames(
            lines in proptest::collection::vec("[a-z{}:\" ]{0,40}", 0..20),
            cuts in proptest::collection::vec(0usize..1000, 0..10),
        ) {
            let mut input = Vec::new();
            for l in &lines { input.extend_from_slice(l.as_bytes()); input.push(b'\n'); }
            let mut whole = FrameDecoder::new(32);
            let (expect, expect_err) = collect(&mut whole, &[&input]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut at = 0;
            for c in cuts { pieces.push(&input[at..c]); at = c; }
            pieces.push(&input[at..]);
            let mut split = FrameDecoder::new(32);
            let (got, got_err) = collect(&mut split, &pieces);
            prop_assert_eq!(got, expect);
            let over = lines.iter().any(|l| l.len() > 32);
            prop_assert_eq!(!got_err.is_empty(), over);
            prop_assert_eq!(!expect_err.is_empty(), over);
        }
    }
}
