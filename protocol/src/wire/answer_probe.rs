//! The id of an answer that could not be read.
//!
//! A server that answers a call with something unreadable — both `result` and
//! `error`, a result nested deeper than the parser follows, a member of the
//! wrong type — still names the request it answers. Reading that id alone lets
//! the client fail that one call at once instead of leaving it to its timeout.
//! The probe walks the top level of the object only, never builds a value, and
//! gives up on anything it does not understand.

use crate::wire::jsonrpc::RequestId;

/// The `id` of `bytes` if they hold one JSON object, and nothing after it, whose
/// top level has `"jsonrpc": "2.0"`, an `id` (a number or a string) and a
/// `result` or `error` member but no `method`: an answer, however broken its
/// content. Anything less (another version, trailing bytes) is not taken for an
/// answer at all.
pub fn unreadable_answer_id(bytes: &[u8]) -> Option<RequestId> {
    let mut p = Probe { bytes, at: 0 };
    p.skip_ws();
    p.eat(b'{')?;
    let (mut id, mut answer, mut version) = (None, false, false);
    loop {
        p.skip_ws();
        if p.peek()? == b'}' {
            break;
        }
        let key = p.string()?;
        p.skip_ws();
        p.eat(b':')?;
        p.skip_ws();
        match key {
            b"id" => id = p.scalar_id(),
            b"jsonrpc" => version = p.bytes[p.at..].starts_with(b"\"2.0\""),
            b"result" | b"error" => answer = true,
            b"method" => return None,
            _ => {}
        }
        p.skip_value()?;
        p.skip_ws();
        match p.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    p.skip_ws();
    if answer && version && p.peek().is_none() {
        id
    } else {
        None
    }
}

struct Probe<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Probe<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A string's raw bytes (escapes left as they are; keys we look for have none).
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                b'\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// The id, if the value here is an integer or a plain string (not consumed).
    fn scalar_id(&self) -> Option<RequestId> {
        let rest = &self.bytes[self.at..];
        match rest.first()? {
            b'"' => {
                let end = rest[1..].iter().position(|b| *b == b'"' || *b == b'\\')? + 1;
                (rest[end] == b'"')
                    .then(|| std::str::from_utf8(&rest[1..end]).ok())
                    .flatten()
                    .map(|s| RequestId::String(s.to_string()))
            }
            b'-' | b'0'..=b'9' => {
                let len = rest
                    .iter()
                    .position(|b| !(b.is_ascii_digit() || *b == b'-'))
                    .unwrap_or(rest.len());
                // `1.5`, `1e3`: not an id this client issues.
                if !matches!(
                    rest.get(len),
                    Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}')
                ) {
                    return None;
                }
                std::str::from_utf8(&rest[..len])
                    .ok()?
                    .parse::<i64>()
                    .ok()
                    .map(RequestId::Number)
            }
            _ => None,
        }
    }

    /// Skips one value of any depth without recursion: strings are skipped
    /// whole, brackets counted.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                // The end of the member: the enclosing object's `,` or `}`.
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.peek(), Some(b',' | b'}')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_id_of_answers_that_do_not_parse() {
        let both =
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"error":{"code":1,"message":"x"}}"#;
        assert_eq!(unreadable_answer_id(both), Some(RequestId::Number(7)));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","result":{}{},"id":"c-9"}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        assert_eq!(
            unreadable_answer_id(deep.as_bytes()),
            Some(RequestId::String("c-9".into()))
        );
        let tricky = br#"{"jsonrpc":"2.0","result":{"text":"}\",\"id\":99,"},"id":3}"#;
        assert_eq!(unreadable_answer_id(tricky), Some(RequestId::Number(3)));
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_any_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = unreadable_answer_id(&bytes);
        }
    }

    #[test]
    fn gives_up_on_requests_and_on_what_it_cannot_read() {
        assert_eq!(unreadable_answer_id(br#"{"id":1,"method":"ping"}"#), None);
        assert_eq!(unreadable_answer_id(br#"{"id":1}"#), None);
        assert_eq!(unreadable_answer_id(br#"{"id":{"x":1},"result":1}"#), None);
        assert_eq!(unreadable_answer_id(br#"{"id":1.5,"result":1}"#), None);
        assert_eq!(unreadable_answer_id(b"[1,2]"), None);
        assert_eq!(unreadable_answer_id(br#"{"id":1,"result":"#), None);
        assert_eq!(unreadable_answer_id(b""), None);
        // Not an answer of this protocol, or not one object: left as malformed.
        assert_eq!(
            unreadable_answer_id(br#"{"jsonrpc":"1.0","id":1,"result":{}}"#),
            None
        );
        assert_eq!(unreadable_answer_id(br#"{"id":1,"result":{}}"#), None);
        assert_eq!(
            unreadable_answer_id(br#"{"jsonrpc":"2.0","id":1,"result":{}}}"#),
            None
        );
    }
}
