//! Faults dealt through `mcpvisor serve --allow-faults` as an agent sees them:
//! an MCP client on `serve --stdio` keeps working while one of two servers is
//! stopped and then killed (its calls wait or fail typed, then reach the new
//! process; the healthy server's calls never notice); and `mcpvisor/inject`
//! over HTTP is refused unless the endpoint requires the bearer token.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::attached::{Lines, eventually, kill_group, pid, run_ok, try_pid};
use testkit::serve::{EXIT_TIMEOUT, HttpServe, wait_timeout};

const SECRET: &str = "tok-inject-9b1e-never-printed-5c7a2f";

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-inject-clients", tag)
}

/// A `.mcp.json` in `dir` with a demo server under each name, all approved.
fn two_demo_servers(dir: &Path, names: &[&str]) {
    let servers: serde_json::Map<String, Value> = names
        .iter()
        .map(|n| {
            let entry = json!({"command": testkit::mcpvisor_exe(), "args": ["demo-server"]});
            (n.to_string(), entry)
        })
        .collect();
    let config = json!({ "mcpServers": servers });
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    run_ok(dir, &[&["enable"][..], names].concat());
}

/// An MCP client speaking newline JSON-RPC to `mcpvisor serve --stdio`, as a
/// host's agent would.
struct StdioAgent {
    child: Child,
    stdin: ChildStdin,
    out: Lines,
    err: Lines,
    /// Answers read while waiting for another, kept for their own wait.
    early: Vec<Value>,
}

impl StdioAgent {
    fn start(dir: &Path, flags: &[&str]) -> StdioAgent {
        let mut child = testkit::attached::mcpvisor(dir)
            .args(["--restart-initial-backoff-ms", "50", "serve", "--stdio"])
            .args(flags)
            .stdin(Stdio::piped())
            .spawn()
            .expect("start serve --stdio");
        let stdin = child.stdin.take().unwrap();
        let out = Lines::start(child.stdout.take().unwrap());
        let err = Lines::start(child.stderr.take().unwrap());
        let mut agent = StdioAgent {
            child,
            stdin,
            out,
            err,
            early: Vec::new(),
        };
        agent.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "agent", "version": "1"}}}),
        );
        agent.answer(1, Duration::from_secs(30));
        agent.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        agent
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to serve --stdio");
    }

    /// Sends `tools/call` of `tool` with `id`.
    fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
    }

    /// The answer with `id`, within `within` (fails the test otherwise).
    /// Answers come in the order they are ready, not the order asked.
    fn answer(&mut self, id: u64, within: Duration) -> Value {
        if let Some(at) = self.early.iter().position(|v| v["id"] == id) {
            return self.early.remove(at);
        }
        let early = &mut self.early;
        let line = self.out.wait_for(within, |l| {
            let Ok(v) = serde_json::from_str::<Value>(l) else {
                return false;
            };
            if v["id"] == id {
                return true;
            }
            if !v["id"].is_null() {
                early.push(v);
            }
            false
        });
        let Some(line) = line else {
            panic!(
                "no answer to {id} within {within:?}\nstdout:\n{}\nstderr:\n{}",
                self.out.text(),
                self.err.text()
            );
        };
        serde_json::from_str(&line).unwrap()
    }

    /// A tool result's text; `Err` with it when the result is an error.
    fn text_of(answer: &Value) -> Result<String, String> {
        let result = &answer["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no tool result: {answer}"))
            .to_string();
        if result["isError"] == true {
            Err(text)
        } else {
            Ok(text)
        }
    }

    /// Ends the session (closes stdin) and waits for serve to exit.
    fn finish(mut self) {
        drop(self.stdin);
        match wait_timeout(&mut self.child, EXIT_TIMEOUT) {
            Some(status) => assert!(status.success(), "serve --stdio exited with {status}"),
            None => {
                kill_group(&mut self.child);
                panic!("serve --stdio did not end with its input");
            }
        }
    }
}

#[test]
fn an_agent_on_serve_stdio_keeps_working_while_one_of_its_servers_is_faulted() {
    let dir = empty_dir("agent");
    two_demo_servers(&dir, &["flaky", "steady"]);
    let mut agent = StdioAgent::start(&dir, &["--allow-faults"]);
    agent.call(2, "mcp__flaky__pid", json!({}));
    agent.call(3, "mcp__steady__pid", json!({}));
    let flaky: u32 = StdioAgent::text_of(&agent.answer(2, Duration::from_secs(30)))
        .unwrap()
        .parse()
        .unwrap();
    let steady: u32 = StdioAgent::text_of(&agent.answer(3, Duration::from_secs(30)))
        .unwrap()
        .parse()
        .unwrap();
    // The CLI reaches the same supervisor through the socket.
    assert_eq!(pid(&dir, "flaky"), flaky);

    // Stopped: the agent's call to it waits; its call to the other does not.
    let dealt = Instant::now();
    run_ok(&dir, &["inject", "flaky", "stop", "--for", "2s"]);
    agent.call(4, "mcp__flaky__echo", json!({"text": "late"}));
    agent.call(5, "mcp__steady__echo", json!({"text": "on time"}));
    let steady_answer = agent.answer(5, Duration::from_secs(10));
    assert_eq!(StdioAgent::text_of(&steady_answer).unwrap(), "on time");
    // Lines are read in order: had the stopped server's answer come first,
    // it would be waiting among the early ones.
    assert!(
        !agent.early.iter().any(|v| v["id"] == 4),
        "the healthy server's call waited for the stopped one"
    );
    let late = agent.answer(4, Duration::from_secs(20));
    assert_eq!(StdioAgent::text_of(&late).unwrap(), "late");
    assert!(dealt.elapsed() >= Duration::from_secs(2));

    // Killed: the agent's next call to it fails typed or reaches the new
    // process; the other server keeps its process throughout.
    run_ok(&dir, &["inject", "flaky", "kill"]);
    agent.call(6, "mcp__flaky__pid", json!({}));
    agent.call(7, "mcp__steady__pid", json!({}));
    match StdioAgent::text_of(&agent.answer(6, Duration::from_secs(30))) {
        Ok(pid) => assert_ne!(pid, flaky.to_string(), "the killed process answered"),
        Err(said) => assert!(
            said.contains("`flaky`"),
            "a typed error names flaky: {said}"
        ),
    }
    let steady_now = StdioAgent::text_of(&agent.answer(7, Duration::from_secs(10))).unwrap();
    assert_eq!(steady_now, steady.to_string(), "steady was not restarted");
    let mut id = 8;
    let back = eventually(Duration::from_secs(20), || {
        id += 1;
        agent.call(id, "mcp__flaky__pid", json!({}));
        StdioAgent::text_of(&agent.answer(id, Duration::from_secs(30)))
            .is_ok_and(|p| p != flaky.to_string())
    });
    assert!(back, "flaky never answered from a new process");
    assert!(
        agent
            .out
            .text()
            .contains("notifications/tools/list_changed"),
        "the agent was told its tools changed while flaky restarted"
    );
    assert_eq!(try_pid(&dir, "steady"), Some(steady));
    agent.finish();
}

/// POSTs one JSON-RPC message to `url`; the JSON-RPC answer (read from an SSE
/// stream when it came as one).
async fn rpc(url: &str, headers: &[(&str, &str)], body: Value) -> (u16, Option<String>, Value) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body.to_string()).send().await.expect("POST");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.unwrap();
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&text)
        .trim();
    let value = if json.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    (status, session, value)
}

/// Opens an initialized HTTP session; returns its id.
async fn open_session(url: &str, auth: &[(&str, &str)]) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "http-agent", "version": "1"}}});
    let (status, session, answer) = rpc(url, auth, initialize).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [auth, &[("mcp-session-id", session.as_str())]].concat();
    let (status, _, _) = rpc(url, &headers, initialized).await;
    assert_eq!(status, 202);
    session
}

fn inject_kill() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "mcpvisor/inject",
        "params": {"server": "demo", "fault": "kill"}})
}

#[tokio::test]
async fn over_http_inject_is_refused_without_the_bearer_token_even_with_allow_faults() {
    let dir = empty_dir("http-open");
    let args = ["--allow-faults", "--http", "127.0.0.1:0", "--no-token"];
    let mut serve = HttpServe::start(&dir, &args, None);
    let before = pid(&dir, "demo");
    let session = open_session(&serve.url, &[]).await;
    let (status, _, answer) = rpc(&serve.url, &[("mcp-session-id", &session)], inject_kill()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["error"]["code"], -32051, "{answer}");
    assert_eq!(answer["error"]["data"]["reason"], "needs_token", "{answer}");
    let said = answer["error"]["message"].as_str().unwrap();
    assert!(said.contains("bearer token"), "{said}");
    // Clearing is refused the same way.
    let clear = json!({"jsonrpc": "2.0", "id": 3, "method": "mcpvisor/inject",
        "params": {"server": "demo", "clear": true}});
    let (_, _, answer) = rpc(&serve.url, &[("mcp-session-id", &session)], clear).await;
    assert_eq!(answer["error"]["code"], -32051, "{answer}");
    assert_eq!(pid(&dir, "demo"), before, "nothing was dealt");
    assert!(serve.terminate().success());
}

#[tokio::test]
async fn over_http_with_the_bearer_token_inject_deals_the_fault() {
    let dir = empty_dir("http-token");
    let token = dir.join("token");
    std::fs::write(&token, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let args = [
        "--restart-initial-backoff-ms",
        "50",
        "--allow-faults",
        "--http",
        "127.0.0.1:0",
        "--token-file",
        token.to_str().unwrap(),
    ];
    let mut serve = HttpServe::start(&dir, &args, None);
    let before = pid(&dir, "demo");
    let bearer = format!("Bearer {SECRET}");
    let auth = [("authorization", bearer.as_str())];
    let session = open_session(&serve.url, &auth).await;
    let headers = [auth[0], ("mcp-session-id", session.as_str())];
    let (status, _, answer) = rpc(&serve.url, &headers, inject_kill()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"], json!({"server": "demo", "fault": "kill"}));
    assert!(
        eventually(Duration::from_secs(20), || try_pid(&dir, "demo")
            .is_some_and(|p| p != before)),
        "demo never came back as a new process"
    );
    // Without the token the request does not get past the door.
    let (status, _, _) = rpc(&serve.url, &[("mcp-session-id", &session)], inject_kill()).await;
    assert_eq!(status, 401);
    // A server the gateway does not run is a typed error naming it.
    let unknown = json!({"jsonrpc": "2.0", "id": 4, "method": "mcpvisor/inject",
        "params": {"server": "nope", "fault": "kill"}});
    let (_, _, answer) = rpc(&serve.url, &headers, unknown).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["data"]["reason"], "unknown_server",
        "{answer}"
    );
    assert!(serve.terminate().success());
    assert!(!serve.output().contains(SECRET), "the token was logged");
}
