//! A demo-server child process spoken to in raw JSON lines.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

/// Generous, so a slow machine passes and a bug fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running `mcpvisor demo-server`, killed when dropped.
pub struct Demo {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Demo {
    pub fn start(args: &[&str]) -> Demo {
        Demo::start_with_stderr(args, Stdio::inherit())
    }

    pub fn start_with_stderr(args: &[&str], stderr: Stdio) -> Demo {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
            .arg("demo-server")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the demo server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        Demo {
            child,
            stdin,
            stdout,
        }
    }

    pub async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write newline");
        stdin.flush().await.expect("flush");
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next stdout line, or `None` at end of output or after `wait`.
    pub async fn line_within(&mut self, wait: Duration) -> Option<String> {
        match timeout(wait, self.stdout.next_line()).await {
            Ok(line) => line.expect("read stdout"),
            Err(_) => None,
        }
    }

    pub async fn next_message(&mut self) -> Value {
        let line = self
            .line_within(PATIENCE)
            .await
            .expect("a line from the server in time");
        serde_json::from_str(&line).expect("every stdout line is JSON")
    }

    /// Reads until the response to `id`; returns it and everything seen before it.
    pub async fn response(&mut self, id: Value) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let m = self.next_message().await;
            let is_answer = m.get("result").is_some() || m.get("error").is_some();
            if is_answer && m.get("id") == Some(&id) {
                return (before, m);
            }
            before.push(m);
        }
    }

    pub async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(req).await;
        self.response(id).await.1
    }

    pub async fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        let params = json!({"name": tool, "arguments": arguments});
        self.request(json!(id), "tools/call", params).await
    }

    pub async fn initialize(&mut self) -> Value {
        let params = json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}
        });
        let answer = self.request(json!(0), "initialize", params).await;
        self.notify("notifications/initialized", json!({})).await;
        answer
    }

    pub async fn exit_status(&mut self) -> ExitStatus {
        timeout(PATIENCE, self.child.wait())
            .await
            .expect("server exits in time")
            .expect("wait for the server")
    }

    pub async fn close_stdin(&mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.exit_status().await
    }

    /// Every tool name, following `nextCursor`; asserts each page's size.
    pub async fn all_tool_names(&mut self, page_size: usize) -> Vec<String> {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for page in 100.. {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let result = self.request(json!(page), "tools/list", params).await["result"].clone();
            let tools = result["tools"].as_array().expect("tools array").clone();
            for tool in &tools {
                assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
                assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
                assert!(tool["inputSchema"]["properties"].is_object(), "{tool}");
                names.push(tool["name"].as_str().expect("name").to_string());
            }
            cursor = result["nextCursor"].as_str().map(str::to_string);
            match cursor {
                Some(_) => assert_eq!(tools.len(), page_size, "full page before the last"),
                None => {
                    assert!(!tools.is_empty() && tools.len() <= page_size);
                    return names;
                }
            }
        }
        unreachable!("the page loop only ends by returning")
    }
}

/// The first text block of a tool result.
pub fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {answer}"))
}

/// The built-in tools in listing order, written out independently of the server code.
pub const BUILT_IN: [&str; 12] = [
    "echo",
    "add",
    "sleep",
    "cancelled",
    "fail",
    "crash",
    "flood",
    "progress",
    "pid",
    "grandchild_pid",
    "log",
    "add_tool",
];
