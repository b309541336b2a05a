//! How a session's client reached the gateway, which decides what it may ask
//! beyond MCP: dealing faults to the servers is for clients that are the
//! user, not for whatever can open a loopback connection.

use mcpvisor_protocol::wire::jsonrpc::ErrorObject;

/// The error code of a request only a trusted client may make (see
/// [`Ingress::is_trusted`]): `mcpvisor/inject`, `servers`, `restart`, `reload`, `watch`.
pub const NEEDS_TOKEN: i64 = -32051;

/// The way a downstream session came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ingress {
    /// stdio or the 0600 local socket: the user who started the gateway.
    Local,
    /// Streamable HTTP. `token` says whether the endpoint requires the bearer
    /// token, which every request of the session then presented; without it,
    /// any local process (or page that passes the Origin checks) may be the client.
    Http {
        /// The endpoint requires the bearer token.
        token: bool,
    },
}

impl Ingress {
    /// Whether the client proved it is someone the user trusts: local, or
    /// HTTP with the bearer token.
    pub fn is_trusted(self) -> bool {
        match self {
            Ingress::Local => true,
            Ingress::Http { token } => token,
        }
    }
}

/// The refusal of `method` to a client that is not trusted: a bearer token
/// (which `serve --http` requires unless started with `--no-token`) or the
/// local socket is the way in.
pub(crate) fn needs_token(method: &str) -> ErrorObject {
    ErrorObject {
        code: NEEDS_TOKEN,
        message: format!(
            "`{method}` is refused over HTTP without a bearer token: serve without --no-token \
             (clients then send the token in Authorization), or use the local socket (the CLI)"
        ),
        data: Some(serde_json::json!({ "reason": "needs_token" })),
    }
}
