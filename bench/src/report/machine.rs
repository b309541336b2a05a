//! The machine and the versions of everything measured.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::servers::Peers;

/// The machine a run measured on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available.
    pub cpus: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// The kernel release.
    pub kernel: String,
    /// `/proc/loadavg` (1, 5, 15 min) when the report was made: how busy the
    /// machine was during the run, other work included.
    pub load_average: String,
}

impl Machine {
    /// Reads this machine's description.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, model)| model.trim().to_string())
            .unwrap_or_else(unknown);
        Machine {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| unknown()),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .unwrap_or_else(unknown),
        }
    }
}

/// Versions of the compiler, the clients and the peers.
#[derive(Debug, Clone, Serialize)]
pub struct Versions {
    /// `rustc --version`.
    pub rustc: String,
    /// The mcpvisor crate version and commit.
    pub mcpvisor: String,
    /// The rmcp version the bench crate pins.
    pub rmcp: String,
    /// `node --version`.
    pub node: String,
    /// `@modelcontextprotocol/server-everything`.
    pub server_everything: String,
    /// The Python `mcp` SDK.
    pub python_mcp: String,
    /// The Python running it.
    pub python: String,
}

/// The rmcp version pinned in `bench/Cargo.toml`.
pub const RMCP_VERSION: &str = "3.11.0";

impl Versions {
    /// Asks each tool for its version; `unknown` where it does not answer.
    pub fn detect(peers: &Peers) -> Versions {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let commit = output(
            Command::new("git")
                .args(["rev-parse", "--short", "HEAD"])
                .current_dir(&workspace),
        );
        let script = peers.everything_script();
        let package = script
            .parent()
            .and_then(Path::parent)
            .map(|dir| dir.join("package.json"));
        let server_everything = package
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string))
            .unwrap_or_else(unknown);
        Versions {
            rustc: output(Command::new("rustc").arg("--version")),
            mcpvisor: format!("{} ({commit})", env!("CARGO_PKG_VERSION")),
            rmcp: RMCP_VERSION.into(),
            node: output(Command::new("node").arg("--version")),
            server_everything,
            python_mcp: output(Command::new(peers.python()).args([
                "-c",
                "import importlib.metadata as m; print(m.version('mcp'))",
            ])),
            python: output(Command::new(peers.python()).arg("--version")),
        }
    }
}

impl Versions {
    /// What the gateway section names: mcpvisor's build and the node running the npm gateways.
    pub fn gateway_line(&self) -> String {
        format!("mcpvisor {}; node {}", self.mcpvisor, self.node)
    }

    /// What the curve and soak sections name: mcpvisor's build, the rmcp of
    /// the echo server, the compiler.
    pub fn host_line(&self) -> String {
        format!(
            "mcpvisor {}; rmcp {}; {}",
            self.mcpvisor, self.rmcp, self.rustc
        )
    }
}

/// The current time, UTC, to the minute.
pub fn utc_now() -> String {
    output(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
}

fn output(command: &mut Command) -> String {
    command
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(unknown)
}

fn unknown() -> String {
    "unknown".into()
}
