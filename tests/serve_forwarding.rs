//! Servers' requests reach, through `mcpvisor serve`, the downstream client
//! whose call they serve — the Python SDK here, in front of server-everything —
//! and a client that does not offer them gets an error its server can report.
//! Elicitation is forwarded the same way once the gateway and the client speak
//! 2025-06-18 or later (the Python SDK takes it from no earlier revision).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::peers_dir;

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
    let mut child = Command::new(peers_dir().join("venv/bin/python"))
        .arg(peers_dir().join("clients/python_sampling.py"))
        .arg(mode)
        .arg(env!("CARGO_BIN_EXE_mcpvisor"))
        // The SDK starts the server with a minimal environment: the home goes as a flag.
        .args(["serve", "--stdio", "--config", config.to_str().unwrap()])
        .args(["--home", home.to_str().unwrap()])
        .args(serve_flags)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Python client did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
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
