//! Protocol revisions on request: each one negotiated with real servers over
//! each wire they speak, the version header on every HTTP request after
//! `initialize` where the revision asks for it, batches refused where it
//! forbids them, and — with no setting — the first messages exactly as
//! 2025-03-26 sends them.

use std::time::Duration;

use futures::StreamExt;
use mcpvisor::{Host, HostEvent, ServerSpec, ServerState, StdioSpec};
use mcpvisor::{Revision, Versions};
use serde_json::json;
use testkit::http_server::{AnswerMode, HttpMcpServer, Script};
use testkit::peers::{Peer, Wire};
use testkit::{call, fast_options, peers_dir};

async fn start(spec: ServerSpec, versions: Option<Versions>) -> Host {
    let mut options = fast_options();
    if let Some(versions) = versions {
        options.protocol_versions = versions;
    }
    let host = Host::start(vec![spec], options).await.unwrap();
    host.wait_ready(Duration::from_secs(30)).await;
    host
}

#[tokio::test]
async fn each_revision_is_negotiated_with_real_servers_over_each_wire() {
    let cases = [
        (Peer::Everything, Wire::Stdio, "mcp__everything__echo"),
        (Peer::Everything, Wire::HttpSse, "mcp__everything__echo"),
        (Peer::PythonSdk, Wire::Stdio, "mcp__py__echo"),
        (Peer::PythonSdk, Wire::HttpJson, "mcp__py__echo"),
    ];
    for (peer, wire, echo) in cases {
        for revision in Revision::HANDSHAKE {
            let running = peer.run(wire);
            let host = start(running.spec.clone(), Some(Versions::only(revision))).await;
            let status = &host.servers()[0];
            let case = format!("{peer:?} over {wire:?} at {revision}");
            assert_eq!(status.state, ServerState::Ready, "{case}: {status:?}");
            let negotiated = status
                .initialize
                .as_ref()
                .map(|i| i.protocol_version.clone());
            assert_eq!(negotiated.as_deref(), Some(revision.as_str()), "{case}");
            let mut events = Box::pin(host.events());
            let ready = loop {
                match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
                    Ok(Some(HostEvent::ServerReady { protocol, .. })) => break protocol,
                    Ok(Some(_)) => continue,
                    other => panic!("{case}: no ServerReady event: {other:?}"),
                }
            };
            assert_eq!(ready.as_deref(), Some(revision.as_str()), "{case}");
            let echoed = call(&host, echo, json!({"message": "hi"})).await.unwrap();
            assert!(echoed.text().contains("hi"), "{case}: {}", echoed.text());
            host.shutdown().await;
        }
    }
}

#[tokio::test]
async fn the_version_header_goes_on_every_request_after_initialize_from_2025_06_18() {
    for (versions, expected) in [
        (None, None),
        (
            Some(Versions::only(Revision::V2025_06_18)),
            Some("2025-06-18"),
        ),
        (
            Some(Versions::only(Revision::V2025_11_25)),
            Some("2025-11-25"),
        ),
    ] {
        let server = HttpMcpServer::start(Script::default()).await;
        let spec = ServerSpec::http("fx", mcpvisor::HttpSpec::new(&server.url));
        let host = start(spec, versions).await;
        call(&host, "mcp__fx__echo", json!({"text": "x"}))
            .await
            .ok();
        host.shutdown().await;
        let requests = server.requests();
        let (first, rest) = requests.split_first().unwrap();
        assert_eq!(first.rpc_method.as_deref(), Some("initialize"));
        assert_eq!(
            first.protocol_version, None,
            "initialize itself carries none"
        );
        assert!(rest.len() >= 3, "{rest:?}");
        for r in rest {
            assert_eq!(
                r.protocol_version.as_deref(),
                expected,
                "{} {:?}",
                r.http_method,
                r.rpc_method
            );
        }
        assert!(rest.iter().any(|r| r.http_method == "GET"));
        assert!(rest.iter().any(|r| r.http_method == "DELETE"));
    }
}

/// A server that settles on the last revision offered: when its session
/// expires, the new one is asked for that revision, not the first offered.
#[tokio::test]
async fn a_renewed_http_session_asks_for_the_revision_the_connection_settled_on() {
    let server = HttpMcpServer::start(Script {
        only_2025_03_26: true,
        ..Script::default()
    })
    .await;
    let spec = ServerSpec::http("fx", mcpvisor::HttpSpec::new(&server.url));
    let versions = Versions::parse(&["2025-11-25", "2025-03-26"]).unwrap();
    let host = start(spec, Some(versions)).await;
    call(&host, "mcp__fx__echo", json!({"text": "before"}))
        .await
        .unwrap();
    server.expire_sessions();
    let r = call(&host, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    host.shutdown().await;
    let offered: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.rpc_method.as_deref() == Some("initialize"))
        .map(|r| {
            r.body.as_ref().unwrap()["params"]["protocolVersion"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(offered, ["2025-11-25", "2025-03-26"]);
}

/// A renewal whose new session answers at another revision fails, and that
/// half-made session is never used: the next request meets the old session's
/// expiry and renews again, at the connection's revision.
#[tokio::test]
async fn a_renewal_refused_for_its_revision_leaves_no_half_made_session() {
    let server = HttpMcpServer::start(Script::default()).await;
    let spec = ServerSpec::http("fx", mcpvisor::HttpSpec::new(&server.url));
    let versions = Versions::parse(&["2025-06-18"]).unwrap();
    let host = start(spec, Some(versions)).await;
    call(&host, "mcp__fx__echo", json!({"text": "before"}))
        .await
        .unwrap();
    server.set_script(Script {
        only_2025_03_26: true,
        ..Script::default()
    });
    server.expire_sessions();
    let refused = call(&host, "mcp__fx__echo", json!({"text": "refused"})).await;
    assert!(refused.is_err(), "{refused:?}");
    let half_made = server.sessions();
    assert_eq!(
        half_made.len(),
        1,
        "the refused renewal's session at the server"
    );
    server.set_script(Script::default());
    let r = call(&host, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    let last_call = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.rpc_method.as_deref() == Some("tools/call"))
        .unwrap();
    assert!(
        last_call.session.is_some() && last_call.session.as_ref() != half_made.first(),
        "the call went out on the half-made session {half_made:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_batch_at_a_revision_without_batches_ends_the_connection_typed() {
    let script = Script {
        answer: AnswerMode::JsonBatch,
        ..Script::default()
    };
    // At 2025-03-26 a batched answer is fine.
    let server = HttpMcpServer::start(script.clone()).await;
    let spec = ServerSpec::http("fx", mcpvisor::HttpSpec::new(&server.url));
    let host = start(spec, None).await;
    assert_eq!(host.servers()[0].state, ServerState::Ready);
    host.shutdown().await;
    // At 2025-06-18 it is a protocol error: the connection ends, saying why.
    let server = HttpMcpServer::start(script).await;
    let spec = ServerSpec::http("fx", mcpvisor::HttpSpec::new(&server.url));
    let mut options = fast_options();
    options.protocol_versions = Versions::only(Revision::V2025_06_18);
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    let down = testkit::wait_for(&mut events, Duration::from_secs(30), |e| {
        matches!(
            e,
            HostEvent::ServerRestarting { .. } | HostEvent::ServerFailed { .. }
        )
    })
    .await;
    assert!(down.to_string().contains("JSON-RPC batch"), "{down}");
    assert!(down.to_string().contains("2025-06-18"), "{down}");
    host.shutdown().await;
}

#[tokio::test]
async fn with_no_setting_the_first_messages_are_exactly_2025_03_26() {
    let dir = testkit::scratch_dir("wire");
    let record = dir.join("stdin.jsonl");
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    // server-everything behind `tee`: what mcpvisor writes is kept as written.
    let script = format!(
        "tee {} | exec node {} stdio",
        record.display(),
        index.display()
    );
    let spec = ServerSpec::stdio(
        "everything",
        StdioSpec::new("sh", ["-c".to_string(), script]),
    );
    let host = start(spec, None).await;
    assert_eq!(host.servers()[0].state, ServerState::Ready);
    host.shutdown().await;
    let written = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<&str> = written.lines().take(3).collect();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        lines,
        [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"capabilities":{{}},"clientInfo":{{"name":"mcpvisor","version":"{version}"}},"protocolVersion":"2025-03-26"}}}}"#
            )
            .as_str(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn structured_content_outside_the_output_schema_is_a_typed_error_from_2025_06_18() {
    let at = |revision: Option<Revision>, flags: &'static [&'static str]| async move {
        let host = start(testkit::demo("demo", flags), revision.map(Versions::only)).await;
        let outcome = call(&host, "mcp__demo__add", json!({"a": 2, "b": 3})).await;
        host.shutdown().await;
        outcome
    };
    // An honest server at 2025-06-18: checked, and it passes.
    let honest = at(Some(Revision::V2025_06_18), &[]).await.unwrap();
    assert_eq!(honest.structured_content, Some(json!({"sum": 5})));
    // A lying one: a typed error naming the tool, at both later revisions.
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        let err = at(Some(revision), &["--hostile", "wrong-output"])
            .await
            .unwrap_err();
        match &err {
            mcpvisor::CallError::OutputMismatch {
                server,
                tool,
                detail,
            } => {
                assert_eq!(&**server, "demo");
                assert_eq!(tool.as_str(), "mcp__demo__add");
                assert!(detail.contains("/sum"), "{detail}");
            }
            other => panic!("{revision}: {other:?}"),
        }
    }
    // At 2025-03-26 there is no such rule: the result passes as sent.
    let unchecked = at(None, &["--hostile", "wrong-output"]).await.unwrap();
    assert_eq!(unchecked.structured_content, Some(json!({"sum": "many"})));
}

/// server-everything's research tool requires a task at 2025-11-25: the call
/// runs as one (created, polled, its result read) and is one `PendingCall`,
/// which cancelling ends with `tasks/cancel` for that task (what the server
/// reads is copied to a file on its way in); at 2025-03-26 the server refuses
/// the plain call (with a tool error).
#[tokio::test]
async fn a_tool_that_requires_a_task_runs_as_one_and_cancels_as_one() {
    const TOOL: &str = "mcp__everything__simulate-research-query";
    let wire = testkit::scratch_dir("task-wire").join("stdin.jsonl");
    let answers = wire.with_extension("out");
    let _ = std::fs::remove_file(&wire);
    let _ = std::fs::remove_file(&answers);
    let index = testkit::peers::everything_index();
    let tapped = StdioSpec::new(
        "bash",
        [
            "-c".to_string(),
            r#"tee -a "$0" | node "$1" stdio | tee -a "$2""#.to_string(),
            wire.to_string_lossy().into_owned(),
            index.to_string_lossy().into_owned(),
            answers.to_string_lossy().into_owned(),
        ],
    );
    let host = start(
        ServerSpec::stdio("everything", tapped),
        Some(Versions::only(Revision::V2025_11_25)),
    )
    .await;
    let read = |path: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let read_wire = || read(&wire);
    let done = call(&host, TOOL, json!({"topic": "supervision trees"}))
        .await
        .unwrap();
    assert!(!done.is_error, "{}", done.text());
    assert!(done.text().contains("supervision trees"), "{}", done.text());
    assert!(done.text().contains("stages"), "{}", done.text());

    let pending = host.call(TOOL, json!({"topic": "cancelled"}), Default::default());
    let canceller = pending.canceller();
    let waiting = tokio::spawn(pending);
    tokio::time::sleep(Duration::from_millis(300)).await;
    canceller.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a cancelled task call resolves")
        .unwrap();
    assert!(
        matches!(outcome, Err(mcpvisor::CallError::Cancelled)),
        "{outcome:?}"
    );
    // The server was told: `tasks/cancel` for the task the second call created.
    let calls: Vec<serde_json::Value> = read_wire()
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    let topics: Vec<&str> = calls
        .iter()
        .map(|m| m["params"]["arguments"]["topic"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(topics, ["supervision trees", "cancelled"]);
    let created = read(&answers)
        .into_iter()
        .find(|m| m["id"] == calls[1]["id"] && m.get("result").is_some())
        .expect("the server's answer to the second call");
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .expect("a created task")
        .to_string();
    let mut cancels = Vec::new();
    for _ in 0..100 {
        cancels = read_wire()
            .into_iter()
            .filter(|m| m["method"] == "tasks/cancel")
            .collect();
        if !cancels.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(cancels.len(), 1, "one tasks/cancel: {cancels:?}");
    assert_eq!(cancels[0]["params"]["taskId"], task.as_str());
    // The connection is fine: another task call completes.
    let again = call(&host, TOOL, json!({"topic": "again"})).await.unwrap();
    assert!(again.text().contains("again"), "{}", again.text());
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
    let _ = std::fs::remove_file(&wire);
    let _ = std::fs::remove_file(&answers);

    // The same tool at 2025-03-26: no tasks, and the server says so.
    let running = Peer::Everything.run(Wire::Stdio);
    let host = start(running.spec.clone(), None).await;
    let refused = call(&host, TOOL, json!({"topic": "x"})).await.unwrap();
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text().contains("requires task augmentation"),
        "{refused:?}"
    );
    host.shutdown().await;
}

/// The Python peer's `echo` carries an `https` icon and a `javascript:` one:
/// at 2025-11-25 the tool keeps the first alone.
#[tokio::test]
async fn tool_icons_are_kept_only_when_they_cannot_run_anything() {
    let running = Peer::PythonSdk.run(Wire::Stdio);
    let host = start(
        running.spec.clone(),
        Some(Versions::only(Revision::V2025_11_25)),
    )
    .await;
    let tools = host.tools();
    let echo = tools
        .iter()
        .find(|t| t.name.tool() == "echo")
        .expect("the peer's echo");
    let srcs: Vec<&str> = echo.icons.iter().map(|i| i.src.as_str()).collect();
    assert_eq!(srcs, ["https://example.com/echo.png"]);
    assert_eq!(echo.icons[0].mime_type.as_deref(), Some("image/png"));
    assert_eq!(echo.icons[0].sizes, ["48x48"]);
    host.shutdown().await;
}
