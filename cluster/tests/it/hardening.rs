//! The cluster port against strangers: a silent connection does not stop a
//! node accepting, unauthenticated connections are bounded in number, in
//! frame size and in time, and plaintext or a weak cookie must be asked for
//! or is refused. Attackers are this test process, on 127.0.0.2 and up
//! (loopback all the same), so a node's per-address cap is met by them and
//! not by the nodes that join from 127.0.0.1.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use serde_json::json;
use testkit::cluster::{COOKIE, Node, await_tools, certify, rss_kib_of, strs, text, tls_flags};

/// A node closes an unauthenticated connection 5 s after accepting it; this
/// leaves room for a loaded machine.
const CLOSED_WITHIN: Duration = Duration::from_secs(12);

/// A connection to `to` from the loopback address `127.0.0.{from}`.
async fn connect_from(from: u8, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, from], 0)))?;
    socket.connect(to).await
}

/// Whether the node closed `stream` (EOF or reset) before `by`.
async fn closed_by(stream: &mut TcpStream, by: Instant) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(by.into(), stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A TLS alert, or whatever the node says before it closes.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_does_not_stop_a_tls_node_accepting_and_is_closed_at_its_deadline() {
    let mut a = Node::new("silent", "a", &["alpha"]);
    let mut b = Node::new("silent", "b", &["beta"]);
    certify(&a.dir.clone(), &[&a, &b]);
    let (fa, fb) = (tls_flags(&a), tls_flags(&b));
    a.start(&[], &strs(&fa));
    let port: SocketAddr = a.address().parse().unwrap();
    // Connections that never send a ClientHello, held for the whole test.
    let opened = Instant::now();
    let mut silent = Vec::new();
    for from in 2..5 {
        silent.push(connect_from(from, port).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.start(&[a.address()], &strs(&fb));
    let on_b = b.session().await;
    let mut id = 100;
    // ractor_cluster's own accept loop would wait on the first silent
    // connection's handshake for as long as it stays open.
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    for stream in &mut silent {
        assert!(
            closed_by(stream, opened + CLOSED_WITHIN).await,
            "a silent connection was still open {CLOSED_WITHIN:?} after it was accepted"
        );
    }
    let log = a.stop();
    assert!(log.contains("no TLS handshake within 5 s"), "{log}");
    b.stop();
}

/// Sends the length prefix of an 8 MiB frame and 2 MiB of its body; the
/// node may close the connection at any point.
async fn partial_large_frame(mut stream: TcpStream) -> TcpStream {
    let mut bytes = (8u64 * 1024 * 1024).to_be_bytes().to_vec();
    bytes.resize(8 + 2 * 1024 * 1024, b'x');
    let _ = stream.write_all(&bytes).await;
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_connections_are_bounded_closed_at_the_deadline_and_a_node_joins_meanwhile()
{
    let mut a = Node::new("preauth", "a", &["alpha"]);
    let mut b = Node::new("preauth", "b", &["beta"]);
    a.start(&[], &[]);
    let port: SocketAddr = a.address().parse().unwrap();
    let pid = a.serve().pid();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib_of(pid);

    let opened = Instant::now();
    // Twenty addresses, each sending most of an 8 MiB frame (the bound
    // after authentication); then 1,000 connections that send nothing.
    let large = futures::future::join_all((2..22).map(|from| async move {
        partial_large_frame(connect_from(from, port).await.unwrap()).await
    }))
    .await;
    let mut idle = Vec::new();
    for i in 0..1000u32 {
        // Connecting can fail once the node refuses them; that is fine too.
        if let Ok(stream) = connect_from(30 + (i % 50) as u8, port).await {
            idle.push(stream);
        }
    }
    b.start(&[a.address()], &[]);
    let during = rss_kib_of(pid);
    let on_b = b.session().await;
    let mut id = 100;
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    let mut open = 0;
    for stream in large.into_iter().chain(idle) {
        let mut stream = stream;
        if !closed_by(&mut stream, opened + CLOSED_WITHIN).await {
            open += 1;
        }
    }
    let after = rss_kib_of(pid);
    eprintln!("node a's RSS: {before} KiB before, {during} KiB during, {after} KiB after");
    assert_eq!(
        open, 0,
        "connections that never authenticated still open {CLOSED_WITHIN:?} after they were made"
    );
    // ractor_cluster alone took node a from about 19 MB to 185 MB with this.
    let bound = before + 40 * 1024;
    assert!(
        during <= bound && after <= bound,
        "node a's RSS went from {before} KiB to {during} KiB during and {after} KiB after (bound {bound} KiB)"
    );
    a.stop();
    b.stop();
}

#[test]
fn plaintext_off_loopback_needs_insecure_plaintext() {
    let node = Node::new("plaintext", "a", &[]);
    let run = |extra: &[&str]| {
        let out = testkit::serve::mcpvisor(&node.dir)
            .args(["serve", "--http", "127.0.0.1:0", "--cluster-listen"])
            // TEST-NET-1: no interface of this machine has it.
            .arg("192.0.2.1:9001")
            .arg("--cookie-file")
            .arg(node.dir.join("cookie"))
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--insecure-plaintext"), "{stderr}");
    assert!(stderr.contains("--tls-cert"), "{stderr}");
    // Asked for: it gets as far as the listening, which fails here.
    let (code, stderr) = run(&["--insecure-plaintext"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("--insecure-plaintext"), "{stderr}");
    assert!(
        stderr.contains("cannot listen on 192.0.2.1:9001"),
        "{stderr}"
    );
}

#[test]
fn a_cookie_shorter_than_128_bits_is_refused_with_how_to_make_one() {
    let node = Node::new("short-cookie", "a", &[]);
    testkit::cluster::write_cookie(&node.dir, "short-secret-cookie");
    let out = testkit::serve::mcpvisor(&node.dir)
        .args(["serve", "--http", "127.0.0.1:0", "--cluster-listen"])
        .arg(node.address())
        .arg("--cookie-file")
        .arg(node.dir.join("cookie"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("head -c 32 /dev/urandom | base64"),
        "{stderr}"
    );
    assert!(!stderr.contains("short-secret-cookie"), "{stderr}");
    assert!(!stderr.contains(COOKIE), "{stderr}");
}

/// `text` as Rust's `Debug` prints its bytes (`[77, 65, …]`), the way a
/// library logging a frame's `Vec<u8>` would show it.
fn as_debug_bytes(text: &str) -> String {
    let bytes: Vec<String> = text.bytes().map(|b| b.to_string()).collect();
    bytes.join(", ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_vv_no_call_argument_frame_or_cookie_reaches_the_log() {
    let mut a = Node::new("vv", "a", &["alpha"]);
    let mut b = Node::new("vv", "b", &["beta"]);
    a.start_logging(&[], &["-vv"], None);
    b.start_logging(&[a.address()], &["-vv"], None);
    let on_b = b.session().await;
    let mut id = 100;
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    let marker = "argument-marker-7f3a91c4";
    let echoed = on_b
        .call_result(7, "mcp__alpha__echo", json!({"text": marker}))
        .await;
    assert_eq!(text(&echoed), marker, "{echoed}");
    for node in [&mut a, &mut b] {
        let log = node.stop();
        assert!(log.contains("DEBUG"), "not logging at debug:\n{log}");
        for secret in [marker, COOKIE] {
            assert!(!log.contains(secret), "{secret} in the log:\n{log}");
            assert!(
                !log.contains(&as_debug_bytes(secret)),
                "{secret} in the log as bytes:\n{log}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_sessions_from_one_address_are_logged_once_a_window() {
    let mut a = Node::new("repeats", "a", &["alpha"]);
    a.start(&[], &[]);
    let port: SocketAddr = a.address().parse().unwrap();
    // Thirty sessions that close before authenticating, as a node with the
    // wrong cookie retried for ever would make.
    for _ in 0..30 {
        let mut stream = connect_from(2, port).await.unwrap();
        let _ = stream.write_all(&3u64.to_be_bytes()).await;
        let _ = stream.write_all(b"bad").await;
        drop(stream);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = a.stop();
    let refused = log.matches("cluster session refused").count();
    assert_eq!(refused, 1, "{log}");
    assert!(!log.contains("ractor_cluster"), "{log}");
}
