//! Configuration errors. None of them carries a value from the file: values
//! may be secrets, so errors name paths, fields and variables instead.

use std::path::PathBuf;

use mcpvisor_protocol::NameError;
use mcpvisor_transports::HeaderError;

use super::expand::ExpandError;

/// Why a configuration file could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        /// Which file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// A member has the wrong type.
    #[error("{}:{line}:{column}: `{json_path}` has the wrong type ({expected})", path.display())]
    Structure {
        /// Which file.
        path: PathBuf,
        /// Where in the document, e.g. `mcpServers.github.args[2]`.
        json_path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was expected there.
        expected: String,
    },
    /// The file has neither `mcpServers` nor VS Code's `servers` object.
    #[error(
        "{}: no `mcpServers` object (nor VS Code's `servers`): not an MCP configuration",
        path.display()
    )]
    NoServers {
        /// Which file.
        path: PathBuf,
    },
    /// The file has both `mcpServers` and `servers`: which one is meant is not clear.
    #[error("{}: has both `mcpServers` and `servers`; keep one", path.display())]
    BothServerKeys {
        /// Which file.
        path: PathBuf,
    },
}

/// Why one entry cannot run. Each names the server and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryProblem {
    /// The server name cannot be a route component.
    #[error("server `{server}`: invalid name: {error}")]
    InvalidName {
        /// The entry.
        server: String,
        /// Why.
        error: NameError,
    },
    /// A `${VAR}` reference could not be expanded.
    #[error("server `{server}`: field `{field}`: {error}")]
    Expansion {
        /// The entry.
        server: String,
        /// The field, e.g. `env.API_TOKEN` or `headers.Authorization`.
        field: String,
        /// Why.
        error: ExpandError,
    },
    /// A stdio entry without a command.
    #[error("server `{server}`: `command` is missing or empty")]
    MissingCommand {
        /// The entry.
        server: String,
    },
    /// An HTTP entry without a usable URL.
    #[error("server `{server}`: {reason}")]
    InvalidUrl {
        /// The entry.
        server: String,
        /// Why (never the URL's query).
        reason: String,
    },
    /// A header that HTTP or the transport refuses.
    #[error("server `{server}`: {error}")]
    InvalidHeader {
        /// The entry.
        server: String,
        /// Why.
        error: HeaderError,
    },
    /// The `oauth` block cannot be used.
    #[error("server `{server}`: oauth: {reason}")]
    OAuth {
        /// The entry.
        server: String,
        /// Why (never a secret).
        reason: String,
    },
    /// A `protocolVersions` list that is empty, repeats a version or names one
    /// this version does not speak.
    #[error("server `{server}`: `protocolVersions`: {reason}")]
    InvalidProtocolVersions {
        /// The entry.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// An `envPassthrough` entry that is not a variable name.
    #[error("server `{server}`: `envPassthrough` entry {name:?} is not a variable name")]
    InvalidPassthrough {
        /// The entry.
        server: String,
        /// The name as written (a name, not a value).
        name: String,
    },
    /// The program of a stdio entry is not where the child's `exec` would look.
    #[error("server `{server}`: command `{command}` {reason}")]
    CommandNotFound {
        /// The entry.
        server: String,
        /// The program as written.
        command: String,
        /// Why: not on the `PATH`, does not exist, not executable.
        reason: String,
    },
    /// The working directory of a stdio entry is missing.
    #[error("server `{server}`: `cwd` {} {reason}", cwd.display())]
    MissingCwd {
        /// The entry.
        server: String,
        /// The directory the child would start in.
        cwd: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// A stdio entry that runs `mcpvisor serve` for this same file: mcpvisor
    /// would supervise itself, each copy starting the next.
    #[error(
        "server `{server}`: it runs `mcpvisor serve` for this same file, so mcpvisor would supervise itself; a host that reads this file should run `mcpvisor serve` itself, or the entry should name another file with `--config`"
    )]
    SupervisesItself {
        /// The entry.
        server: String,
    },
    /// A transport type this version does not run.
    #[error("server `{server}`: transport type `{kind}` is not supported{}", unsupported_hint(.kind))]
    UnsupportedTransport {
        /// The entry.
        server: String,
        /// The `type` as written.
        kind: String,
    },
}

fn unsupported_hint(kind: &str) -> &'static str {
    if kind == "sse" {
        " (the older HTTP+SSE transport; use a Streamable HTTP endpoint with \"type\": \"http\")"
    } else {
        ""
    }
}
