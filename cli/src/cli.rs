//! The command line as clap reads it: global options, settings flags and
//! the commands with their arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use mcpvisor::settings::Overrides;
use mcpvisor_demo::DemoServerOptions;

use crate::{chaos, edit, serve};

#[derive(Parser)]
#[command(
    name = "mcpvisor",
    version,
    about = "Supervised MCP servers for agent hosts"
)]
pub(crate) struct Cli {
    /// The `.mcp.json` to read (default: the nearest .mcp.json here or in a parent
    /// directory, else the built-in demo server).
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) config: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) json: bool,
    /// Run the servers for this command alone even when an `mcpvisor serve`
    /// for the configuration is running.
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) no_attach: bool,
    /// Diagnostics on stderr: -v what mcpvisor and the servers do, -vv and -vvv
    /// everything (or set RUST_LOG).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = "Global options")]
    pub(crate) verbose: u8,
    #[command(flatten)]
    pub(crate) settings: SettingFlags,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags that override settings (see `mcpvisor settings`).
#[derive(Args)]
#[command(next_help_heading = "Settings (see `mcpvisor settings`)")]
pub(crate) struct SettingFlags {
    /// Home directory for approvals and settings (default: $MCPVISOR_HOME, else ~/.mcpvisor).
    #[arg(long, global = true)]
    pub(crate) home: Option<PathBuf>,
    /// Request timeout in milliseconds.
    #[arg(long, global = true)]
    pub(crate) request_timeout_ms: Option<u64>,
    /// Startup timeout (initialize + first tools/list) in milliseconds.
    #[arg(long, global = true)]
    pub(crate) startup_timeout_ms: Option<u64>,
    /// First restart delay in milliseconds.
    #[arg(long, global = true)]
    pub(crate) restart_initial_backoff_ms: Option<u64>,
    /// Longest restart delay in milliseconds.
    #[arg(long, global = true)]
    pub(crate) restart_max_backoff_ms: Option<u64>,
    /// Restarts allowed within the window before a server is marked failed.
    #[arg(long, global = true)]
    pub(crate) restart_max_restarts: Option<u64>,
    /// The restart-intensity window in milliseconds.
    #[arg(long, global = true)]
    pub(crate) restart_window_ms: Option<u64>,
    /// A failed server is tried again after this many milliseconds, the delay
    /// doubling after each failed try (0: only `mcpvisor restart` brings it back).
    #[arg(long, global = true)]
    pub(crate) failed_probe_ms: Option<u64>,
    /// Longest delay between two tries of a failed server, in milliseconds.
    #[arg(long, global = true)]
    pub(crate) failed_probe_max_ms: Option<u64>,
    /// Protocol revisions to offer servers, first preferred, comma-separated
    /// (2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28; default 2025-03-26,
    /// and 2026-07-28 for a server that refuses `initialize` as only a
    /// 2026-07-28 server does).
    #[arg(long, global = true, value_name = "LIST")]
    pub(crate) protocol_versions: Option<String>,
}

impl SettingFlags {
    pub(crate) fn overrides(&self) -> Overrides {
        let values = [
            ("request_timeout_ms", self.request_timeout_ms),
            ("startup_timeout_ms", self.startup_timeout_ms),
            (
                "restart_initial_backoff_ms",
                self.restart_initial_backoff_ms,
            ),
            ("restart_max_backoff_ms", self.restart_max_backoff_ms),
            ("restart_max_restarts", self.restart_max_restarts),
            ("restart_window_ms", self.restart_window_ms),
            ("failed_probe_ms", self.failed_probe_ms),
            ("failed_probe_max_ms", self.failed_probe_max_ms),
        ];
        Overrides {
            home: self.home.clone(),
            protocol_versions: self.protocol_versions.clone(),
            values: values
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect(),
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// List the tools of every enabled server, or of the servers named (only those start).
    Tools {
        /// Only these servers.
        servers: Vec<String>,
    },
    /// Show one tool: title, description, parameters, hints, output schema.
    Describe {
        /// The qualified name, mcp__<server>__<tool>.
        name: String,
    },
    /// Call a tool: mcpvisor call mcp__demo__echo text=hi (only its server starts).
    Call {
        /// The qualified name, mcp__<server>__<tool>.
        name: String,
        /// The arguments: `key=value` pairs typed by the tool's schema (`key:=<json>`
        /// for a JSON value), or one JSON object, `-` (JSON on stdin) or `@file.json`.
        #[arg(value_name = "ARGUMENTS")]
        arguments: Vec<String>,
        /// One more `key=value` argument (repeatable).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// Call timeout in milliseconds (default: the server's request timeout).
        #[arg(long)]
        timeout_ms: Option<u64>,
    },
    /// List the resources and resource templates of every server, or of one.
    Resources {
        /// Only this server's.
        server: Option<String>,
    },
    /// Read a resource of a server: text to stdout; binary contents need -o FILE.
    Read {
        /// The server's name.
        server: String,
        /// The resource's URI (listed, or filled in from a template).
        uri: String,
        /// Write the contents to this file instead.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// List the prompts of every server, or of one (named mcp__<server>__<prompt>).
    Prompts {
        /// Only this server's.
        server: Option<String>,
    },
    /// Fill in a prompt: mcpvisor prompt mcp__everything__args-prompt city=Lisbon.
    Prompt {
        /// The qualified name, mcp__<server>__<prompt>.
        name: String,
        /// The arguments: `key=value` pairs, or one JSON object of strings.
        #[arg(value_name = "ARGUMENTS")]
        arguments: Vec<String>,
    },
    /// Print events as they happen until Ctrl-C.
    Watch,
    /// Make the running `mcpvisor serve` read its `.mcp.json` again (as SIGHUP does):
    /// added, removed and changed entries start, stop or restart; the rest keep running.
    Reload,
    /// Restart a server of the running `mcpvisor serve` whatever its state, at
    /// once and with a fresh restart budget: a running one (after an upgrade,
    /// say) is stopped and started again, a down or failed one is started.
    Restart {
        /// The server's name.
        name: String,
    },
    /// Deal a fault to a server of the running `mcpvisor serve --allow-faults`, to
    /// see how an agent talking to it copes: kill, stop[:DURATION], close-stdin,
    /// exit-during-initialize, garbage[:LINES], oversize, delay[:BY[:FOR]],
    /// drop[:COUNT], cut-stream, reset. `--clear` ends the server's faults.
    Inject {
        /// The server's name.
        server: String,
        /// The fault, e.g. `kill`, `stop:2s`, `delay:500ms`, `drop:3`.
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        fault: Option<String>,
        /// How long a `stop` or `delay` lasts (e.g. 10s).
        #[arg(long = "for", value_name = "DURATION", conflicts_with = "clear")]
        lasting: Option<String>,
        /// End every fault set on the server (a stopped server continues at once).
        #[arg(long)]
        clear: bool,
    },
    /// Keep the servers running and serve their tools as one MCP server: on the
    /// local socket (where the other commands attach), and on stdio or HTTP.
    Serve(Box<serve::ServeArgs>),
    /// Run the servers under load and deal them faults from a seeded plan, checking
    /// crash isolation: `chaos --duration 5m --seed 7 --faults kill,stop,garbage
    /// --load load.json`. Exits 0 only if no invariant broke.
    Chaos(chaos::ChaosArgs),
    /// List every entry of the configuration: how it runs, its state, problems.
    Servers {
        /// Start each enabled server once (initialize, list tools, stop) and say
        /// how it went; exits non-zero if any failed.
        #[arg(long)]
        check: bool,
    },
    /// Add an entry to the .mcp.json: `add NAME -- COMMAND [ARGS…]` or
    /// `add NAME --url URL` (the file is created when there is none).
    Add(edit::AddArgs),
    /// Remove an entry from the .mcp.json and withdraw its approval.
    Remove {
        /// The entry's name.
        name: String,
    },
    /// Show one entry of the configuration (secrets redacted).
    Get {
        /// The entry's name.
        name: String,
    },
    /// Approve servers of the configuration (after checking that each can run).
    Enable {
        /// The entries' names.
        #[arg(required_unless_present = "all")]
        names: Vec<String>,
        /// Every entry (those the file disables only with --force).
        #[arg(long, conflicts_with = "names")]
        all: bool,
        /// Approve entries that are `"disabled": true` in the file too (with a warning).
        #[arg(long)]
        force: bool,
    },
    /// Withdraw servers' approval.
    Disable {
        /// The entries' names.
        #[arg(required_unless_present = "all")]
        names: Vec<String>,
        /// Every entry.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Log in to an OAuth-protected HTTP server (opens the browser; the URL is printed too).
    Login {
        /// The entry's name.
        name: String,
        /// Follow the authorization URL without a browser (servers that approve without a person).
        #[arg(long)]
        headless: bool,
    },
    /// Delete the stored tokens of a server.
    Logout {
        /// The entry's name.
        name: String,
    },
    /// Print the effective settings and where each comes from.
    Settings,
    /// Serve the built-in demo MCP server on stdin/stdout.
    DemoServer(DemoServerOptions),
    /// Print a shell completion script: mcpvisor completions bash > ~/.local/share/bash-completion/completions/mcpvisor
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): mcpvisor man | man -l -
    Man,
    /// The qualified tool names of the running `mcpvisor serve`, one per line
    /// (for completion scripts; starts no server, prints nothing without a serve).
    #[command(hide = true)]
    ToolNames,
    /// The configuration's server names, one per line (for completion
    /// scripts; starts nothing).
    #[command(hide = true)]
    ServerNames,
}
