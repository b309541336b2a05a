//! `QualifiedMcpToolName`: the only way to build or parse `mcp__server__tool`.
//!
//! Oracles: a parsed name is at most 64 bytes of ASCII, reads back as itself, and
//! is rebuilt identically from its components; a name built from two components
//! parses back into the same two; no component is empty or holds `__`, and no
//! server name ends in `_`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpvisor_protocol::QualifiedMcpToolName;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(name) = QualifiedMcpToolName::parse(text) {
        check(&name);
        assert_eq!(name.as_str(), text);
        let rebuilt = QualifiedMcpToolName::new(name.server(), name.tool()).unwrap();
        assert_eq!(rebuilt, name);
    }
    // The same bytes as two components, split at the first NUL (or in half).
    let (server, tool) = match text.find('\0') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => text.split_at(text.floor_char_boundary(text.len() / 2)),
    };
    if let Ok(name) = QualifiedMcpToolName::new(server, tool) {
        check(&name);
        assert_eq!((name.server(), name.tool()), (server, tool));
        assert_eq!(QualifiedMcpToolName::parse(name.as_str()).unwrap(), name);
    }
});

fn check(name: &QualifiedMcpToolName) {
    let full = name.as_str();
    assert!(full.len() <= 64 && full.is_ascii(), "{full:?}");
    assert_eq!(full, format!("mcp__{}__{}", name.server(), name.tool()));
    for part in [name.server(), name.tool()] {
        assert!(!part.is_empty() && !part.contains("__"), "{full:?}");
        assert!(
            part.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }
    assert!(!name.server().ends_with('_'), "{full:?}");
}
