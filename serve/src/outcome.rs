//! What a downstream session is told when a routed call does not return a result.
//!
//! The rule: a name that routes nowhere is a protocol error (the host asked
//! for something that does not exist); everything that went wrong *behind* a
//! valid name is a tool result with `isError: true` and a sentence a model can
//! act on ("restarted; retry"), because hosts show those to the model and
//! usually hide protocol errors.

use mcpvisor::{CallError, Host, QualifiedMcpToolName, ServerState};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Value, json};

/// A call's answer to the session: a result (possibly `isError`) or a JSON-RPC error.
pub(crate) type Outcome = Result<Value, ErrorObject>;

/// A tool result carrying one text block and `isError: true`.
pub(crate) fn tool_error(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

/// The answer for a name with no route: an error the model can act on when the
/// name's server exists but is down, else `Invalid params: unknown tool`.
pub(crate) fn unrouted(host: &Host, advertised: &str, routed: Option<&str>) -> Outcome {
    let server = routed
        .and_then(|r| QualifiedMcpToolName::parse(r).ok())
        .map(|n| n.server().to_string());
    if let Some(server) = server.as_deref()
        && let Some(outcome) = elsewhere(host, server)
    {
        return outcome;
    }
    let status = server
        .as_deref()
        .and_then(|s| host.servers().into_iter().find(|st| &*st.name == s));
    let Some(status) = status else {
        return Err(ErrorObject {
            code: error_codes::INVALID_PARAMS,
            message: format!("unknown tool: {advertised}"),
            data: None,
        });
    };
    let name = &status.name;
    let next = crate::wire::next_try_text(&status);
    Ok(tool_error(match &status.state {
        ServerState::Starting { .. } => {
            format!("server `{name}` is starting; retry in a moment")
        }
        ServerState::Restarting { reason, .. } => match next {
            Some(next) => format!("server `{name}` is restarting after: {reason}; next try {next}"),
            None => format!("server `{name}` is restarting after: {reason}; retry in a moment"),
        },
        ServerState::Failed { reason } => match next {
            Some(next) => format!(
                "server `{name}` failed too often ({reason}); it is tried again {next}, or at once with `mcpvisor restart {name}`"
            ),
            None => format!(
                "server `{name}` failed too often and stays down ({reason}); it needs `mcpvisor restart {name}`"
            ),
        },
        ServerState::LoginRequired { .. } => format!(
            "server `{name}` needs a login: run `mcpvisor login {name}`, then `mcpvisor restart {name}`"
        ),
        // Routes go before the status says so: a ready server with no route at
        // all is one whose connection just ended.
        ServerState::Ready if !host.routes().iter().any(|r| r.server == *name) => {
            format!("server `{name}` is restarting; retry in a moment")
        }
        ServerState::Ready => format!(
            "server `{name}` does not offer `{advertised}` (its tools changed); list the tools again"
        ),
        _ => format!("server `{name}` is stopped"),
    }))
}

/// A call to a tool its server listed that has no route: why, as the
/// cluster sees it when another node claims the server's name, else as the
/// route table keeps it (an unknown tool to the client, which never saw it
/// listed).
pub(crate) fn refused(host: &Host, error: &CallError, routed: Option<&str>) -> Outcome {
    let server = routed
        .and_then(|r| QualifiedMcpToolName::parse(r).ok())
        .map(|n| n.server().to_string());
    if let Some(outcome) = server.as_deref().and_then(|s| elsewhere(host, s)) {
        return outcome;
    }
    Err(ErrorObject {
        code: error_codes::INVALID_PARAMS,
        message: error.to_string(),
        data: None,
    })
}

/// For a server another node of the cluster supervises: why it has no route
/// (down there, or its name claimed by more than one node). `None` when no
/// other node has a server of that name.
fn elsewhere(host: &Host, server: &str) -> Option<Outcome> {
    let claimants: Vec<(String, String)> = host
        .nodes()
        .iter()
        .flat_map(|node| {
            node.servers
                .iter()
                .filter(|s| &*s.name == server)
                .map(|s| (node.node.to_string(), s.state.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    let (node, state) = claimants.first()?;
    let mine = host.servers().iter().any(|s| &*s.name == server);
    if mine || claimants.len() > 1 {
        let mut nodes: Vec<&str> = claimants.iter().map(|(n, _)| n.as_str()).collect();
        if mine {
            nodes.push("this node");
        }
        return Some(Ok(tool_error(format!(
            "server `{server}` is supervised on more than one node ({}); a name two nodes claim is routed on neither until one of them is renamed or removed",
            nodes.join(", ")
        ))));
    }
    Some(Ok(tool_error(match state.as_str() {
        "ready" => format!("server `{server}` on node `{node}` is restarting; retry in a moment"),
        "failed" => format!(
            "server `{server}` on node `{node}` failed too often and stays down; it needs `mcpvisor restart {server}` there"
        ),
        other => format!("server `{server}` on node `{node}` is {other}; retry in a moment"),
    })))
}

/// The answer for a call that failed behind a valid route.
pub(crate) fn failed(error: CallError) -> Outcome {
    match error {
        // The server itself answered with a protocol error: pass it on as one.
        CallError::Rpc { error, .. } => Err(error),
        CallError::Timeout { server, after } => Ok(tool_error(format!(
            "server `{server}` did not answer within {}s; its connection was restarted; retry once it is back",
            after.as_secs_f64()
        ))),
        CallError::ConnectionTimedOut { server } => Ok(tool_error(format!(
            "server `{server}` was restarted because another call to it timed out; retry"
        ))),
        CallError::Transport { server, source } => Ok(tool_error(format!(
            "server `{server}` crashed or closed its connection ({source}); it is restarting; retry"
        ))),
        CallError::ConnectionClosed { server, reason } => Ok(tool_error(format!(
            "server `{server}` restarted ({reason}); retry"
        ))),
        e @ CallError::ServerUnavailable { .. } => Ok(tool_error(e.to_string())),
        CallError::Overloaded { server, limit } => Ok(tool_error(format!(
            "server `{server}` has {limit} calls in flight; retry later"
        ))),
        CallError::InvalidResult { server, source } => Ok(tool_error(format!(
            "server `{server}` sent a result that is not a valid tool result: {source}"
        ))),
        CallError::Shutdown => Ok(tool_error("mcpvisor is shutting down")),
        CallError::NodeLost { node, server } => Ok(tool_error(format!(
            "node `{node}`, which runs server `{server}`, was lost before answering; whether the call ran is unknown; its tools return when the node does"
        ))),
        other => Ok(tool_error(other.to_string())),
    }
}

/// The answer for a call still running when the gateway shuts down.
pub(crate) fn shutting_down() -> Outcome {
    Ok(tool_error(
        "mcpvisor is shutting down; the call was abandoned",
    ))
}
