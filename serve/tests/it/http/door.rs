//! The door: foreign origins and rebound host names, the bearer token, a
//! token file others can read, an exposed address without a token.

use super::*;

#[tokio::test]
async fn foreign_origins_and_rebound_hosts_are_refused() {
    let dir = empty_dir("origin");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "http://evil.example")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403);
    assert!(message(&body).contains("Origin not allowed"), "{body}");
    // A page of another site whose name was rebound to 127.0.0.1.
    let (status, _, body) = post(
        &serve.url,
        &[("host", "evil.example:80")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403);
    assert!(message(&body).contains("DNS rebinding"), "{body}");
    // A page on another loopback port is another site: refused unless listed.
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "http://localhost:6274")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // The endpoint's own origin is accepted.
    let own = serve
        .url
        .trim_end_matches("/mcp")
        .replace("127.0.0.1", "localhost");
    let (status, _, body) = post(&serve.url, &[("origin", &own)], initialize().to_string()).await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

/// A page of another site can neither read a session's stream nor end it:
/// GET and DELETE are held to the same Origin rule as POST.
#[tokio::test]
async fn foreign_origins_are_refused_on_get_and_delete_too() {
    let dir = empty_dir("origin-get-delete");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    let client = reqwest::Client::new();
    let get = client
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 403);
    let delete = client
        .delete(&serve.url)
        .header("mcp-session-id", &id)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status().as_u16(), 403);
    // The session is still there for its own client.
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], ping.to_string()).await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

#[tokio::test]
async fn an_allowed_origin_is_accepted() {
    let dir = empty_dir("allowed");
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--allow-origin",
            "https://app.example",
        ],
    );
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "https://app.example")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

fn token_file(dir: &Path, mode: u32) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[tokio::test]
async fn the_bearer_token_is_required_and_never_printed() {
    let dir = empty_dir("token");
    let token = token_file(&dir, 0o600);
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    for presented in [None, Some("Bearer wrong"), Some("Basic dG9rOg==")] {
        let headers: Vec<(&str, &str)> = presented
            .map(|v| ("authorization", v))
            .into_iter()
            .collect();
        let (status, h, body) = post(&serve.url, &headers, initialize().to_string()).await;
        assert_eq!(status, 401, "{presented:?}: {body}");
        assert_eq!(h.get("www-authenticate").unwrap(), "Bearer");
        assert!(message(&body).contains("bearer token"), "{body}");
        assert!(!body.contains(SECRET));
    }
    let bearer = format!("Bearer {SECRET}");
    let id = open_session(&serve.url, &[("authorization", &bearer)]).await;
    // Every request needs it, not just the first.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, _) = post(&serve.url, &[("mcp-session-id", &id)], list.clone()).await;
    assert_eq!(status, 401);
    let (status, _, body) = post(
        &serve.url,
        &[("mcp-session-id", &id), ("authorization", &bearer)],
        list,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let logs = serve.stop();
    assert!(!logs.contains(SECRET), "the token was logged:\n{logs}");
}

#[test]
fn a_token_file_others_can_read_is_refused() {
    let dir = empty_dir("token-mode");
    let token = token_file(&dir, 0o644);
    let out = serve_command(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("must be 0600"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}

#[test]
fn an_exposed_address_needs_a_token() {
    let dir = empty_dir("exposed");
    let out = serve_command(&dir, &["--http", "0.0.0.0:0", "--no-token"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loopback addresses only") && stderr.contains("--no-token"),
        "{stderr}"
    );
    // It refused before starting any server.
    assert!(!stderr.contains("started stdio server"), "{stderr}");
}
