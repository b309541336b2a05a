//! Streamable HTTP peers as child processes listening on loopback ports.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::Peers;
use super::rmcp_http::{RMCP_HTTP_ARG, SESSIONS_FLAG};

/// A peer server process; killed when dropped.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    /// Its MCP endpoint.
    pub url: String,
}

impl HttpServer {
    /// Starts server-everything's Streamable HTTP transport on a free port.
    pub fn everything(peers: &Peers) -> anyhow::Result<HttpServer> {
        let port = free_port()?;
        let mut command = Command::new("node");
        command
            .arg(peers.everything_script())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        HttpServer::start(command, port)
    }

    /// Starts the Python SDK server answering POSTs with JSON on a free port.
    pub fn python_json(peers: &Peers) -> anyhow::Result<HttpServer> {
        let port = free_port()?;
        let mut command = Command::new(peers.python());
        command
            .arg(peers.python_server())
            .arg("http-json")
            .arg(port.to_string());
        HttpServer::start(command, port)
    }

    /// Starts the rmcp echo server over HTTP (this binary, `exe`), with
    /// sessions and GET streams if `sessions`; it prints its URL once listening.
    pub fn rmcp(exe: &Path, sessions: bool) -> anyhow::Result<HttpServer> {
        let mut command = Command::new(exe);
        command.arg(RMCP_HTTP_ARG);
        if sessions {
            command.arg(SESSIONS_FLAG);
        }
        // Its stdin stays open as long as the child handle: when the harness
        // dies without dropping it, the server sees the end and exits.
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let mut url = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout).read_line(&mut url)?;
        }
        let url = url.trim().to_string();
        let server = HttpServer { child, url };
        if server.url.is_empty() {
            bail!("{command:?} exited before printing its URL");
        }
        Ok(server)
    }

    fn start(mut command: Command, port: u16) -> anyhow::Result<HttpServer> {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let mut server = HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!("{command:?} exited before listening: {status}");
            }
            if Instant::now() > deadline {
                bail!("{command:?} did not listen on {port} within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on right now.
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
