//! Third-party MCP servers over HTTP, started for one test and stopped with it.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::peers_dir;

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
        let index =
            peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        assert!(
            index.exists(),
            "{} is missing: run `bash scripts/peers.sh`",
            index.display()
        );
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(index)
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        PeerServer::start(cmd, port)
    }

    /// The Python SDK server in streamable-http mode; `json` selects JSON answers instead of SSE.
    pub fn python(json: bool) -> PeerServer {
        let python = peers_dir().join("venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `bash scripts/peers.sh`",
            python.display()
        );
        let port = free_port();
        let mode = if json { "http-json" } else { "http-sse" };
        let mut cmd = Command::new(python);
        cmd.arg(peers_dir().join("python_server.py"))
            .arg(mode)
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

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
