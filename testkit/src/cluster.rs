//! Cluster nodes as the cluster tests run them: `mcpvisor serve --http …
//! --cluster-listen …` in a directory of its own with its own demo servers,
//! a Streamable HTTP session on each, and the waits for routes to converge.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::mcp_http::{QUICK, Session, within};
use super::peers::free_port;
use super::serve::HttpServe;

pub const COOKIE: &str = "cluster-cookie-5be1d0-never-printed";

/// Routes settle across nodes well within this.
pub const CONVERGE: Duration = Duration::from_secs(20);

/// One node: its directory, cluster port and the serve process.
pub struct Node {
    pub name: &'static str,
    pub dir: PathBuf,
    pub port: u16,
    /// Its HTTP port, the same on every start: a node started again must not
    /// take an ephemeral port that happens to be its own cluster port.
    http_port: u16,
    serve: Option<HttpServe>,
}

impl Node {
    /// A node named `name` supervising a demo server under each of `servers`.
    pub fn new(test: &str, name: &'static str, servers: &[&str]) -> Node {
        let dir = super::serve::empty_dir("cluster", &format!("{test}-{name}"));
        let demo = json!({"command": crate::mcpvisor_exe(), "args": ["demo-server"]});
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
            let out = super::attached::run(&dir, &["enable", server]);
            assert!(out.status.success(), "enable {server}: {out:?}");
        }
        write_cookie(&dir, COOKIE);
        Node {
            name,
            dir,
            port: free_port(),
            http_port: free_port(),
            serve: None,
        }
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts its serve, joining `join` (addresses), with `extra` flags, logging at info.
    pub fn start(&mut self, join: &[String], extra: &[&str]) {
        self.start_logging(join, extra, Some("info"));
    }

    /// [`Node::start`] with `RUST_LOG` set to `log` (unset when `None`).
    pub fn start_logging(&mut self, join: &[String], extra: &[&str], log: Option<&str>) {
        let listen = self.address();
        let http = format!("127.0.0.1:{}", self.http_port);
        let cookie = self.dir.join("cookie");
        let mut args: Vec<String> = [
            "--http",
            &http,
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
        // A node started again takes its cluster port back; an ephemeral port
        // some other process took meanwhile (a client's connection) can hold
        // it for a moment, so a start that found it taken is tried again.
        for attempt in 1.. {
            match HttpServe::try_start(&self.dir, &args, log) {
                Ok(serve) => {
                    self.serve = Some(serve);
                    return;
                }
                Err(why) if attempt < 3 && why.contains("Address already in use") => {
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(why) => panic!("node {}: {why}", self.name),
            }
        }
    }

    pub fn serve(&self) -> &HttpServe {
        self.serve.as_ref().expect("the node runs")
    }

    pub async fn session(&self) -> Session {
        Session::open(&self.serve().client(), &self.serve().url).await
    }

    /// SIGKILL to its whole process group (serve and its servers).
    pub fn kill(&mut self) -> String {
        let serve = self.serve.take().expect("the node runs");
        let output = serve.output();
        let _ = killpg(Pid::from_raw(serve.pid() as i32), Signal::SIGKILL);
        drop(serve);
        output
    }

    /// SIGTERM; what it logged. The cookie must be in none of it.
    pub fn stop(&mut self) -> String {
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

pub fn write_cookie(dir: &Path, cookie: &str) {
    let path = dir.join("cookie");
    std::fs::write(&path, format!("{cookie}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Every tool name `session`'s node lists, page by page.
pub async fn tool_names(session: &Session, id: &mut u64) -> Vec<String> {
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
pub async fn await_tools(session: &Session, id: &mut u64, names: &[&str], present: bool) {
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

pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

pub fn is_error(result: &Value) -> bool {
    result["isError"].as_bool().unwrap_or(false)
}

pub fn certify(ca_dir: &Path, nodes: &[&Node]) {
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
        // The address other nodes dial, and the node's name (a node is who its certificate names).
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), node.name.to_string()]).unwrap();
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

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub fn tls_flags(node: &Node) -> Vec<String> {
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

/// The resident set of process `pid`, in KiB (`VmRSS` in /proc/PID/status).
pub fn rss_kib_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the node runs");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}
