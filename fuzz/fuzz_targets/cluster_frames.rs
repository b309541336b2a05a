//! What another node sends a cluster node: its frames before authentication
//! (the gate's bound, `cluster/src/gate.rs`), and after it the casts and
//! `confirm` calls the agent decodes (`cluster/src/message.rs`).
//!
//! Oracles: the gate refuses exactly the first frame announced longer than
//! its limit, typed, with that length, however the bytes are chunked, and
//! holds nothing but a frame header; a cast decodes to a message or to a
//! short reason that cannot repeat the input; a `confirm` that cannot be
//! read is answered "no" at once; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpvisor_cluster::fuzzing::{
    Decoded, FrameBound, FrameTooLarge, PREAUTH_FRAME_BYTES, decode_cast, decode_confirm,
};

fuzz_target!(|data: &[u8]| {
    let Some((&control, input)) = data.split_first() else {
        return;
    };
    // Small limits reach the refusals with short inputs; 8 KiB is the real one.
    let limit = if control & 0x80 == 0 {
        u64::from(control & 0x3f)
    } else {
        PREAUTH_FRAME_BYTES
    };
    let chunk = usize::from(control % 11) + 1;

    let expected = reference(input, limit);
    let mut whole = FrameBound::new();
    assert_eq!(whole.admit(input, limit), expected);
    let mut pieces = FrameBound::new();
    let chunked = input
        .chunks(chunk)
        .try_for_each(|piece| pieces.admit(piece, limit));
    assert_eq!(chunked, expected, "chunking changed the gate's verdict");
    if let Err(FrameTooLarge { length, limit: said }) = expected {
        assert!(length > limit && said == limit);
    }

    // After authentication: the bytes as a cast, with a key or metadata of
    // any length, and as a confirm.
    let metadata = (control & 0x40 != 0).then(|| &input[..input.len().min(16)]);
    match decode_cast(input, metadata) {
        Decoded::Message { from, keyed } => {
            assert!(from.len() <= input.len());
            assert!(!keyed || metadata.is_some_and(|m| m.len() == 16));
        }
        Decoded::Unreadable(why) => assert!(why.len() <= 80, "{why}"),
    }
    let (read, answered) = decode_confirm(input);
    if !read {
        assert_eq!(answered, Some(vec![0]), "an unreadable confirm was not answered no");
    }
});

/// The frames of `input` read one by one: the first announced over `limit`.
fn reference(input: &[u8], limit: u64) -> Result<(), FrameTooLarge> {
    let mut at = 0usize;
    while at + 8 <= input.len() {
        let length = u64::from_be_bytes(input[at..at + 8].try_into().unwrap());
        if length > limit {
            return Err(FrameTooLarge { length, limit });
        }
        at = at.saturating_add(8).saturating_add(length as usize);
    }
    Ok(())
}
