//! The demo server as a real child process, spoken to in raw JSON lines.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

// Not `mod support;` at testkit.rs, which cargo would build as a test of its own.
mod support;

use support::{BUILT_IN, Demo, PATIENCE, text};

#[tokio::test]
async fn initialize_answers_the_2025_03_26_handshake() {
    let mut demo = Demo::start(&[]);
    let answer = demo.initialize().await;
    let expected = json!({
        "protocolVersion": "2025-03-26",
        "capabilities": {"tools": {"listChanged": true}, "logging": {}},
        "serverInfo": {"name": "mcpvisor-demo", "version": env!("CARGO_PKG_VERSION")}
    });
    assert_eq!(answer["result"], expected);
    assert_eq!(
        demo.request(json!(1), "ping", json!({})).await["result"],
        json!({})
    );
}

#[tokio::test]
async fn tools_list_pages_honour_page_size_cursor_and_extra_tools() {
    let mut demo = Demo::start(&["--page-size", "5", "--extra-tool", "bad name!"]);
    demo.initialize().await;
    let mut expected: Vec<String> = BUILT_IN.iter().map(|s| s.to_string()).collect();
    expected.push("bad name!".into());
    assert_eq!(demo.all_tool_names(5).await, expected);

    for bad in [json!("abc"), json!("999"), json!(-1), json!(3)] {
        let answer = demo
            .request(json!(1), "tools/list", json!({"cursor": bad}))
            .await;
        assert_eq!(answer["error"]["code"], -32602, "cursor {bad}");
    }

    let answer = demo
        .call(2, "bad name!", json!({"text": "via extra"}))
        .await;
    assert_eq!(text(&answer), "via extra");
}

#[tokio::test]
async fn default_page_size_is_three_and_duplicate_extra_tools_are_listed() {
    let mut demo = Demo::start(&["--extra-tool", "echo", "--extra-tool", "echo"]);
    demo.initialize().await;
    let names = demo.all_tool_names(3).await;
    assert_eq!(names.len(), BUILT_IN.len() + 2);
    assert_eq!(names.iter().filter(|n| *n == "echo").count(), 3);
}

#[tokio::test]
async fn echo_add_and_fail_return_their_results() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let odd = "line\nwith \"quotes\" and ünïcode";
    assert_eq!(text(&demo.call(1, "echo", json!({"text": odd})).await), odd);

    let sum = demo.call(2, "add", json!({"a": 2, "b": 40})).await;
    assert_eq!(text(&sum), "42");
    assert_eq!(sum["result"]["structuredContent"], json!({"sum": 42}));
    let sum = demo.call(3, "add", json!({"a": 0.25, "b": 2})).await;
    assert_eq!(text(&sum), "2.25");

    let failed = demo.call(4, "fail", json!({})).await;
    assert_eq!(failed["result"]["isError"], true);
    assert_eq!(text(&failed), "the tool failed on purpose");
    let failed = demo.call(5, "fail", json!({"message": "custom"})).await;
    assert_eq!(text(&failed), "custom");
}

#[tokio::test]
async fn unknown_tool_and_bad_arguments_are_invalid_params() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let answer = demo.call(1, "nope", json!({})).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(answer["error"]["message"], "unknown tool: nope");

    let answer = demo.call(2, "echo", json!({"text": 5})).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`text`")
    );
    let answer = demo.call(3, "add", json!({"a": 1})).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`b`")
    );
    let answer = demo
        .request(json!(4), "tools/call", json!({"arguments": {}}))
        .await;
    assert_eq!(answer["error"]["code"], -32602);
}

#[tokio::test]
async fn malformed_input_gets_json_rpc_errors_and_batches_are_answered() {
    let mut demo = Demo::start(&[]);
    demo.send_raw("{this is not json").await;
    let parse_error = demo.next_message().await;
    assert_eq!(parse_error["error"]["code"], -32700);
    assert_eq!(parse_error.get("id"), Some(&Value::Null), "id must be null");

    let unknown = demo.request(json!(1), "no/such/method", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);

    demo.send_raw(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]"#).await;
    let mut answered = BTreeSet::new();
    for _ in 0..2 {
        answered.insert(demo.next_message().await["id"].to_string());
    }
    assert_eq!(answered, BTreeSet::from(["2".to_string(), "3".to_string()]));
}

#[tokio::test]
async fn cancelled_sleep_is_never_answered_and_is_recorded() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let sleep = |id: Value, ms: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "sleep", "arguments": {"ms": ms}}})
    };
    demo.send(sleep(json!(5), 400)).await;
    demo.send(sleep(json!("s-1"), 30_000)).await;
    // A sleeping call does not hold up others.
    let quick = timeout(
        Duration::from_secs(2),
        demo.call(6, "echo", json!({"text": "hi"})),
    );
    assert_eq!(
        text(&quick.await.expect("echo answered while sleeps run")),
        "hi"
    );

    demo.notify(
        "notifications/cancelled",
        json!({"requestId": 5, "reason": "test"}),
    )
    .await;
    demo.notify("notifications/cancelled", json!({"requestId": "s-1"}))
        .await;
    demo.notify("notifications/cancelled", json!({"requestId": 999}))
        .await;
    // Well past the 400 ms sleep: an aborted call stays silent.
    assert_eq!(demo.line_within(Duration::from_millis(800)).await, None);

    let recorded = demo.call(7, "cancelled", json!({})).await;
    let recorded: Value = serde_json::from_str(text(&recorded)).expect("JSON array text");
    let expected =
        json!([{"requestId": 5, "tool": "sleep"}, {"requestId": "s-1", "tool": "sleep"}]);
    assert_eq!(recorded, expected);
}

#[tokio::test]
async fn a_request_id_already_in_flight_is_refused() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "sleep", "arguments": {"ms": 300}}});
    demo.send(req.clone()).await;
    demo.send(req).await;
    let (_, first) = demo.response(json!(1)).await;
    assert_eq!(first["error"]["code"], -32600);
    let (_, second) = demo.response(json!(1)).await;
    assert_eq!(text(&second), "slept 300 ms");
}

#[tokio::test]
async fn thousand_concurrent_calls_are_all_answered() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let mut batch = String::new();
    for id in 1..=1000 {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "sleep", "arguments": {"ms": 300}}});
        batch.push_str(&req.to_string());
        batch.push('\n');
    }
    demo.send_raw(batch.trim_end()).await;
    // Run one after another, these would take five minutes; overlapped, well under the patience.
    let mut answered = BTreeSet::new();
    while answered.len() < 1000 {
        let m = demo.next_message().await;
        assert_eq!(text(&m), "slept 300 ms");
        assert!(answered.insert(m["id"].as_i64().expect("numeric id")));
    }
    assert_eq!(answered, (1..=1000).collect());
}

#[tokio::test]
async fn progress_notifications_carry_the_token_and_precede_the_result() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let params = json!({"name": "progress", "arguments": {"steps": 3, "delay_ms": 5},
                        "_meta": {"progressToken": "tok-1"}});
    demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .await;
    let (before, answer) = demo.response(json!(1)).await;
    assert_eq!(text(&answer), "done 3 steps");
    let expected: Vec<Value> = (1..=3)
        .map(|i| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params":
                   {"progressToken": "tok-1", "progress": i, "total": 3, "message": format!("step {i}")}})
        })
        .collect();
    assert_eq!(before, expected);

    let (before, answer) = {
        let params = json!({"name": "progress", "arguments": {"steps": 2}});
        demo.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}))
            .await;
        demo.response(json!(2)).await
    };
    assert!(before.is_empty(), "no token, no progress: {before:?}");
    assert_eq!(text(&answer), "done 2 steps");
}

#[tokio::test]
async fn flood_writes_one_line_of_exactly_the_requested_length() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    let req = |id: i64, bytes: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "flood", "arguments": {"bytes": bytes}}})
    };
    demo.send(req(1, 1_048_577)).await;
    let line = demo.line_within(PATIENCE).await.expect("flood line");
    assert_eq!(line.len(), 1_048_577);
    let answer: Value = serde_json::from_str(&line).expect("flood line is JSON");
    assert_eq!(answer["id"], 1);
    assert!(text(&answer).bytes().all(|b| b == b'x'));

    demo.send(req(2, 10)).await;
    let line = demo.line_within(PATIENCE).await.expect("minimal line");
    let answer: Value = serde_json::from_str(&line).expect("minimal line is JSON");
    assert_eq!((answer["id"].clone(), text(&answer)), (json!(2), ""));
    assert!(line.len() > 10);
}

#[tokio::test]
async fn crash_exits_with_the_requested_code_without_answering() {
    for (args, code) in [(json!({"code": 7}), 7), (json!({}), 3)] {
        let mut demo = Demo::start(&[]);
        demo.initialize().await;
        let params = json!({"name": "crash", "arguments": args});
        demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
            .await;
        assert_eq!(demo.exit_status().await.code(), Some(code));
        assert_eq!(
            demo.line_within(PATIENCE).await,
            None,
            "nothing after the crash"
        );
    }
}

#[tokio::test]
async fn hang_initialize_never_answers_but_keeps_reading() {
    let mut demo = Demo::start(&["--hang-initialize"]);
    let params = json!({"protocolVersion": "2025-03-26", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "0"}});
    demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        .await;
    assert_eq!(demo.line_within(Duration::from_millis(300)).await, None);
    let (before, answer) = {
        demo.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await;
        demo.response(json!(2)).await
    };
    assert!(before.is_empty(), "initialize stays unanswered: {before:?}");
    assert_eq!(answer["result"]["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn exit_during_initialize_exits_with_4() {
    let mut demo = Demo::start(&["--exit-during-initialize"]);
    demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .await;
    assert_eq!(demo.exit_status().await.code(), Some(4));
    assert_eq!(
        demo.line_within(PATIENCE).await,
        None,
        "no answer was written"
    );
}

#[tokio::test]
async fn stdin_eof_finishes_short_calls_and_exits_zero_promptly() {
    let mut demo = Demo::start(&[]);
    demo.initialize().await;
    for (id, ms) in [(1, 60_000), (2, 10)] {
        let params = json!({"name": "sleep", "arguments": {"ms": ms}});
        demo.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
    }
    let started = std::time::Instant::now();
    let status = demo.close_stdin().await;
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "exit was not prompt"
    );
    let (_, short) = demo.response(json!(2)).await;
    assert_eq!(text(&short), "slept 10 ms");
    assert_eq!(
        demo.line_within(PATIENCE).await,
        None,
        "the long call is dropped"
    );
}

#[tokio::test]
async fn log_and_add_tool_send_their_notifications_first() {
    let mut demo = Demo::start(&["--page-size", "50"]);
    demo.initialize().await;
    demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "log", "arguments": {"level": "warning", "message": "hi"}}}))
        .await;
    let (before, answer) = demo.response(json!(1)).await;
    assert_eq!(text(&answer), "logged");
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"level": "warning", "logger": "demo", "data": "hi"}});
    assert_eq!(before, vec![log]);

    demo.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "add_tool", "arguments": {"name": "fresh tool"}}}))
        .await;
    let (before, answer) = demo.response(json!(2)).await;
    assert_eq!(text(&answer), "added fresh tool");
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["method"], "notifications/tools/list_changed");
    let names = demo.all_tool_names(50).await;
    assert_eq!(names.last().map(String::as_str), Some("fresh tool"));
    assert_eq!(
        text(&demo.call(3, "fresh tool", json!({"text": "x"})).await),
        "x"
    );
}

#[tokio::test]
async fn list_changed_early_precedes_the_initialize_answer() {
    let mut demo = Demo::start(&["--list-changed-early"]);
    demo.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .await;
    let (before, answer) = demo.response(json!(1)).await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(before.len(), 1);
    assert_eq!(before[0]["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn pid_and_grandchild_pid_report_real_processes() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::{Pid, getpgid};

    let mut demo = Demo::start(&["--grandchild"]);
    demo.initialize().await;
    let server_pid = demo.child.id().expect("server is running");
    assert_eq!(
        text(&demo.call(1, "pid", json!({})).await),
        server_pid.to_string()
    );

    let answer = demo.call(2, "grandchild_pid", json!({})).await;
    let grandchild: i32 = text(&answer).parse().expect("a pid");
    let grandchild = Pid::from_raw(grandchild);
    let server_group = getpgid(Some(Pid::from_raw(server_pid as i32))).expect("server group");
    assert_eq!(getpgid(Some(grandchild)), Ok(server_group));
    assert!(demo.close_stdin().await.success());
    // The server leaves it running on purpose; end it ourselves.
    assert_eq!(kill(grandchild, Signal::SIGKILL), Ok(()));

    let mut plain = Demo::start(&[]);
    let answer = plain.call(1, "grandchild_pid", json!({})).await;
    assert_eq!(answer["result"]["isError"], true);
}

#[tokio::test]
async fn stderr_banner_goes_to_stderr_and_stdout_stays_clean() {
    let mut demo = Demo::start_with_stderr(&["--stderr-banner"], Stdio::piped());
    let mut stderr = demo.child.stderr.take().expect("piped stderr");
    let answer = demo.initialize().await;
    assert_eq!(answer["id"], 0);
    assert!(demo.close_stdin().await.success());
    assert_eq!(
        demo.line_within(PATIENCE).await,
        None,
        "stdout held only the answer"
    );
    let mut banner = String::new();
    stderr
        .read_to_string(&mut banner)
        .await
        .expect("read stderr");
    assert!(banner.contains("demo server starting"), "{banner:?}");
}
