//! Header secrets appear nowhere: not in logs at TRACE, not in `Debug` or
//! `Display` of configuration, specs, statuses, events or errors, not in CLI output.

use std::process::Command;
use std::time::Duration;

use mcpvisor::config::McpConfig;
use mcpvisor::{CallOptions, Host, SecretString, ServerSpec};
use mcpvisor_transports::{HttpHeaders, HttpSpec, HttpTransport};
use serde_json::json;
use testkit::http_server::{GetMode, HttpMcpServer, Script};
use testkit::{call, fast_options, next_ready};

fn random_secret(tag: &str) -> String {
    format!("{tag}-{:016x}{:08x}", fastrand_u64(), std::process::id())
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish()
}

fn assert_hidden(haystack: &str, secrets: &[&str], what: &str) {
    for s in secrets {
        assert!(!haystack.contains(s), "{what} leaks a secret:\n{haystack}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_secrets_never_reach_logs_debug_errors_or_the_cli() {
    testkit::logs::capture();
    let bearer = random_secret("tok");
    let api_key = random_secret("key");
    let authorization = format!("Bearer {bearer}");
    let secrets = [bearer.as_str(), api_key.as_str()];

    let script = Script {
        get: GetMode::Stream {
            events: 1,
            then_close: true,
            interval_ms: 5,
        },
        fail_status_tool: Some(("boom".into(), 500)),
        hang_tool: Some("hang".into()),
        ..Script::default()
    };
    let server = HttpMcpServer::start(script).await;
    let headers = vec![
        (
            "Authorization".to_string(),
            SecretString::new(authorization.clone()),
        ),
        ("X-Api-Key".to_string(), SecretString::new(api_key.clone())),
    ];
    let spec = ServerSpec::http(
        "fx",
        HttpSpec {
            url: server.url.clone(),
            headers: headers.clone(),
            oauth: None,
        },
    );
    let mut shown = format!(
        "{spec:?} {spec:#?} {:?}",
        HttpHeaders::new(&headers).unwrap()
    );
    shown.push_str(&HttpHeaders::new(&headers).unwrap().to_string());

    let host = Host::start(vec![spec], fast_options()).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    assert_eq!(
        call(&host, "mcp__fx__echo", json!({"text": "ok"}))
            .await
            .unwrap()
            .text(),
        "ok"
    );
    let mut errors = Vec::new();
    errors.push(call(&host, "mcp__fx__boom", json!({})).await.unwrap_err());
    server.expire_sessions();
    call(&host, "mcp__fx__echo", json!({"text": "renewed"}))
        .await
        .unwrap();
    let timeout = CallOptions::default().timeout(Duration::from_millis(200));
    errors.push(
        host.call("mcp__fx__hang", json!({}), timeout)
            .await
            .unwrap_err(),
    );
    next_ready(&mut events).await;
    for e in &errors {
        shown.push_str(&format!("{e} {e:?}\n"));
    }
    shown.push_str(&format!("{:?}", host.servers()));
    host.shutdown().await;
    let all_events = testkit::drain(&mut events, Duration::from_millis(200)).await;
    shown.push_str(&format!("{all_events:?}"));
    // The headers did reach the server: redaction is of output, not of the request.
    assert!(server.requests().iter().all(|r| r.authorization.as_deref()
        == Some(authorization.as_str())
        && r.x_api_key.as_deref() == Some(api_key.as_str())));

    // A header value HTTP refuses: the error names the header, never the value.
    let bad = vec![(
        "X-Api-Key".to_string(),
        SecretString::new(format!("{api_key}\r\nInjected: 1")),
    )];
    let bad_spec = HttpSpec {
        url: server.url.clone(),
        headers: bad,
        oauth: None,
    };
    let client = mcpvisor::http_client(&Default::default()).unwrap();
    let e = HttpTransport::new(
        "bad",
        &bad_spec,
        client,
        &Default::default(),
        std::sync::Arc::new(NullSink),
    )
    .unwrap_err();
    shown.push_str(&format!("{e} {e:?} {bad_spec:?}"));
    assert!(e.to_string().contains("x-api-key"), "{e}");

    // The same server from a `.mcp.json`, through the library and the CLI.
    let dir = testkit::scratch_dir("redaction");
    let config = json!({"mcpServers": {
        "fx": {"type": "http", "url": server.url, "headers": {"Authorization": authorization, "X-Api-Key": api_key}},
        "broken": {"type": "http", "url": server.url, "headers": {"X-Api-Key": format!("{api_key}\n")}}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let cfg = McpConfig::load(&dir.join(".mcp.json")).unwrap();
    let problems: Vec<_> = cfg
        .servers
        .values()
        .filter_map(|e| e.resolve(&|_| None, &dir).err())
        .flatten()
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    shown.push_str(&format!("{cfg:?} {cfg:#?} {problems:?}"));
    let before_cli = server.requests().len();
    let mut cli_output = String::new();
    for args in [
        &["enable", "fx"][..],
        &["enable", "broken"],
        &["tools"],
        &["--json", "servers"],
        &["call", "mcp__fx__echo", r#"{"text":"via cli"}"#],
        &["call", "mcp__fx__boom", "{}"],
    ] {
        let out = Command::new(testkit::mcpvisor_exe())
            .args(args)
            .current_dir(&dir)
            .env("MCPVISOR_HOME", dir.join("home"))
            .env("RUST_LOG", "trace")
            .output()
            .unwrap();
        cli_output.push_str(&String::from_utf8_lossy(&out.stdout));
        cli_output.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    assert!(
        cli_output.contains("mcp__fx__echo"),
        "the CLI lists the HTTP server's tools:\n{cli_output}"
    );
    assert!(
        cli_output.contains("via cli"),
        "the CLI calls the HTTP server:\n{cli_output}"
    );
    assert!(cli_output.contains("HTTP 500"), "{cli_output}");
    // The CLI too sent both secrets, on every request it made.
    let requests = server.requests();
    assert!(requests.len() > before_cli, "the CLI reached the server");
    for r in &requests[before_cli..] {
        assert_eq!(r.authorization.as_deref(), Some(authorization.as_str()));
        assert_eq!(r.x_api_key.as_deref(), Some(api_key.as_str()));
    }
    assert!(
        cli_output.contains("broken"),
        "the broken entry is reported: {cli_output}"
    );

    let logs = testkit::logs::captured();
    assert!(
        logs.len() > 10_000,
        "TRACE output was captured ({} bytes)",
        logs.len()
    );
    assert!(logs.contains("TRACE"), "trace-level records were captured");
    assert!(
        logs.contains("hyper"),
        "the HTTP stack's own records were captured"
    );
    assert_hidden(&logs, &secrets, "tracing at TRACE");
    assert_hidden(&shown, &secrets, "Debug/Display");
    assert_hidden(&cli_output, &secrets, "the CLI");
    let _ = std::fs::remove_dir_all(&dir);
}

struct NullSink;

impl mcpvisor_transports::TransportSink for NullSink {
    async fn deliver(&self, _event: mcpvisor_transports::TransportEvent) -> bool {
        true
    }
}
