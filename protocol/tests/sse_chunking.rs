//! Any split of an event stream into chunks gives the events and errors of the whole.

use mcpvisor_protocol::{SseEvent, SseParser};
use proptest::prelude::*;

/// Everything a stream leaves observable.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<SseEvent>,
    dropped: u64,
    any_error: bool,
    last_event_id: Option<String>,
    retry: Option<u64>,
    discarded_at_eof: bool,
}

fn run(limit: usize, pieces: &[&[u8]]) -> Outcome {
    let mut p = SseParser::new(limit);
    let mut events = Vec::new();
    let mut any_error = false;
    for piece in pieces {
        any_error |= p.push(piece, |e| events.push(e)).is_err();
        assert!(p.buffered() <= limit);
    }
    let (last_event_id, retry) = (p.last_event_id().map(str::to_owned), p.retry());
    let discarded_at_eof = p.finish();
    assert_eq!(any_error, p.dropped_events() > 0);
    Outcome {
        events,
        dropped: p.dropped_events(),
        any_error,
        last_event_id,
        retry,
        discarded_at_eof,
    }
}

fn split_at<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut at = 0;
    for c in cuts {
        pieces.push(&input[at..c]);
        at = c;
    }
    pieces.push(&input[at..]);
    pieces
}

fn ending() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..])]
}

/// One line without its ending: mostly fields and comments, sometimes blank,
/// sometimes arbitrary bytes (invalid UTF-8, NUL, a stray BOM).
fn line() -> impl Strategy<Value = Vec<u8>> {
    let field = "(data|event|id|retry|:|foo|)(: ?|)[a-z0-9 :\u{e9}\u{0}]{0,16}";
    let bytes = proptest::collection::vec(any::<u8>(), 0..12).prop_map(|b| {
        b.into_iter()
            .filter(|&b| b != b'\r' && b != b'\n')
            .collect()
    });
    prop_oneof![
        6 => field.prop_map(String::into_bytes),
        3 => Just(Vec::new()),
        1 => bytes,
    ]
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_outcome(
        bom in any::<bool>(),
        lines in proptest::collection::vec((line(), ending()), 0..40),
        tail in "[a-z: ]{0,6}",
        limit in 8usize..64,
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut input = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
        for (line, ending) in &lines {
            input.extend_from_slice(line);
            input.extend_from_slice(ending);
        }
        input.extend_from_slice(tail.as_bytes());
        let whole = run(limit, &[&input]);
        prop_assert_eq!(&run(limit, &split_at(&input, &cuts)), &whole);
        // One byte at a time splits every CRLF and every BOM.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        prop_assert_eq!(&run(limit, &bytes), &whole);
    }

    #[test]
    fn chunked_events_match_what_was_sent(
        sent in proptest::collection::vec(
            (proptest::option::of("[a-z]{1,6}"),
             proptest::collection::vec("[a-z \u{e9}:]{0,8}", 0..4)),
            0..12,
        ),
        endings in proptest::collection::vec(ending(), 1..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut input = Vec::new();
        let mut endings = endings.iter().cycle();
        let mut end_line = |input: &mut Vec<u8>, blank: bool| {
            let mut ending = *endings.next().unwrap();
            // CR then an LF-terminated blank line would read as one CRLF.
            if blank && ending == b"\n" && input.last() == Some(&b'\r') {
                ending = b"\r\n";
            }
            input.extend_from_slice(ending);
        };
        let mut expect = Vec::new();
        for (event, data) in &sent {
            if let Some(event) = event {
                input.extend_from_slice(format!("event: {event}").as_bytes());
                end_line(&mut input, false);
            }
            for line in data {
                input.extend_from_slice(format!("data: {line}").as_bytes());
                end_line(&mut input, false);
            }
            end_line(&mut input, true);
            if !data.is_empty() {
                expect.push(SseEvent {
                    event: event.clone(),
                    data: data.join("\n"),
                    id: None,
                    retry: None,
                });
            }
        }
        let got = run(1024, &split_at(&input, &cuts));
        prop_assert_eq!(got.events, expect);
        prop_assert!(!got.any_error && !got.discarded_at_eof);
    }
}
