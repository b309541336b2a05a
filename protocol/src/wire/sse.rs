//! Server-Sent Events parsing with a hard per-event byte limit.
//!
//! MCP's Streamable HTTP transport may answer with a `text/event-stream` body.
//! [`SseParser`] interprets it by the WHATWG HTML rules for event streams: LF,
//! CRLF and a lone CR end lines, one leading BOM is skipped, a line starting
//! with `:` is a comment, and a blank line dispatches the `data`, `event` and
//! `id` gathered since the previous one. It is fed arbitrary byte chunks; every
//! split of a stream gives the same events and errors.
//!
//! The limit bounds the bytes held for the event being built: its data and
//! event type so far plus the line being read, field name included. An event
//! that would go past it is reported as [`SseError::EventTooLarge`] and skipped
//! up to its blank line, unbuffered, so memory stays bounded however long it is.

/// A dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field; `None` when unset or empty, which means the type `message`.
    pub event: Option<String>,
    /// The `data` lines joined with `\n`, decoded as UTF-8 with invalid bytes replaced.
    pub data: String,
    /// The stream's last event id when the event was dispatched; `id` persists
    /// across events, and an empty `id` field clears it.
    pub id: Option<String>,
    /// The reconnection time in milliseconds, if one of the event's lines set it.
    pub retry: Option<u64>,
}

/// Why an event could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event exceeded the byte limit; it was skipped up to its blank line.
    #[error("SSE event exceeds the {limit}-byte limit")]
    EventTooLarge {
        /// The configured limit.
        limit: usize,
    },
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where skipping an oversized event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skipping {
    Off,
    /// At the start of a line: a line end here is the event's blank line.
    AtLineStart,
    InLine,
}

/// Turns the bytes of one event stream into [`SseEvent`]s.
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    /// Bytes of the unfinished line.
    line: Vec<u8>,
    data: Vec<u8>,
    event_type: Vec<u8>,
    /// The spec's "last event ID buffer": set by `id`, committed by a blank line.
    id_buffer: String,
    /// The spec's "last event ID string".
    last_event_id: String,
    /// The `retry` of the event being built.
    event_retry: Option<u64>,
    retry: Option<u64>,
    /// BOM bytes matched at the start of the stream; `None` once past it.
    bom_matched: Option<usize>,
    /// The last line ended with CR: an LF right after it belongs to that ending.
    after_cr: bool,
    skipping: Skipping,
    dropped: u64,
}

impl SseParser {
    /// A parser that rejects events holding more than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        SseParser {
            limit,
            line: Vec::new(),
            data: Vec::new(),
            event_type: Vec::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            event_retry: None,
            retry: None,
            bom_matched: Some(0),
            after_cr: false,
            skipping: Skipping::Off,
            dropped: 0,
        }
    }

    /// The configured limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held for the event being built: its data and event type so far
    /// plus the unfinished line. Never more than the limit.
    ///
    /// The last event id is held apart; it too is never longer than the limit.
    pub fn buffered(&self) -> usize {
        self.line.len() + self.data.len() + self.event_type.len()
    }

    /// The last event id a blank line committed, to send as `Last-Event-ID`
    /// when reconnecting; `None` if never set or set to empty.
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|id| !id.is_empty())
    }

    /// The latest reconnection time in milliseconds a `retry` field gave,
    /// whether or not its event was dispatched.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// How many events were skipped for exceeding the limit. Each is an
    /// [`SseError::EventTooLarge`], but `push` returns only the first of a chunk.
    pub fn dropped_events(&self) -> u64 {
        self.dropped
    }

    /// Feeds `chunk`, calling `on_event` for every event a blank line dispatches.
    ///
    /// Returns the first error met in this chunk; events before it were
    /// delivered, and parsing goes on after the blank line ending the oversized
    /// event.
    pub fn push(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(SseEvent),
    ) -> Result<(), SseError> {
        let (mut chunk, replay) = self.strip_bom(chunk);
        let mut first_error = self.take_part(replay, false, &mut on_event).err();
        while !chunk.is_empty() {
            if std::mem::take(&mut self.after_cr) && chunk[0] == b'\n' {
                chunk = &chunk[1..];
                continue;
            }
            let end = chunk.iter().position(|&b| b == b'\n' || b == b'\r');
            let (part, rest) = match end {
                Some(i) => {
                    self.after_cr = chunk[i] == b'\r';
                    (&chunk[..i], &chunk[i + 1..])
                }
                None => (chunk, &[][..]),
            };
            chunk = rest;
            if let Err(e) = self.take_part(part, end.is_some(), &mut on_event) {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Call at end of stream: an event without its blank line is discarded, as
    /// the spec says. Returns whether data, an event type or an unterminated
    /// line was discarded.
    ///
    /// The parser then reads a new stream (a reconnection): its BOM is skipped
    /// and its id starts empty, while [`last_event_id`](Self::last_event_id)
    /// and [`retry`](Self::retry) keep their values.
    pub fn finish(&mut self) -> bool {
        let discarded = self.buffered() > 0;
        self.drop_event();
        self.id_buffer.clear();
        self.bom_matched = Some(0);
        self.after_cr = false;
        self.skipping = Skipping::Off;
        discarded
    }

    /// Skips a BOM at the start of the stream, even one split across chunks.
    /// Returns the rest of `chunk` and the bytes of a BOM prefix that turned
    /// out to be line content.
    fn strip_bom<'a>(&mut self, chunk: &'a [u8]) -> (&'a [u8], &'static [u8]) {
        let Some(matched) = self.bom_matched else {
            return (chunk, &[]);
        };
        let want = &BOM[matched..];
        let n = chunk.iter().zip(want).take_while(|(a, b)| a == b).count();
        if n == want.len() {
            self.bom_matched = None;
            (&chunk[n..], &[])
        } else if n == chunk.len() {
            self.bom_matched = Some(matched + n);
            (&[], &[])
        } else {
            self.bom_matched = None;
            (&chunk[n..], &BOM[..matched + n])
        }
    }

    /// Takes the next piece of a line; `complete` when a line ending follows it.
    fn take_part(
        &mut self,
        part: &[u8],
        complete: bool,
        on_event: &mut impl FnMut(SseEvent),
    ) -> Result<(), SseError> {
        if self.skipping != Skipping::Off {
            self.skipping = match (complete, part.is_empty()) {
                (true, true) if self.skipping == Skipping::AtLineStart => Skipping::Off,
                (true, _) => Skipping::AtLineStart,
                (false, true) => self.skipping,
                (false, false) => Skipping::InLine,
            };
            return Ok(());
        }
        if self.buffered() + part.len() > self.limit {
            self.drop_event();
            self.skipping = if complete {
                Skipping::AtLineStart
            } else {
                Skipping::InLine
            };
            self.dropped += 1;
            return Err(SseError::EventTooLarge { limit: self.limit });
        }
        if !complete {
            self.line.extend_from_slice(part);
        } else if self.line.is_empty() {
            self.process_line(part, on_event);
        } else {
            let mut line = std::mem::take(&mut self.line);
            line.extend_from_slice(part);
            self.process_line(&line, on_event);
            line.clear();
            self.line = line;
        }
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return,
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.extend_from_slice(value);
            }
            b"id" if !value.contains(&0) => {
                self.id_buffer = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value.iter().fold(0u64, |ms, &d| {
                    ms.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                self.retry = Some(ms);
                self.event_retry = Some(ms);
            }
            _ => {}
        }
    }

    /// A blank line: commits the id, and dispatches the event if it has data.
    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent)) {
        self.last_event_id.clone_from(&self.id_buffer);
        let retry = self.event_retry.take();
        let event_type = std::mem::take(&mut self.event_type);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        // Every `data` line appended a `\n`; the last one is not part of the data.
        data.pop();
        on_event(SseEvent {
            event: Some(lossy(event_type)).filter(|e| !e.is_empty()),
            data: lossy(data),
            id: self.last_event_id().map(str::to_owned),
            retry,
        });
    }

    fn drop_event(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event_type.clear();
        self.event_retry = None;
        // Release the memory a near-limit event held.
        self.line.shrink_to(64 * 1024);
        self.data.shrink_to(64 * 1024);
    }
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(p: &mut SseParser, chunks: &[&[u8]]) -> (Vec<SseEvent>, usize) {
        let mut events = Vec::new();
        let mut errors = 0;
        for c in chunks {
            if p.push(c, |e| events.push(e)).is_err() {
                errors += 1;
            }
        }
        (events, errors)
    }

    fn events(input: &[u8]) -> Vec<SseEvent> {
        let (events, errors) = feed(&mut SseParser::new(1024), &[input]);
        assert_eq!(errors, 0);
        events
    }

    fn data(data: &str) -> SseEvent {
        SseEvent {
            data: data.into(),
            ..SseEvent::default()
        }
    }

    fn with_id(data: &str, id: &str) -> SseEvent {
        SseEvent {
            id: Some(id.into()),
            ..self::data(data)
        }
    }

    #[test]
    fn spec_example_joins_data_lines() {
        let got = events(b"data: YHOO\ndata: +2\ndata: 10\n\n");
        assert_eq!(got, vec![data("YHOO\n+2\n10")]);
        let got = events(b"data:test\n\ndata: test\n\n");
        assert_eq!(
            got,
            vec![data("test"), data("test")],
            "the space is optional"
        );
    }

    #[test]
    fn spec_example_comments_ids_and_one_leading_space() {
        let mut p = SseParser::new(1024);
        let input = b": test stream\n\ndata: first event\nid: 1\n\n\
                      data:second event\nid\n\ndata:  third event\n\n";
        let (got, _) = feed(&mut p, &[input]);
        let expect = vec![
            with_id("first event", "1"),
            data("second event"),
            data(" third event"),
        ];
        assert_eq!(got, expect);
        assert_eq!(p.last_event_id(), None, "an empty id clears it");
    }

    #[test]
    fn spec_example_data_without_colon_and_partial_event_at_eof() {
        let mut p = SseParser::new(1024);
        let (got, _) = feed(&mut p, &[b"data\n\ndata\ndata\n\ndata:"]);
        assert_eq!(got, vec![data(""), data("\n")]);
        assert!(p.finish(), "the unterminated `data:` is discarded");
        assert!(!p.finish());
    }

    #[test]
    fn event_type_applies_to_one_event_only() {
        let got = events(b"event: add\ndata: 7\n\nevent: remove\ndata: 2\n\ndata: 3\n\n");
        let typed = |t: &str, d: &str| SseEvent {
            event: Some(t.into()),
            ..data(d)
        };
        assert_eq!(got, [typed("add", "7"), typed("remove", "2"), data("3")]);
    }

    #[test]
    fn unknown_fields_and_case_variants_are_ignored() {
        let got = events(b"event: x\nevent\nfoo: bar\nDATA: no\ndata: yes\n\n");
        assert_eq!(got, vec![data("yes")]);
    }

    #[test]
    fn id_persists_ignores_nul_and_empty_resets() {
        let mut p = SseParser::new(1024);
        let input = b"id: 7\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid:\ndata: d\n\n";
        let (got, _) = feed(&mut p, &[input]);
        let expect = vec![
            with_id("a", "7"),
            with_id("b", "7"),
            with_id("c", "7"),
            data("d"),
        ];
        assert_eq!(got, expect);
        assert_eq!(p.last_event_id(), None);
    }

    #[test]
    fn retry_takes_only_digits_and_is_seen_without_an_event() {
        let mut p = SseParser::new(1024);
        let input = b"retry: 3000\ndata: a\n\nretry: 12a\nretry:  40\nretry:\ndata: b\n\n";
        let (got, _) = feed(&mut p, &[input]);
        let a = SseEvent {
            retry: Some(3000),
            ..data("a")
        };
        assert_eq!(got, vec![a, data("b")]);
        assert_eq!(p.retry(), Some(3000));
        let (got, _) = feed(&mut p, &[b"retry: 500\n"]);
        assert!(got.is_empty());
        assert_eq!(p.retry(), Some(500), "applies before the blank line");
    }

    #[test]
    fn blank_line_without_data_commits_id_and_resets_event_type() {
        let mut p = SseParser::new(1024);
        let (got, _) = feed(&mut p, &[b"id: 3\nevent: gone\n\n"]);
        assert!(got.is_empty());
        assert_eq!(p.last_event_id(), Some("3"));
        let (got, _) = feed(&mut p, &[b"data: x\n\n"]);
        assert_eq!(got, vec![with_id("x", "3")]);
    }

    #[test]
    fn invalid_utf8_in_data_is_replaced() {
        let got = events(b"data: caf\xC3\xA9 \xFF!\n\n");
        assert_eq!(got, vec![data("caf\u{e9} \u{FFFD}!")]);
    }

    #[test]
    fn leading_bom_is_skipped_once_whole_or_split() {
        assert_eq!(events(b"\xEF\xBB\xBFdata: a\n\n"), vec![data("a")]);
        let mut p = SseParser::new(1024);
        let (got, _) = feed(&mut p, &[b"\xEF", b"\xBB", b"", b"\xBFdata: a\n\n"]);
        assert_eq!(got, vec![data("a")]);
        // A second BOM is part of the field name, so the field is unknown.
        let twice = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n";
        assert_eq!(events(twice), vec![data("b")]);
        let late = b"data: a\n\n\xEF\xBB\xBFdata: b\n\n";
        assert_eq!(events(late), vec![data("a")]);
    }

    #[test]
    fn bom_prefix_that_is_not_a_bom_stays_line_content() {
        let mut p = SseParser::new(1024);
        feed(&mut p, &[b"\xEF"]);
        assert_eq!(p.buffered(), 0);
        feed(&mut p, &[b"\xBBx"]);
        assert_eq!(p.buffered(), 3);
    }

    #[test]
    fn lf_crlf_and_cr_end_lines_alike() {
        let lf = "id: 1\ndata: a\ndata: b\n\n: c\nevent: e\ndata\n\n";
        let expect = vec![
            with_id("a\nb", "1"),
            SseEvent {
                event: Some("e".into()),
                ..with_id("", "1")
            },
        ];
        for ending in ["\n", "\r\n", "\r"] {
            let input = lf.replace('\n', ending);
            assert_eq!(events(input.as_bytes()), expect, "ending {ending:?}");
        }
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_ending() {
        let mut p = SseParser::new(1024);
        let (got, _) = feed(&mut p, &[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(got, vec![data("a\nb")]);
        let (got, _) = feed(&mut p, &[b"data: c\r", b"\rdata: d\r", b"", b"\r"]);
        assert_eq!(got, vec![data("c"), data("d")]);
    }

    #[test]
    fn event_at_limit_passes_and_one_byte_more_fails() {
        // `data:12345678` is 13 bytes on the line; then 9 bytes of data are held.
        let input = b"data:12345678\n\n";
        let (got, errors) = feed(&mut SseParser::new(13), &[input]);
        assert_eq!((got, errors), (vec![data("12345678")], 0));
        let mut p = SseParser::new(12);
        let mut got = Vec::new();
        let err = p.push(input, |e| got.push(e)).unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 12 });
        assert_eq!(err.to_string(), "SSE event exceeds the 12-byte limit");
        assert!(got.is_empty());
        // Data and the line being read share the limit.
        let (got, errors) = feed(&mut SseParser::new(13), &[b"data:1234\ndata:1234\n\n"]);
        assert_eq!((got, errors), (vec![], 1));
    }

    #[test]
    fn oversized_event_is_skipped_to_its_blank_line() {
        let mut p = SseParser::new(16);
        let input = b"event: big\ndata: 0123456789abcdef\nid: 9\nevent: x\ndata: y\n\n\
                      : a comment longer than sixteen bytes\n\ndata: ok\n\n";
        let (got, errors) = feed(&mut p, &[input]);
        assert_eq!(got, vec![data("ok")]);
        assert_eq!(errors, 1, "push returns the first error of a chunk");
        assert_eq!(
            p.dropped_events(),
            2,
            "so did the block of the long comment"
        );
        assert_eq!(p.last_event_id(), None, "the skipped id never applied");
    }

    #[test]
    fn ten_mib_event_in_small_chunks_stays_within_the_limit() {
        const LIMIT: usize = 1024 * 1024;
        const TEN_MIB: usize = 10 * 1024 * 1024;
        let line = format!("data: {}\n", "x".repeat(1000));
        let many_lines = format!("event: big\n{}", line.repeat(TEN_MIB / line.len() + 1));
        let one_line = format!("data: {}\n", "y".repeat(TEN_MIB));
        for input in [many_lines, one_line] {
            let input = input + "\ndata: after\n\n";
            let mut p = SseParser::new(LIMIT);
            let mut got = Vec::new();
            let mut errors = 0;
            for chunk in input.as_bytes().chunks(64 * 1024) {
                if p.push(chunk, |e| got.push(e)).is_err() {
                    errors += 1;
                }
                assert!(p.buffered() <= LIMIT, "{} bytes held", p.buffered());
            }
            assert_eq!(errors, 1);
            assert_eq!(p.dropped_events(), 1);
            assert_eq!(got, vec![data("after")]);
            assert!(!p.finish());
        }
    }

    #[test]
    fn finish_discards_only_an_unfinished_event() {
        let mut p = SseParser::new(1024);
        let (got, _) = feed(&mut p, &[b"id: 1\ndata: a\n\n: comment\n"]);
        assert_eq!(got, vec![with_id("a", "1")]);
        assert!(!p.finish(), "a finished comment holds nothing");
        feed(&mut p, &[b"id: 2\ndata: b\n"]);
        assert_eq!(
            p.last_event_id(),
            Some("1"),
            "only a blank line commits an id"
        );
        assert!(p.finish());
        assert_eq!(p.last_event_id(), Some("1"), "event 2 never arrived");
        let (got, _) = feed(&mut p, &[b"\n"]);
        assert!(got.is_empty(), "the partial event is gone");
        assert!(!p.finish());
        let (got, _) = feed(&mut p, &[b"\xEF\xBB\xBFdata: c\n\n"]);
        assert_eq!(
            got,
            vec![data("c")],
            "a new stream skips its BOM; its id starts empty"
        );
    }
}
