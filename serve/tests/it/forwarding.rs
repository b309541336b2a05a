//! Servers' requests reach, through `mcpvisor serve`, the downstream client
//! whose call they serve — the Python SDK here, in front of server-everything —
//! and a client that does not offer them gets an error its server can report.
//! Elicitation is forwarded the same way once the gateway and the client speak
//! 2025-06-18 or later (the Python SDK takes it from no earlier revision).

use std::process::Command;

use serde_json::{Value, json};
use testkit::peers_dir;
use testkit::serve::python_client_of_serve;

/// A project whose one approved entry is server-everything over stdio.
fn project(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = testkit::scratch_dir(&format!("forward-{tag}"));
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config =
        json!({"mcpServers": {"everything": {"command": "node", "args": [index, "stdio"]}}});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let home = root.join("home");
    let enabled = Command::new(testkit::mcpvisor_exe())
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
    let root = testkit::scratch_dir(&format!("forward-{tag}"));
    let python = peers_dir().join("venv/bin/python");
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [peers_dir().join("python_server.py"), "stdio"]},
    }});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let home = root.join("home");
    let enabled = Command::new(testkit::mcpvisor_exe())
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

/// A raw Streamable HTTP client of `serve --http`, for two sessions at once.
mod raw {
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};

    pub fn request(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request
    }

    /// The JSON-RPC messages in an SSE or JSON body read so far.
    pub fn messages(text: &str) -> Vec<Value> {
        let lines: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .collect();
        if lines.is_empty() {
            return serde_json::from_str(text.trim()).into_iter().collect();
        }
        lines
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// A session that offers sampling, with its GET stream read on a task.
    pub struct Session {
        pub id: String,
        pub stream: Arc<Mutex<String>>,
    }

    impl Session {
        pub async fn open(url: &str, name: &str) -> Session {
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {"sampling": {}},
                "clientInfo": {"name": name, "version": "1"}}});
            let opened = request(url, None, &init).send().await.unwrap();
            assert!(opened.status().is_success());
            let id = opened.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_string();
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            request(url, Some(&id), &initialized).send().await.unwrap();
            let mut get = reqwest::Client::new()
                .get(url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &id)
                .send()
                .await
                .unwrap();
            assert_eq!(get.status().as_u16(), 200);
            let stream = Arc::new(Mutex::new(String::new()));
            let sink = stream.clone();
            tokio::spawn(async move {
                while let Ok(Some(chunk)) = get.chunk().await {
                    sink.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&chunk));
                }
            });
            Session { id, stream }
        }

        pub fn heard(&self) -> String {
            self.stream.lock().unwrap().clone()
        }
    }
}

/// With two clients that both offer sampling, a server's sampling request goes
/// to the one whose call it serves, and the other never sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_request_is_never_shown_to_another_client() {
    let (config, _home) = project("two-clients");
    let dir = config.parent().unwrap().to_path_buf();
    let serve =
        testkit::serve::HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let url = serve.url.clone();
    let a = raw::Session::open(&url, "client-a").await;
    let b = raw::Session::open(&url, "client-b").await;
    let (result, answered_requests) = sample_through(&url, &a).await;
    assert_eq!(answered_requests, 1, "{result}");
    assert!(
        result.to_string().contains("sampled by client A"),
        "{result}"
    );
    assert!(
        !b.heard().contains("sampling/createMessage"),
        "B saw A's request: {}",
        b.heard()
    );
    drop(serve);
}

/// When two clients have calls in flight to the server that asks, the request
/// cannot be matched to one of them: it goes to neither, and the server gets
/// an error it reports in its tool result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_callers_a_servers_request_goes_to_neither() {
    let (config, _home) = project("two-callers");
    let dir = config.parent().unwrap().to_path_buf();
    let serve =
        testkit::serve::HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let url = serve.url.clone();
    let a = raw::Session::open(&url, "client-a").await;
    let b = raw::Session::open(&url, "client-b").await;
    // With a progress token, B's answer is a stream whose first progress
    // notice says the call is running at the server.
    let long = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "mcp__everything__trigger-long-running-operation",
        "arguments": {"duration": 30, "steps": 30},
        "_meta": {"progressToken": "b-long"}}});
    let mut b_call = raw::request(&url, Some(&b.id), &long).send().await.unwrap();
    assert!(b_call.status().is_success());
    let first = tokio::time::timeout(std::time::Duration::from_secs(20), b_call.chunk())
        .await
        .expect("B's call reports progress")
        .unwrap()
        .unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&first).contains("notifications/progress"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    let (result, answered_requests) = sample_through(&url, &a).await;
    assert_eq!(answered_requests, 0, "A was asked: {result}");
    assert!(
        result.to_string().contains("cannot be matched to one"),
        "{result}"
    );
    assert!(
        !b.heard().contains("sampling/createMessage"),
        "B saw A's request: {}",
        b.heard()
    );
    drop(b_call);
    drop(serve);
}

/// Calls the sampling tool in session `a`, answering (once) each sampling
/// request `a` is sent; the call's answer and how many requests `a` answered.
async fn sample_through(url: &str, a: &raw::Session) -> (Value, usize) {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "mcp__everything__trigger-sampling-request",
        "arguments": {"prompt": "for A", "maxTokens": 5}}});
    let mut answer = raw::request(url, Some(&a.id), &call).send().await.unwrap();
    let mut body = String::new();
    let mut answered_requests = 0;
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            // The sampling request comes on the call's stream or on A's GET stream.
            let heard = a.heard();
            let seen = raw::messages(&body)
                .into_iter()
                .chain(raw::messages(&heard));
            for message in seen {
                if message["id"] == 3
                    && (message.get("result").is_some() || message.get("error").is_some())
                {
                    return message;
                }
                if message["method"] == "sampling/createMessage" && answered_requests == 0 {
                    answered_requests += 1;
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "role": "assistant", "model": "test",
                        "content": {"type": "text", "text": "sampled by client A"}}});
                    let sent = raw::request(url, Some(&a.id), &reply).send().await.unwrap();
                    assert!(sent.status().is_success(), "{}", sent.status());
                }
            }
            match tokio::time::timeout(std::time::Duration::from_millis(200), answer.chunk()).await
            {
                Ok(Ok(Some(chunk))) => body.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                Err(_) => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no answer; call stream {body}; A heard {}", a.heard()));
    (result, answered_requests)
}
