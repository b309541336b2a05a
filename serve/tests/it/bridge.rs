//! The bridge between eras through `mcpvisor serve`: the project's
//! conformance fixture (the Python SDK, serving both eras) as the server, the
//! Python SDK as the client (testkit/peers/clients/python_bridge.py), and an
//! elicitation answered across them.
//! - A 2026-07-28 client (pinned: it can only be asked by rounds) calls
//!   `test_elicitation`, whose server, initialized at 2025-11-25, sends
//!   `elicitation/create` mid-call: the client gets `input_required`, answers,
//!   and the same upstream call finishes with that answer.
//! - A 2025-11-25 client calls `test_input_required_result_elicitation`, whose
//!   server, reached at 2026-07-28, answers `input_required`: the client is sent
//!   an ordinary `elicitation/create`, and its answer goes back as the retry.
//! - A 2026-07-28 server's round asks for roots: a 2026-07-28 client is asked
//!   in its own round, a 2025-11-25 one with `roots/list`, and the client's
//!   roots (not the gateway's, which has none) answer the server.
//! - A `prompts/get` whose 2026-07-28 server asks for a form first is
//!   bridged the same way, for both kinds of client.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::peers_dir;
use testkit::serve::{HttpServe, python_client_of_serve, wait_timeout};

/// The fixture initialized at 2025-11-25 (stateless clients are still served).
const UPSTREAM_2025: [&str; 2] = ["--protocol-versions", "2025-11-25,2026-07-28"];
/// The fixture reached at 2026-07-28 (clients may still initialize at 2025-11-25).
const UPSTREAM_2026: [&str; 2] = ["--protocol-versions", "2026-07-28,2025-11-25"];

/// A project whose one approved entry is the conformance fixture over stdio;
/// returns its directory and `.mcp.json`.
fn project(tag: &str) -> (PathBuf, PathBuf) {
    let root = testkit::scratch_dir(&format!("bridge-{tag}"));
    let python = peers_dir().join("venv/bin/python");
    let fixture = peers_dir().join("conformance_fixture.py");
    let config =
        json!({"mcpServers": {"fixture": {"command": python, "args": [fixture, "stdio"]}}});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let enabled = Command::new(testkit::mcpvisor_exe())
        .args(["--config", path.to_str().unwrap(), "enable", "fixture"])
        .env("MCPVISOR_HOME", root.join("home"))
        .output()
        .unwrap();
    assert!(
        enabled.status.success(),
        "{}",
        String::from_utf8_lossy(&enabled.stderr)
    );
    (root, path)
}

/// The client in front of `serve --stdio` (which it starts).
fn over_stdio(tag: &str, mode: &str, tool: &str, arguments: Value, upstream: [&str; 2]) -> Value {
    let (root, config) = project(tag);
    let mut flags = vec!["--names", "original"];
    flags.extend(upstream);
    let arguments = arguments.to_string();
    let args = [mode, tool, arguments.as_str(), "stdio"];
    python_client_of_serve(
        "python_bridge.py",
        &args,
        &config,
        &root.join("home"),
        &flags,
    )
}

/// The client of `serve --http` (which the test starts).
fn over_http(tag: &str, mode: &str, tool: &str, arguments: Value, upstream: [&str; 2]) -> Value {
    let (root, _) = project(tag);
    let mut args = vec!["--http", "127.0.0.1:0", "--no-token", "--names", "original"];
    args.extend(upstream);
    let serve = HttpServe::start(&root, &args, None);
    let out = run_client(&root, mode, tool, &arguments, &serve.url);
    drop(serve);
    out
}

fn run_client(dir: &Path, mode: &str, tool: &str, arguments: &Value, url: &str) -> Value {
    let mut child = Command::new(peers_dir().join("venv/bin/python"))
        .arg(peers_dir().join("clients/python_bridge.py"))
        .args([mode, tool, &arguments.to_string(), "http", url])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if wait_timeout(&mut child, Duration::from_secs(90)).is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the Python client did not finish");
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// A 2026-07-28 client answered a 2025 server's form: the upstream call ended
/// with what the client filled in.
fn check_rounds_answered_a_request(out: &Value) {
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(out["protocol_version"], "2026-07-28", "{out}");
    let mut fields: Vec<&str> = out["asked"][0]["fields"]
        .as_array()
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["email", "username"],
        "the form the server asked: {out}"
    );
    let text = out["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("action=accept") && text.contains("ada@example.com"),
        "the server's call did not end with the client's answer: {out}"
    );
    assert_eq!(out["is_error"], false, "{out}");
}

#[test]
fn a_2026_client_answers_a_2025_servers_elicitation_over_stdio() {
    let asked = json!({"message": "Who are you?"});
    let out = over_stdio(
        "26-25-stdio",
        "2026-07-28",
        "test_elicitation",
        asked,
        UPSTREAM_2025,
    );
    check_rounds_answered_a_request(&out);
}

#[test]
fn a_2026_client_answers_a_2025_servers_elicitation_over_http() {
    let asked = json!({"message": "Who are you?"});
    let out = over_http(
        "26-25-http",
        "2026-07-28",
        "test_elicitation",
        asked,
        UPSTREAM_2025,
    );
    check_rounds_answered_a_request(&out);
}

#[test]
fn a_2025_client_answers_a_2026_servers_round_over_stdio() {
    let tool = "test_input_required_result_elicitation";
    let out = over_stdio("25-26-stdio", "legacy", tool, json!({}), UPSTREAM_2026);
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(out["protocol_version"], "2025-11-25", "{out}");
    assert_eq!(out["asked"][0]["fields"], json!(["name"]), "{out}");
    assert_eq!(
        out["text"], "Hello, Ada!",
        "the round did not carry the answer: {out}"
    );
}

/// A 2026-07-28 server's round asked for roots, and the call ended with the
/// client's own (the gateway has none: they can only have come from it).
fn check_roots_came_from_the_client(out: &Value, revision: &str) {
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(out["protocol_version"], revision, "{out}");
    assert_eq!(out["asked"], json!([{"roots": true}]), "{out}");
    assert_eq!(
        out["text"], "Found 1 root(s): file:///work/bridge-project",
        "the round did not carry the client's roots: {out}"
    );
}

#[test]
fn a_2026_client_gives_a_2026_servers_round_its_roots_over_http() {
    let tool = "test_input_required_result_list_roots";
    let out = over_http(
        "roots-26-http",
        "2026-07-28",
        tool,
        json!({}),
        UPSTREAM_2026,
    );
    check_roots_came_from_the_client(&out, "2026-07-28");
}

#[test]
fn a_2025_client_gives_a_2026_servers_round_its_roots_over_stdio() {
    let tool = "test_input_required_result_list_roots";
    let out = over_stdio("roots-25-stdio", "legacy", tool, json!({}), UPSTREAM_2026);
    check_roots_came_from_the_client(&out, "2025-11-25");
}

/// A `prompts/get` whose 2026-07-28 server asks for a form before it answers:
/// the client's answer fills the prompt.
fn check_prompt_filled_by_the_client(out: &Value, revision: &str) {
    assert!(out.get("error").is_none(), "{out}");
    assert_eq!(out["protocol_version"], revision, "{out}");
    assert_eq!(out["asked"][0]["fields"], json!(["context"]), "{out}");
    assert_eq!(
        out["text"], "Prompt with context: the bridge",
        "the prompt did not carry the client's answer: {out}"
    );
}

#[test]
fn a_2026_client_answers_a_2026_servers_prompt_over_http() {
    let prompt = "prompt:test_input_required_result_prompt";
    let out = over_http(
        "prompt-26-http",
        "2026-07-28",
        prompt,
        json!({}),
        UPSTREAM_2026,
    );
    check_prompt_filled_by_the_client(&out, "2026-07-28");
}

#[test]
fn a_2025_client_answers_a_2026_servers_prompt_over_stdio() {
    let prompt = "prompt:test_input_required_result_prompt";
    let out = over_stdio(
        "prompt-25-stdio",
        "legacy",
        prompt,
        json!({}),
        UPSTREAM_2026,
    );
    check_prompt_filled_by_the_client(&out, "2025-11-25");
}
