//! Three `mcpvisor serve` processes on 127.0.0.1 joined as one cluster, each
//! supervising its own demo servers: every node lists and calls every other
//! node's tools; a cancel and a timeout on another node behave as they do
//! locally; a server name two nodes claim is routed on neither; a node
//! SIGKILLed under load fails its in-flight calls with a lost-node error,
//! its routes leave the others and calls to the survivors go on; restarted,
//! its routes return; a node with the wrong cookie is refused.
//!
//! Clients are plain Streamable HTTP sessions against each node's `--http`.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use support::mcp_http::{QUICK, Session, within};
use support::peers::free_port;
use support::serve::HttpServe;

const COOKIE: &str = "cluster-cookie-5be1d0-never-printed";

/// Routes settle across nodes well within this.
const CONVERGE: Duration = Duration::from_secs(20);

/// One node: its directory, cluster port and the serve process.
struct Node {
    name: &'static str,
    dir: PathBuf,
    port: u16,
    serve: Option<HttpServe>,
}

impl Node {
    /// A node named `name` supervising a demo server under each of `servers`.
    fn new(test: &str, name: &'static str, servers: &[&str]) -> Node {
        let dir = support::serve::empty_dir("cluster", &format!("{test}-{name}"));
        let demo = json!({"command": env!("CARGO_BIN_EXE_mcpvisor"), "args": ["demo-server"]});
        let entries: serde_json::Map<String, Value> = servers
            .iter()
            .map(|s| (s.to_string(), demo.clone()))
            .collect();
        std::fs::write(
            dir.join(".mcp.json"),
            json!({"mcpServers": entries}).to_string(),
        )
        .unwrap();
        for server in servers {
            let out = support::attached::run(&dir, &["enable", server]);
            assert!(out.status.success(), "enable {server}: {out:?}");
        }
        write_cookie(&dir, COOKIE);
        Node {
            name,
            dir,
            port: free_port(),
            serve: None,
        }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts its serve, joining `join` (addresses), with `extra` flags.
    fn start(&mut self, join: &[String], extra: &[&str]) {
        let listen = self.address();
        let cookie = self.dir.join("cookie");
        let mut args: Vec<String> = [
            "--http",
            "127.0.0.1:0",
            "--cluster-listen",
            &listen,
            "--node-name",
            self.name,
            "--cookie-file",
            cookie.to_str().unwrap(),
            "--heartbeat-ms",
            "100",
            "--node-lost-ms",
            "1000",
            "--restart-initial-backoff-ms",
            "50",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for address in join {
            args.push("--join".into());
            args.push(address.clone());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.serve = Some(HttpServe::start(&self.dir, &args, Some("info")));
    }

    fn serve(&self) -> &HttpServe {
        self.serve.as_ref().expect("the node runs")
    }

    async fn session(&self) -> Session {
        Session::open(&reqwest::Client::new(), &self.serve().url).await
    }

    /// SIGKILL to its whole process group (serve and its servers).
    fn kill(&mut self) -> String {
        let serve = self.serve.take().expect("the node runs");
        let output = serve.output();
        let _ = killpg(Pid::from_raw(serve.pid() as i32), Signal::SIGKILL);
        drop(serve);
        output
    }

    /// SIGTERM; what it logged. The cookie must be in none of it.
    fn stop(&mut self) -> String {
        let mut serve = self.serve.take().expect("the node runs");
        let status = serve.terminate();
        let output = serve.output();
        assert!(
            status.success(),
            "{} exited with {status}\n{output}",
            self.name
        );
        assert!(!output.contains(COOKIE), "the cookie was logged:\n{output}");
        output
    }
}

fn write_cookie(dir: &Path, cookie: &str) {
    let path = dir.join("cookie");
    std::fs::write(&path, format!("{cookie}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Every tool name `session`'s node lists, page by page.
async fn tool_names(session: &Session, id: &mut u64) -> Vec<String> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        *id += 1;
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let request =
            json!({"jsonrpc": "2.0", "id": *id, "method": "tools/list", "params": params});
        let reply = within(QUICK, session.post(&request)).await;
        let answer = reply.answer(*id);
        for tool in answer["result"]["tools"].as_array().expect("tools") {
            names.push(tool["name"].as_str().unwrap().to_string());
        }
        match answer["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return names,
        }
    }
}

/// Waits until `session`'s node lists (or, with `present` false, no longer
/// lists) every name in `names`.
async fn await_tools(session: &Session, id: &mut u64, names: &[&str], present: bool) {
    let deadline = Instant::now() + CONVERGE;
    loop {
        let listed = tool_names(session, id).await;
        if names
            .iter()
            .all(|n| listed.iter().any(|l| l == n) == present)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{names:?} {} listed within {CONVERGE:?}: {listed:?}",
            if present { "not" } else { "still" }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn is_error(result: &Value) -> bool {
    result["isError"].as_bool().unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_call_each_others_servers_cancel_and_time_out_there() {
    let mut a = Node::new("calls", "a", &["alpha"]);
    let mut b = Node::new("calls", "b", &["beta"]);
    let mut c = Node::new("calls", "c", &["gamma"]);
    a.start(&[], &["--request-timeout-ms", "1500"]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address()], &[]);
    let on_b = b.session().await;
    let on_c = c.session().await;
    let mut id = 100;
    // c learned of b through a: every node reaches every other.
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo", "mcp__beta__echo"],
        true,
    )
    .await;
    await_tools(
        &on_c,
        &mut id,
        &["mcp__alpha__echo", "mcp__beta__echo"],
        true,
    )
    .await;

    // Every node's servers, with their node, on any node.
    let listed = support::attached::run_ok(&c.dir, &["servers", "--json"]);
    let listed: Value = serde_json::from_str(&listed).expect("servers --json");
    let node_of = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["running"]["node"].clone())
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
    };
    assert_eq!(node_of("alpha"), "a", "{listed}");
    assert_eq!(node_of("beta"), "b", "{listed}");
    assert_eq!(node_of("gamma"), "c", "{listed}");

    let echoed = on_b
        .call_result(2, "mcp__alpha__echo", json!({"text": "across"}))
        .await;
    assert_eq!(text(&echoed), "across", "{echoed}");
    let from_c = on_c
        .call_result(3, "mcp__beta__add", json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(text(&from_c), "5", "{from_c}");

    // Progress comes back from the node that runs the call.
    let reply = within(
        QUICK,
        on_c.call(4, "mcp__alpha__progress", json!({"steps": 3})),
    )
    .await;
    let progress = reply
        .messages()
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 1, "no progress crossed the cluster: {reply:?}");
    assert!(!is_error(&reply.answer(4)["result"]), "{reply:?}");

    // A cancel on b reaches alpha's server on a.
    let pid_before = text(&on_b.call_result(5, "mcp__alpha__pid", json!({})).await).to_string();
    let sleeping = tokio::spawn({
        let on_b = on_b.clone();
        async move {
            on_b.call(6, "mcp__alpha__sleep", json!({"ms": 10_000}))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    on_b.cancel(6).await;
    let _ = within(QUICK, sleeping).await;
    let deadline = Instant::now() + QUICK;
    let mut next = 7;
    loop {
        let seen = on_b
            .call_result(next, "mcp__alpha__cancelled", json!({}))
            .await;
        next += 1;
        let seen: Value = serde_json::from_str(text(&seen)).expect("a JSON array");
        if seen.as_array().map(Vec::len) == Some(1) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cancel never reached alpha: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid_after = text(&on_b.call_result(next, "mcp__alpha__pid", json!({})).await).to_string();
    assert_eq!(pid_before, pid_after, "a cancel restarts nothing");

    // A call past a's timeout ends a's connection there, and a restarts it.
    let timed_out = on_b
        .call_result(50, "mcp__alpha__sleep", json!({"ms": 5_000}))
        .await;
    assert!(is_error(&timed_out), "{timed_out}");
    assert!(
        text(&timed_out).contains("did not answer within 1.5"),
        "the timeout is a's: {timed_out}"
    );
    let deadline = Instant::now() + QUICK;
    let mut next = 51;
    let restarted = loop {
        let result = on_b.call_result(next, "mcp__alpha__pid", json!({})).await;
        next += 1;
        if !is_error(&result) {
            break text(&result).to_string();
        }
        assert!(
            Instant::now() < deadline,
            "alpha did not come back: {result}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(restarted, pid_before, "a restarted alpha's connection");

    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_name_two_nodes_supervise_is_routed_on_neither() {
    let mut a = Node::new("conflict", "a", &["alpha", "dup"]);
    let mut b = Node::new("conflict", "b", &["beta", "dup"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    let (on_a, on_b) = (a.session().await, b.session().await);
    let mut id = 100;
    await_tools(&on_a, &mut id, &["mcp__beta__echo"], true).await;
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    await_tools(&on_a, &mut id, &["mcp__dup__echo"], false).await;
    await_tools(&on_b, &mut id, &["mcp__dup__echo"], false).await;
    let refused = on_a
        .call_result(2, "mcp__dup__echo", json!({"text": "x"}))
        .await;
    assert!(is_error(&refused), "{refused}");
    assert!(
        text(&refused).contains("more than one node (b, this node)"),
        "the refusal says why: {refused}"
    );
    for node in [&mut a, &mut b] {
        let log = node.stop();
        let conflict = log
            .lines()
            .find(|l| l.contains("route conflict") && l.contains("mcp__dup__echo"))
            .unwrap_or_else(|| panic!("{}: no conflict reported:\n{log}", node.name));
        assert!(
            conflict.contains("\"a\"") && conflict.contains("\"b\""),
            "{}: the conflict names both nodes: {conflict}",
            node.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_fails_its_calls_and_leaves_then_returns() {
    let mut a = Node::new("kill", "a", &["alpha"]);
    let mut b = Node::new("kill", "b", &["beta"]);
    let mut c = Node::new("kill", "c", &["gamma"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address(), b.address()], &[]);
    let on_b = b.session().await;
    let on_c = c.session().await;
    let mut id = 1000;
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo"],
        true,
    )
    .await;
    await_tools(
        &on_c,
        &mut id,
        &["mcp__alpha__echo", "mcp__beta__echo"],
        true,
    )
    .await;
    // c's events, other nodes' included, as `mcpvisor watch` shows them.
    let mut watch = support::attached::mcpvisor(&c.dir)
        .args(["watch", "--json"])
        .spawn()
        .expect("watch");
    let events = support::attached::Lines::start(watch.stdout.take().unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A's server crashes and comes back: c hears of it from a.
    let crashed = on_c.call_result(9, "mcp__alpha__crash", json!({})).await;
    assert!(is_error(&crashed), "{crashed}");
    let relayed = events.wait_for(QUICK, |l| {
        l.contains("\"node\":\"a\"") && l.contains("\"server_ready\"") && l.contains("alpha")
    });
    assert!(
        relayed.is_some(),
        "a's events never reached c:\n{}",
        events.text()
    );
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], true).await;

    // Load: calls held on a, and a steady stream to the survivors.
    let mut held = Vec::new();
    for i in 0..6 {
        let on_b = on_b.clone();
        held.push(tokio::spawn(async move {
            let reply = on_b
                .call(10 + i, "mcp__alpha__sleep", json!({"ms": 30_000}))
                .await;
            (Instant::now(), reply.answer(10 + i)["result"].clone())
        }));
    }
    let survivors = tokio::spawn({
        let on_c = on_c.clone();
        async move {
            let mut answered = 0;
            for i in 0..60u64 {
                let result = on_c
                    .call_result(200 + i, "mcp__beta__echo", json!({"text": "still here"}))
                    .await;
                assert_eq!(
                    text(&result),
                    "still here",
                    "a survivor's call failed: {result}"
                );
                answered += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            answered
        }
    });
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed_at = Instant::now();
    a.kill();
    for call in held {
        let (ended, result) = within(QUICK, call).await.expect("a held call");
        assert!(is_error(&result), "{result}");
        assert!(
            text(&result).contains("node `a`") && text(&result).contains("was lost"),
            "the error names the lost node: {result}"
        );
        // The heartbeat bound is 1 s here; a session closed is seen sooner.
        assert!(
            ended.duration_since(killed_at) < Duration::from_secs(10),
            "a held call ended {:?} after the kill",
            ended.duration_since(killed_at)
        );
    }
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], false).await;
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], false).await;
    let lost_event = events.wait_for(QUICK, |l| {
        l.contains("\"node_lost\"") && l.contains("\"a\"")
    });
    assert!(
        lost_event.is_some(),
        "no node_lost event:\n{}",
        events.text()
    );
    let reply = within(
        QUICK,
        on_b.call(300, "mcp__alpha__echo", json!({"text": "x"})),
    )
    .await;
    let gone = reply.answer(300);
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool"),
        "a lost node's tool is not routed: {gone}"
    );
    assert_eq!(within(QUICK, survivors).await.expect("survivor calls"), 60);

    // a comes back on its port: b and c dial it again, and its routes return.
    a.start(&[], &[]);
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    await_tools(&on_c, &mut id, &["mcp__alpha__echo"], true).await;
    let back = on_c
        .call_result(301, "mcp__alpha__echo", json!({"text": "back"}))
        .await;
    assert_eq!(text(&back), "back", "{back}");
    let joined = events.wait_for(QUICK, |l| {
        l.contains("\"node_joined\"") && l.contains("\"a\"")
    });
    assert!(joined.is_some(), "no node_joined event:\n{}", events.text());
    support::attached::kill_group(&mut watch);
    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_the_wrong_cookie_is_refused() {
    let mut a = Node::new("cookie", "a", &["alpha"]);
    let mut d = Node::new("cookie", "d", &["delta"]);
    write_cookie(&d.dir, "not-the-cluster-cookie");
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
    let out = support::serve::mcpvisor(&a.dir)
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
fn certify(ca_dir: &Path, nodes: &[&Node]) {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(ca_dir.join("ca.pem"), ca_cert.pem()).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    for node in nodes {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(node.dir.join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(node.dir.join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::set_permissions(
            node.dir.join("key.pem"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        if ca_dir != node.dir {
            std::fs::copy(ca_dir.join("ca.pem"), node.dir.join("ca.pem")).unwrap();
        }
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn tls_flags(node: &Node) -> Vec<String> {
    ["cert", "key", "ca"]
        .iter()
        .flat_map(|f| {
            [
                format!("--tls-{f}"),
                node.dir.join(format!("{f}.pem")).display().to_string(),
            ]
        })
        .collect()
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_node_is_lost_by_the_heartbeat_and_back_when_it_speaks_again() {
    let mut a = Node::new("frozen", "a", &["alpha"]);
    let mut b = Node::new("frozen", "b", &["beta"]);
    let mut c = Node::new("frozen", "c", &["gamma"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    c.start(&[a.address()], &[]);
    let on_b = b.session().await;
    let mut id = 1000;
    await_tools(
        &on_b,
        &mut id,
        &["mcp__alpha__echo", "mcp__gamma__echo"],
        true,
    )
    .await;
    let held = tokio::spawn({
        let on_b = on_b.clone();
        async move {
            let reply = on_b
                .call(10, "mcp__alpha__sleep", json!({"ms": 30_000}))
                .await;
            (Instant::now(), reply.answer(10)["result"].clone())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Stopped, not killed: its sessions stay open, it only goes silent.
    let serve_pid = Pid::from_raw(a.serve().pid() as i32);
    let frozen_at = Instant::now();
    nix::sys::signal::kill(serve_pid, Signal::SIGSTOP).unwrap();
    // Calls to another node go on while a is silent.
    for i in 0..10u64 {
        let result = on_b
            .call_result(20 + i, "mcp__gamma__echo", json!({"text": "meanwhile"}))
            .await;
        assert_eq!(text(&result), "meanwhile", "{result}");
    }
    let (ended, result) = within(QUICK, held).await.expect("the held call");
    assert!(
        text(&result).contains("node `a`") && text(&result).contains("was lost"),
        "{result}"
    );
    // Lost after 1 s of silence (checked each 100 ms heartbeat), not at once.
    let after = ended.duration_since(frozen_at);
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(10),
        "lost {after:?} after it froze"
    );
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], false).await;
    // It speaks again: its routes return without a new session.
    nix::sys::signal::kill(serve_pid, Signal::SIGCONT).unwrap();
    await_tools(&on_b, &mut id, &["mcp__alpha__echo"], true).await;
    let back = on_b
        .call_result(40, "mcp__alpha__echo", json!({"text": "thawed"}))
        .await;
    assert_eq!(text(&back), "thawed", "{back}");
    for node in [&mut a, &mut b, &mut c] {
        node.stop();
    }
}
