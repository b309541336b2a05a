//! Who may join a cluster: a node with the wrong cookie is refused (and a
//! cookie file others can read is refused before anything starts); over
//! mutual TLS, a node whose certificate another CA signed stays out even
//! when it trusts the cluster's CA.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::json;

use testkit::cluster::{
    COOKIE, Node, await_tools, certify, strs, text, tls_flags, tool_names, write_cookie,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_the_wrong_cookie_is_refused() {
    let mut a = Node::new("cookie", "a", &["alpha"]);
    let mut d = Node::new("cookie", "d", &["delta"]);
    write_cookie(&d.dir, "not-the-cluster-cookie-but-long-enough");
    a.start(&[], &[]);
    d.start(&[a.address()], &[]);
    let on_a = a.session().await;
    let on_d = d.session().await;
    // Several of d's attempts (one a second) come and go.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut id = 100;
    let on_a_tools = tool_names(&on_a, &mut id).await;
    assert!(
        !on_a_tools.iter().any(|t| t.starts_with("mcp__delta__")),
        "{on_a_tools:?}"
    );
    let on_d_tools = tool_names(&on_d, &mut id).await;
    assert!(
        !on_d_tools.iter().any(|t| t.starts_with("mcp__alpha__")),
        "{on_d_tools:?}"
    );
    let d_log = d.stop();
    assert!(!d_log.contains("not-the-cluster-cookie"), "{d_log}");
    let a_log = a.stop();
    assert!(
        a_log.contains("cluster session refused"),
        "a says it refused a session:\n{a_log}"
    );

    // A cookie file others can read is refused before anything starts.
    std::fs::set_permissions(a.dir.join("cookie"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = testkit::serve::mcpvisor(&a.dir)
        .args(["serve", "--http", "127.0.0.1:0", "--cluster-listen"])
        .arg(a.address())
        .arg("--cookie-file")
        .arg(a.dir.join("cookie"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chmod 600"), "{stderr}");
    assert!(!stderr.contains(COOKIE), "{stderr}");
}

/// A CA, and for each node a certificate for 127.0.0.1 it signed, written
/// into the node's directory as `cert.pem` and `key.pem` (the CA as `ca.pem`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_over_mutual_tls_accept_only_their_cas_certificates() {
    let mut a = Node::new("tls", "a", &["alpha"]);
    let mut b = Node::new("tls", "b", &["beta"]);
    // Right cookie, trusts the cluster's CA, but presents a certificate
    // another CA signed: only a's check of its client certificate keeps it out.
    let mut e = Node::new("tls", "e", &["epsilon"]);
    certify(&a.dir.clone(), &[&a, &b]);
    certify(&e.dir.clone(), &[&e]);
    std::fs::copy(a.dir.join("ca.pem"), e.dir.join("ca.pem")).unwrap();
    let (fa, fb, fe) = (tls_flags(&a), tls_flags(&b), tls_flags(&e));
    a.start(&[], &strs(&fa));
    b.start(&[a.address()], &strs(&fb));
    e.start(&[a.address()], &strs(&fe));
    assert!(
        a.serve().output().contains("(TLS)"),
        "{}",
        a.serve().output()
    );
    let on_b = b.session().await;
    let mut id = 100;
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    let echoed = on_b
        .call_result(2, "mcp__alpha__echo", json!({"text": "over tls"}))
        .await;
    assert_eq!(text(&echoed), "over tls", "{echoed}");
    // Several of e's attempts (one a second) come and go.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let on_a = a.session().await;
    let seen = tool_names(&on_a, &mut id).await;
    assert!(seen.iter().any(|t| t == "mcp__beta__echo"), "{seen:?}");
    assert!(
        !seen.iter().any(|t| t.starts_with("mcp__epsilon__")),
        "a node with another CA's certificate was let in: {seen:?}"
    );
    for node in [&mut a, &mut b, &mut e] {
        let log = node.stop();
        assert!(!log.contains("PRIVATE KEY"), "{log}");
    }
}
