//! `mcpvisor chaos` on real servers: server-everything and the Python SDK's
//! server over stdio plus the Python server over Streamable HTTP, under a
//! described load, for a short seeded run that must pass; and a server whose
//! command works once and then exits at once, under a `kill` plan it cannot
//! recover from, which must fail and say which invariant broke.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::peers::PeerServer;
use testkit::peers_dir;
use testkit::serve::{empty_dir, finish, mcpvisor};

const DEMO: &str = env!("CARGO_BIN_EXE_mcpvisor");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `servers` as the `.mcp.json` of a new directory and approves each.
fn project(tag: &str, servers: Value) -> PathBuf {
    let dir = empty_dir("cli-chaos", tag);
    let names: Vec<String> = servers.as_object().unwrap().keys().cloned().collect();
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    for name in names {
        let out = run(&dir, &["enable", &name], Duration::from_secs(30));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    dir
}

fn run(dir: &Path, args: &[&str], within: Duration) -> Output {
    finish(mcpvisor(dir).args(args), within)
}

#[test]
fn a_seeded_run_on_real_servers_passes_and_its_json_report_adds_up() {
    let python = peers_dir().join("venv/bin/python");
    let script = peers_dir().join("python_server.py");
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let http = PeerServer::python(false);
    let dir = project(
        "passes",
        json!({
            "everything": {"command": "node", "args": [index, "stdio"]},
            "py": {"command": python, "args": [script, "stdio"]},
            "pyhttp": {"url": http.url},
        }),
    );
    // Each echo's answer must carry the text of its own call.
    let mut load = Vec::new();
    for server in ["everything", "py", "pyhttp"] {
        load.push(json!({
            "tool": format!("mcp__{server}__echo"),
            "arguments": {"message": "chaos {call}"},
            "expect": "Echo: chaos {call}",
            "weight": 3,
        }));
        load.push(json!({"ping": server}));
    }
    std::fs::write(dir.join("load.json"), Value::Array(load).to_string()).unwrap();
    let faults = "kill,stop:1s,close-stdin,exit-during-initialize,garbage,oversize,delay,drop,cut-stream,reset";
    let started = Instant::now();
    let out = run(
        &dir,
        &[
            "--json",
            "chaos",
            "--seed",
            "7",
            "--cycles",
            "10",
            "--duration",
            "60s",
            "--faults",
            faults,
            "--load",
            "load.json",
            "--call-timeout",
            "3s",
        ],
        Duration::from_secs(180),
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stderr}\n{}",
        text(&out.stdout)
    );
    eprintln!("{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["seed"], 7);
    assert_eq!(report["cycles"], 10, "{report:#}");
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );
    // One deck: each fault dealt once, each time the server came back.
    let kinds = report["faults"].as_object().unwrap();
    assert_eq!(kinds.len(), 10, "{report:#}");
    for (kind, tally) in kinds {
        assert_eq!(tally["dealt"], 1, "{kind}: {tally}");
        assert_eq!(tally["recovered"], 1, "{kind}: {tally}");
        assert!(
            tally["recovery"]["p50_ms"].as_f64().is_some(),
            "{kind}: {tally}"
        );
    }
    assert_eq!(report["recovery"]["count"], 10);
    assert!(
        report["recovery"]["p99_ms"].as_f64().unwrap()
            >= report["recovery"]["p50_ms"].as_f64().unwrap()
    );
    // Process faults went to stdio servers only, stream faults to HTTP only.
    for server in report["servers"].as_array().unwrap() {
        let dealt = server["faults"].as_object().unwrap();
        let (process, http) = (
            ["kill", "stop", "close-stdin", "exit-during-initialize"],
            ["cut-stream", "reset"],
        );
        let wrong: &[&str] = if server["wire"] == "http" {
            &process
        } else {
            &http
        };
        for kind in wrong {
            assert!(dealt.get(*kind).is_none(), "{kind} dealt to {server}");
        }
        assert_eq!(server["given_up"], false, "{server}");
    }
    let calls = &report["calls"];
    assert!(
        calls["healthy_ok"].as_u64().unwrap() > 100,
        "the load was real: {calls}"
    );
    assert_eq!(calls["healthy_failed"], 0, "{calls}");
    assert!(
        calls["faulted_failed"].as_u64().unwrap() > 0,
        "the faults were real: {calls}"
    );
    let typed: u64 = calls["faulted_errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(typed, calls["faulted_failed"].as_u64().unwrap(), "{calls}");
    assert!(report["restarts"].as_u64().unwrap() >= 3, "{report:#}");
    assert!(
        report["process_groups"].as_u64().unwrap() >= 2,
        "{report:#}"
    );
    assert_eq!(report["leaked_processes"], 0);
    assert_eq!(report["panics"], 0);
    assert_eq!(report["violations"], json!([]));
    let invariants = report["invariants"].as_array().unwrap();
    // Every invariant is listed, node-withdrawn too, as not checked: there
    // are no nodes to kill.
    assert_eq!(invariants.len(), 11);
    assert!(
        invariants
            .iter()
            .any(|i| i["name"] == "node-withdrawn" && i["checked"] == false),
        "{invariants:?}"
    );
    assert!(
        invariants
            .iter()
            .filter(|i| i["name"] != "node-withdrawn")
            .all(|i| i["checked"] == true),
        "{invariants:?}"
    );
    assert!(
        invariants.iter().all(|i| i["held"] == true),
        "{invariants:?}"
    );
    // The people's report says the same.
    assert!(stderr.contains("chaos: cycle 9:"), "{stderr}");
}

#[test]
fn a_server_that_cannot_come_back_fails_the_run_and_the_report_names_the_invariant() {
    let marker = testkit::scratch_dir("cli-chaos-marker").join("started-once");
    // Works once; every later start exits at once, before a word.
    let flaky = format!(
        "if [ -e '{m}' ]; then exit 3; fi; touch '{m}'; exec '{DEMO}' demo-server",
        m = marker.display()
    );
    let dir = {
        let servers = json!({
            "demo": {"command": DEMO, "args": ["demo-server"]},
            "flaky": {"command": "sh", "args": ["-c", flaky]},
        });
        project("fails", servers)
    };
    let out = run(
        &dir,
        &[
            "--json",
            "--restart-max-restarts",
            "1",
            "--restart-initial-backoff-ms",
            "50",
            "chaos",
            "--seed",
            "3",
            "--faults",
            "kill",
            "--duration",
            "15s",
            "--recovery-timeout",
            "4s",
            "--call-timeout",
            "3s",
        ],
        Duration::from_secs(120),
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stderr}\n{}",
        text(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let broken: Vec<&Value> = report["violations"].as_array().unwrap().iter().collect();
    assert!(!broken.is_empty(), "{report:#}");
    // It is the flaky server that did not come back, and only that broke.
    assert!(
        broken
            .iter()
            .all(|v| v["invariant"] == "recovered" && v["server"] == "flaky"),
        "{broken:?}"
    );
    let held = |name: &str| {
        report["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .unwrap()["held"]
            .clone()
    };
    assert_eq!(held("recovered"), false);
    // It was marked failed only as the policy allows, its neighbour never noticed,
    // and its processes went with its connections.
    for name in [
        "failed-per-policy",
        "healthy-unaffected",
        "no-leaked-process",
        "no-panic",
    ] {
        assert_eq!(held(name), true, "{name}: {report:#}");
    }
    let flaky = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "flaky")
        .unwrap();
    assert_eq!(flaky["given_up"], true);
    assert_eq!(
        flaky["faults"]["kill"], 1,
        "given up after its one kill: {flaky}"
    );
    assert!(
        report["restarted_on_request"].as_u64().unwrap() >= 1,
        "{report:#}"
    );
    // The faults went on to the server still standing.
    let demo = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "demo")
        .unwrap();
    assert!(demo["faults"]["kill"].as_u64().unwrap() >= 1, "{report:#}");
    assert!(stderr.contains("BROKEN: cycle"), "{stderr}");
    // The people's report names it too (the server works once more first).
    std::fs::remove_file(&marker).unwrap();
    let people = run(
        &dir,
        &[
            "--restart-max-restarts",
            "1",
            "chaos",
            "--faults",
            "kill",
            "--cycles",
            "1",
            "--recovery-timeout",
            "2s",
        ],
        Duration::from_secs(60),
    );
    let printed = text(&people.stdout);
    assert_eq!(people.status.code(), Some(1), "{printed}");
    assert!(printed.contains("BROKEN recovered"), "{printed}");
    assert!(
        printed.trim_end().ends_with("result: FAILED (recovered)"),
        "{printed}"
    );
}

#[test]
fn usage_mistakes_exit_2_and_say_what_is_wrong() {
    // No .mcp.json here: the built-in demo server is the one server.
    let dir = empty_dir("cli-chaos", "usage");
    std::fs::write(dir.join("other.json"), r#"[{"ping": "git"}]"#).unwrap();
    std::fs::write(dir.join("bad.json"), r#"[{"tool": "echo"}]"#).unwrap();
    std::fs::write(dir.join("missing.json"), r#"[{"tool": "mcp__demo__nope"}]"#).unwrap();
    for (args, says) in [
        (
            &["chaos", "--faults", "kill,bogus"][..],
            "unknown fault `bogus`",
        ),
        (&["chaos", "--duration", "soon"][..], "--duration"),
        (
            &["chaos", "--load", "nowhere.json"][..],
            "cannot read the load file",
        ),
        (
            &["chaos", "--load", "bad.json"][..],
            "not a qualified tool name",
        ),
        (
            &["chaos", "--load", "other.json"][..],
            "not one of the servers run (demo)",
        ),
        (
            &["chaos", "--faults", "reset,cut-stream"][..],
            "applies to these servers",
        ),
        (
            &["chaos", "--load", "missing.json"][..],
            "its server does not offer",
        ),
    ] {
        let out = run(&dir, args, Duration::from_secs(60));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: no report: {}",
            text(&out.stdout)
        );
    }
}
