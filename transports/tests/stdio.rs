//! The stdio transport against real child processes.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::{Incoming, Message};
use mcpvisor_transports::{
    StdioOptions, StdioSpec, StdioTransport, TransportError, TransportEvent, TransportSink,
};
use tokio::sync::mpsc;

struct ChannelSink(mpsc::UnboundedSender<TransportEvent>);

impl TransportSink for ChannelSink {
    async fn deliver(&self, event: TransportEvent) -> bool {
        self.0.send(event).is_ok()
    }
}

fn sh(script: &str) -> StdioSpec {
    StdioSpec::new("sh", ["-c", script])
}

fn start(
    script: &str,
    options: StdioOptions,
) -> (StdioTransport, mpsc::UnboundedReceiver<TransportEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let t = StdioTransport::spawn("test", &sh(script), &options, Arc::new(ChannelSink(tx)))
        .expect("spawn");
    (t, rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<TransportEvent>) -> TransportEvent {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("event within 10 s")
        .expect("channel open")
}

/// Processes (not zombies) whose process group is `pgid`, read from /proc.
fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name: state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

#[tokio::test]
async fn messages_round_trip_through_cat() {
    let (mut t, mut rx) = start("exec cat", StdioOptions::default());
    t.send(br#"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#.to_vec())
        .unwrap();
    match next(&mut rx).await {
        TransportEvent::Message(Incoming::Single(Message::Response(r))) => {
            assert_eq!(r.result["ok"], true)
        }
        other => panic!("unexpected {other:?}"),
    }
    t.send(b"not json".to_vec()).unwrap();
    assert!(matches!(next(&mut rx).await, TransportEvent::Malformed(_)));
    t.shutdown().await;
}

#[tokio::test]
async fn eof_reports_exit_status_and_stderr_tail() {
    let (_t, mut rx) = start(
        "echo first >&2; echo 'boom: bad config' >&2; exit 3",
        StdioOptions::default(),
    );
    match next(&mut rx).await {
        TransportEvent::Closed(TransportError::Exited {
            status,
            stderr_tail,
        }) => {
            assert_eq!(status.code(), Some(3));
            assert!(stderr_tail.contains("boom: bad config"), "{stderr_tail}");
            let shown = TransportError::Exited {
                status,
                stderr_tail,
            }
            .to_string();
            assert!(shown.contains("exit code 3"), "{shown}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn over_long_line_closes_with_a_frame_error() {
    let mut options = StdioOptions::default();
    options.frame_limit = 1000;
    let (mut t, mut rx) = start(
        "head -c 1001 /dev/zero | tr '\\0' x; echo; exec cat",
        options,
    );
    match next(&mut rx).await {
        TransportEvent::Closed(TransportError::FrameTooLarge { limit }) => assert_eq!(limit, 1000),
        other => panic!("unexpected {other:?}"),
    }
    t.shutdown().await;
}

#[tokio::test]
async fn line_at_the_limit_is_accepted() {
    let mut options = StdioOptions::default();
    options.frame_limit = 1000;
    // 1000 bytes: a JSON string of 998 x's plus its quotes, which is not an object.
    let (mut t, mut rx) = start(
        "printf '\"'; head -c 998 /dev/zero | tr '\\0' x; printf '\"\\n'; exec cat",
        options,
    );
    assert!(matches!(next(&mut rx).await, TransportEvent::Malformed(_)));
    t.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_whole_group_including_grandchildren() {
    // The server ignores SIGTERM and stdin EOF, and leaves two grandchildren behind.
    let mut options = StdioOptions::default();
    options.grace = Duration::from_millis(100);
    let (mut t, _rx) = start(
        "trap '' TERM; sleep 1000 & sleep 1000 & while :; do sleep 1; done",
        options,
    );
    let pgid = t.pid();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while live_group_members(pgid).len() < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        live_group_members(pgid).len() >= 3,
        "server and grandchildren running"
    );
    let status = t.shutdown().await;
    assert_eq!(
        status.signal(),
        Some(9),
        "SIGTERM is ignored, so SIGKILL ends it"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !live_group_members(pgid).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[tokio::test]
async fn dropping_the_transport_kills_the_group() {
    let (t, _rx) = start("sleep 1000 & exec sleep 1000", StdioOptions::default());
    let pgid = t.pid();
    drop(t);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !live_group_members(pgid).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[tokio::test]
async fn missing_command_is_a_spawn_error() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let spec = StdioSpec::new("/nonexistent/mcp-server", Vec::<String>::new());
    let err = StdioTransport::spawn(
        "x",
        &spec,
        &StdioOptions::default(),
        Arc::new(ChannelSink(tx)),
    )
    .unwrap_err();
    assert!(matches!(err, TransportError::Spawn { .. }));
    assert!(err.to_string().contains("/nonexistent/mcp-server"));
}

#[test]
fn spec_debug_redacts_env_values() {
    let mut spec = StdioSpec::new("server", ["--flag"]);
    spec.env
        .push(("API_TOKEN".into(), "tok-8f3a9c-secret".to_string().into()));
    let shown = format!("{spec:?}");
    assert!(!shown.contains("tok-8f3a9c-secret"), "{shown}");
    assert!(shown.contains("API_TOKEN=[redacted]"), "{shown}");
}

/// A server that does not read yet: lines beyond what the pipe holds wait in the
/// writer's queue up to the backlog limit, later ones are refused with a typed
/// error, and once the server reads, every accepted line arrives whole and in order.
#[tokio::test]
async fn a_server_that_does_not_read_gets_a_bounded_backlog_in_order() {
    let mut options = StdioOptions::default();
    options.write_backlog = 256 * 1024;
    // `cat` starts only after the marker file appears.
    let dir = std::env::temp_dir().join(format!("mcpvisor-writer-{}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let script = format!(
        "while [ ! -e {0} ]; do sleep 0.02; done; exec cat",
        dir.display()
    );
    let (mut t, mut rx) = start(&script, options);
    let padding = "x".repeat(16 * 1024);
    let mut accepted = 0u32;
    let refused = loop {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{accepted},"result":{{"p":"{padding}"}}}}"#);
        match t.send(line.into_bytes()) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 1000, "the backlog never filled");
    };
    assert!(
        matches!(refused, TransportError::Backlog { limit } if limit == 256 * 1024),
        "{refused:?}"
    );
    // The queue filled up to its bound before refusing.
    let line_len = padding.len() + 48;
    assert!(
        accepted as usize * line_len >= 256 * 1024 - line_len,
        "accepted only {accepted} lines"
    );
    std::fs::write(&dir, b"").unwrap();
    for expected in 0..accepted {
        match next(&mut rx).await {
            TransportEvent::Message(Incoming::Single(Message::Response(r))) => {
                assert_eq!(r.id, mcpvisor_protocol::RequestId::Number(expected.into()));
                assert_eq!(r.result["p"].as_str().map(str::len), Some(padding.len()));
            }
            other => panic!("line {expected}: unexpected {other:?}"),
        }
    }
    // Drained: the writer takes lines again.
    t.send(br#"{"jsonrpc":"2.0","id":"after","result":{}}"#.to_vec())
        .unwrap();
    assert!(matches!(
        next(&mut rx).await,
        TransportEvent::Message(Incoming::Single(Message::Response(_)))
    ));
    t.shutdown().await;
    let _ = std::fs::remove_file(&dir);
}

/// The parent-death signal fires when the thread that forked a child exits; a
/// server started from a short-lived thread must still live on.
#[test]
fn a_server_outlives_the_thread_that_started_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut transport = std::thread::spawn(move || {
        let _inside = handle.enter();
        StdioTransport::spawn(
            "short-lived-thread",
            &sh("exec sleep 30"),
            &StdioOptions::default(),
            Arc::new(ChannelSink(tx)),
        )
        .expect("spawn")
    })
    .join()
    .unwrap();
    let pid = transport.pid();
    // The thread is gone; give a parent-death signal time to land.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        live_group_members(pid),
        vec![pid],
        "the server was killed with its thread"
    );
    runtime.block_on(transport.shutdown());
    assert!(live_group_members(pid).is_empty());
}

#[tokio::test]
async fn the_child_environment_is_cleared_but_for_the_allowlist_and_its_own() {
    let dir = std::env::temp_dir().join(format!("mcpvisor-env-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("env");
    let mut spec = sh(&format!("env > {}; exec sleep 30", out.display()));
    spec.env = vec![(
        "OWN".into(),
        mcpvisor_transports::SecretString::new("mine".to_string()),
    )];
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut t = StdioTransport::spawn(
        "env",
        &spec,
        &StdioOptions::default(),
        Arc::new(ChannelSink(tx)),
    )
    .expect("spawn");
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.contains("OWN=") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    t.shutdown().await;
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(
        names.contains(&"OWN") && names.contains(&"PATH"),
        "{names:?}"
    );
    // The test harness's own variables (CARGO_*, RUST_*) are not on the allowlist.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
