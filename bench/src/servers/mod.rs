//! The servers benchmarked, and how a client reaches each.
//!
//! Three of them are this very binary started again with a serve argument
//! ([`RMCP_ECHO_ARG`], [`rmcp_http::RMCP_HTTP_ARG`],
//! [`mcpvisor_demo::DEMO_SERVER_ARG`]), so one `cargo run` of the harness has
//! everything it needs; the third-party peers
//! come from `testkit/peers` (`bash scripts/peers.sh`).

pub mod http;
pub mod open_streams;
pub mod rmcp_echo;
pub mod rmcp_http;
pub mod rmcp_tasks;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The argument that makes the harness binary serve [`rmcp_echo`] on stdio.
pub const RMCP_ECHO_ARG: &str = "rmcp-echo-server";

/// The text every benchmarked call echoes.
pub const PAYLOAD: &str = "the quick brown fox jumps over the lazy dog";

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint already listening.
    Http {
        /// The MCP endpoint URL.
        url: String,
    },
}

/// One benchmarked server and its echo tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTarget {
    /// Short stable key, used in the JSON output.
    pub key: &'static str,
    /// What the report calls it.
    pub label: &'static str,
    /// How to reach it.
    pub endpoint: Endpoint,
    /// The name of its echo tool.
    pub tool: &'static str,
    /// The echo tool's one string argument (`text` or `message`).
    pub argument: &'static str,
    /// Reached at MCP 2026-07-28 (no `initialize`, no session) by the MCP
    /// clients; the floors, which speak no MCP revision, skip it.
    pub stateless: bool,
}

impl ServerTarget {
    /// The arguments of every benchmarked call.
    pub fn arguments(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert(self.argument.to_string(), Value::from(PAYLOAD));
        map
    }

    /// True for a Streamable HTTP server.
    pub fn is_http(&self) -> bool {
        matches!(self.endpoint, Endpoint::Http { .. })
    }

    /// The rmcp echo server: this binary with [`RMCP_ECHO_ARG`].
    pub fn rmcp_echo(exe: &Path) -> ServerTarget {
        ServerTarget {
            key: "rmcp-echo",
            label: "rmcp echo server (stdio)",
            endpoint: stdio(exe, &[RMCP_ECHO_ARG]),
            tool: "echo",
            argument: "text",
            stateless: false,
        }
    }

    /// The rmcp echo server over stdio, reached at MCP 2026-07-28.
    pub fn rmcp_echo_2026(exe: &Path) -> ServerTarget {
        ServerTarget {
            key: "rmcp-echo-2026",
            label: "rmcp echo server (stdio) at MCP 2026-07-28",
            stateless: true,
            ..ServerTarget::rmcp_echo(exe)
        }
    }

    /// The rmcp echo server over Streamable HTTP (stateless, JSON answers),
    /// reached at MCP 2026-07-28, at `url`.
    pub fn rmcp_http_2026(url: String) -> ServerTarget {
        ServerTarget {
            key: "rmcp-http-2026",
            label: "rmcp echo server (Streamable HTTP, JSON answers) at MCP 2026-07-28",
            stateless: true,
            ..ServerTarget::rmcp_http(url)
        }
    }

    /// The mcpvisor demo server: this binary with `demo-server`, the code of `mcpvisor demo-server`.
    pub fn demo(exe: &Path) -> ServerTarget {
        ServerTarget {
            key: "demo",
            label: "mcpvisor demo server (stdio)",
            endpoint: stdio(exe, &[mcpvisor_demo::DEMO_SERVER_ARG]),
            tool: "echo",
            argument: "text",
            stateless: false,
        }
    }

    /// The rmcp echo server over Streamable HTTP, stateless and answering
    /// JSON, at `url`: a server that is not the bottleneck.
    pub fn rmcp_http(url: String) -> ServerTarget {
        ServerTarget {
            key: "rmcp-http",
            label: "rmcp echo server (Streamable HTTP, stateless, JSON answers)",
            endpoint: Endpoint::Http { url },
            tool: "echo",
            argument: "text",
            stateless: false,
        }
    }

    /// The rmcp echo server over Streamable HTTP with sessions and their GET
    /// streams, at `url`.
    pub fn rmcp_http_sessions(url: String) -> ServerTarget {
        ServerTarget {
            key: "rmcp-http-sessions",
            label: "rmcp echo server (Streamable HTTP, sessions with GET streams)",
            endpoint: Endpoint::Http { url },
            tool: "echo",
            argument: "text",
            stateless: false,
        }
    }

    /// server-everything over stdio.
    pub fn everything_stdio(peers: &Peers) -> ServerTarget {
        let script = peers.everything_script();
        ServerTarget {
            key: "everything-stdio",
            label: "server-everything (stdio)",
            endpoint: Endpoint::Stdio {
                command: "node".into(),
                args: vec![script.to_string_lossy().into_owned(), "stdio".into()],
            },
            tool: "echo",
            argument: "message",
            stateless: false,
        }
    }

    /// server-everything over Streamable HTTP at `url`.
    pub fn everything_http(url: String) -> ServerTarget {
        ServerTarget {
            key: "everything-http",
            label: "server-everything (Streamable HTTP, SSE answers)",
            endpoint: Endpoint::Http { url },
            tool: "echo",
            argument: "message",
            stateless: false,
        }
    }

    /// The Python SDK server over Streamable HTTP answering JSON, at `url`.
    pub fn python_http(url: String) -> ServerTarget {
        ServerTarget {
            key: "python-http-json",
            label: "Python SDK (Streamable HTTP, JSON answers)",
            endpoint: Endpoint::Http { url },
            tool: "echo",
            argument: "message",
            stateless: false,
        }
    }
}

fn stdio(exe: &Path, args: &[&str]) -> Endpoint {
    Endpoint::Stdio {
        command: exe.to_string_lossy().into_owned(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

/// The pinned third-party peers installed by `scripts/peers.sh`.
#[derive(Debug, Clone)]
pub struct Peers {
    root: PathBuf,
}

impl Peers {
    /// Peers installed under `root` (normally `testkit/peers`).
    pub fn new(root: PathBuf) -> Self {
        Peers { root }
    }

    /// The workspace's `testkit/peers`.
    pub fn in_workspace() -> Self {
        Peers::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testkit/peers"))
    }

    /// server-everything's entry script.
    pub fn everything_script(&self) -> PathBuf {
        self.root
            .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    }

    /// The virtualenv's Python, with the `mcp` SDK installed.
    pub fn python(&self) -> PathBuf {
        self.root.join("venv/bin/python")
    }

    /// The Python interop server script.
    pub fn python_server(&self) -> PathBuf {
        self.root.join("python_server.py")
    }

    /// True when server-everything is installed.
    pub fn has_everything(&self) -> bool {
        self.everything_script().is_file()
    }

    /// True when the Python SDK server can run.
    pub fn has_python(&self) -> bool {
        self.python().is_file() && self.python_server().is_file()
    }
}
