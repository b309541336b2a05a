//! Hostile servers: one test per way a server can break the protocol on purpose
//! (`mcpvisor demo-server --hostile <behaviour>`).
//!
//! Each misbehaviour ends in a typed error or is ignored with a log line, and
//! never takes down the host or the healthy demo server running beside it in the
//! same `Host`: every test checks that one still answers and was never restarted.

use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::future::join_all;
use futures::{FutureExt, StreamExt};
use mcpvisor::TransportError;
use mcpvisor::{CallError, Host, HostEvent, ServerState};
use mcpvisor_demo::{
    GARBAGE_FLOOD_DONE, GARBAGE_FLOOD_LINES, HUGE_SCHEMA_PROPERTIES, MANY_TOOLS, REORDER_BATCH,
    SERVER_REQUESTS, many_tool_name,
};
use serde_json::{Value, json};
use testkit::{call, demo, eventually, fast_options, next_ready, wait_for};

/// The flood tests run alone (a flood loads the whole machine); the others share.
static MEMORY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

static LOGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Keeps each formatted log event as one line (the flood test's notifications
/// aside: it sends them by the hundred thousand, and this buffer must not be
/// what its memory bound measures).
struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf);
        if !line.contains("server log:") && !line.contains("notifications/flood") {
            LOGS.lock().unwrap().push(line.into_owned());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() {
    static INIT: OnceLock<()> = OnceLock::new();
    INIT.get_or_init(|| {
        tracing_subscriber::fmt()
            .with_env_filter("warn,mcpvisor_actors=debug,mcpvisor::server_stderr=off")
            .with_writer(|| Capture)
            .with_ansi(false)
            .init();
    });
}

/// Captured log lines about `server` that contain `needle`.
fn logged(server: &str, needle: &str) -> Vec<String> {
    let tag = format!("server={server}");
    LOGS.lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains(&tag) && l.contains(needle))
        .cloned()
        .collect()
}

/// A host running a healthy demo server and `name` with `--hostile behaviour`,
/// both ready.
async fn start(name: &str, behaviour: &str) -> Host {
    capture_logs();
    let specs = vec![demo("healthy", &[]), demo(name, &["--hostile", behaviour])];
    let host = Host::start(specs, fast_options()).await.unwrap();
    let statuses = host.wait_ready(Duration::from_secs(60)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    host
}

/// The healthy server answers, was never restarted, and the host is whole.
async fn assert_healthy(host: &Host) {
    for i in 0..3 {
        let text = format!("still here {i}");
        let r = call(host, "mcp__healthy__echo", json!({ "text": text }))
            .await
            .unwrap_or_else(|e| panic!("healthy server failed: {e}"));
        assert_eq!(r.text(), text);
    }
    let healthy = status(host, "healthy");
    assert_eq!(healthy.state, ServerState::Ready);
    assert_eq!(healthy.restarts, 0, "{healthy:?}");
    assert!(!host.is_shut_down());
}

fn status(host: &Host, name: &str) -> mcpvisor::ServerStatus {
    host.servers()
        .into_iter()
        .find(|s| &*s.name == name)
        .unwrap()
}

async fn echo(host: &Host, server: &str, text: &str) -> Result<String, CallError> {
    let r = call(
        host,
        &format!("mcp__{server}__echo"),
        json!({ "text": text }),
    )
    .await?;
    Ok(r.text())
}

#[tokio::test]
async fn replies_before_initialize_are_ignored() {
    let _shared = MEMORY.read().await;
    let host = start("early", "replies-before-initialize").await;
    // The early "answer" for id 2 listed a tool `ghost`; the real tools/list got id 2 later.
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"mcp__early__echo".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("ghost")), "{names:?}");
    assert_eq!(echo(&host, "early", "after").await.unwrap(), "after");
    assert!(!logged("early", "UnknownResponseId(Number(2))").is_empty());
    assert!(!logged("early", "UnknownResponseId(Number(3))").is_empty());
    assert!(!logged("early", "ErrorWithoutId").is_empty());
    assert_eq!(status(&host, "early").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn answers_with_unknown_ids_are_ignored() {
    let _shared = MEMORY.read().await;
    let host = start("strangers", "unknown-ids").await;
    for text in ["one", "two"] {
        assert_eq!(echo(&host, "strangers", text).await.unwrap(), text);
    }
    assert!(!logged("strangers", "UnknownResponseId(Number(987654321))").is_empty());
    assert!(!logged("strangers", "UnknownResponseId(String(\"no-such-id\"))").is_empty());
    assert!(!logged("strangers", "UnknownResponseId(Number(-1))").is_empty());
    assert_eq!(status(&host, "strangers").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_second_answer_to_the_same_id_is_ignored() {
    let _shared = MEMORY.read().await;
    let host = start("twice", "duplicate-answers").await;
    // Each call gets its own first answer, never the duplicate of an earlier one.
    for text in ["first", "second", "third"] {
        assert_eq!(echo(&host, "twice", text).await.unwrap(), text);
    }
    assert!(
        eventually(Duration::from_secs(5), || logged(
            "twice",
            "UnknownResponseId"
        )
        .len()
            >= 3)
        .await,
        "each duplicate is logged as an unknown id"
    );
    assert_eq!(status(&host, "twice").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn answers_out_of_order_reach_their_own_calls() {
    let _shared = MEMORY.read().await;
    let host = start("shuffled", "out-of-order").await;
    for round in 0..3 {
        let texts: Vec<String> = (0..REORDER_BATCH).map(|i| format!("{round}-{i}")).collect();
        let results = join_all(texts.iter().map(|t| echo(&host, "shuffled", t))).await;
        for (text, result) in texts.iter().zip(results) {
            assert_eq!(&result.unwrap(), text);
        }
    }
    assert_eq!(status(&host, "shuffled").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn answers_in_one_batch_reach_their_own_calls() {
    let _shared = MEMORY.read().await;
    let host = start("batcher", "batched-answers").await;
    for round in 0..3 {
        let texts: Vec<String> = (0..REORDER_BATCH).map(|i| format!("{round}-{i}")).collect();
        let results = join_all(texts.iter().map(|t| echo(&host, "batcher", t))).await;
        for (text, result) in texts.iter().zip(results) {
            assert_eq!(&result.unwrap(), text);
        }
    }
    assert_eq!(status(&host, "batcher").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn invalid_json_lines_are_ignored_with_a_log_line() {
    let _shared = MEMORY.read().await;
    let host = start("babbler", "invalid-json").await;
    for text in ["a", "b"] {
        assert_eq!(echo(&host, "babbler", text).await.unwrap(), text);
    }
    // Five junk lines per answer, two answers.
    let malformed = logged("babbler", "ignored malformed message: invalid JSON");
    assert!(malformed.len() >= 10, "{malformed:?}");
    assert_eq!(status(&host, "babbler").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_garbage_flood_is_ignored_without_flooding_the_log() {
    let _shared = MEMORY.read().await;
    let host = start("garbler", "garbage-flood").await;
    let mut events = Box::pin(host.events());
    wait_for(&mut events, Duration::from_secs(60), |e| {
        matches!(e, HostEvent::ServerLog { server, message } if &**server == "garbler"
            && message.data == GARBAGE_FLOOD_DONE)
    })
    .await;
    // Every line was read and ignored; the log got the first few and then one
    // in a thousand, each with the running count.
    let lines = logged("garbler", "ignored malformed message");
    assert!(lines.len() >= 32, "{}", lines.len());
    assert!(
        lines.len() <= 32 + GARBAGE_FLOOD_LINES / 1000,
        "{}",
        lines.len()
    );
    assert!(!logged("garbler", &format!("ignored={GARBAGE_FLOOD_LINES}")).is_empty());
    assert_eq!(
        echo(&host, "garbler", "still fine").await.unwrap(),
        "still fine"
    );
    assert_eq!(status(&host, "garbler").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn json_that_is_not_an_object_is_ignored_with_a_log_line() {
    let _shared = MEMORY.read().await;
    let host = start("scalars", "not-an-object").await;
    assert_eq!(echo(&host, "scalars", "x").await.unwrap(), "x");
    assert!(
        logged("scalars", "JSON-RPC message is not an object").len() >= 4,
        "42, a string, null, true"
    );
    assert!(!logged("scalars", "empty JSON-RPC batch").is_empty());
    assert!(!logged("scalars", "ignored malformed batch element").is_empty());
    assert_eq!(status(&host, "scalars").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_wrong_jsonrpc_version_is_never_taken_as_the_answer() {
    let _shared = MEMORY.read().await;
    let host = start("retro", "wrong-version").await;
    // The "1.0" copy (and the one without `jsonrpc`) say "wrong version" and come first.
    assert_eq!(echo(&host, "retro", "real").await.unwrap(), "real");
    assert!(logged("retro", "wrong or missing jsonrpc version").len() >= 2);
    assert_eq!(status(&host, "retro").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_notification_flood_leaves_the_host_responsive() {
    let _alone = MEMORY.write().await;
    let host = start("flood", "notification-flood").await;
    let mut events = Box::pin(host.events());
    // Let the flood fill every queue on its way, then measure.
    let mut seen = 0u64;
    let warm_up = tokio::time::Instant::now() + Duration::from_secs(1);
    while let Ok(Some(e)) = tokio::time::timeout_at(warm_up, events.next()).await {
        seen += flood_weight(&e);
    }
    for i in 0..50 {
        let text = format!("during the flood {i}");
        let r = call(&host, "mcp__healthy__echo", json!({ "text": text }))
            .await
            .unwrap();
        assert_eq!(r.text(), text);
        while let Some(Some(e)) = events.next().now_or_never() {
            seen += flood_weight(&e);
        }
    }
    // The flooding server itself still answers: its answers queue behind the flood.
    assert_eq!(echo(&host, "flood", "me too").await.unwrap(), "me too");
    assert!(
        seen > 1_000,
        "the flood was real: {seen} notifications seen"
    );
    // Its peak memory: mcpvisor/tests/memory_bounds.rs.
    assert_eq!(status(&host, "flood").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

/// Flood notifications an event stands for (a lag report stands for many).
fn flood_weight(e: &HostEvent) -> u64 {
    match e {
        HostEvent::ServerLog { server, .. } if &**server == "flood" => 1,
        HostEvent::EventsLost { count } => *count,
        _ => 0,
    }
}

#[tokio::test]
async fn ten_thousand_tools_in_one_list_are_all_routed() {
    let _shared = MEMORY.read().await;
    let host = start("many", "many-tools").await;
    let routed = host
        .tools()
        .iter()
        .filter(|t| t.name.server() == "many" && t.name.tool().starts_with('t'))
        .count();
    assert_eq!(routed, MANY_TOOLS);
    let last = format!("mcp__many__{}", many_tool_name(MANY_TOOLS - 1));
    let r = call(&host, &last, json!({ "text": "the last one" }))
        .await
        .unwrap();
    assert_eq!(r.text(), "the last one");
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_very_large_input_schema_is_routed_whole() {
    let _shared = MEMORY.read().await;
    let host = start("wide", "huge-schema").await;
    let tool = host
        .tools()
        .into_iter()
        .find(|t| t.name.as_str() == "mcp__wide__huge")
        .expect("the huge tool is routed");
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.len(), HUGE_SCHEMA_PROPERTIES + 1);
    let rendered = tool.to_anthropic_tool().to_string();
    assert!(rendered.len() > 500_000, "{}", rendered.len());
    let r = call(&host, "mcp__wide__huge", json!({ "text": "fine" }))
        .await
        .unwrap();
    assert_eq!(r.text(), "fine");
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_listing_nested_past_the_parser_limit_ends_in_a_startup_timeout() {
    let _shared = MEMORY.read().await;
    capture_logs();
    let mut options = fast_options();
    options.restart.max_restarts = 1;
    let mut abyss = demo("abyss", &["--hostile", "too-deep"]);
    abyss.startup_timeout = Some(Duration::from_millis(800));
    let specs = vec![demo("healthy", &[]), abyss];
    let host = Host::start(specs, options).await.unwrap();
    let mut events = Box::pin(host.events());
    // The parser stops at its depth limit (no stack overflow) and the answer is
    // unreadable, so the listing never completes and startup times out.
    let failed = wait_for(
        &mut events,
        Duration::from_secs(20),
        |e| matches!(e, HostEvent::ServerFailed { server, .. } if &**server == "abyss"),
    )
    .await;
    let HostEvent::ServerFailed { reason, .. } = failed else {
        unreachable!()
    };
    assert!(
        reason.to_string().contains("startup did not finish"),
        "{reason}"
    );
    assert!(!logged("abyss", "recursion limit exceeded").is_empty());
    assert!(host.tools().iter().all(|t| t.name.server() != "abyss"));
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_stderr_flood_is_bounded() {
    let _alone = MEMORY.write().await;
    let host = start("noisy", "stderr-flood").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..50 {
        let text = format!("over the noise {i}");
        assert_eq!(echo(&host, "noisy", &text).await.unwrap(), text);
    }
    // Its peak memory: mcpvisor/tests/memory_bounds.rs. The error of a crash carries a bounded excerpt of all that stderr.
    let e = call(&host, "mcp__noisy__crash", json!({ "code": 9 }))
        .await
        .unwrap_err();
    let CallError::Transport {
        source: TransportError::Exited {
            status,
            stderr_tail,
        },
        ..
    } = &e
    else {
        panic!("expected an exit, got {e}")
    };
    assert_eq!(status.code(), Some(9));
    assert!(!stderr_tail.is_empty());
    assert!(stderr_tail.len() <= 1100, "{} bytes", stderr_tail.len());
    assert!(e.to_string().len() < 1400, "{}", e.to_string().len());
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_partial_line_then_eof_fails_the_call_and_the_server_comes_back() {
    let _shared = MEMORY.read().await;
    let host = start("cut", "partial-line-eof").await;
    let mut events = Box::pin(host.events());
    let first_pid = status(&host, "cut").pid.unwrap();
    let e = echo(&host, "cut", "never whole").await.unwrap_err();
    let CallError::Transport {
        source: TransportError::Exited { status, .. },
        ..
    } = &e
    else {
        panic!("expected an exit, got {e}")
    };
    assert_eq!(status.code(), Some(0));
    assert!(!logged("cut", "stream ended inside a frame").is_empty());
    // It is restarted: a new process, ready again (and cut again on its next call).
    let ready = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerReady { server, pid: Some(p), .. } if &**server == "cut" && *p != first_pid)
    })
    .await;
    assert!(matches!(ready, HostEvent::ServerReady { .. }));
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn requests_the_client_never_advertised_get_method_not_found() {
    let _shared = MEMORY.read().await;
    let host = start("asker", "server-requests").await;
    let mut answers = Vec::new();
    for _ in 0..400 {
        let r = call(&host, "mcp__asker__client_answers", json!({}))
            .await
            .unwrap();
        answers = serde_json::from_str::<Vec<Value>>(&r.text()).unwrap();
        if answers.len() >= SERVER_REQUESTS.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answers.len(), SERVER_REQUESTS.len(), "{answers:?}");
    for (method, id) in SERVER_REQUESTS {
        let answer = answers.iter().find(|a| a["id"] == id).unwrap();
        if method == "ping" {
            assert_eq!(answer["result"], json!({}), "{answer}");
        } else {
            assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        }
    }
    assert_eq!(status(&host, "asker").restarts, 0);
    assert_healthy(&host).await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_flooding_server_never_starves_a_server_that_starts_beside_it() {
    // The healthy server's first ready comes while the flood is already running.
    let _alone = MEMORY.write().await;
    capture_logs();
    let specs = vec![
        demo("flood", &["--hostile", "notification-flood"]),
        demo("healthy", &[]),
    ];
    let host = Host::start(specs, fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    assert_healthy(&host).await;
    host.shutdown().await;
}
