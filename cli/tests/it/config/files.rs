//! Which configuration a command reads and how: the nearest `.mcp.json` above
//! the working directory, VS Code's `{"servers": …}` shape, `streamable-http`,
//! a file that is not a configuration, unknown settings keys, and the paths
//! errors show.

use super::{Scratch, demo};
use serde_json::json;

const FILE: &str = "config_files";

#[test]
fn the_nearest_file_above_the_working_directory_is_used_and_named() {
    let s = Scratch::new(FILE, "upward");
    let [program, arg] = demo();
    s.write(&json!({"mcpServers": {"up": {"command": program, "args": [arg]}}}).to_string());
    let deep = s.dir.join("src/deeper");
    std::fs::create_dir_all(&deep).unwrap();
    let out = s.run_in(&deep, &["servers"]);
    assert!(out.ok(), "{}", out.all());
    let first = out.stdout().lines().next().unwrap_or_default().to_string();
    assert_eq!(first, format!("config: {}", s.config().display()));
    let listed = s.run_in(&deep, &["--json", "servers"]).json();
    assert_eq!(listed[0]["config"], s.config().display().to_string());
    // Approved from below, it runs from below.
    assert!(s.run_in(&deep, &["enable", "up"]).ok());
    let tools = s.run_in(&deep, &["tools"]);
    assert!(tools.stdout().contains("mcp__up__echo"), "{}", tools.all());

    // With no file here or above: the demo server, and `servers` says so.
    let bare = Scratch::new(FILE, "bare");
    let out = bare.run(&["servers"]);
    assert!(out.stdout().starts_with("config: none"), "{}", out.all());
    let listed = bare.run(&["--json", "servers"]).json();
    assert_eq!(listed[0]["config"], serde_json::Value::Null);
}

#[test]
fn a_vs_code_file_is_read_and_streamable_http_means_http() {
    let s = Scratch::new(FILE, "vscode");
    let [program, arg] = demo();
    let vscode = s.dir.join(".vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    let path = vscode.join("mcp.json");
    std::fs::write(
        &path,
        json!({"inputs": [], "servers": {
            "local": {"type": "stdio", "command": program, "args": [arg], "env": {"K": "v"}},
            "remote": {"type": "streamable-http", "url": "https://x.example/mcp", "headers": {"A": "b"}},
        }})
        .to_string(),
    )
    .unwrap();
    let config = path.display().to_string();
    let listed = s.run(&["--config", &config, "--json", "servers"]).json();
    let kind = |n: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .unwrap()["type"]
            .clone()
    };
    assert_eq!(kind("local"), "stdio");
    assert_eq!(kind("remote"), "http");
    assert!(
        s.run(&["--config", &config, "enable", "local", "remote"])
            .ok()
    );
    let tools = s.run(&["--config", &config, "--no-attach", "tools"]);
    assert!(
        tools.stdout().contains("mcp__local__echo"),
        "{}",
        tools.all()
    );
    // `add` writes into the file's own key.
    assert!(
        s.run(&["--config", &config, "add", "more", "--", "srv"])
            .ok()
    );
    let edited: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(edited["servers"]["more"]["command"], "srv");
    assert!(edited.get("mcpServers").is_none(), "{edited}");
}

#[test]
fn a_file_without_servers_is_refused_with_a_clear_message() {
    let s = Scratch::new(FILE, "neither");
    for (text, says) in [
        ("{}", "no `mcpServers` object (nor VS Code's `servers`)"),
        (
            "{\"mcp_servers\": {\"a\": {\"command\": \"x\"}}}",
            "not an MCP configuration",
        ),
        (
            "{\"mcpServers\": {}, \"servers\": {}}",
            "has both `mcpServers` and `servers`",
        ),
    ] {
        s.write(text);
        for args in [&["servers"][..], &["tools"], &["enable", "--all"]] {
            let out = s.run(args);
            assert_eq!(out.code(), Some(2), "{text} {args:?}: {}", out.all());
            assert!(out.stderr().contains(says), "{text}: {}", out.all());
            assert!(
                out.stderr().contains(&s.config().display().to_string()),
                "{}",
                out.all()
            );
        }
    }
}

#[test]
fn an_unknown_settings_key_is_an_error_naming_it() {
    let s = Scratch::new(FILE, "settings");
    std::fs::create_dir_all(s.home()).unwrap();
    std::fs::write(s.home().join("settings.toml"), "request_timeout = 5000\n").unwrap();
    for args in [&["settings"][..], &["servers"], &["tools"]] {
        let out = s.run(args);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.all());
        assert!(
            out.stderr().contains("unknown key `request_timeout`"),
            "{}",
            out.all()
        );
        assert!(
            out.stderr().contains("request_timeout_ms"),
            "the keys there are: {}",
            out.all()
        );
    }
    std::fs::write(
        s.home().join("settings.toml"),
        "request_timeout_ms = 5000\n",
    )
    .unwrap();
    assert!(s.run(&["settings"]).ok());
}

#[test]
fn paths_in_errors_are_as_given_or_absolute() {
    let s = Scratch::new(FILE, "paths");
    s.write("{\"mcpServers\": {\"a\": {\"command\": 7}}}");
    let deep = s.dir.join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    // Found upward: absolute.
    let out = s.run_in(&deep, &["servers"]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr()
            .contains(&format!("{}:1:", s.config().display())),
        "{}",
        out.all()
    );
    assert!(!out.stderr().contains("../"), "{}", out.all());
    // Given: as given.
    let out = s.run_in(&deep, &["--config", "../../../.mcp.json", "servers"]);
    assert!(
        out.stderr().contains("../../../.mcp.json:1:"),
        "{}",
        out.all()
    );
}
