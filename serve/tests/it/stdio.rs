//! One `mcpvisor serve --stdio` session driven line by line: short names,
//! log forwarding after `logging/setLevel`, and the errors a session gets for
//! what it should not send (without losing the session).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::proc::parent_of;

struct StdioSession {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

fn scratch(tag: &str) -> std::path::PathBuf {
    testkit::scratch_dir(&format!("serve-stdio-{tag}"))
}

impl StdioSession {
    fn start(tag: &str, extra: &[&str]) -> StdioSession {
        StdioSession::start_in(&scratch(tag), extra)
    }

    /// A session of `mcpvisor serve --stdio <extra>` in `dir` (home `dir/home`).
    fn start_in(dir: &std::path::Path, extra: &[&str]) -> StdioSession {
        let mut child = Command::new(testkit::mcpvisor_exe())
            .args(["serve", "--stdio"])
            .args(extra)
            .current_dir(dir)
            .env("MCPVISOR_HOME", dir.join("home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut s = StdioSession {
            child,
            stdin,
            lines: rx,
        };
        s.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        s.answer(0);
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: Value) {
        self.stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
    }

    /// The next message matching `pred`, with the ones skipped on the way.
    fn until(&self, pred: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut skipped = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("nothing matching; saw {skipped:#?}"));
            if pred(&v) {
                return (v, skipped);
            }
            skipped.push(v);
        }
    }

    fn answer(&self, id: i64) -> Value {
        self.until(|v| v["id"] == id && v.get("method").is_none()).0
    }

    fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }
}

impl Drop for StdioSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn short_names_are_advertised_and_routed() {
    let mut s = StdioSession::start("short", &["--short-names"]);
    let list = s.request(1, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"demo__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    let echoed = s.request(
        2,
        "tools/call",
        json!({"name": "demo__echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    // The qualified form is not a name this session was given.
    let other = s.request(
        3,
        "tools/call",
        json!({"name": "mcp__demo__echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(other["error"]["code"], -32602, "{other}");
}

#[test]
fn server_logs_reach_a_session_that_asked_for_them() {
    let mut s = StdioSession::start("logs", &[]);
    let args =
        json!({"name": "mcp__demo__log", "arguments": {"level": "warning", "message": "first"}});
    s.request(1, "tools/call", args);
    // Not asked for yet: the next thing on the line is the answer to a ping.
    s.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let (_, skipped) = s.until(|v| v["id"] == 2);
    assert!(
        !skipped
            .iter()
            .any(|v| v["method"] == "notifications/message"),
        "{skipped:?}"
    );
    let set = s.request(3, "logging/setLevel", json!({"level": "warning"}));
    assert_eq!(set["result"], json!({}), "{set}");
    let quiet =
        json!({"name": "mcp__demo__log", "arguments": {"level": "info", "message": "below"}});
    s.request(4, "tools/call", quiet);
    let loud =
        json!({"name": "mcp__demo__log", "arguments": {"level": "error", "message": "second"}});
    s.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": loud}));
    let (log, skipped) = s.until(|v| v["method"] == "notifications/message");
    assert_eq!(log["params"]["logger"], "demo", "{log}");
    assert_eq!(log["params"]["level"], "error", "{log}");
    assert_eq!(log["params"]["data"], "second", "{log}");
    assert!(
        !skipped
            .iter()
            .any(|v| v["method"] == "notifications/message"),
        "the info message passed a warning level: {skipped:?}"
    );
    let bad = s.request(6, "logging/setLevel", json!({"level": "loud"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn what_a_session_should_not_send_gets_an_error_and_the_session_goes_on() {
    let mut s = StdioSession::start("errors", &[]);
    let unknown = s.request(1, "resources/frobnicate", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    s.raw(b"{not json\n");
    let (parse, _) = s.until(|v| v["error"]["code"] == -32700);
    assert!(parse["id"].is_null(), "{parse}");
    // A line over 4 MiB is skipped whole.
    let mut big = vec![b'x'; 4 * 1024 * 1024 + 10];
    big.push(b'\n');
    s.raw(&big);
    let (long, _) = s.until(|v| v["error"]["code"] == -32600);
    assert!(
        long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{long}"
    );
    // The same id twice while the first is running.
    let sleep = json!({"name": "mcp__demo__sleep", "arguments": {"ms": 2000}});
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": sleep}));
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    let (dup, _) = s.until(|v| v["id"] == 7 && v.get("error").is_some());
    assert!(
        dup["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in use"),
        "{dup}"
    );
    let bad_args = s.request(
        8,
        "tools/call",
        json!({"name": "mcp__demo__echo", "arguments": [1]}),
    );
    assert_eq!(bad_args["error"]["code"], -32602, "{bad_args}");
    let slept = s.answer(7);
    assert_eq!(
        slept["result"]["content"][0]["text"], "slept 2000 ms",
        "{slept}"
    );
    let pong = s.request(9, "ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
    // A second initialize is refused and leaves the session as it was.
    let again = s.request(
        10,
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already initialized"),
        "{again}"
    );
    let listed = s.request(11, "tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}

/// `mcpvisor serve --stdio` in a fresh directory, not yet initialized.
fn uninitialized(tag: &str) -> (Child, ChildStdin) {
    let dir = testkit::scratch_dir(&format!("serve-stdio-{tag}"));
    let mut child = Command::new(testkit::mcpvisor_exe())
        .args(["serve", "--stdio"])
        .current_dir(&dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

#[test]
fn requests_before_initialize_are_refused() {
    let (mut child, mut stdin) = uninitialized("early");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n")
        .unwrap();
    drop(stdin);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize"),
        "{v}"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_batch_is_answered_at_2025_03_26_and_refused_from_2025_06_18() {
    let batch = |first: i64| {
        json!([
            {"jsonrpc": "2.0", "id": first, "method": "ping"},
            {"jsonrpc": "2.0", "id": first + 1, "method": "ping"},
        ])
    };
    let mut old = StdioSession::start("batch-old", &[]);
    old.send(batch(1));
    assert_eq!(old.answer(1)["result"], json!({}));
    assert_eq!(old.answer(2)["result"], json!({}));

    // Whatever the client asks, this serve speaks 2025-06-18 alone.
    let mut new = StdioSession::start("batch-new", &["--protocol-versions", "2025-06-18"]);
    new.send(batch(1));
    let (refusal, skipped) = new.until(|v| v.get("error").is_some());
    assert!(refusal["id"].is_null(), "{refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no JSON-RPC batches"),
        "{refusal}"
    );
    assert!(skipped.is_empty(), "nothing of the batch ran: {skipped:?}");
    new.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    let (pong, skipped) = new.until(|v| v["id"] == 3);
    assert_eq!(pong["result"], json!({}), "the session goes on: {pong}");
    assert!(skipped.is_empty(), "nothing of the batch ran: {skipped:?}");
}

#[test]
fn an_initialize_inside_a_batch_is_refused_whole() {
    let (mut child, mut stdin) = uninitialized("batched");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]);
    stdin.write_all(format!("{batch}\n").as_bytes()).unwrap();
    drop(stdin);
    let lines: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one refusal, nothing of the batch ran: {lines:?}"
    );
    assert!(
        lines[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`initialize` must be sent alone"),
        "{lines:?}"
    );
    assert!(child.wait().unwrap().success());
}

fn pid_of(s: &mut StdioSession, id: i64, tool: &str) -> u64 {
    let r = s.request(id, "tools/call", json!({"name": tool, "arguments": {}}));
    r["result"]["content"][0]["text"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{r}"))
}

#[test]
fn a_second_serve_keeps_its_own_options_and_takes_over_when_the_first_stops() {
    let dir = scratch("takeover");
    let mut first = StdioSession::start_in(&dir, &[]);
    let names = |s: &mut StdioSession, id: i64| -> Vec<String> {
        let listed = s.request(id, "tools/list", json!({}));
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(&mut first, 1).contains(&"mcp__demo__echo".to_string()));
    // The second shares the first's servers, under its own names.
    let mut second = StdioSession::start_in(&dir, &["--short-names"]);
    let shown = names(&mut second, 1);
    assert!(
        shown.contains(&"demo__echo".to_string()) && !shown.iter().any(|n| n.starts_with("mcp__")),
        "{shown:?}"
    );
    let served = pid_of(&mut second, 2, "demo__pid");
    assert_eq!(
        parent_of(served as u32),
        Some(first.child.id()),
        "the first runs it"
    );

    // A flag the running serve cannot honour is refused, loudly.
    let refused = Command::new(testkit::mcpvisor_exe())
        .args(["serve", "--stdio", "--allow-faults"])
        .current_dir(&dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--allow-faults"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // The first stops: the second takes its servers over; its host hears
    // that the lists changed, and goes on with the same names.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    second.until(|v| v["method"] == "notifications/tools/list_changed");
    let now = pid_of(&mut second, 3, "demo__pid");
    assert_ne!(now, served);
    assert_eq!(
        parent_of(now as u32),
        Some(second.child.id()),
        "the second runs it now"
    );
    assert!(names(&mut second, 4).contains(&"demo__echo".to_string()));
    drop(first);
}

#[test]
fn a_relayed_session_without_allow_faults_deals_no_faults() {
    let dir = scratch("faults-off");
    let _first = StdioSession::start_in(&dir, &["--allow-faults"]);
    let mut second = StdioSession::start_in(&dir, &[]);
    let refused = second.request(
        5,
        "mcpvisor/inject",
        json!({"server": "demo", "fault": "kill"}),
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("without --allow-faults")),
        "{refused}"
    );
}
