//! Servers' requests reach, through `mcpvisor serve`, the downstream client
//! whose call they serve — the Python SDK here, in front of server-everything —
//! and a client that does not offer them gets an error its server can report.
//! Elicitation is forwarded the same way once the gateway and the client speak
//! 2025-06-18 or later (the Python SDK takes it from no earlier revision).

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::peers_dir;
use support::serve::python_client_of_serve;

/// A project whose one approved entry is server-everything over stdio.
fn project(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("mcpvisor-forward-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config =
        json!({"mcpServers": {"everything": {"command": "node", "args": [index, "stdio"]}}});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let home = root.join("home");
    let enabled = Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
        .args(["--config", path.to_str().unwrap(), "enable", "everything"])
        .env("MCPVISOR_HOME", &home)
        .output()
        .unwrap();
    assert!(
        enabled.status.success(),
        "{}",
        String::from_utf8_lossy(&enabled.stderr)
    );
    (path, home)
}

/// Runs the Python client against `serve --stdio` and returns what it printed.
fn run_client(tag: &str, mode: &str) -> Value {
    run_client_with(tag, mode, &[])
}

/// [`run_client`] with more `serve` flags.
fn run_client_with(tag: &str, mode: &str, serve_flags: &[&str]) -> Value {
    let (config, home) = project(tag);
    python_client_of_serve("python_sampling.py", &[mode], &config, &home, serve_flags)
}

#[test]
fn sampling_reaches_the_client_whose_call_it_serves() {
    let out = run_client("offer", "offer");
    let tools = out["tools"].to_string();
    assert!(
        tools.contains("mcp__everything__trigger-sampling-request"),
        "{tools}"
    );
    assert_eq!(out["sampling"]["is_error"], false, "{out}");
    let sampled = out["sampling"]["text"].as_str().unwrap();
    assert!(
        sampled.contains("sampled by the downstream client"),
        "{out}"
    );
    assert_eq!(out["seen"]["sampling"], json!([7]), "{out}");
}

#[test]
fn a_client_that_offers_neither_gets_its_servers_error_not_a_hang() {
    let out = run_client("bare", "bare");
    let sampled = out["sampling"]["text"].as_str().unwrap();
    assert!(
        sampled.contains("does not offer sampling/createMessage"),
        "{out}"
    );
    let elicited = out["elicitation"]["text"].as_str().unwrap();
    assert!(
        elicited.contains("does not offer elicitation/create"),
        "{out}"
    );
}

#[test]
fn elicitation_reaches_a_client_at_a_revision_that_has_it() {
    let flags = ["--protocol-versions", "2025-11-25,2025-06-18,2025-03-26"];
    let out = run_client_with("elicit", "offer-all", &flags);
    assert_eq!(
        out["seen"]["elicitation"].as_array().map(Vec::len),
        Some(1),
        "{out}"
    );
    assert_eq!(out["elicitation"]["is_error"], false, "{out}");
    let elicited = out["elicitation"]["text"].as_str().unwrap();
    assert!(elicited.contains("Grace"), "{out}");
    // The client's answer left the optional fields out: the form's defaults filled them.
    assert!(elicited.contains("42"), "{out}");
    assert_eq!(out["sampling"]["is_error"], false, "{out}");
}

/// A project whose one approved entry is the Python SDK peer over stdio.
fn python_project(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("mcpvisor-forward-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let python = peers_dir().join("venv/bin/python");
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [peers_dir().join("python_server.py"), "stdio"]},
    }});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let home = root.join("home");
    let enabled = Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
        .args(["--config", path.to_str().unwrap(), "enable", "py"])
        .env("MCPVISOR_HOME", &home)
        .output()
        .unwrap();
    assert!(enabled.status.success());
    (path, home)
}

/// At 2025-11-25 on both sides, a URL elicitation reaches the client whose
/// call it serves, its completion notice follows it there (and a notice for
/// an id nobody was asked about does not), and a `-32042` answer keeps its
/// code and the elicitations it names.
#[test]
fn url_elicitation_and_its_completion_reach_the_client_asked() {
    let (config, home) = python_project("url");
    let flags = ["--protocol-versions", "2025-11-25"];
    let out = python_client_of_serve("python_url_elicitation.py", &[], &config, &home, &flags);
    assert_eq!(out["connect"], "connect: accept", "{out}");
    let seen = out["seen"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "{out}");
    assert_eq!(seen[0]["mode"], "url", "{out}");
    assert_eq!(
        seen[0]["url"], "https://accounts.example.com/connect?session=4",
        "{out}"
    );
    assert_eq!(seen[0]["elicitationId"], "py-connect-1", "{out}");
    // The completion of the one asked, then of the one the -32042 named.
    assert_eq!(
        out["completed"],
        json!(["py-connect-1", "py-files-7"]),
        "{out}"
    );
    assert_eq!(out["needs"]["code"], -32042, "{out}");
    assert_eq!(
        out["needs"]["data"]["elicitations"][0]["elicitationId"], "py-files-7",
        "{out}"
    );
}
