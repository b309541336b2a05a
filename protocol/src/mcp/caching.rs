//! Caching hints (MCP 2026-07-28): a list or read result says how long it
//! stays fresh (`ttlMs`) and whom it may be shared with (`cacheScope`). A
//! result without a TTL, or with a negative one, is stale at once; a TTL is
//! bounded here, so no server pins a result for longer than a day.

use std::time::Duration;

use serde_json::Value;

/// The longest a result is taken to stay fresh, whatever the server says.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Whom a result may be shared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any caller.
    Public,
    /// The same authorization context only: never across a gateway's users.
    Private,
    /// Not said (read as private: nothing says it may be shared).
    Unstated,
}

/// A result's caching hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// How long it stays fresh from when it was received.
    pub ttl: Duration,
    /// Whom it may be shared with.
    pub scope: CacheScope,
}

impl CacheHint {
    /// The hints `result` carries.
    pub fn of(result: &Value) -> CacheHint {
        let ttl = match result.get("ttlMs") {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f > 0.0).map(|f| f as u64))
                .map_or(Duration::ZERO, Duration::from_millis),
            _ => Duration::ZERO,
        };
        let scope = match result.get("cacheScope").and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            Some("private") => CacheScope::Private,
            _ => CacheScope::Unstated,
        };
        CacheHint {
            ttl: ttl.min(MAX_TTL),
            scope,
        }
    }

    /// The hints of a list read in pages: fresh as long as its stalest page,
    /// shareable only if every page is.
    pub fn and(self, page: CacheHint) -> CacheHint {
        CacheHint {
            ttl: self.ttl.min(page.ttl),
            scope: match (self.scope, page.scope) {
                (CacheScope::Public, CacheScope::Public) => CacheScope::Public,
                (CacheScope::Private, _) | (_, CacheScope::Private) => CacheScope::Private,
                _ => CacheScope::Unstated,
            },
        }
    }

    /// Whether a result with these hints may be kept for every caller.
    pub fn shareable(self) -> bool {
        self.scope == CacheScope::Public && !self.ttl.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hints_are_read_as_the_caching_page_says() {
        let hint = CacheHint::of(&json!({"ttlMs": 300000, "cacheScope": "public"}));
        assert_eq!(hint.ttl, Duration::from_secs(300));
        assert!(hint.shareable());
        for stale in [
            json!({"cacheScope": "public"}),
            json!({"ttlMs": -5, "cacheScope": "public"}),
            json!({"ttlMs": "60", "cacheScope": "public"}),
            json!({"ttlMs": 0, "cacheScope": "public"}),
        ] {
            assert_eq!(CacheHint::of(&stale).ttl, Duration::ZERO, "{stale}");
            assert!(!CacheHint::of(&stale).shareable());
        }
        let private = CacheHint::of(&json!({"ttlMs": 60000, "cacheScope": "private"}));
        assert!(!private.shareable());
        assert_eq!(
            CacheHint::of(&json!({"ttlMs": 60000})).scope,
            CacheScope::Unstated
        );
        assert_eq!(CacheHint::of(&json!({"ttlMs": u64::MAX})).ttl, MAX_TTL);
    }

    #[test]
    fn pages_are_as_fresh_as_the_stalest_and_as_shared_as_the_least() {
        let public = |ms| CacheHint {
            ttl: Duration::from_millis(ms),
            scope: CacheScope::Public,
        };
        assert_eq!(public(500).and(public(200)), public(200));
        let private = CacheHint {
            ttl: Duration::from_secs(9),
            scope: CacheScope::Private,
        };
        assert_eq!(public(500).and(private).scope, CacheScope::Private);
    }
}
