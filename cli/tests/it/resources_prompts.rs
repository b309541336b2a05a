//! `mcpvisor resources`, `read`, `prompts` and `prompt`, one-shot and attached
//! to a running `serve`, against server-everything and the Python SDK's server.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::peers_dir;
use testkit::serve::{HttpServe, empty_dir, finish, mcpvisor};

/// A directory whose `.mcp.json` runs server-everything and the Python peer, both approved.
fn project(tag: &str) -> PathBuf {
    let dir = empty_dir("cli-offered", tag);
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = peers_dir().join("venv/bin/python");
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [index, "stdio"]},
        "py": {"command": python, "args": [peers_dir().join("python_server.py"), "stdio"]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for name in ["everything", "py"] {
        let out = run(&dir, &["enable", name]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    dir
}

fn run(dir: &Path, args: &[&str]) -> Output {
    finish(mcpvisor(dir).args(args), Duration::from_secs(60))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The same checks whichever way the servers are reached.
fn check_commands(dir: &Path) {
    let out = run(dir, &["resources"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("note://greeting"), "{listed}");
    assert!(
        listed.contains("demo://resource/static/document/architecture.md"),
        "{listed}"
    );
    assert!(
        listed.contains("templates:") && listed.contains("note://{name}"),
        "{listed}"
    );

    let out = run(dir, &["--json", "resources", "py"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["resources"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed["resources"][0]["_meta"]["mcpvisor/server"], "py");
    assert_eq!(listed["templates"][0]["uriTemplate"], "note://{name}");

    // A server's text reaches the terminal with its control characters escaped.
    let out = run(dir, &["read", "py", "note://hostile"]);
    let shown = text(&out.stdout);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(shown.contains("before\\u{1b}]0;pwned"), "{shown:?}");

    let out = run(dir, &["read", "py", "note://cats"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "Note cats");

    // Binary contents: refused on stdout, decoded into a file.
    let blob = "demo://resource/dynamic/blob/3";
    let out = run(dir, &["read", "everything", blob]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("-o FILE"),
        "{}",
        text(&out.stderr)
    );
    let file = dir.join("blob.bin");
    let out = run(
        dir,
        &["read", "everything", blob, "-o", file.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = run(dir, &["--json", "read", "everything", blob]);
    let raw: Value = serde_json::from_slice(&json.stdout).unwrap();
    let encoded = raw["contents"][0]["blob"].as_str().unwrap();
    let written = std::fs::read(&file).unwrap();
    assert!(!written.is_empty());
    assert!(
        !written.iter().all(u8::is_ascii_alphanumeric),
        "the file holds decoded bytes, not base64"
    );
    assert_eq!(
        written.len(),
        encoded.len() / 4 * 3 - encoded.matches('=').count()
    );

    let out = run(dir, &["prompts", "py"]);
    let listed = text(&out.stdout);
    assert!(listed.contains("mcp__py__review"), "{listed}");
    assert!(listed.contains("code (required), language"), "{listed}");
    assert!(!listed.contains("mcp__everything__"), "{listed}");

    let out = run(
        dir,
        &[
            "prompt",
            "mcp__py__review",
            r#"{"code": "x = 1", "language": "python"}"#,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim_end(),
        "# Ask for a review of some code.\nuser: Please review this python code:\nx = 1"
    );
    // `key=value` pairs, as `call` takes them.
    let out = run(
        dir,
        &["prompt", "mcp__py__review", "code=x = 1", "language=python"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim_end(),
        "# Ask for a review of some code.\nuser: Please review this python code:\nx = 1"
    );
    let out = run(
        dir,
        &[
            "--json",
            "prompt",
            "mcp__everything__args-prompt",
            r#"{"city": "Lisbon"}"#,
        ],
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        got["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Lisbon"),
        "{got}"
    );

    let out = run(dir, &["prompt", "mcp__everything__args-prompt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("needs argument `city`"),
        "{}",
        text(&out.stderr)
    );
    let out = run(dir, &["prompt", "mcp__py__nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("unknown prompt"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn one_shot_commands_list_read_and_fill_in() {
    let dir = project("one-shot");
    check_commands(&dir);
    // Arguments that are not a JSON object of strings stop before any server starts.
    let out = run(&dir, &["prompt", "mcp__py__review", r#"{"code": [1]}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("must be a string"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&dir, &["prompt", "mcp__py__review", "{"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn attached_commands_reach_the_running_serve() {
    let dir = project("attached");
    let mut serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    // The file now names commands that cannot start: only the servers the
    // running serve started can answer.
    let broken = json!({"mcpServers": {
        "everything": {"command": "/nonexistent/node", "args": []},
        "py": {"command": "/nonexistent/python", "args": []},
    }});
    std::fs::write(dir.join(".mcp.json"), broken.to_string()).unwrap();
    check_commands(&dir);
    assert!(serve.terminate().success(), "{}", serve.output());
}
