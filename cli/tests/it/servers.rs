//! `servers`: what each entry runs (secrets hidden), its state, the tools of a
//! running `serve`, and `--check`, a one-shot health check of each enabled server.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::{Scratch, demo};
use serde_json::json;

const FILE: &str = "servers";

#[test]
fn servers_shows_each_command_or_url_with_secrets_hidden() {
    let s = Scratch::new(FILE, "list");
    s.write(
        &json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "fs server"], "env": {"TOKEN": "ENV_SECRET"}},
            "web": {"type": "http", "url": "https://x.example/mcp?key=QUERY_SECRET",
                    "headers": {"Authorization": "Bearer HEADER_SECRET"}},
        }})
        .to_string(),
    );
    let out = s.run(&["servers"]);
    assert!(out.ok(), "{}", out.all());
    let text = out.stdout();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("files").contains("not approved") && line("files").ends_with("npx -y 'fs server'"),
        "{text}"
    );
    assert!(
        line("web").ends_with("https://x.example/mcp?[redacted]"),
        "{text}"
    );
    let listed = s.run(&["--json", "servers"]).json();
    assert_eq!(listed[0]["command"], "npx");
    assert_eq!(listed[0]["args"], json!(["-y", "fs server"]));
    assert_eq!(listed[1]["url"], "https://x.example/mcp?[redacted]");
    assert_eq!(listed[1]["state"], "not approved");
    let all = format!("{}{}", out.all(), listed);
    for secret in ["ENV_SECRET", "QUERY_SECRET", "HEADER_SECRET"] {
        assert!(!all.contains(secret), "{secret}: {all}");
    }
    // Not approved, and approving alone would not do: the real fix is named.
    s.write(
        &json!({"mcpServers": {
            "needs": {"command": "srv", "env": {"K": "${MCPVISOR_TEST_NEVER_SET}"}},
            "old": {"type": "sse", "url": "https://x.example/sse"},
        }})
        .to_string(),
    );
    let text = s.run(&["servers"]).stdout();
    assert!(
        text.contains("cannot run as written") && text.contains("MCPVISOR_TEST_NEVER_SET"),
        "{text}"
    );
    assert!(
        text.contains("Streamable HTTP"),
        "the sse entry says what to use: {text}"
    );
}

#[test]
fn check_starts_each_enabled_server_once_and_says_how_it_went() {
    let s = Scratch::new(FILE, "check");
    let [program, arg] = demo();
    s.write(
        &json!({"mcpServers": {
            "good": {"command": program, "args": [arg]},
            "gone": {"command": program, "args": [arg]},
            "silent": {"command": "sleep", "args": ["30"], "startupTimeout": 500},
            "later": {"command": program, "args": [arg]},
        }})
        .to_string(),
    );
    assert!(s.run(&["enable", "good", "gone", "silent"]).ok());
    // Its program vanishes after it was approved.
    let mut edited: serde_json::Value = serde_json::from_str(&s.read()).unwrap();
    edited["mcpServers"]["gone"]["command"] = json!("/nonexistent/mcp-server");
    s.write(&edited.to_string());
    // A restart loop would take seconds of backoff; a check tries each once.
    let began = Instant::now();
    let out = s.run(&["servers", "--check", "--restart-initial-backoff-ms", "1500"]);
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "one try each, side by side"
    );
    assert_eq!(out.code(), Some(1), "{}", out.all());
    let text = out.stdout();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_default()
            .to_string()
    };
    let good = line("good");
    assert!(
        good.starts_with("good: ok, 12 tools, ") && good.ends_with(" ms"),
        "{text}"
    );
    assert!(
        line("gone").starts_with("gone: failed: ")
            && line("gone").contains("/nonexistent/mcp-server"),
        "{text}"
    );
    assert!(line("silent").starts_with("silent: failed: "), "{text}");
    assert_eq!(line("later"), "later: not checked (not approved)", "{text}");
    let listed = s.run(&["--json", "servers", "--check"]).json();
    let by = |n: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by("good")["ok"], true);
    assert_eq!(by("good")["tools"], 12);
    assert_eq!(by("gone")["ok"], false);
    // All healthy: exit 0.
    assert!(s.run(&["disable", "gone", "silent"]).ok());
    let out = s.run(&["servers", "--check"]);
    assert!(out.ok(), "{}", out.all());
}

#[test]
fn servers_shows_the_tools_of_a_running_serve() {
    let s = Scratch::new(FILE, "serve");
    let [program, arg] = demo();
    s.write(&json!({"mcpServers": {"d": {"command": program, "args": [arg]}}}).to_string());
    assert!(s.run(&["enable", "d"]).ok());
    let mut serve = Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
        .arg("serve")
        .current_dir(&s.dir)
        .env("MCPVISOR_HOME", s.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut text = String::new();
    while Instant::now() < deadline {
        text = s.run(&["servers"]).stdout();
        if text.contains("12 tools") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(serve.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = serve.wait();
    assert!(
        text.contains("running: ready") && text.contains("12 tools"),
        "{text}"
    );
}
