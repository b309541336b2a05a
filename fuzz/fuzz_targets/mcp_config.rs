//! `.mcp.json`: structural parsing of every entry, then `${VAR}` expansion and
//! runtime validation of each, with a fake environment.
//!
//! Oracles: nothing panics, whatever the file and whatever the environment
//! holds (values that look like references themselves included), and `Debug`
//! of entries and results (which redacts) never panics either.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcpvisor::config::McpConfig;

/// Values that look like references themselves: they must stay literal.
fn fake_env(name: &str) -> Option<String> {
    match name.len() % 4 {
        0 => None,
        1 => Some(String::new()),
        2 => Some(format!("${{{name}}}")),
        _ => Some(format!("v-{name}")),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/fuzz/project/.mcp.json");
    let Ok(config) = McpConfig::parse(text, path) else {
        return;
    };
    let base = config.base_dir();
    for entry in config.servers.values() {
        let resolved = entry.resolve(&fake_env, &base);
        // Debug output redacts, and must not panic either.
        let _ = format!("{entry:?} {resolved:?}");
    }
});
