//! The incremental SSE parser (POST answers and the GET notification stream).
//!
//! Oracles, as `SseParser` promises them: the bytes it holds for the event
//! being built (data and event type so far plus the unfinished line) never
//! pass its limit, after every chunk; so every dispatched event's data (with
//! the newline ending its last `data` line) and type together came from at
//! most `limit` bytes, and so did every id; nothing is held after `finish`;
//! and feeding the bytes in arbitrary chunks yields the same events, errors
//! and last event id as feeding them at once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpvisor_protocol::{SseEvent, SseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    let limit = usize::from(control & 0x3f) * 4 + 1;
    let chunk = usize::from(control >> 6) * 3 + 1;

    let whole = parse(limit, &[input]);
    let pieces: Vec<&[u8]> = input.chunks(chunk).collect();
    let chunked = parse(limit, &pieces);
    assert_eq!(whole, chunked, "chunking changed the outcome");
    for event in &whole.0 {
        // The parser held the data with a newline after each line, the last
        // one included, beside the event type.
        let held = wire_len(&event.data) + 1 + event.event.as_deref().map_or(0, wire_len);
        assert!(
            held <= limit,
            "event held {held} bytes > {limit}: {event:?}"
        );
        let id = event.id.as_deref().map_or(0, wire_len);
        assert!(id <= limit, "event id of {id} bytes > {limit}");
    }
    let last = whole.2.as_deref().map_or(0, wire_len);
    assert!(last <= limit, "last event id of {last} bytes > {limit}");
});

/// The fewest bytes on the wire `text` can have come from: the parser decodes
/// lossily, and each U+FFFD (three bytes) stands for at least one byte.
fn wire_len(text: &str) -> usize {
    text.len() - 2 * text.matches('\u{FFFD}').count()
}

type Outcome = (Vec<SseEvent>, u64, Option<String>, Option<u64>);

fn parse(limit: usize, chunks: &[&[u8]]) -> Outcome {
    let mut parser = SseParser::new(limit);
    let mut events = Vec::new();
    for chunk in chunks {
        let _ = parser.push(chunk, |e| events.push(e));
        assert!(
            parser.buffered() <= limit,
            "{} > {limit}",
            parser.buffered()
        );
    }
    parser.finish();
    assert_eq!(parser.buffered(), 0, "held bytes after finish");
    (
        events,
        parser.dropped_events(),
        parser.last_event_id().map(str::to_string),
        parser.retry(),
    )
}
