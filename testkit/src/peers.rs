//! The third-party MCP servers the interop tests run (`scripts/peers.sh`
//! installs them): the reference `server-everything` (npm) and a server on the
//! Python SDK's `MCPServer` (PyPI), each over stdio or Streamable HTTP. Over
//! HTTP the server is a process started for one test and stopped with it.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpvisor::HttpSpec;
use mcpvisor::{ServerSpec, StdioSpec};

use super::peers_dir;

/// A third-party server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `@modelcontextprotocol/server-everything`, served as `everything`.
    Everything,
    /// `testkit/peers/python_server.py` on the Python SDK, served as `py`.
    PythonSdk,
}

/// How mcpvisor reaches a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// A child process speaking newline-delimited JSON-RPC.
    Stdio,
    /// Streamable HTTP, POSTs answered with SSE (server-everything's only mode).
    HttpSse,
    /// Streamable HTTP, POSTs answered with plain JSON (the Python SDK only).
    HttpJson,
}

/// A peer ready for a host: its spec and, over HTTP, the server process.
pub struct RunningPeer {
    /// What the host is given.
    pub spec: ServerSpec,
    /// The HTTP server, `None` over stdio (the host starts the child then).
    pub server: Option<PeerServer>,
}

impl RunningPeer {
    /// What the HTTP server printed so far (empty over stdio), for failure messages.
    pub fn output(&self) -> String {
        self.server
            .as_ref()
            .map(PeerServer::output)
            .unwrap_or_default()
    }
}

impl Peer {
    /// The server name its tools are routed under.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Everything => "everything",
            Peer::PythonSdk => "py",
        }
    }

    /// What its HTTP server logs when a client deletes its session.
    pub fn session_deleted_line(self) -> &'static str {
        match self {
            Peer::Everything => "Received session termination request",
            Peer::PythonSdk => "\"DELETE /mcp HTTP/1.1\" 200",
        }
    }

    /// Starts it (over HTTP) or describes it (over stdio) for a host.
    pub fn run(self, wire: Wire) -> RunningPeer {
        let name = self.name();
        let (spec, server) = match (self, wire) {
            (Peer::Everything, Wire::Stdio) => (
                ServerSpec::stdio(
                    name,
                    StdioSpec::new("node", [arg(everything_index()), "stdio".into()]),
                ),
                None,
            ),
            (Peer::PythonSdk, Wire::Stdio) => (
                ServerSpec::stdio(
                    name,
                    StdioSpec::new(
                        arg(python()),
                        [arg(peers_dir().join("python_server.py")), "stdio".into()],
                    ),
                ),
                None,
            ),
            (Peer::Everything, Wire::HttpSse) => http(name, PeerServer::everything()),
            (Peer::PythonSdk, Wire::HttpSse) => http(name, PeerServer::python(false)),
            (Peer::PythonSdk, Wire::HttpJson) => http(name, PeerServer::python(true)),
            (Peer::Everything, Wire::HttpJson) => {
                panic!("server-everything answers POSTs with SSE only")
            }
        };
        RunningPeer { spec, server }
    }
}

fn http(name: &str, server: PeerServer) -> (ServerSpec, Option<PeerServer>) {
    let spec = ServerSpec::http(
        name,
        HttpSpec {
            url: server.url.clone(),
            headers: Vec::new(),
            oauth: None,
        },
    );
    (spec, Some(server))
}

/// The Python SDK's server over stdio behind a stand-in that refuses
/// `initialize` as a server of MCP 2026-07-28 only does (`peers/modern_only.py`:
/// the SDK's own server accepts both eras and has no switch for one).
pub fn modern_only_python(name: &str) -> ServerSpec {
    ServerSpec::stdio(
        name,
        StdioSpec::new(arg(python()), [arg(peers_dir().join("modern_only.py"))]),
    )
}

fn arg(path: PathBuf) -> String {
    path.to_string_lossy().into_owned()
}

/// server-everything's entry point, which must be installed.
/// server-everything's entry point, for a test that starts it its own way.
pub fn everything_index() -> PathBuf {
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        index.exists(),
        "{} is missing: run `bash scripts/peers.sh`",
        index.display()
    );
    index
}

/// The Python of the peers' virtual environment, which must be installed.
fn python() -> PathBuf {
    let python = peers_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash scripts/peers.sh`",
        python.display()
    );
    python
}

/// A peer server process; killed (with its process group) when dropped.
pub struct PeerServer {
    child: Child,
    /// The MCP endpoint.
    pub url: String,
    output: Arc<Mutex<String>>,
}

impl PeerServer {
    /// `server-everything` in Streamable HTTP mode.
    pub fn everything() -> PeerServer {
        PeerServer::everything_at(free_port())
    }

    /// `server-everything` in Streamable HTTP mode on `port` (to bring one
    /// back where it was).
    pub fn everything_at(port: u16) -> PeerServer {
        let mut cmd = Command::new("node");
        cmd.arg(everything_index())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        PeerServer::start(cmd, port)
    }

    /// The Python SDK server in streamable-http mode; `json` selects JSON answers instead of SSE.
    pub fn python(json: bool) -> PeerServer {
        PeerServer::python_at(json, free_port())
    }

    /// [`PeerServer::python`] on `port` (to bring one back where it was).
    pub fn python_at(json: bool, port: u16) -> PeerServer {
        let mode = if json { "http-json" } else { "http-sse" };
        let mut cmd = Command::new(python());
        cmd.arg(peers_dir().join("python_server.py"))
            .arg(mode)
            .arg(port.to_string());
        PeerServer::start(cmd, port)
    }

    /// The TypeScript SDK v2 server as a strict MCP 2026-07-28 endpoint
    /// (`peers/ts_v2_server.mjs`: `createMcpHandler` with `legacy: 'reject'`),
    /// which logs each request's MCP headers.
    pub fn ts_v2() -> PeerServer {
        PeerServer::ts_v2_in("reject")
    }

    /// The TypeScript SDK v2 server in its default mode (`legacy:
    /// 'stateless'`: 2025-era requests are served too, each statelessly).
    pub fn ts_v2_default() -> PeerServer {
        PeerServer::ts_v2_in("stateless")
    }

    fn ts_v2_in(legacy: &str) -> PeerServer {
        PeerServer::ts_v2_at(free_port(), legacy)
    }

    /// The TypeScript SDK v2 server on `port` (to bring one back where it
    /// was), `legacy` being `reject` or `stateless`.
    pub fn ts_v2_at(port: u16, legacy: &str) -> PeerServer {
        let script = peers_dir().join("ts_v2_server.mjs");
        assert!(
            peers_dir()
                .join("node_modules/@modelcontextprotocol/server")
                .exists(),
            "the TypeScript SDK v2 server is missing: run `bash scripts/peers.sh`"
        );
        let mut cmd = Command::new("node");
        cmd.arg(script).arg(port.to_string()).arg(legacy);
        PeerServer::start(cmd, port)
    }

    /// The Python SDK server in its stateless HTTP mode (`stateless_http`:
    /// no session ids, JSON answers).
    pub fn python_stateless() -> PeerServer {
        PeerServer::python_stateless_at(free_port())
    }

    /// [`PeerServer::python_stateless`] on `port` (to bring one back where it was).
    pub fn python_stateless_at(port: u16) -> PeerServer {
        let mut cmd = Command::new(python());
        cmd.arg(peers_dir().join("python_server.py"))
            .arg("http-stateless")
            .arg(port.to_string());
        PeerServer::start(cmd, port)
    }

    fn start(mut cmd: Command, port: u16) -> PeerServer {
        use std::os::unix::process::CommandExt;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().expect("start peer server");
        let output = Arc::new(Mutex::new(String::new()));
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut o = output.lock().unwrap();
                    o.push_str(&line);
                    o.push('\n');
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "peer server exited with {status}: {}",
                    output.lock().unwrap()
                );
            }
            assert!(
                Instant::now() < deadline,
                "peer server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        PeerServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            output,
        }
    }

    /// Everything the server printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

impl PeerServer {
    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// A port on 127.0.0.1 nothing listens on, for a process the test starts
/// later, and never the same one twice in this process. Taken from outside the
/// system's ephemeral range: a port from inside it can be taken, between the
/// pick and the listen, as the local port of any connection made meanwhile
/// (and held for as long as that connection is kept alive), which made a
/// node that started again fail with "Address already in use".
pub fn free_port() -> u16 {
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok();
    let mut bounds = range
        .iter()
        .flat_map(|r| r.split_whitespace())
        .filter_map(|n| n.parse::<u16>().ok());
    let (low, high) = (
        bounds.next().unwrap_or(32768),
        bounds.next().unwrap_or(60999),
    );
    // Below the ephemeral range if there is room for a few thousand ports
    // there, else above it; with neither, what the system hands out.
    let (first, last) = if low > 1024 + 2048 {
        (low.saturating_sub(12_000).max(1024), low - 1)
    } else if high < u16::MAX - 2048 {
        (high + 1, u16::MAX)
    } else {
        return std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a port from the system");
    };
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    let span = u32::from(last - first) + 1;
    let start = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(given.len() as u32 * 131);
    for step in 0..span {
        let port = first + ((start.wrapping_add(step)) % span) as u16;
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port in {first}..={last}");
}
