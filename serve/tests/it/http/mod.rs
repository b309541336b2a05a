//! `mcpvisor serve --http` turns away what it must, each refusal with its
//! status and a body a person can read: foreign origins and rebound host
//! names, missing or wrong tokens, oversize bodies, unknown and expired
//! sessions, sessions over the cap; it refuses to start exposed without a token.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::serve::HttpServe;

const SECRET: &str = "tok-7f3a9c-never-printed-4d1e8b20c6";

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-http", tag)
}

/// `mcpvisor serve <args>` with every log line collected (the token must be in none).
struct Serve(HttpServe);

impl Serve {
    /// The refusals here other than the token's are the same with or without
    /// one; they are checked without (`--no-token`) unless the test names a
    /// token file. The default token is tested in `serve_http_hardening.rs`.
    fn start(dir: &Path, args: &[&str]) -> Serve {
        let mut args = args.to_vec();
        if !args.contains(&"--token-file") {
            args.push("--no-token");
        }
        Serve(HttpServe::start(dir, &args, Some("trace")))
    }

    /// SIGTERM (it must exit 0), then everything it logged.
    fn stop(mut self) -> String {
        let status = self.0.terminate();
        assert!(status.success(), "serve exited with {status}");
        self.0.output()
    }
}

impl std::ops::Deref for Serve {
    type Target = HttpServe;

    fn deref(&self) -> &HttpServe {
        &self.0
    }
}

fn serve_command(dir: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = testkit::serve::mcpvisor(dir);
    command
        .arg("serve")
        .args(extra)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "serve-http-test", "version": "1"}}})
}

async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("POST");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// Opens a session; returns its id.
async fn open_session(url: &str, headers: &[(&str, &str)]) -> String {
    let (status, h, body) = post(url, headers, initialize().to_string()).await;
    assert_eq!(status, 200, "{body}");
    h.get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_string()
}

/// The JSON-RPC error message of a refusal body.
fn message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body}"));
    v["error"]["message"].as_str().unwrap().to_string()
}

mod door;
mod revisions;
mod sessions;
mod stateless;
