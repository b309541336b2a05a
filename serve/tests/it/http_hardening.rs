//! `mcpvisor serve --http` against the people who share the machine: another
//! local user (the bearer token is the default on every bind), a web page
//! on another loopback port (JSON Content-Type and the endpoint's own Origin),
//! a peer that opens connections and never speaks or trickles bytes (header
//! and body deadlines, a cap at accept), and one session peeking at another's
//! (the supervisor's controls and events need the token; progress goes only
//! to the caller).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::mcp_http::{QUICK, Session, post, within};
use testkit::serve::HttpServe;

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-http-hardening", tag)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "hardening-test", "version": "1"}}})
}

/// Reads until the peer closes (or the read deadline); what came.
fn read_to_close(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if got.len() > 1 << 20 {
            break;
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Whether the peer has closed `stream`, waiting up to `within` for it.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1];
    matches!(stream.read(&mut buf), Ok(0))
        || matches!(stream.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

/// A request head with the token, the JSON content type and `extra` lines.
fn head(serve: &HttpServe, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}\r\n",
        serve.addr(),
        serve.authorization().unwrap()
    )
}

#[tokio::test]
async fn the_loopback_endpoint_needs_the_token_serve_made_and_print_token_gives_it() {
    let dir = empty_dir("token");
    let mut serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], Some("trace"));
    let token = serve.token.clone().expect("serve named its token file");
    assert_eq!(token.len(), 64, "256 bits as hex");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    let path = testkit::serve::mcpvisor(&dir)
        .args(["serve", "--print-token-path"])
        .output()
        .unwrap();
    let path = PathBuf::from(String::from_utf8(path.stdout).unwrap().trim());
    assert!(path.starts_with(dir.join("home/run")), "{}", path.display());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let printed = testkit::serve::mcpvisor(&dir)
        .args(["serve", "--print-token"])
        .output()
        .unwrap();
    assert!(printed.status.success());
    assert_eq!(String::from_utf8(printed.stdout).unwrap().trim(), token);
    // Any local process can reach 127.0.0.1; without the token it gets nothing.
    let anyone = reqwest::Client::new();
    let refused = post(&anyone, &serve.url, None, &initialize()).await;
    assert_eq!(refused.status, 401, "{refused:?}");
    let session = Session::open(&serve.client(), &serve.url).await;
    let result = session
        .call_result(2, "mcp__demo__echo", json!({"text": "hi"}))
        .await;
    assert_eq!(result["content"][0]["text"], "hi", "{result}");
    // Every request needs it, not just the first.
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let reply = post(&anyone, &serve.url, Some(&session.id), &list).await;
    assert_eq!(reply.status, 401);
    assert!(serve.terminate().success());
    assert!(!serve.output().contains(&token), "the token was logged");
    // Started again, serve keeps the token its hosts were given.
    let again = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    assert_eq!(again.token.as_deref(), Some(token.as_str()));
    drop(again);
    // --no-token is the loopback-only opt-out, and it says what it gives away.
    let open = HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    assert!(open.token.is_none());
    assert!(
        open.output().contains("any local user can call every tool"),
        "{}",
        open.output()
    );
    Session::open(&anyone, &open.url).await;
}

/// The door checks are the router's outermost layer: every path and every
/// method passes them before anything answers (a route serve does not have,
/// a method `/mcp` does not route, a session id that names nothing), so a
/// route added to the router cannot skip them, and a peer without the token
/// learns nothing, not even which session ids exist.
#[tokio::test]
async fn the_door_checks_stand_before_every_path_and_method() {
    use reqwest::Method;
    let dir = empty_dir("door");
    let serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let base = format!("http://{}", serve.addr());
    let token = serve.authorization().unwrap();
    let client = reqwest::Client::new();
    // (method, path, a session id to name, the status past the door)
    let asks = [
        (Method::GET, "/", None, 404),
        (Method::HEAD, "/", None, 404),
        (Method::POST, "/other", None, 404),
        (Method::PATCH, "/mcp/deeper", None, 404),
        (Method::PUT, "/mcp", None, 405),
        (Method::OPTIONS, "/mcp", None, 405),
        (Method::PUT, "/mcp", Some("f00d"), 405),
        (Method::HEAD, "/mcp", Some("f00d"), 404),
        (Method::GET, "/mcp", Some("f00d"), 404),
        (Method::DELETE, "/mcp", Some("f00d"), 404),
        (Method::POST, "/mcp", Some("f00d"), 404),
    ];
    for (method, path, session, past) in asks {
        let ask = |extra: &[(&str, &str)]| {
            let mut request = client.request(method.clone(), format!("{base}{path}"));
            if method == Method::POST {
                request = request
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream")
                    .body("{}");
            }
            if let Some(id) = session {
                request = request.header("Mcp-Session-Id", id);
            }
            for (name, value) in extra {
                request = request.header(*name, *value);
            }
            request.send()
        };
        let what = format!("{method} {path} (session {session:?})");
        let bare = ask(&[]).await.unwrap();
        assert_eq!(bare.status(), 401, "{what} without the token");
        let page = ask(&[
            ("Authorization", &token),
            ("Origin", "https://pages.example"),
        ])
        .await
        .unwrap();
        assert_eq!(page.status(), 403, "{what} from another origin");
        if method != Method::HEAD {
            let said = page.text().await.unwrap();
            assert!(said.contains("Origin not allowed"), "{what}: {said}");
        }
        let rebound = ask(&[("Authorization", &token), ("Host", "attacker.example")])
            .await
            .unwrap();
        assert_eq!(rebound.status(), 403, "{what} for another host");
        if method != Method::HEAD {
            let said = rebound.text().await.unwrap();
            assert!(said.contains("DNS rebinding"), "{what}: {said}");
        }
        // Past the door, what is not there says so.
        let passed = ask(&[("Authorization", &token)]).await.unwrap();
        assert_eq!(passed.status(), past, "{what} with the token");
    }
}

#[tokio::test]
async fn silent_trickling_and_surplus_connections_are_closed() {
    // Past the cap, a connection that never presented the token is closed
    // (the oldest such, to make room, or the new one), long before the
    // (here long) header deadline would close any.
    let dir = empty_dir("cap");
    let args = [
        "--http",
        "127.0.0.1:0",
        "--max-connections",
        "4",
        "--header-timeout-ms",
        "60000",
    ];
    let capped = HttpServe::start(&dir, &args, None);
    let mut held: Vec<TcpStream> = (0..4).map(|_| capped.connect_raw()).collect();
    std::thread::sleep(Duration::from_millis(200));
    held.push(capped.connect_raw());
    let closed = held
        .iter_mut()
        .map(|s| closed_within(s, Duration::from_secs(2)))
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 1, "five connections were held past a cap of four");
    drop((held, capped));

    let dir = empty_dir("connections");
    let args = [
        "--http",
        "127.0.0.1:0",
        "--max-connections",
        "8",
        "--header-timeout-ms",
        "1000",
    ];
    let serve = HttpServe::start(&dir, &args, None);
    let mut silent: Vec<TcpStream> = (0..4).map(|_| serve.connect_raw()).collect();
    // A peer that sends its head a byte at a time is cut off at the deadline.
    let mut trickle = serve.connect_raw();
    let started = Instant::now();
    let line = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = false;
    for byte in line.iter().cycle().take(600) {
        if trickle.write_all(&[*byte]).is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    assert!(
        cut || closed_within(&mut trickle, Duration::from_secs(5)),
        "a trickling head was still read after {:?}",
        started.elapsed()
    );
    // The silent ones were closed at the deadline too.
    for (i, s) in silent.iter_mut().enumerate() {
        assert!(
            closed_within(s, Duration::from_secs(5)),
            "silent connection {i} still open"
        );
    }
    // With the slots free again, a client gets in.
    Session::open(&serve.client(), &serve.url).await;
}

#[tokio::test]
async fn bodies_are_bounded_before_and_while_they_are_read() {
    let dir = empty_dir("bodies");
    let args = ["--http", "127.0.0.1:0", "--body-timeout-ms", "1000"];
    let serve = HttpServe::start(&dir, &args, None);
    // A body that says it is 100 GB is refused before a byte of it is read.
    let mut huge = serve.connect_raw();
    huge.write_all(head(&serve, "Content-Length: 100000000000\r\n").as_bytes())
        .unwrap();
    let answer = read_to_close(&mut huge);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // A body that never comes whole gets 408 at its deadline.
    let mut stalled = serve.connect_raw();
    stalled
        .write_all(format!("{}{{", head(&serve, "Content-Length: 1000\r\n")).as_bytes())
        .unwrap();
    let answer = read_to_close(&mut stalled);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // A request for a session that is not there is answered before its body.
    let mut unknown = serve.connect_raw();
    let extra = "Content-Length: 4000000\r\nMcp-Session-Id: f00d\r\n";
    unknown.write_all(head(&serve, extra).as_bytes()).unwrap();
    let answer = read_to_close(&mut unknown);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    Session::open(&serve.client(), &serve.url).await;
}

#[tokio::test]
async fn a_page_on_another_port_opens_no_session_and_unfinished_ones_expire() {
    let dir = empty_dir("pages");
    let args = [
        "--http",
        "127.0.0.1:0",
        "--no-token",
        "--max-sessions",
        "3",
        "--session-init-ms",
        "300",
    ];
    let serve = HttpServe::start(&dir, &args, None);
    let http = reqwest::Client::new();
    let send = |content_type: &'static str, origin: Option<&'static str>| {
        let mut request = http
            .post(&serve.url)
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body(initialize().to_string());
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    // A page's blind POST (text/plain needs no preflight) opens nothing.
    for _ in 0..10 {
        let status = send("text/plain", None).await.unwrap().status().as_u16();
        assert_eq!(status, 415);
        let status = send("text/plain;charset=UTF-8", Some("http://localhost:3000"))
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status, 403);
        // Even as JSON, a loopback page on another port is another site.
        let status = send("application/json", Some("http://localhost:3000"))
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status, 403);
    }
    let no_accept = http
        .post(&serve.url)
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body(initialize().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        no_accept.status().as_u16(),
        406,
        "an Accept without the two answer forms"
    );
    // The owner's session, initialized, stays; three slots taken by sessions
    // that never send `notifications/initialized` are given back.
    let owner = Session::open(&http, &serve.url).await;
    for _ in 0..2 {
        let reply = post(&http, &serve.url, None, &initialize()).await;
        assert_eq!(reply.status, 200, "{reply:?}");
    }
    let full = post(&http, &serve.url, None, &initialize()).await;
    assert_eq!(full.status, 503, "{full:?}");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reply = post(&http, &serve.url, None, &initialize()).await;
        if reply.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "unfinished sessions still hold the slots: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    assert_eq!(
        owner.post(&ping).await.status,
        200,
        "the owner's session ended"
    );
}

/// `mcpvisor/<method>` in `session`; the answer.
async fn control(session: &Session, id: u64, method: &str, params: Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let reply = within(QUICK, session.post(&request)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.answer(id)
}

#[tokio::test]
async fn control_methods_need_the_token_and_progress_reaches_only_its_caller() {
    let dir = empty_dir("control-open");
    let open = HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let anyone = Session::open(&reqwest::Client::new(), &open.url).await;
    for (i, method) in ["servers", "restart", "reload", "watch"].iter().enumerate() {
        let method = format!("mcpvisor/{method}");
        let answer = control(&anyone, 10 + i as u64, &method, json!({"server": "demo"})).await;
        assert_eq!(answer["error"]["code"], -32051, "{method}: {answer}");
        assert_eq!(answer["error"]["data"]["reason"], "needs_token", "{answer}");
    }
    drop(open);

    let dir = empty_dir("control-token");
    let serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let http = serve.client();
    let watcher = Session::open(&http, &serve.url).await;
    let caller = Session::open(&http, &serve.url).await;
    let answer = control(&watcher, 2, "mcpvisor/watch", json!({})).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    let mut stream = http
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &watcher.id)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let progress = within(
        QUICK,
        caller.call(3, "mcp__demo__progress", json!({"steps": 3})),
    )
    .await;
    let got = progress.messages();
    assert!(
        got.iter().any(|m| m["method"] == "notifications/progress"),
        "the caller got no progress: {progress:?}"
    );
    // Then something the watcher must see, so its stream is known to be live:
    // the server crashes and comes back.
    within(QUICK, caller.call(4, "mcp__demo__crash", json!({}))).await;
    let mut seen = String::new();
    let deadline = Instant::now() + QUICK;
    while !seen.contains("server_ready") {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            _ => panic!("the watcher never saw the restart; it saw:\n{seen}"),
        }
    }
    assert!(
        !seen.contains("\"progress\"") && !seen.contains("notifications/progress"),
        "the watcher saw another session's progress:\n{seen}"
    );
}

/// `mcpvisor <args>` in `dir`, which must exit (refusing) within the bound.
fn refused(dir: &std::path::Path, args: &[&str]) -> String {
    let mut child = testkit::serve::mcpvisor(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = testkit::serve::wait_timeout(&mut child, Duration::from_secs(20));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(
        status.is_some_and(|s| !s.success()),
        "`mcpvisor {}` did not refuse ({status:?}):\n{stderr}",
        args.join(" ")
    );
    stderr
}

#[test]
fn a_home_others_can_write_or_a_linked_run_directory_is_refused() {
    let dir = empty_dir("home");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stderr = refused(&dir, &["serve", "--http", "127.0.0.1:0"]);
    assert!(stderr.contains("others may write"), "{stderr}");
    // A `run` planted as a link (to a directory the attacker reads) is
    // neither served in nor attached to.
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.join("run")).unwrap();
    refused(&dir, &["serve", "--http", "127.0.0.1:0"]);
    let stderr = refused(&dir, &["servers"]);
    assert!(stderr.contains("a link?"), "{stderr}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
