//! Each gateway as a child process fronting the rmcp echo server over stdio,
//! on a loopback port, with the `/proc` figures of that one process.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::json;

use super::{Gateway, GatewaySetup};
use crate::clients::HttpFloor;
use crate::servers::{PAYLOAD, RMCP_ECHO_ARG};

/// The `.mcp.json` name of the one upstream server (mcpvisor, mcp-hub).
pub const UPSTREAM: &str = "echo";
/// The tool as `mcpvisor serve` advertises it.
pub const QUALIFIED_TOOL: &str = "mcp__echo__echo";

/// `/proc/<pid>/stat` counts CPU time in USER_HZ ticks, which the Linux ABI fixes at 100.
const TICKS_PER_SECOND: u64 = 100;

/// A directory of its own for one gateway's files; removed when dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh empty directory under the system's temporary directory.
    pub fn new(tag: &str) -> anyhow::Result<Scratch> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mcpvisor-bench-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `.mcp.json` whose one entry, [`UPSTREAM`], runs the rmcp echo server, approved
/// in a home of its own: what `mcpvisor serve` and `mcpvisor call` read.
#[derive(Debug)]
pub struct McpvisorProject {
    /// The `.mcp.json`.
    pub config: PathBuf,
    /// `--home` (approvals, the socket).
    pub home: PathBuf,
    scratch: Scratch,
}

impl McpvisorProject {
    /// Writes the configuration and approves its entry with `mcpvisor enable`.
    pub fn create(setup: &GatewaySetup) -> anyhow::Result<McpvisorProject> {
        let scratch = Scratch::new("mcpvisor")?;
        let config = scratch.path().join(".mcp.json");
        let home = scratch.path().join("home");
        std::fs::create_dir_all(&home)?;
        std::fs::write(&config, upstream_config(setup).to_string())?;
        let output = setup
            .mcpvisor_command(&config, &home)
            .args(["enable", UPSTREAM])
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", setup.mcpvisor.display()))?;
        ensure!(
            output.status.success(),
            "mcpvisor enable {UPSTREAM} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Ok(McpvisorProject {
            config,
            home,
            scratch,
        })
    }

    /// Where a gateway started for this project writes its stderr.
    fn log(&self) -> PathBuf {
        self.scratch.path().join("serve.log")
    }
}

fn upstream_config(setup: &GatewaySetup) -> serde_json::Value {
    json!({"mcpServers": {UPSTREAM: {
        "command": setup.exe.to_string_lossy(),
        "args": [RMCP_ECHO_ARG],
    }}})
}

/// A running gateway; stopped (its whole process group) when dropped.
#[derive(Debug)]
pub struct GatewayProcess {
    /// Which gateway.
    pub gateway: Gateway,
    child: Child,
    /// Where calls go: the MCP endpoint, or mcp-hub's tool-call route.
    pub url: String,
    log: PathBuf,
    stopped: bool,
    _scratch: Option<Scratch>,
    _project: Option<McpvisorProject>,
}

impl GatewayProcess {
    /// Starts `gateway` in front of the rmcp echo server and returns once a call went through.
    pub async fn start(gateway: Gateway, setup: &GatewaySetup) -> anyhow::Result<GatewayProcess> {
        GatewayProcess::start_with(gateway, setup, &[]).await
    }

    /// [`GatewayProcess::start`], with `extra` arguments for `mcpvisor serve`
    /// (the cluster figures make it a cluster node).
    pub async fn start_with(
        gateway: Gateway,
        setup: &GatewaySetup,
        extra: &[String],
    ) -> anyhow::Result<GatewayProcess> {
        let port = free_port()?;
        let upstream = format!("{} {RMCP_ECHO_ARG}", setup.exe.display());
        let node = |script: PathBuf| {
            let mut c = Command::new("node");
            c.arg(script);
            c
        };
        let (mut command, scratch, project, log, url) = match gateway {
            Gateway::Mcpvisor | Gateway::McpvisorStateless => {
                let project = McpvisorProject::create(setup)?;
                let mut c = setup.mcpvisor_command(&project.config, &project.home);
                c.args(["serve", "--http", &format!("127.0.0.1:{port}")])
                    .args(extra);
                let log = project.log();
                let url = format!("http://127.0.0.1:{port}/mcp");
                (c, None, Some(project), log, url)
            }
            Gateway::Supergateway => {
                let scratch = Scratch::new("supergateway")?;
                let mut c = node(setup.peers.supergateway());
                c.args(["--stdio", &upstream, "--outputTransport", "streamableHttp"])
                    .args([
                        "--port",
                        &port.to_string(),
                        "--stateful",
                        "--logLevel",
                        "none",
                    ]);
                let log = scratch.path().join("log");
                let url = format!("http://127.0.0.1:{port}/mcp");
                (c, Some(scratch), None, log, url)
            }
            Gateway::McpProxy => {
                let scratch = Scratch::new("mcp-proxy")?;
                let mut c = node(setup.peers.mcp_proxy());
                c.args(["--host", "127.0.0.1", "--port", &port.to_string(), "--"])
                    .arg(&setup.exe)
                    .arg(RMCP_ECHO_ARG);
                let log = scratch.path().join("log");
                let url = format!("http://127.0.0.1:{port}/mcp");
                (c, Some(scratch), None, log, url)
            }
            Gateway::McpHub => {
                let scratch = Scratch::new("mcp-hub")?;
                let config = scratch.path().join("hub.json");
                std::fs::write(&config, upstream_config(setup).to_string())?;
                let mut c = node(setup.peers.mcp_hub());
                c.args(["--port", &port.to_string(), "--config"])
                    .arg(&config)
                    // Its state, cache and logs go under the scratch directory, not ~.
                    .env("HOME", scratch.path())
                    .env("XDG_STATE_HOME", scratch.path().join("state"))
                    .env("XDG_CACHE_HOME", scratch.path().join("cache"))
                    .env("XDG_CONFIG_HOME", scratch.path().join("config"))
                    .env("XDG_DATA_HOME", scratch.path().join("data"));
                let log = scratch.path().join("log");
                let url = format!("http://127.0.0.1:{port}/api/servers/tools");
                (c, Some(scratch), None, log, url)
            }
            Gateway::FastMcp | Gateway::FastMcpStateless => {
                let scratch = Scratch::new("fastmcp")?;
                let config = scratch.path().join("mcp.json");
                std::fs::write(&config, upstream_config(setup).to_string())?;
                let mut c = Command::new(setup.peers.fastmcp());
                c.arg("run")
                    .arg(&config)
                    .args(["--transport", "http", "--host", "127.0.0.1"])
                    .args(["--port", &port.to_string(), "--no-banner"])
                    .args(["--log-level", "ERROR"])
                    .current_dir(scratch.path())
                    .env("HOME", scratch.path());
                let log = scratch.path().join("log");
                let url = format!("http://127.0.0.1:{port}/mcp");
                (c, Some(scratch), None, log, url)
            }
            Gateway::ContextForge => {
                let scratch = Scratch::new("contextforge")?;
                let mut c = Command::new(setup.peers.contextforge_python());
                c.args(["-m", "mcpgateway.translate", "--stdio", &upstream])
                    .args(["--expose-streamable-http", "--host", "127.0.0.1"])
                    .args(["--port", &port.to_string(), "--logLevel", "error"])
                    // It refuses to start on its placeholder secrets.
                    .env("JWT_SECRET_KEY", random_hex()?)
                    .env("AUTH_ENCRYPTION_SECRET", random_hex()?)
                    .current_dir(scratch.path())
                    .env("HOME", scratch.path());
                let log = scratch.path().join("log");
                let url = format!("http://127.0.0.1:{port}/mcp");
                (c, Some(scratch), None, log, url)
            }
        };
        let stderr = std::fs::File::create(&log)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            // Its own process group, so stopping it stops what it spawned too.
            .process_group(0);
        let child = command
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let mut process = GatewayProcess {
            gateway,
            child,
            url,
            log,
            stopped: false,
            _scratch: scratch,
            _project: project,
        };
        process
            .wait_until_calls_pass(port)
            .await
            .with_context(|| format!("{} did not start: {}", gateway.name(), process.log_tail()))?;
        Ok(process)
    }

    async fn wait_until_calls_pass(&mut self, port: u16) -> anyhow::Result<()> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = anyhow::anyhow!("nothing listened on {port}");
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                bail!("it exited: {status}");
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                match self.client().await {
                    Ok(client) => match client.call().await {
                        Ok(()) => {
                            client.close().await;
                            return Ok(());
                        }
                        Err(e) => last = e,
                    },
                    Err(e) => last = e,
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(last.context("no call passed within 60 s"))
    }

    /// The benchmark client for this gateway: a Streamable HTTP session, or for
    /// mcp-hub a plain POST to its REST route.
    pub async fn client(&self) -> anyhow::Result<HttpFloor> {
        let arguments = json!({"text": PAYLOAD});
        match self.gateway {
            Gateway::McpHub => HttpFloor::open_rest(
                &self.url,
                json!({"server_name": UPSTREAM, "tool": "echo", "arguments": arguments})
                    .to_string(),
            ),
            Gateway::Mcpvisor => {
                let token = self.bearer_token();
                HttpFloor::open_mcp_with(&self.url, QUALIFIED_TOOL, &arguments, token.as_deref())
                    .await
            }
            Gateway::McpvisorStateless => {
                let token = self.bearer_token();
                HttpFloor::open_stateless(&self.url, QUALIFIED_TOOL, &arguments, token.as_deref())
                    .await
            }
            Gateway::FastMcpStateless => {
                HttpFloor::open_stateless(&self.url, "echo", &arguments, None).await
            }
            Gateway::Supergateway
            | Gateway::McpProxy
            | Gateway::FastMcp
            | Gateway::ContextForge => HttpFloor::open_mcp(&self.url, "echo", &arguments).await,
        }
    }

    /// The bearer token `mcpvisor serve` made, from the file its log names
    /// (`None` for a serve that asks for none, as builds before the token did).
    pub fn bearer_token(&self) -> Option<String> {
        let log = std::fs::read_to_string(&self.log).ok()?;
        let (_, rest) = log.split_once("Bearer <the token in ")?;
        let (path, _) = rest.split_once('>')?;
        Some(std::fs::read_to_string(path).ok()?.trim().to_string())
    }

    /// The `.mcp.json` and home of `mcpvisor serve`.
    pub fn project(&self) -> Option<&McpvisorProject> {
        self._project.as_ref()
    }

    /// Waits until the gateway's stderr holds `line` (up to 10 s).
    pub async fn wait_for_log(&self, line: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains(line) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bail!(
            "{} never wrote {line:?}: {}",
            self.gateway.name(),
            self.log_tail()
        )
    }

    /// The gateway's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// User + system CPU time of the gateway process (all its threads; not its children).
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // The fields after the command name, which may hold spaces: state is the first.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .context("no command name in /proc/PID/stat")?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| -> anyhow::Result<u64> {
            Ok(fields.get(i).context("short /proc/PID/stat")?.parse()?)
        };
        let ticks = tick(11)? + tick(12)?;
        Ok(Duration::from_micros(ticks * 1_000_000 / TICKS_PER_SECOND))
    }

    /// `VmRSS` of the gateway process, in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS in /proc/PID/status")
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(5).collect();
        let tail: Vec<&str> = lines.into_iter().rev().collect();
        if tail.is_empty() {
            "(nothing on stderr)".into()
        } else {
            tail.join(" | ")
        }
    }

    /// SIGTERM, up to 3 s for a clean exit, then SIGKILL to the whole group.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(pid, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A loopback port nothing listens on right now.
/// 32 random bytes as hex, from the kernel.
fn random_hex() -> anyhow::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}
