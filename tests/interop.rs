//! Third-party servers over stdio: the reference `server-everything` (npm) and a
//! server on the Python SDK's `MCPServer` (PyPI). `scripts/peers.sh` installs both.

mod support;

use std::time::Duration;

use mcpvisor::{Host, ServerSpec, ServerState, StdioSpec};
use serde_json::json;
use support::{call, fast_options, peers_dir};

fn everything() -> ServerSpec {
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        index.exists(),
        "{} is missing: run `bash scripts/peers.sh`",
        index.display()
    );
    ServerSpec::stdio(
        "everything",
        StdioSpec::new(
            "node",
            [index.to_string_lossy().into_owned(), "stdio".into()],
        ),
    )
}

fn python() -> ServerSpec {
    let python = peers_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash scripts/peers.sh`",
        python.display()
    );
    let script = peers_dir().join("python_server.py");
    ServerSpec::stdio(
        "py",
        StdioSpec::new(
            python.to_string_lossy().into_owned(),
            [script.to_string_lossy().into_owned(), "stdio".into()],
        ),
    )
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let host = Host::start(vec![everything()], fast_options())
        .await
        .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(names.len() >= 10, "{names:?}");
    let r = call(&host, "mcp__everything__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hi");
    host.shutdown().await;
}

#[tokio::test]
async fn python_sdk_server_over_stdio() {
    let host = Host::start(vec![python()], fast_options()).await.unwrap();
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    let mut names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["mcp__py__add", "mcp__py__announce", "mcp__py__echo"]
    );
    let r = call(&host, "mcp__py__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hi");
    let r = call(&host, "mcp__py__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(r.text(), "5");
    assert_eq!(r.structured_content, Some(json!({"result": 5})));
    host.shutdown().await;
}
