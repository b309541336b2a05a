//! Bounds on one paged listing (`tools/list` and, later, the other lists): how
//! many pages, entries and bytes a server may send before the listing is
//! refused, and cursors that repeat or grow without end.
//!
//! Only hashes of the cursors seen are kept, so a server sending a megabyte of
//! cursor per page costs eight bytes a page, not a megabyte.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};

use serde_json::Value;

/// Limits of one listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingLimits {
    /// Most pages.
    pub max_pages: usize,
    /// Most entries over all pages.
    pub max_entries: usize,
    /// Most bytes over all pages (as measured by [`json_size`]).
    pub max_bytes: usize,
    /// Longest cursor.
    pub max_cursor_bytes: usize,
}

impl Default for ListingLimits {
    fn default() -> Self {
        ListingLimits {
            max_pages: 10_000,
            max_entries: 100_000,
            max_bytes: 64 * 1024 * 1024,
            max_cursor_bytes: 16 * 1024,
        }
    }
}

/// Why a listing was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingError {
    /// More pages than allowed.
    #[error("listing has more than {0} pages")]
    TooManyPages(usize),
    /// More entries than allowed.
    #[error("listing has more than {0} entries")]
    TooManyEntries(usize),
    /// More bytes than allowed.
    #[error("listing is larger than {0} bytes")]
    TooLarge(usize),
    /// A cursor longer than allowed.
    #[error("a listing cursor is longer than {0} bytes")]
    CursorTooLong(usize),
    /// A cursor came back a second time: the server would page forever.
    #[error("a listing cursor repeated")]
    CursorRepeated,
}

/// The running totals of one listing.
#[derive(Debug)]
pub struct ListingBounds {
    limits: ListingLimits,
    pages: usize,
    entries: usize,
    bytes: usize,
    cursors: HashSet<u64>,
    hasher: RandomState,
}

impl ListingBounds {
    /// A listing not started yet.
    pub fn new(limits: ListingLimits) -> ListingBounds {
        ListingBounds {
            limits,
            pages: 0,
            entries: 0,
            bytes: 0,
            cursors: HashSet::new(),
            hasher: RandomState::new(),
        }
    }

    /// Counts one page of `bytes` holding `entries`, whose next cursor is `next`;
    /// `Ok` means the listing may go on (or is complete when `next` is `None`).
    pub fn page(
        &mut self,
        bytes: usize,
        entries: usize,
        next: Option<&str>,
    ) -> Result<(), ListingError> {
        self.pages += 1;
        self.entries = self.entries.saturating_add(entries);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.entries > self.limits.max_entries {
            return Err(ListingError::TooManyEntries(self.limits.max_entries));
        }
        if self.bytes > self.limits.max_bytes {
            return Err(ListingError::TooLarge(self.limits.max_bytes));
        }
        let Some(cursor) = next else {
            return Ok(());
        };
        if self.pages >= self.limits.max_pages {
            return Err(ListingError::TooManyPages(self.limits.max_pages));
        }
        if cursor.len() > self.limits.max_cursor_bytes {
            return Err(ListingError::CursorTooLong(self.limits.max_cursor_bytes));
        }
        if !self.cursors.insert(self.hasher.hash_one(cursor)) {
            return Err(ListingError::CursorRepeated);
        }
        Ok(())
    }
}

/// About how many bytes `value` holds in memory once parsed, which is never less
/// than its encoded length: each value costs a `Value` (so `[[],[],…]` is not
/// cheap), each string and key its bytes, each map entry its key and node.
/// Walks the value once, allocates nothing.
pub fn json_size(value: &Value) -> usize {
    const NODE: usize = std::mem::size_of::<Value>();
    // A map entry: the key's `String` and the map's own bookkeeping.
    const ENTRY: usize = std::mem::size_of::<String>() + 16;
    NODE + match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(|v| json_size(v) + 1).sum::<usize>() + 2,
        Value::Object(map) => {
            map.iter()
                .map(|(k, v)| ENTRY + k.len() + 4 + json_size(v))
                .sum::<usize>()
                + 2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn small() -> ListingLimits {
        ListingLimits {
            max_pages: 5,
            max_entries: 10,
            max_bytes: 1_000,
            max_cursor_bytes: 16,
        }
    }

    #[test]
    fn a_listing_within_bounds_completes() {
        let mut b = ListingBounds::new(small());
        assert_eq!(b.page(100, 3, Some("a")), Ok(()));
        assert_eq!(b.page(100, 3, Some("b")), Ok(()));
        assert_eq!(b.page(100, 3, None), Ok(()));
    }

    #[test]
    fn each_bound_is_a_typed_error() {
        let mut b = ListingBounds::new(small());
        b.page(1, 1, Some("a")).unwrap();
        assert_eq!(b.page(1, 1, Some("a")), Err(ListingError::CursorRepeated));
        let mut b = ListingBounds::new(small());
        assert_eq!(
            b.page(1, 1, Some(&"c".repeat(17))),
            Err(ListingError::CursorTooLong(16))
        );
        let mut b = ListingBounds::new(small());
        assert_eq!(b.page(1_001, 1, None), Err(ListingError::TooLarge(1_000)));
        let mut b = ListingBounds::new(small());
        assert_eq!(b.page(1, 11, None), Err(ListingError::TooManyEntries(10)));
        let mut b = ListingBounds::new(small());
        for c in ["1", "2", "3", "4"] {
            b.page(1, 1, Some(c)).unwrap();
        }
        assert_eq!(b.page(1, 1, Some("5")), Err(ListingError::TooManyPages(5)));
    }

    #[test]
    fn json_size_is_at_least_the_encoded_length() {
        let v = json!({"tools": [{"name": "x".repeat(1000), "inputSchema": {"type": "object"}}]});
        let encoded = serde_json::to_vec(&v).unwrap().len();
        let measured = json_size(&v);
        assert!(
            measured >= encoded && measured < encoded + 512,
            "{measured} vs {encoded}"
        );
    }

    #[test]
    fn tiny_values_are_charged_what_they_hold_in_memory() {
        // Three bytes each on the wire, a whole `Value` each once parsed.
        let v = Value::Array(vec![json!([]); 10_000]);
        let encoded = serde_json::to_vec(&v).unwrap().len();
        assert!(encoded < 40_000);
        assert!(json_size(&v) >= 10_000 * std::mem::size_of::<Value>());
    }
}
