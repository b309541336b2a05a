//! `mcpvisor serve --http` against peers that do not play by HTTP's rules:
//! one that stops reading its answers, ones that never present the token
//! but keep the connection cap full, one that asks again after a refusal on
//! the same connection, two `Host` headers or a target naming another host,
//! a session that never finishes initializing but holds its GET stream, and
//! a session the token does not vouch for asking for the servers' logs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::mcp_http::{QUICK, Session, post, within};
use testkit::serve::HttpServe;

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-http-peers", tag)
}

/// A connection whose receive buffer is as small as the kernel allows, so
/// a peer that does not read stalls the writer soon.
fn connect_small(serve: &HttpServe) -> TcpStream {
    use nix::sys::socket::{
        AddressFamily, SockFlag, SockType, SockaddrIn, connect, setsockopt, socket, sockopt,
    };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .unwrap();
    setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
    let SocketAddr::V4(v4) = serve.addr() else {
        panic!("serve listens on IPv4 here")
    };
    connect(fd.as_raw_fd(), &SockaddrIn::from(v4)).unwrap();
    TcpStream::from(fd)
}

fn request(serve: &HttpServe, session: Option<&str>, body: &str, auth: bool) -> String {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        serve.addr(),
        body.len()
    );
    if auth {
        head.push_str(&format!(
            "Authorization: {}\r\n",
            serve.authorization().unwrap()
        ));
    }
    if let Some(id) = session {
        head.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    format!("{head}\r\n{body}")
}

/// Reads until the peer closes; the bytes read, and whether it closed (not
/// just went quiet past the read deadline).
fn drain(stream: &mut TcpStream, quiet: Duration) -> (usize, bool) {
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (total, true),
            Err(_) => return (total, false),
        }
    }
}

#[tokio::test]
async fn a_client_that_stops_reading_is_let_go_at_the_write_deadline() {
    let dir = empty_dir("stall");
    let args = [
        "--http",
        "127.0.0.1:0",
        "--write-timeout-ms",
        "1000",
        "--header-timeout-ms",
        "60000",
    ];
    let serve = HttpServe::start(&dir, &args, None);
    let session = Session::open(&serve.client(), &serve.url).await;
    // Eight answers of about 900 KB each, asked at once, never read.
    let mut stalled = connect_small(&serve);
    let mut pipelined = String::new();
    for id in 0..8 {
        let call = json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call",
            "params": {"name": "mcp__demo__flood", "arguments": {"bytes": 900_000}}});
        pipelined.push_str(&request(&serve, Some(&session.id), &call.to_string(), true));
    }
    stalled.write_all(pipelined.as_bytes()).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (read, closed) = drain(&mut stalled, Duration::from_secs(5));
    assert!(
        closed,
        "the stalled connection was still open; read {read} bytes"
    );
    assert!(
        read < 8 * 900_000,
        "every answer was written ({read} bytes)"
    );
    // The session and the endpoint serve on.
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    assert_eq!(within(QUICK, session.post(&ping)).await.status, 200);
}

#[tokio::test]
async fn connections_that_never_show_the_token_make_room_for_one_that_does() {
    let dir = empty_dir("evict");
    let args = [
        "--http",
        "127.0.0.1:0",
        "--max-connections",
        "3",
        "--header-timeout-ms",
        "60000",
    ];
    let serve = HttpServe::start(&dir, &args, None);
    let mut squatters: Vec<TcpStream> = (0..3).map(|_| serve.connect_raw()).collect();
    std::thread::sleep(Duration::from_millis(200));
    // The owner's client gets in although every slot was taken.
    let session = within(QUICK, Session::open(&serve.client(), &serve.url)).await;
    let result = session
        .call_result(2, "mcp__demo__echo", json!({"text": "in"}))
        .await;
    assert_eq!(result["content"][0]["text"], "in");
    let closed = squatters
        .iter_mut()
        .map(|s| drain(s, Duration::from_millis(500)).1)
        .filter(|closed| *closed)
        .count();
    assert!(closed >= 1, "no squatting connection was closed");
}

#[test]
fn a_refused_peer_gets_one_answer_per_connection() {
    let dir = empty_dir("close");
    let serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let mut stream = serve.connect_raw();
    let twice = format!(
        "{}{}",
        request(&serve, None, &ping, false),
        request(&serve, None, &ping, false)
    );
    stream.write_all(twice.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
}

#[test]
fn two_hosts_or_a_target_naming_another_host_are_refused() {
    let dir = empty_dir("hosts");
    let serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "peers", "version": "1"}}})
    .to_string();
    let good = request(&serve, None, &init, true);
    let send = |text: String| {
        let mut stream = serve.connect_raw();
        stream.write_all(text.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    };
    assert!(send(good.clone()).starts_with("HTTP/1.1 200"));
    let two = good.replacen("\r\n", "\r\nHost: evil.example\r\n", 1);
    let answer = send(two);
    assert!(
        answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );
    let absolute = good.replacen("POST /mcp", "POST http://evil.example/mcp", 1);
    let answer = send(absolute);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
}

#[tokio::test]
async fn a_session_that_never_initializes_loses_its_get_stream_too() {
    let dir = empty_dir("init-get");
    let args = ["--http", "127.0.0.1:0", "--session-init-ms", "300"];
    let serve = HttpServe::start(&dir, &args, None);
    let http = serve.client();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "peers", "version": "1"}}});
    let reply = post(&http, &serve.url, None, &init).await;
    let id = reply.session.expect("a session");
    let mut stream = http
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let started = Instant::now();
    let ended = tokio::time::timeout(QUICK, async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the GET stream of an uninitialized session was still open after {:?}",
        started.elapsed()
    );
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let reply = post(&http, &serve.url, Some(&id), &ping).await;
    assert_eq!(reply.status, 404, "{reply:?}");
}

/// Server log messages a session got while `mcp__demo__log` ran, with its
/// level set to debug.
async fn logs_seen(http: &reqwest::Client, url: &str) -> Vec<Value> {
    let session = Session::open(http, url).await;
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "debug"}});
    assert_eq!(within(QUICK, session.post(&level)).await.status, 200);
    let mut stream = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .send()
        .await
        .unwrap();
    let reply = within(
        QUICK,
        session.call(
            3,
            "mcp__demo__log",
            json!({"level": "warning", "message": "m4rker"}),
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let mut seen = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("m4rker") {
                break;
            }
        }
    })
    .await;
    seen.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .chain(reply.messages())
        .filter(|m| m["method"] == "notifications/message")
        .collect()
}

#[tokio::test]
async fn servers_logs_reach_only_sessions_the_token_vouches_for() {
    let dir = empty_dir("logs-token");
    let serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let trusted = logs_seen(&serve.client(), &serve.url).await;
    assert!(
        trusted.iter().any(|m| m.to_string().contains("m4rker")),
        "a session with the token got no server log: {trusted:?}"
    );
    drop(serve);
    let dir = empty_dir("logs-open");
    let open = HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let anyone = logs_seen(&reqwest::Client::new(), &open.url).await;
    assert!(
        anyone.is_empty(),
        "an untrusted session got server logs: {anyone:?}"
    );
}

#[test]
fn a_token_file_too_short_to_stand_a_guess_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = empty_dir("short");
    let path = dir.join("token");
    std::fs::write(&path, "hunter2\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut child = testkit::serve::mcpvisor(&dir)
        .args(["serve", "--http", "127.0.0.1:0", "--token-file"])
        .arg(&path)
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
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stderr}");
    assert!(stderr.contains("shorter than 32"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
