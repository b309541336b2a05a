//! `mcpvisor serve` as the Rust SDK (rmcp) sees it, over stdio and over
//! Streamable HTTP, in both eras: initialized at 2025-03-26, and at 2026-07-28
//! through rmcp's `server/discover` lifecycle (no `initialize`, no fallback).
//! The scenario of serve/tests/it/sdk_clients.rs with rmcp as the client: list
//! the routed tools of the demo server, echo, progress, cancel a long sleep (the
//! demo server must see the cancellation and the session must go on), then crash
//! the demo server: the call fails as a tool error, a
//! `notifications/tools/list_changed` announces the change (at 2026-07-28 on a
//! `subscriptions/listen` stream), and the tools come back served by a new process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientConfig, ClientRequest,
    JsonObject, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerNotification,
    ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RequestHandle,
    RunningService,
};
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Notify;

const ECHO: &str = "mcp__demo__echo";
/// Any one request, and the connection.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);
/// From the crash to the demo tools listed again.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(20);
/// From start to the "serving" line of `mcpvisor serve --http`.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);
/// From SIGTERM to the exit of `mcpvisor serve --http`.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The flags every `mcpvisor serve` of these tests gets after its mode.
const SERVE_FLAGS: [&str; 2] = ["--restart-initial-backoff-ms", "50"];

/// A fresh directory without `.mcp.json`, so `serve` supervises the demo server.
fn empty_dir(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("gateway-rmcp-{tag}"))
}

/// The client's handler: records progress notifications and list changes.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    list_changed: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl Recorder {
    fn progress_for(&self, token: &ProgressToken) -> usize {
        let seen = self.progress.lock().unwrap();
        seen.iter().filter(|p| &p.progress_token == token).count()
    }

    /// Waits until more than `seen` list changes have arrived; returns their count.
    async fn list_changed_past(&self, seen: usize) -> usize {
        loop {
            let changed = self.changed.notified();
            let now = self.list_changed.load(Ordering::SeqCst);
            if now > seen {
                return now;
            }
            changed.await;
        }
    }
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_03_26)
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// `what` within `within`, or a panic naming it and what serve logged.
async fn bounded<T>(what: &str, within: Duration, logs: &Logs, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(within, fut).await {
        Ok(value) => value,
        Err(_) => panic!(
            "{what}: no answer within {within:?}\nserve stderr:\n{}",
            logs.text()
        ),
    }
}

/// What serve printed on stderr so far.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<String>>);

impl Logs {
    fn push(&self, line: &str) {
        let mut text = self.0.lock().unwrap();
        text.push_str(line);
        text.push('\n');
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect()
}

/// Sends `tools/call` and hands back the pending request (cancellable, with its progress token).
async fn start_call(client: &Client, name: &str, args: Value) -> RequestHandle<RoleClient> {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments(args));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap_or_else(|e| panic!("send {name}: {e}"))
}

async fn finish_call(handle: RequestHandle<RoleClient>, name: &str, logs: &Logs) -> CallToolResult {
    let answer = bounded(name, STEP_TIMEOUT, logs, handle.await_response()).await;
    match answer {
        Ok(ServerResult::CallToolResult(result)) => result,
        Ok(other) => panic!(
            "{name}: not a tool result: {other:?}\nserve stderr:\n{}",
            logs.text()
        ),
        Err(e) => panic!("{name}: {e}\nserve stderr:\n{}", logs.text()),
    }
}

async fn call(client: &Client, name: &str, args: Value, logs: &Logs) -> CallToolResult {
    let handle = start_call(client, name, args).await;
    finish_call(handle, name, logs).await
}

async fn tool_names(client: &Client, logs: &Logs) -> Vec<String> {
    let tools = bounded("tools/list", STEP_TIMEOUT, logs, client.list_all_tools()).await;
    let tools = tools.unwrap_or_else(|e| panic!("tools/list: {e}\nserve stderr:\n{}", logs.text()));
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

async fn pid(client: &Client, logs: &Logs) -> u32 {
    let result = call(client, "mcp__demo__pid", json!({}), logs).await;
    let text = text_of(&result);
    text.parse()
        .unwrap_or_else(|_| panic!("pid answered {result:?}\nserve stderr:\n{}", logs.text()))
}

/// Re-lists on each list_changed past the `seen`th until the demo server's tools are there.
async fn tools_after_list_changed(
    client: &Client,
    recorder: &Recorder,
    mut seen: usize,
    logs: &Logs,
) -> Vec<String> {
    loop {
        seen = recorder.list_changed_past(seen).await;
        let names = tool_names(client, logs).await;
        if names.iter().any(|t| t == ECHO) {
            return names;
        }
    }
}

/// The scenario on an initialized session.
/// How the client reaches the gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Era {
    /// `initialize` at 2025-03-26.
    Session,
    /// `server/discover` at 2026-07-28, with no fallback.
    Stateless,
}

impl Era {
    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Era::Session => ClientLifecycleMode::Initialize,
            Era::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }

    fn version(self) -> ProtocolVersion {
        match self {
            Era::Session => ProtocolVersion::V_2025_03_26,
            Era::Stateless => ProtocolVersion::V_2026_07_28,
        }
    }
}

async fn scenario(client: &Client, recorder: &Recorder, logs: &Logs, era: Era) {
    let info = client.peer_info().expect("the server's initialize result");
    assert_eq!(info.protocol_version, era.version(), "negotiated version");

    // serve may answer before the demo server is up: its tools then come with a list_changed.
    let changes = recorder.list_changed.load(Ordering::SeqCst);
    let mut tools = tool_names(client, logs).await;
    if !tools.iter().any(|t| t == ECHO) {
        tools = bounded(
            "list_changed and the demo tools at start",
            RECOVERY_TIMEOUT,
            logs,
            tools_after_list_changed(client, recorder, changes, logs),
        )
        .await;
    }
    for tool in mcpvisor_demo::BUILT_IN_TOOLS.map(|t| format!("mcp__demo__{t}")) {
        assert!(tools.contains(&tool), "{tool} not in {tools:?}");
    }

    let echo = call(client, ECHO, json!({ "text": "hello from rmcp" }), logs).await;
    assert_eq!(text_of(&echo), "hello from rmcp", "echo: {echo:?}");
    assert_ne!(echo.is_error, Some(true), "echo: {echo:?}");

    let handle = start_call(
        client,
        "mcp__demo__progress",
        json!({ "steps": 3, "delay_ms": 20 }),
    )
    .await;
    let token = handle.progress_token.clone();
    let progress = finish_call(handle, "mcp__demo__progress", logs).await;
    assert_eq!(text_of(&progress), "done 3 steps", "progress: {progress:?}");
    assert!(
        recorder.progress_for(&token) >= 1,
        "no progress notification with token {token:?} reached the client; seen: {:?}\nserve stderr:\n{}",
        recorder.progress.lock().unwrap(),
        logs.text()
    );

    // Cancel a 30 s sleep after 1 s: rmcp sends notifications/cancelled.
    let mut handle = start_call(client, "mcp__demo__sleep", json!({ "ms": 30_000 })).await;
    let early = tokio::time::timeout(Duration::from_secs(1), &mut handle.rx).await;
    assert!(early.is_err(), "the 30 s sleep answered early: {early:?}");
    bounded(
        "cancel the sleep",
        STEP_TIMEOUT,
        logs,
        handle.cancel(Some("cancelled by the test client".into())),
    )
    .await
    .expect("send notifications/cancelled");
    let after = call(client, ECHO, json!({ "text": "after cancel" }), logs).await;
    assert_eq!(
        text_of(&after),
        "after cancel",
        "echo after the cancellation"
    );
    // The cancellation reaches the demo server asynchronously: poll for it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let seen = loop {
        let result = call(client, "mcp__demo__cancelled", json!({}), logs).await;
        let seen: Value = serde_json::from_str(&text_of(&result)).expect("cancelled answers JSON");
        let has_sleep = seen
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c["tool"] == "sleep"));
        if has_sleep || Instant::now() > deadline {
            break seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        seen.as_array()
            .is_some_and(|a| a.iter().any(|c| c["tool"] == "sleep")),
        "the demo server saw no cancellation of its sleep: {seen}\nserve stderr:\n{}",
        logs.text()
    );

    let before = pid(client, logs).await;
    let changes_before = recorder.list_changed.load(Ordering::SeqCst);
    // At 2026-07-28 change notifications come only on a listen stream.
    let mut listening = match era {
        Era::Session => None,
        Era::Stateless => {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            let opened = bounded(
                "subscriptions/listen",
                STEP_TIMEOUT,
                logs,
                client.listen(filter),
            );
            let subscription = opened.await.expect("open subscriptions/listen");
            assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
            Some(subscription)
        }
    };
    let crash = call(client, "mcp__demo__crash", json!({}), logs).await;
    assert_eq!(
        crash.is_error,
        Some(true),
        "the crashed call is not a tool error: {crash:?}\nserve stderr:\n{}",
        logs.text()
    );
    match &mut listening {
        None => {
            bounded(
                "list_changed and the demo tools back after the crash",
                RECOVERY_TIMEOUT,
                logs,
                tools_after_list_changed(client, recorder, changes_before, logs),
            )
            .await;
        }
        Some(subscription) => {
            let back = async {
                loop {
                    let next = subscription.next().await.expect("the listen stream");
                    let Some(notification) = next else {
                        panic!("the listen stream ended before the tools came back");
                    };
                    if matches!(
                        notification,
                        ServerNotification::ToolListChangedNotification(_)
                    ) && tool_names(client, logs).await.iter().any(|t| t == ECHO)
                    {
                        break;
                    }
                }
            };
            bounded(
                "list_changed on the listen stream",
                RECOVERY_TIMEOUT,
                logs,
                back,
            )
            .await;
        }
    }
    let after = pid(client, logs).await;
    assert_ne!(
        before, after,
        "the demo server after the crash is the same process"
    );
}

/// Ends the session within a bound.
async fn close(client: Client, logs: &Logs) {
    let quit = bounded("close the session", STEP_TIMEOUT, logs, client.cancel()).await;
    quit.expect("the client's service task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_stdio() {
    over_stdio(Era::Session, "stdio").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_at_2026_over_stdio() {
    over_stdio(Era::Stateless, "stdio-2026").await;
}

async fn over_stdio(era: Era, tag: &str) {
    let dir = empty_dir(tag);
    let logs = Logs::default();
    let command = tokio::process::Command::new(testkit::mcpvisor_exe()).configure(|c| {
        c.args(["serve", "--stdio"])
            .args(SERVE_FLAGS)
            .current_dir(&dir)
            .env("MCPVISOR_HOME", dir.join("home"))
            .kill_on_drop(true);
    });
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpvisor serve --stdio");
    if let Some(stderr) = stderr {
        let logs = logs.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                logs.push(&line);
            }
        });
    }
    let recorder = Recorder::default();
    let client = bounded(
        "initialize",
        STEP_TIMEOUT,
        &logs,
        recorder
            .clone()
            .serve_with_lifecycle(transport, era.lifecycle()),
    )
    .await
    .unwrap_or_else(|e| panic!("initialize: {e}\nserve stderr:\n{}", logs.text()));
    scenario(&client, &recorder, &logs, era).await;
    close(client, &logs).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mcpvisor serve --http` on an ephemeral port; killed (with its group) when dropped.
struct HttpServe {
    child: Child,
    url: String,
    /// The bearer token serve made, which the client sends as a host would.
    token: String,
}

impl HttpServe {
    fn start(dir: &Path, logs: &Logs) -> HttpServe {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(testkit::mcpvisor_exe())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(SERVE_FLAGS)
            .current_dir(dir)
            .env("MCPVISOR_HOME", dir.join("home"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start mcpvisor serve --http");
        let pipe = child.stderr.take().unwrap();
        let (url_tx, url_rx) = mpsc::channel();
        let (token_tx, token_rx) = mpsc::channel();
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("mcpvisor: serving ") {
                    let _ = url_tx.send(url.to_string());
                }
                if let Some((_, rest)) = line.split_once("Bearer <the token in ")
                    && let Some((path, _)) = rest.split_once('>')
                {
                    let _ = token_tx.send(std::path::PathBuf::from(path));
                }
                sink.push(&line);
            }
        });
        let mut serve = HttpServe {
            child,
            url: String::new(),
            token: String::new(),
        };
        match url_rx.recv_timeout(LISTEN_TIMEOUT) {
            Ok(url) => {
                serve.url = url;
                let path = token_rx.try_recv().expect("serve named no token file");
                serve.token = std::fs::read_to_string(path).unwrap().trim().to_string();
            }
            Err(_) => panic!(
                "mcpvisor serve --http printed no serving line within {LISTEN_TIMEOUT:?}\nstderr:\n{}",
                logs.text()
            ),
        }
        serve
    }

    /// SIGTERM, then the exit status within [`EXIT_TIMEOUT`] (`None`: still running).
    fn terminate(&mut self) -> Option<ExitStatus> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM).expect("SIGTERM serve");
        let deadline = Instant::now() + EXIT_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for serve") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_over_http() {
    over_http(Era::Session, "http").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_at_2026_over_http() {
    over_http(Era::Stateless, "http-2026").await;
}

async fn over_http(era: Era, tag: &str) {
    let dir = empty_dir(tag);
    let logs = Logs::default();
    let mut serve = HttpServe::start(&dir, &logs);
    let recorder = Recorder::default();
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            serve.url.clone(),
        )
        .auth_header(serve.token.clone());
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = bounded(
        "initialize",
        STEP_TIMEOUT,
        &logs,
        recorder
            .clone()
            .serve_with_lifecycle(transport, era.lifecycle()),
    )
    .await
    .unwrap_or_else(|e| panic!("initialize: {e}\nserve stderr:\n{}", logs.text()));
    scenario(&client, &recorder, &logs, era).await;
    close(client, &logs).await;
    let status = tokio::task::block_in_place(|| serve.terminate());
    assert!(
        status.is_some_and(|s| s.success()),
        "after SIGTERM, serve {}\nserve stderr:\n{}",
        match status {
            Some(s) => format!("exited with {s}"),
            None => format!("was still running after {EXIT_TIMEOUT:?}"),
        },
        logs.text()
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
