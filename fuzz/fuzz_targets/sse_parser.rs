//! The incremental SSE parser (POST answers and the GET notification stream).
//!
//! Oracles: no event's data or type is longer than the limit; the parser never
//! holds more than its limit; feeding the bytes in arbitrary chunks yields the
//! same events, errors and last event id as feeding them at once.
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
        assert!(
            event.data.len() <= limit * 3 + 3,
            "{} > {limit}",
            event.data.len()
        );
        assert!(
            event
                .event
                .as_ref()
                .is_none_or(|e| e.len() <= limit * 3 + 3)
        );
    }
});

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
    (
        events,
        parser.dropped_events(),
        parser.last_event_id().map(str::to_string),
        parser.retry(),
    )
}
