//! Resources, templates, prompts, completion and subscriptions through
//! `mcpvisor serve`: the Python SDK's client in front of a gateway for
//! server-everything and the Python SDK's server, seen as one flat view.

use std::process::Command;

use serde_json::json;
use testkit::peers_dir;
use testkit::serve::python_client_of_serve;

/// A project with server-everything and the Python peer, both approved.
fn project(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = testkit::scratch_dir(&format!("offered-{tag}"));
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = peers_dir().join("venv/bin/python");
    let config = json!({"mcpServers": {
        "everything": {"command": "node", "args": [index, "stdio"]},
        "py": {"command": python, "args": [peers_dir().join("python_server.py"), "stdio"]},
    }});
    let path = root.join(".mcp.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let home = root.join("home");
    for name in ["everything", "py"] {
        let enabled = Command::new(testkit::mcpvisor_exe())
            .args(["--config", path.to_str().unwrap(), "enable", name])
            .env("MCPVISOR_HOME", &home)
            .output()
            .unwrap();
        assert!(
            enabled.status.success(),
            "{}",
            String::from_utf8_lossy(&enabled.stderr)
        );
    }
    (path, home)
}

#[test]
fn the_gateway_serves_one_flat_view_of_resources_and_prompts() {
    let (config, home) = project("flat");
    let out = python_client_of_serve("python_resources.py", &[], &config, &home, &[]);

    let caps = &out["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    let resources = out["resources"].as_array().unwrap();
    assert!(
        resources.contains(&json!({"uri": "note://greeting", "server": "py"})),
        "{resources:?}"
    );
    assert!(
        resources.contains(&json!({"uri": "demo://resource/static/document/architecture.md", "server": "everything"})),
        "{resources:?}"
    );
    let templates = out["templates"].to_string();
    assert!(
        templates.contains("note://{name}")
            && templates.contains("demo://resource/dynamic/text/{resourceId}"),
        "{templates}"
    );
    // Listed, template-filled and another server's resource, each from its own server.
    assert_eq!(out["reads"]["note://greeting"], "Hello from the Python SDK");
    assert_eq!(out["reads"]["note://cats"], "Note cats");
    assert!(
        out["reads"]["demo://resource/static/document/architecture.md"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(
        out["missing"]
            .as_str()
            .unwrap()
            .contains("resource not found"),
        "{}",
        out["missing"]
    );
    let prompts = out["prompts"].to_string();
    assert!(
        prompts.contains("mcp__py__review") && prompts.contains("mcp__everything__args-prompt"),
        "{prompts}"
    );
    assert_eq!(out["prompt"], "Please review this rust code:\nfn main() {}");
    assert_eq!(out["completion"], json!(["Sales", "Support"]));
    assert_eq!(
        out["updates"],
        json!(["demo://resource/static/document/architecture.md"])
    );
    // A 2025-03-26 session: no icons at all.
    assert_eq!(out["protocol"], "2025-03-26");
    assert_eq!(
        out["icons"],
        json!({"tool": [], "prompt": [], "resource": []}),
        "{out}"
    );
}

/// At 2025-11-25 on both sides, the Python peer's tool, prompt and resource
/// carry two icons each: the gateway hands on the `https` one, not the
/// `javascript:` one.
#[test]
fn a_2025_11_25_session_gets_the_icons_that_pass() {
    let (config, home) = project("icons");
    let flags = ["--protocol-versions", "2025-11-25"];
    let out = python_client_of_serve("python_resources.py", &[], &config, &home, &flags);
    assert_eq!(out["protocol"], "2025-11-25");
    let safe = json!(["https://example.com/echo.png"]);
    assert_eq!(
        out["icons"],
        json!({"tool": safe, "prompt": safe, "resource": safe}),
        "{out}"
    );
}

/// One serve session of a running gateway over HTTP: its id and the text its
/// GET stream has carried so far.
struct HttpSession {
    id: String,
    stream: std::sync::Arc<std::sync::Mutex<String>>,
}

async fn post(url: &str, session: Option<&str>, body: serde_json::Value) -> String {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.body(body.to_string()).send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    id.unwrap_or(text)
}

impl HttpSession {
    /// Opens a session and its GET stream, read on a task of its own.
    async fn open(url: &str) -> HttpSession {
        let id = post(
            url,
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "updates", "version": "1"}}}),
        )
        .await;
        post(
            url,
            Some(&id),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        let mut get = reqwest::Client::new()
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status().as_u16(), 200);
        let stream = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stream.clone();
        tokio::spawn(async move {
            while let Ok(Some(chunk)) = get.chunk().await {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk));
            }
        });
        HttpSession { id, stream }
    }

    fn updates(&self) -> usize {
        self.stream
            .lock()
            .unwrap()
            .matches("notifications/resources/updated")
            .count()
    }
}

/// A resource update reaches the session that subscribed to it and no other
/// session of the same gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_hears_only_its_own_resource_updates() {
    const DOC: &str = "demo://resource/static/document/architecture.md";
    let (config, _home) = project("updates");
    let dir = config.parent().unwrap().to_path_buf();
    let serve =
        testkit::serve::HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let url = serve.url.clone();
    let a = HttpSession::open(&url).await;
    let b = HttpSession::open(&url).await;
    let subscribed = post(
        &url,
        Some(&a.id),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": DOC}}),
    )
    .await;
    assert!(!subscribed.contains("\"error\""), "{subscribed}");
    let toggled = post(
        &url,
        Some(&a.id),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "mcp__everything__toggle-subscriber-updates", "arguments": {}}}),
    )
    .await;
    assert!(!toggled.contains("\"error\""), "{toggled}");
    let heard = testkit::eventually(std::time::Duration::from_secs(60), || a.updates() >= 2).await;
    assert!(
        heard,
        "A heard {} updates: {}",
        a.updates(),
        a.stream.lock().unwrap()
    );
    assert!(
        a.stream.lock().unwrap().contains(DOC),
        "{}",
        a.stream.lock().unwrap()
    );
    assert_eq!(
        b.updates(),
        0,
        "B heard A's updates: {}",
        b.stream.lock().unwrap()
    );
    drop(serve);
}
