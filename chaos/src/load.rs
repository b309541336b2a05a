//! The load a run puts on the servers, as a user describes it: a list of
//! calls, each a routed tool (`{"tool": "mcp__git__git_status", "arguments":
//! {...}, "weight": 3}`) or a `ping` of one server (`{"ping": "git"}`), picked
//! in proportion to their weights. With no list, every server is pinged.
//!
//! A tool call may say what its answer's text must be (`"expect": "..."`);
//! `{call}` in its string arguments and in `expect` becomes a token unique to
//! each call, so an answer that reached the wrong call is caught.

use std::collections::BTreeMap;

use mcpvisor::QualifiedMcpToolName;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Calls one load may list: more is a mistake, not a load.
pub const MAX_LOAD_CALLS: usize = 1000;
/// The largest weight of one call.
pub const MAX_WEIGHT: u32 = 1000;

/// What one load call does.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Target {
    /// `tools/call` of a routed tool with these arguments.
    Tool {
        /// The qualified name.
        name: QualifiedMcpToolName,
        /// The arguments object.
        arguments: Map<String, Value>,
    },
    /// `ping` to a server.
    Ping {
        /// The server.
        server: String,
    },
}

impl Target {
    /// The server the call goes to.
    pub fn server(&self) -> &str {
        match self {
            Target::Tool { name, .. } => name.server(),
            Target::Ping { server } => server,
        }
    }

    /// How the report names it: the qualified tool name, or `ping <server>`.
    pub fn label(&self) -> String {
        match self {
            Target::Tool { name, .. } => name.to_string(),
            Target::Ping { server } => format!("ping {server}"),
        }
    }
}

/// One call of the load and how often it is made relative to the others.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LoadCall {
    /// What it calls.
    pub target: Target,
    /// Relative frequency, 1..=[`MAX_WEIGHT`].
    pub weight: u32,
    /// The text a tool's answer must have (`{call}` replaced as in the arguments).
    pub expect: Option<String>,
}

/// Stands for a token unique to each call, in string arguments and `expect`.
pub const CALL_TOKEN: &str = "{call}";

impl LoadCall {
    /// A call of `target`, `weight` times as often as a call of weight 1.
    pub fn new(target: Target, weight: u32) -> LoadCall {
        LoadCall {
            target,
            weight: weight.clamp(1, MAX_WEIGHT),
            expect: None,
        }
    }

    /// The same call, whose answer must have this text.
    pub fn expecting(mut self, text: impl Into<String>) -> LoadCall {
        self.expect = Some(text.into());
        self
    }
}

/// `value` with [`CALL_TOKEN`] replaced by `token` in every string in it.
pub(crate) fn with_token(value: &Value, token: &str) -> Value {
    match value {
        Value::String(s) if s.contains(CALL_TOKEN) => Value::String(s.replace(CALL_TOKEN, token)),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_token(v, token)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), with_token(v, token)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A described load; empty means "ping every server".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Load {
    calls: Vec<LoadCall>,
}

/// Why a load description was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Not JSON of the expected shape.
    #[error("the load is not a JSON list of calls: {0}")]
    Json(#[from] serde_json::Error),
    /// An entry names no target, or two.
    #[error("load entry {index}: give either \"tool\" or \"ping\", not {what}")]
    Target {
        /// Its position, from 0.
        index: usize,
        /// What it gave.
        what: &'static str,
    },
    /// A tool name that is not `mcp__server__tool`.
    #[error("load entry {index}: `{name}` is not a qualified tool name (mcp__<server>__<tool>)")]
    ToolName {
        /// Its position, from 0.
        index: usize,
        /// The name given.
        name: String,
    },
    /// Arguments that are not an object.
    #[error("load entry {index}: \"arguments\" must be a JSON object")]
    Arguments {
        /// Its position, from 0.
        index: usize,
    },
    /// A ping with arguments or an expected answer.
    #[error("load entry {index}: a ping takes no \"arguments\" and no \"expect\"")]
    PingTakesNothing {
        /// Its position, from 0.
        index: usize,
    },
    /// A weight of 0 or past [`MAX_WEIGHT`].
    #[error("load entry {index}: weight {weight} is not within 1..={MAX_WEIGHT}")]
    Weight {
        /// Its position, from 0.
        index: usize,
        /// The weight given.
        weight: u64,
    },
    /// More than [`MAX_LOAD_CALLS`] entries.
    #[error("the load lists {0} calls; at most {MAX_LOAD_CALLS} are allowed")]
    TooMany(usize),
    /// A call to a server the run does not have.
    #[error("the load calls server `{server}`, which is not one of the servers run ({known})")]
    UnknownServer {
        /// The server named.
        server: String,
        /// The servers run, comma-separated.
        known: String,
    },
    /// A tool its server does not offer (checked once the servers are ready).
    #[error("the load calls `{tool}`, which its server does not offer")]
    UnknownTool {
        /// The qualified name.
        tool: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    tool: Option<String>,
    ping: Option<String>,
    arguments: Option<Value>,
    weight: Option<u64>,
    expect: Option<String>,
}

impl Load {
    /// The default load: a `ping` to every server.
    pub fn ping_all() -> Load {
        Load::default()
    }

    /// A load of these calls.
    pub fn new(calls: Vec<LoadCall>) -> Load {
        Load { calls }
    }

    /// Reads a JSON list of calls.
    pub fn from_json(text: &str) -> Result<Load, LoadError> {
        let entries: Vec<Entry> = serde_json::from_str(text)?;
        if entries.len() > MAX_LOAD_CALLS {
            return Err(LoadError::TooMany(entries.len()));
        }
        let mut calls = Vec::with_capacity(entries.len());
        for (index, e) in entries.into_iter().enumerate() {
            let weight = e.weight.unwrap_or(1);
            if weight == 0 || weight > u64::from(MAX_WEIGHT) {
                return Err(LoadError::Weight { index, weight });
            }
            let target = match (e.tool, e.ping) {
                (Some(name), None) => {
                    let arguments = match e.arguments.unwrap_or_else(|| Value::Object(Map::new())) {
                        Value::Object(map) => map,
                        _ => return Err(LoadError::Arguments { index }),
                    };
                    let name = QualifiedMcpToolName::parse(&name)
                        .map_err(|_| LoadError::ToolName { index, name })?;
                    Target::Tool { name, arguments }
                }
                (None, Some(server)) if e.arguments.is_none() && e.expect.is_none() => {
                    Target::Ping { server }
                }
                (None, Some(_)) => return Err(LoadError::PingTakesNothing { index }),
                (None, None) => {
                    return Err(LoadError::Target {
                        index,
                        what: "neither",
                    });
                }
                (Some(_), Some(_)) => {
                    return Err(LoadError::Target {
                        index,
                        what: "both",
                    });
                }
            };
            calls.push(LoadCall {
                target,
                weight: weight as u32,
                expect: e.expect,
            });
        }
        Ok(Load { calls })
    }

    /// The calls listed (empty for the default load).
    pub fn calls(&self) -> &[LoadCall] {
        &self.calls
    }

    /// The calls per server for a run of `servers`: the listed calls, or a
    /// ping of each server when none are listed. A call to a server not in
    /// `servers` is an error.
    pub(crate) fn per_server(
        &self,
        servers: &[String],
    ) -> Result<BTreeMap<String, Vec<LoadCall>>, LoadError> {
        let mut out: BTreeMap<String, Vec<LoadCall>> = BTreeMap::new();
        if self.calls.is_empty() {
            for server in servers {
                let ping = LoadCall::new(
                    Target::Ping {
                        server: server.clone(),
                    },
                    1,
                );
                out.insert(server.clone(), vec![ping]);
            }
            return Ok(out);
        }
        for call in &self.calls {
            let server = call.target.server();
            if !servers.iter().any(|s| s == server) {
                return Err(LoadError::UnknownServer {
                    server: server.to_string(),
                    known: servers.join(", "),
                });
            }
            out.entry(server.to_string())
                .or_default()
                .push(call.clone());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_load_reads_with_defaults_and_is_checked() {
        let load = Load::from_json(
            r#"[{"tool": "mcp__git__git_status", "arguments": {"repo_path": "."}, "weight": 3},
                {"ping": "git"},
                {"tool": "mcp__git__echo", "arguments": {"text": "a {call}"}, "expect": "a {call}"}]"#,
        )
        .unwrap();
        assert_eq!(load.calls().len(), 3);
        assert_eq!(load.calls()[2].expect.as_deref(), Some("a {call}"));
        assert_eq!(load.calls()[0].weight, 3);
        assert_eq!(load.calls()[1].target.label(), "ping git");
        let by_server = load.per_server(&["git".into()]).unwrap();
        assert_eq!(by_server["git"].len(), 3);
        assert!(matches!(
            load.per_server(&["other".into()]),
            Err(LoadError::UnknownServer { .. })
        ));
        for (text, want) in [
            (r#"[{"tool": "git_status"}]"#, "not a qualified"),
            (
                r#"[{"tool": "mcp__a__b", "arguments": [1]}]"#,
                "must be a JSON object",
            ),
            (r#"[{"tool": "mcp__a__b", "weight": 0}]"#, "weight 0"),
            (r#"[{"ping": "a", "tool": "mcp__a__b"}]"#, "not both"),
            (r#"[{"weight": 2}]"#, "not neither"),
            (r#"[{"ping": "a", "expect": "x"}]"#, "a ping takes no"),
            (r#"[{"tool": "mcp__a__b", "wieght": 2}]"#, "unknown field"),
            (r#"{"tool": "mcp__a__b"}"#, "not a JSON list"),
        ] {
            let e = Load::from_json(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn the_call_token_is_replaced_in_every_string() {
        let args = serde_json::json!({"text": "x {call}", "n": 1, "deep": [{"t": "{call}"}]});
        let done = with_token(&args, "3-7");
        assert_eq!(
            done,
            serde_json::json!({"text": "x 3-7", "n": 1, "deep": [{"t": "3-7"}]})
        );
    }

    #[test]
    fn the_default_load_pings_every_server() {
        let by_server = Load::ping_all()
            .per_server(&["a".into(), "b".into()])
            .unwrap();
        assert_eq!(by_server.len(), 2);
        assert_eq!(
            by_server["b"][0].target,
            Target::Ping { server: "b".into() }
        );
    }
}
