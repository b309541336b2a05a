//! A client for the MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! The suite runs it as `conformance_client <server URL>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`. It connects through the public host API —
//! supervisor, server actor, Streamable HTTP transport — lists the tools, and
//! calls what the scenario expects. It exits non-zero on any failure.

use std::process::ExitCode;
use std::time::Duration;

use std::sync::Arc;

use mcpvisor::ClientCapabilities;
use mcpvisor::HttpSpec;
use mcpvisor::Versions;
use mcpvisor::auth::{Grant, HeadlessDriver, IdentityProvider, OAuth, OAuthConfig};
use mcpvisor::{
    CallOptions, ClientHandler, ElicitAnswer, FormRequest, Host, HostAnswer, SecretString,
    ServerSpec, ServerState, SharedClientHandler, SupervisorOptions,
};
use serde_json::{Value, json};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server URL>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&url, &scenario)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}

/// OAuth as the suite's auth scenarios need it: unattended (headless) login,
/// credentials from `MCP_CONFORMANCE_CONTEXT`, tokens in a fresh home per run.
fn oauth_for(url: &str, scenario: &str) -> Result<Option<Arc<OAuth>>, String> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_string);
    let grant = match (text("private_key_pem"), scenario) {
        (None, "auth/cross-app-access-complete-flow") => {
            let id_token = SecretString::new(text("idp_id_token").unwrap_or_default());
            Grant::IdentityAssertion(IdentityProvider {
                issuer: text("idp_issuer"),
                token_endpoint: text("idp_token_endpoint"),
                client_id: text("idp_client_id"),
                client_secret: None,
                id_token: Arc::new(move || Ok(id_token.clone())),
            })
        }
        (Some(pem), _) => Grant::PrivateKeyJwt {
            pem: SecretString::new(pem),
            algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
        },
        (None, "auth/client-credentials-basic") => Grant::ClientSecret,
        _ => Grant::AuthorizationCode,
    };
    let home = std::env::temp_dir().join(format!("mcpvisor-conformance-{}", std::process::id()));
    let driver = HeadlessDriver::new().map_err(|e| e.to_string())?;
    let config = OAuthConfig {
        server: "conformance".into(),
        url: url.to_string(),
        home,
        client_id: text("client_id"),
        client_secret: text("client_secret").map(SecretString::new),
        client_metadata_url: Some(CLIENT_METADATA_URL.into()),
        scope: None,
        grant,
        unattended: Some(Arc::new(driver)),
    };
    OAuth::new(config)
        .map(|o| Some(Arc::new(o)))
        .map_err(|e| e.to_string())
}

/// The client ID metadata document the suite's `basic-cimd` scenario expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

async fn run(url: &str, scenario: &str) -> Result<(), String> {
    let oauth = oauth_for(url, scenario)?;
    let spec = ServerSpec::http(
        "conformance",
        HttpSpec {
            url: url.to_string(),
            headers: Vec::new(),
            oauth,
        },
    );
    let mut options = SupervisorOptions::default();
    options.client_handler = Some(SharedClientHandler(Arc::new(AcceptWithDefaults)));
    options.request_timeout = Duration::from_secs(20);
    options.startup_timeout = Duration::from_secs(20);
    options.protocol_versions = versions()?;
    let host = Host::start(vec![spec], options)
        .await
        .map_err(|e| e.to_string())?;
    let outcome = exercise(&host, scenario).await;
    host.shutdown().await;
    outcome
}

/// The revisions to use. Every one with a handshake, newest first; at the
/// suite's 2026-07-28 run (`MCP_CONFORMANCE_PROTOCOL_VERSION`) that revision
/// leads, so the client probes with `server/discover` before `initialize`.
fn versions() -> Result<Versions, String> {
    let asked = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let mut names = vec!["2025-11-25", "2025-06-18", "2025-03-26"];
    if asked == "2026-07-28" {
        names.insert(0, "2026-07-28");
    }
    Versions::parse(&names).map_err(|e| e.to_string())
}

/// The calls a scenario's context asks for (`toolCalls`: name and arguments).
fn context_calls() -> Vec<(String, Value)> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    context
        .get("toolCalls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    let name = c.get("name")?.as_str()?.to_string();
                    Some((name, c.get("arguments").cloned().unwrap_or(json!({}))))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Arguments that satisfy `schema`'s required properties with placeholders.
fn placeholder_arguments(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = schema
            .pointer(&format!("/properties/{name}/type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer") | Some("number") => json!(1),
            Some("boolean") => json!(false),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("conformance"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

/// A person who accepts every form as offered: mcpvisor fills in the form's
/// defaults (SEP-1034). Sampling is not offered.
struct AcceptWithDefaults;

impl ClientHandler for AcceptWithDefaults {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: true,
            ..Default::default()
        }
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        eprintln!("{} asks: {}", request.server, request.message);
        Box::pin(async { Ok(ElicitAnswer::accept(Default::default())) })
    }
}

async fn exercise(host: &Host, scenario: &str) -> Result<(), String> {
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    if statuses.iter().any(|s| s.state != ServerState::Ready) {
        return Err(format!("server not ready: {statuses:?}"));
    }
    let tools: Vec<String> = host
        .tools()
        .iter()
        .map(|t| t.name.tool().to_string())
        .collect();
    eprintln!("tools: {tools:?}");
    let call = |tool: &str, args: Value| {
        let name = format!("mcp__conformance__{tool}");
        host.call(&name, args, CallOptions::default())
    };
    match scenario {
        "tools_call" => {
            let r = call("add_numbers", json!({"a": 2, "b": 3}))
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("add_numbers -> {}", r.text());
        }
        "sse-retry" => {
            let r = call("test_reconnection", json!({}))
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("test_reconnection -> {}", r.text());
        }
        // The focal tool's inputSchema, as this client holds it, echoed back
        // for the suite to compare with what the server listed.
        "json-schema-2020-12-preservation" => {
            let focal = host
                .tools()
                .into_iter()
                .find(|t| t.name.tool() == "json_schema_2020_12_tool")
                .ok_or("json_schema_2020_12_tool is not listed")?;
            let r = call(
                "json_schema_echo",
                json!({"schema": focal.input_schema.clone()}),
            )
            .await
            .map_err(|e| e.to_string())?;
            eprintln!("json_schema_echo -> {}", r.text());
        }
        // The 2026-07-28 scenarios that name their calls.
        _ if !context_calls().is_empty() => {
            for (tool, arguments) in context_calls() {
                let r = call(&tool, arguments).await.map_err(|e| e.to_string())?;
                eprintln!("{tool} -> {}", r.text());
            }
        }
        // The 2026-07-28 header scenarios: every tool, resource and prompt
        // offered is used once (a tool with an invalid x-mcp-header is not
        // offered, which is what one of them checks).
        "http-standard-headers" | "http-invalid-tool-headers" | "sep-2322-client-request-state" => {
            for tool in host.tools() {
                let arguments = placeholder_arguments(&tool.input_schema);
                let r = host
                    .call(tool.name.as_str(), arguments, CallOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
                eprintln!("{} -> {}", tool.name, r.text());
            }
            for resource in host.resources().await.entries {
                host.read_resource(&resource.server, &resource.resource.uri)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            for prompt in host.prompts().await.entries {
                host.get_prompt(prompt.name.as_str(), &Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        // The auth scenarios' tool, and the elicitation scenario's (which asks
        // for a form and checks that its defaults came back).
        _ => {
            for tool in ["test-tool", "test_client_elicitation_defaults"] {
                if tools.iter().any(|t| t == tool) {
                    let r = call(tool, json!({})).await.map_err(|e| e.to_string())?;
                    eprintln!("{tool} -> {}", r.text());
                }
            }
        }
    }
    Ok(())
}
