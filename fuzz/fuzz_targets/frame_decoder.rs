//! The stdio read path: newline framing with a byte limit, then JSON-RPC parsing.
//!
//! Oracles: no frame is longer than the limit or holds a newline; the decoder never
//! buffers past its limit; feeding the bytes in arbitrary chunks yields the same
//! frames as feeding them at once; a parsed message survives a serialise/parse
//! round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpvisor_protocol::{FrameDecoder, Incoming, Message};

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    // Small limits reach the oversize paths; 1 MiB is the real one.
    let limit = if control & 0x80 == 0 {
        usize::from(control & 0x7f) + 1
    } else {
        mcpvisor_protocol::STDIO_FRAME_LIMIT
    };
    let chunk = usize::from(control % 13) + 1;

    let whole = frames(limit, &[input]);
    let pieces: Vec<&[u8]> = input.chunks(chunk).collect();
    let chunked = frames(limit, &pieces);
    assert_eq!(whole, chunked, "chunking changed the frames");

    for frame in &whole.0 {
        assert!(frame.len() <= limit);
        assert!(!frame.contains(&b'\n'));
        check_parse(frame);
    }
});

/// Frames, whether any chunk reported an oversize line, and the end-of-stream verdict.
fn frames(limit: usize, chunks: &[&[u8]]) -> (Vec<Vec<u8>>, bool, bool) {
    let mut decoder = FrameDecoder::new(limit);
    let mut out = Vec::new();
    let mut too_large = false;
    for chunk in chunks {
        too_large |= decoder.push(chunk, |f| out.push(f.to_vec())).is_err();
        assert!(decoder.buffered() <= limit);
    }
    let truncated = decoder.finish().is_err();
    (out, too_large, truncated)
}

fn check_parse(frame: &[u8]) {
    let messages = match Message::parse(frame) {
        Ok(Incoming::Single(m)) => vec![m],
        Ok(Incoming::Batch(items)) => items.into_iter().flatten().collect(),
        Err(_) => return,
    };
    for m in messages {
        let again = Message::parse(&m.to_vec());
        assert!(
            matches!(&again, Ok(Incoming::Single(back)) if *back == m),
            "round trip changed {m:?} into {again:?}"
        );
    }
}
