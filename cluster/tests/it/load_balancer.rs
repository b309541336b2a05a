//! Two `mcpvisor serve` nodes joined as one cluster behind a real HTTP load
//! balancer (nginx from Debian's packages, round-robin, on loopback), as
//! docs/CLUSTER.md sets it up to grow past one machine. At 2026-07-28 a
//! request needs no session, so either node may answer any request: a
//! client's calls land on both nodes and all succeed, calls to a server only
//! one node supervises included; with one node killed, calls to its server
//! fail typed and the rest keep working. A call whose server asks its
//! client mid-call finishes whichever node each of its rounds reaches.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::cluster::{Node, await_tools};
use testkit::peers::free_port;

const TOKEN: &str = "lb-token-3f9a1c-never-printed-77de";

/// nginx in front of `upstreams`, logging which upstream answered each request.
struct Nginx {
    child: Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Nginx {
    fn start(dir: &Path, upstreams: &[String]) -> Option<Nginx> {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let port = free_port();
        let log = dir.join("upstreams.log");
        let servers: String = upstreams
            .iter()
            .map(|u| format!("        server {u} max_fails=1 fail_timeout=30s;\n"))
            .collect();
        // Round-robin; answers stream (SSE) unbuffered; the client's Host and
        // headers pass through; a node that refuses the connection is skipped.
        let conf = format!(
            "worker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n    access_log off;\n    client_body_temp_path {dir}/body;\n\
                 proxy_temp_path {dir}/proxy;\n    fastcgi_temp_path {dir}/fastcgi;\n\
                 uwsgi_temp_path {dir}/uwsgi;\n    scgi_temp_path {dir}/scgi;\n\
                 log_format upstream '$upstream_addr $status';\n\
                 upstream nodes {{\n{servers}    }}\n\
                 server {{\n        listen 127.0.0.1:{port};\n\
                     access_log {log} upstream;\n\
                     location /mcp {{\n            proxy_pass http://nodes;\n\
                         proxy_http_version 1.1;\n            proxy_set_header Host $http_host;\n\
                         proxy_set_header Connection \"\";\n            proxy_buffering off;\n\
                         proxy_next_upstream error timeout;\n        }}\n    }}\n}}\n",
            dir = dir.display(),
            log = log.display(),
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(nginx)
            .args(["-c", path.to_str().unwrap(), "-p", dir.to_str().unwrap()])
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nginx");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nginx did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Nginx { child, port, log })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// How many requests each upstream answered.
    fn answered_by(&self) -> std::collections::HashMap<String, usize> {
        let mut counts = std::collections::HashMap::new();
        for line in std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
        {
            if let Some(addr) = line.split_whitespace().next() {
                *counts.entry(addr.to_string()).or_default() += 1;
            }
        }
        counts
    }
}

impl Nginx {
    /// nginx in front of `nodes` (its files in the first's directory), and
    /// the upstreams as it logs them.
    fn in_front_of(nodes: &[&Node]) -> (Nginx, Vec<String>) {
        let upstreams: Vec<String> = nodes
            .iter()
            .map(|n| {
                n.serve()
                    .url
                    .trim_start_matches("http://")
                    .trim_end_matches("/mcp")
                    .to_string()
            })
            .collect();
        let Some(nginx) = Nginx::start(&nodes[0].dir, &upstreams) else {
            panic!("nginx is not installed: .ci/run installs Debian's nginx-light");
        };
        (nginx, upstreams)
    }
}

/// Waits until each of `nodes` routes every one of `tools` (asked with `client`).
async fn await_routes(client: &reqwest::Client, nodes: &[&Node], tools: &[&str]) {
    let mut id = 1000;
    for node in nodes {
        let session = testkit::mcp_http::Session::open(client, &node.serve().url).await;
        await_tools(&session, &mut id, tools, true).await;
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `tools/call` at 2026-07-28 through the balancer: the JSON-RPC answer.
async fn call(client: &reqwest::Client, url: &str, id: u64, tool: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": tool, "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    post(client, url, id, tool, body).await
}

/// Posts the `tools/call` `body` for `tool` through the balancer: the JSON-RPC answer.
async fn post(client: &reqwest::Client, url: &str, id: u64, tool: &str, body: Value) -> Value {
    post_as(client, url, id, tool, body, Some(TOKEN)).await
}

/// [`post`], sending `token` (none: the client sends its own).
async fn post_as(
    client: &reqwest::Client,
    url: &str,
    id: u64,
    tool: &str,
    body: Value,
    token: Option<&str>,
) -> Value {
    let mut request = client.post(url);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await
        .expect("POST through nginx");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(json.trim())
        .unwrap_or_else(|_| panic!("HTTP {status}: not JSON-RPC through nginx: {text}"));
    assert_eq!(answer["id"], id, "HTTP {status}: {answer}");
    answer
}

fn echoed(answer: &Value) -> Option<&str> {
    let result = answer.get("result")?;
    (result["isError"] != true).then(|| result["content"][0]["text"].as_str())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_calls_through_a_load_balancer_reach_every_nodes_servers() {
    let mut a = Node::new("lb", "a", &["alpha"]);
    let mut b = Node::new("lb", "b", &["beta"]);
    // One token for the cluster's HTTP side: the balancer's clients present it to either node.
    let token = a.dir.join("http-token");
    std::fs::write(&token, TOKEN).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let flags = ["--token-file", token.to_str().unwrap()];
    a.start(&[], &flags);
    b.start(&[a.address()], &flags);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let with_token = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    await_routes(
        &with_token,
        &[&a, &b],
        &["mcp__alpha__echo", "mcp__beta__echo"],
    )
    .await;
    let (nginx, upstreams) = Nginx::in_front_of(&[&a, &b]);
    let client = reqwest::Client::new();
    let url = nginx.url();

    // Round-robin: both nodes answer, and each reaches both servers.
    for n in 0..12u64 {
        let (tool, text) = match n % 3 {
            0 | 1 => ("mcp__alpha__echo", format!("alpha {n}")),
            _ => ("mcp__beta__echo", format!("beta {n}")),
        };
        let answer = call(&client, &url, n, tool, json!({"text": text})).await;
        assert_eq!(echoed(&answer), Some(text.as_str()), "{answer}");
    }
    let by = nginx.answered_by();
    for upstream in &upstreams {
        assert!(
            by.get(upstream).is_some_and(|n| *n >= 3),
            "{upstream} answered too few of the calls: {by:?}"
        );
    }

    // b is gone: beta's calls fail typed, alpha's keep working, whichever node
    // nginx picks (a refused connection is passed to the other).
    b.kill();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = call(
            &client,
            &url,
            100,
            "mcp__beta__echo",
            json!({"text": "gone?"}),
        )
        .await;
        if echoed(&answer).is_none() {
            let said = answer.to_string();
            assert!(
                said.contains("beta"),
                "the failure names the tool's server: {answer}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "beta still answers after its node was killed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for n in 0..6u64 {
        let text = format!("still {n}");
        let answer = call(
            &client,
            &url,
            200 + n,
            "mcp__alpha__echo",
            json!({"text": text}),
        )
        .await;
        assert_eq!(echoed(&answer), Some(text.as_str()), "{answer}");
    }
    drop(nginx);
    a.stop();
}

/// Makes `node` supervise the conformance fixture too, whose
/// `test_elicitation` asks its client mid-call (a 2025-11-25 server's request).
fn add_fixture(node: &Node) {
    let python = testkit::peers_dir().join("venv/bin/python");
    let fixture = testkit::peers_dir().join("conformance_fixture.py");
    let config = node.dir.join(".mcp.json");
    let mut entries: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    entries["mcpServers"]["fixture"] = json!({"command": python, "args": [fixture, "stdio"]});
    std::fs::write(&config, entries.to_string()).unwrap();
    let enabled = testkit::attached::run(&node.dir, &["enable", "fixture"]);
    assert!(enabled.status.success(), "{enabled:?}");
}

/// The tools every node of the multi-round tests routes.
const ROUNDS_TOOLS: [&str; 3] = [
    "mcp__alpha__echo",
    "mcp__beta__echo",
    "mcp__fixture__test_elicitation",
];

/// The flags of the nodes the multi-round tests run.
const ROUNDS_VERSIONS: [&str; 2] = ["--protocol-versions", "2025-11-25,2025-03-26,2026-07-28"];

/// [`asking_call`] straight to a node, with a client that sends that node's token.
async fn asking_call_with(client: &reqwest::Client, url: &str, id: u64, more: Value) -> Value {
    asking_call_as(client, url, id, more, None).await
}

/// A `tools/call` at 2026-07-28 whose client answers elicitation, with `more`
/// params (a retry's `inputResponses` and `requestState`).
async fn asking_call(client: &reqwest::Client, url: &str, id: u64, more: Value) -> Value {
    asking_call_as(client, url, id, more, Some(TOKEN)).await
}

async fn asking_call_as(
    client: &reqwest::Client,
    url: &str,
    id: u64,
    more: Value,
    token: Option<&str>,
) -> Value {
    let tool = "mcp__fixture__test_elicitation";
    let mut params = json!({"name": tool, "arguments": {"message": "Who are you?"}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }});
    if let (Some(params), Value::Object(more)) = (params.as_object_mut(), more) {
        params.extend(more);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    post_as(client, url, id, tool, body, token).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_round_call_is_answered_whichever_node_its_rounds_reach() {
    let mut a = Node::new("lb-rounds", "a", &["alpha"]);
    let mut b = Node::new("lb-rounds", "b", &["beta"]);
    add_fixture(&a);
    let token = a.dir.join("http-token");
    std::fs::write(&token, TOKEN).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    // The fixture initialized at 2025-11-25 (it elicits); the tests' own
    // sessions at 2025-03-26; clients at 2026-07-28 as well.
    let flags = [
        "--token-file",
        token.to_str().unwrap(),
        ROUNDS_VERSIONS[0],
        ROUNDS_VERSIONS[1],
    ];
    a.start(&[], &flags);
    b.start(&[a.address()], &flags);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let with_token = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    await_routes(&with_token, &[&a, &b], &ROUNDS_TOOLS).await;
    let (nginx, upstreams) = Nginx::in_front_of(&[&a, &b]);
    let client = reqwest::Client::new();
    let url = nginx.url();

    // Round-robin sends each retry to the other node than its first round; a
    // plain call in between swaps which node gets the first rounds. Either
    // way the call waits on node a, whose server asks: a first round that
    // reaches b is passed on to a, and so is a retry that reaches b.
    for n in 0..4u64 {
        if n == 2 {
            let answer = call(
                &client,
                &url,
                50,
                "mcp__alpha__echo",
                json!({"text": "swap"}),
            )
            .await;
            assert_eq!(echoed(&answer), Some("swap"), "{answer}");
        }
        let first = asking_call(&client, &url, 10 * n + 1, json!({})).await;
        let result = &first["result"];
        assert_eq!(result["resultType"], "input_required", "{first}");
        let state = result["requestState"]
            .as_str()
            .expect("a requestState")
            .to_string();
        assert!(
            state.starts_with("a~"),
            "the state names the node the call waits on, the fixture's: {state}"
        );
        let asked = result["inputRequests"].as_object().expect("inputRequests");
        assert_eq!(asked.len(), 1, "{first}");
        let (key, question) = asked.iter().next().unwrap();
        assert_eq!(question["method"], "elicitation/create", "{first}");
        let answer = json!({"action": "accept", "content": {"username": "ada", "email": format!("ada{n}@example.com")}});
        let retry = json!({"inputResponses": {key.clone(): answer}, "requestState": state});
        let done = asking_call(&client, &url, 10 * n + 2, retry).await;
        let text = done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.contains("action=accept") && text.contains(&format!("ada{n}@example.com")),
            "the call did not finish with its client's answer: {done}"
        );
    }
    let by = nginx.answered_by();
    for upstream in &upstreams {
        assert!(
            by.get(upstream).is_some_and(|n| *n >= 4),
            "the rounds did not land on both nodes: {by:?}"
        );
    }
    drop(nginx);
    b.stop();
    a.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_a_token_of_its_own_passes_no_retry_on() {
    // Each node makes its own token: neither may ever be shown the other's.
    let mut a = Node::new("lb-own-tokens", "a", &["alpha"]);
    let mut b = Node::new("lb-own-tokens", "b", &["beta"]);
    add_fixture(&a);
    a.start(&[], &ROUNDS_VERSIONS);
    b.start(&[a.address()], &ROUNDS_VERSIONS);
    for node in [&a, &b] {
        await_routes(&node.serve().client(), &[node], &ROUNDS_TOOLS).await;
    }
    let (at_a, at_b) = (a.serve(), b.serve());
    assert_ne!(at_a.token, at_b.token, "each node made a token of its own");
    let first = asking_call_with(&at_a.client(), &at_a.url, 1, json!({})).await;
    let state = first["result"]["requestState"]
        .as_str()
        .expect("a requestState")
        .to_string();
    assert!(state.starts_with("a~"), "{first}");
    // The retry reaches b: refused, naming why, rather than passed to a with b's token.
    let retry = json!({"inputResponses": {}, "requestState": state});
    let refused = asking_call_with(&at_b.client(), &at_b.url, 2, retry).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(said.contains("shared token"), "{refused}");
    b.stop();
    a.stop();
}
