//! The HTTP floor: a kept-alive reqwest client posting a fixed `tools/call`.
//!
//! It initializes a session by hand, then every call is one POST of a
//! preformatted body whose answer is read whole and checked for a `result` —
//! no MCP client, no JSON parsing, connections reused.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail, ensure};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

use crate::servers::{Endpoint, ServerTarget};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const PROTOCOL_VERSION: &str = "2025-03-26";
const STATELESS_VERSION: &str = "2026-07-28";

/// A hand-initialized Streamable HTTP session on one kept-alive client.
pub struct HttpFloor {
    client: reqwest::Client,
    url: String,
    session: Option<HeaderValue>,
    /// `Authorization: Bearer …` for a gateway that asks for a token.
    authorization: Option<HeaderValue>,
    next_id: AtomicU64,
    /// The `tools/call` body up to its id, and after it; for a plain JSON
    /// endpoint ([`HttpFloor::open_rest`]) the whole body, and no id.
    body: (String, Option<String>),
    /// The `MCP-Protocol-Version` every request carries.
    version: &'static str,
    /// At 2026-07-28: the `Mcp-Name` of every call (`Mcp-Method` is `tools/call`).
    named: Option<HeaderValue>,
}

impl HttpFloor {
    /// Initializes a session with `server` and lists its tools.
    pub async fn open(server: &ServerTarget) -> anyhow::Result<HttpFloor> {
        let Endpoint::Http { url } = &server.endpoint else {
            bail!("the HTTP floor needs an HTTP server");
        };
        HttpFloor::open_mcp(
            url,
            server.tool,
            &serde_json::Value::Object(server.arguments()),
        )
        .await
    }

    /// Initializes a session with the Streamable HTTP endpoint `url`; every
    /// call is then `tool` with `arguments`.
    pub async fn open_mcp(
        url: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> anyhow::Result<HttpFloor> {
        HttpFloor::open_mcp_with(url, tool, arguments, None).await
    }

    /// [`HttpFloor::open_mcp`], sending `bearer` as the bearer token with
    /// every request when given.
    pub async fn open_mcp_with(
        url: &str,
        tool: &str,
        arguments: &serde_json::Value,
        bearer: Option<&str>,
    ) -> anyhow::Result<HttpFloor> {
        let authorization = bearer_header(bearer)?;
        let mut floor = HttpFloor {
            client: reqwest::Client::builder().build()?,
            url: url.to_string(),
            session: None,
            authorization,
            next_id: AtomicU64::new(2),
            body: (
                "{\"jsonrpc\":\"2.0\",\"id\":".to_string(),
                Some(format!(
                    ",\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{arguments}}}}}"
                )),
            ),
            version: PROTOCOL_VERSION,
            named: None,
        };
        let initialize = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{{\"protocolVersion\":\"{PROTOCOL_VERSION}\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\"floor\",\"version\":\"0\"}}}}}}"
        );
        let answer = floor.post(initialize).await?;
        floor.session = answer.headers().get(SESSION_HEADER).cloned();
        ensure_result(&answer.bytes().await?)?;
        floor
            .post("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}".into())
            .await?;
        let tools = floor
            .post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}".into())
            .await?
            .bytes()
            .await?;
        ensure_result(&tools)?;
        Ok(floor)
    }

    /// A client of the Streamable HTTP endpoint `url` at MCP 2026-07-28: no
    /// session; every call is `tool` with `arguments`, its `_meta` and
    /// headers as that revision asks (`bearer` sent when given).
    pub async fn open_stateless(
        url: &str,
        tool: &str,
        arguments: &serde_json::Value,
        bearer: Option<&str>,
    ) -> anyhow::Result<HttpFloor> {
        let authorization = bearer_header(bearer)?;
        let meta = format!(
            "{{\"io.modelcontextprotocol/protocolVersion\":\"{STATELESS_VERSION}\",\"io.modelcontextprotocol/clientCapabilities\":{{}},\"io.modelcontextprotocol/clientInfo\":{{\"name\":\"floor\",\"version\":\"0\"}}}}"
        );
        Ok(HttpFloor {
            client: reqwest::Client::builder().build()?,
            url: url.to_string(),
            session: None,
            authorization,
            next_id: AtomicU64::new(1),
            body: (
                "{\"jsonrpc\":\"2.0\",\"id\":".to_string(),
                Some(format!(
                    ",\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{arguments},\"_meta\":{meta}}}}}"
                )),
            ),
            version: STATELESS_VERSION,
            named: Some(HeaderValue::from_str(tool)?),
        })
    }

    /// The same session, each call now an MCP `ping` (answered by the server
    /// itself): what a round trip costs without the tool call.
    pub fn pinging(mut self) -> HttpFloor {
        self.body.1 = Some(",\"method\":\"ping\"}".into());
        self
    }

    /// The same client for a plain JSON endpoint that is not MCP (mcp-hub's
    /// REST API): every call posts `body` as it is and reads the answer whole.
    pub fn open_rest(url: &str, body: String) -> anyhow::Result<HttpFloor> {
        Ok(HttpFloor {
            client: reqwest::Client::builder().build()?,
            url: url.to_string(),
            session: None,
            authorization: None,
            next_id: AtomicU64::new(0),
            body: (body, None),
            version: PROTOCOL_VERSION,
            named: None,
        })
    }

    async fn post(&self, body: String) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .header(VERSION_HEADER, self.version)
            .body(body);
        if let Some(name) = &self.named {
            request = request
                .header("mcp-method", "tools/call")
                .header("mcp-name", name.clone());
        }
        if let Some(session) = &self.session {
            request = request.header(SESSION_HEADER, session.clone());
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let answer = request.send().await?;
        ensure!(
            answer.status().is_success(),
            "POST answered {}",
            answer.status()
        );
        Ok(answer)
    }

    /// One echo call.
    pub async fn call(&self) -> anyhow::Result<()> {
        let body = match &self.body.1 {
            Some(tail) => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                format!("{}{id}{tail}", self.body.0)
            }
            None => self.body.0.clone(),
        };
        let answer = self.post(body).await?.bytes().await?;
        ensure_result(&answer)
    }

    /// Deletes the session.
    pub async fn close(self) {
        if let Some(session) = &self.session {
            let mut delete = self.client.delete(&self.url);
            if let Some(authorization) = &self.authorization {
                delete = delete.header(AUTHORIZATION, authorization.clone());
            }
            let _ = delete.header(SESSION_HEADER, session.clone()).send().await;
        }
    }
}

fn ensure_result(body: &[u8]) -> anyhow::Result<()> {
    const RESULT: &[u8] = b"\"result\"";
    const FAILED: &[u8] = b"\"isError\":true";
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    ensure!(
        !has(FAILED),
        "the tool failed: {}",
        String::from_utf8_lossy(body)
    );
    has(RESULT)
        .then_some(())
        .with_context(|| format!("no result in {}", String::from_utf8_lossy(body)))
}

/// `Authorization: Bearer <bearer>`, when a token is given.
fn bearer_header(bearer: Option<&str>) -> anyhow::Result<Option<HeaderValue>> {
    Ok(bearer
        .map(|token| HeaderValue::from_str(&format!("Bearer {token}")))
        .transpose()?)
}
