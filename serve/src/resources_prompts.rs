//! Resources, resource templates, prompts and completion as the gateway serves
//! them: one flat view over every server.
//!
//! Prompts are named like tools (`mcp__server__prompt`, or short). Resource
//! URIs keep their servers' spelling, since clients and models quote them; a
//! URI two servers list is served by neither (the tools' conflict rule), and
//! each entry says its server in `_meta["mcpvisor/server"]`. A URI no server
//! lists goes to the server whose resource template's fixed beginning matches
//! it longest (`note://{name}` serves `note://cats`); a tie is refused.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcpvisor::{CallError, CallOptions, CompletionTarget, Host, QualifiedMcpToolName};
use mcpvisor_protocol::mcp::client_offers::ClientCapabilities;
use mcpvisor_protocol::mcp::icons::Icon;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Map, Value, json};

use crate::outcome::Outcome;
use crate::tools::Naming;

/// `_meta` key naming an entry's server.
pub const SERVER_META: &str = "mcpvisor/server";

/// The MCP error for a resource no server serves.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// Whether `method` is one of these.
pub fn handles(method: &str) -> bool {
    matches!(
        method,
        methods::RESOURCES_LIST
            | methods::RESOURCE_TEMPLATES_LIST
            | methods::RESOURCES_READ
            | methods::PROMPTS_LIST
            | methods::PROMPTS_GET
            | methods::COMPLETE
    )
}

/// Answers one of the methods [`handles`] for `host`, as the gateway does (the
/// CLI uses it too, so its one-shot and attached answers are the same), to a
/// client at `revision`: icons only from 2025-11-25, and only those that pass
/// [`Icon::read`].
pub async fn answer(
    host: &Host,
    naming: Naming,
    page_size: usize,
    revision: Revision,
    method: &str,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    answer_for(host, naming, page_size, revision, method, params, None).await
}

/// For whom a `resources/read` or `prompts/get` is made: what its client
/// answers (what a 2026-07-28 server is told, and so may ask in its rounds),
/// and how the server's questions reach that client while it runs.
pub(crate) struct MadeFor<'a> {
    /// What the client answers.
    pub(crate) answers: ClientCapabilities,
    /// Records the request as the client's call to a server: a guard,
    /// held while the request runs.
    pub(crate) enter: &'a (dyn Fn(Arc<str>) -> Option<Box<dyn Send>> + Send + Sync),
}

impl MadeFor<'_> {
    fn options(made_for: Option<&Self>) -> CallOptions {
        match made_for {
            Some(m) => CallOptions::default().answering(m.answers),
            None => CallOptions::default(),
        }
    }
}

/// [`answer`], for the client `made_for` names.
pub(crate) async fn answer_for(
    host: &Host,
    naming: Naming,
    page_size: usize,
    revision: Revision,
    method: &str,
    params: Option<&Value>,
    made_for: Option<&MadeFor<'_>>,
) -> Result<Value, ErrorObject> {
    let cursor = cursor(params)?;
    let listed = |entries: Flat| -> Vec<Value> {
        entries
            .into_values()
            .filter_map(|e| e.ok())
            .map(|e| with_icons(e, revision))
            .collect()
    };
    match method {
        methods::RESOURCES_LIST => {
            let items = listed(flat_resources(host).await.flat);
            page(items, "resources", cursor, page_size)
        }
        methods::RESOURCE_TEMPLATES_LIST => {
            let items = listed(flat_templates(host).await.flat);
            page(items, "resourceTemplates", cursor, page_size)
        }
        methods::RESOURCES_READ => {
            let uri = string_param(params, "uri")?;
            // A client that knows the server (the CLI's `read <server> <uri>`) says so.
            let named = params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(SERVER_META))
                .and_then(Value::as_str);
            let server = match named {
                Some(server) => Arc::from(server),
                None => owner(host, uri).await?,
            };
            let _caller = made_for.and_then(|m| (m.enter)(server.clone()));
            let options = MadeFor::options(made_for);
            let read = host
                .read_resource_with(&server, uri, &options)
                .await
                .map_err(upstream_error)?;
            Ok(read.raw)
        }
        methods::PROMPTS_LIST => {
            let catalog = host.prompts().await;
            let hidden: std::collections::HashSet<String> = naming
                .hidden(catalog.entries.iter().map(|p| &p.name))
                .into_iter()
                .map(str::to_string)
                .collect();
            let items = catalog
                .entries
                .into_iter()
                .filter(|p| !hidden.contains(p.name.tool()))
                .map(|p| {
                    let mut value = serde_json::to_value(&p.prompt).unwrap_or(Value::Null);
                    value["name"] = Value::String(naming.advertise(&p.name).to_string());
                    with_icons(tag(value, &p.server), revision)
                })
                .collect();
            page(items, "prompts", cursor, page_size)
        }
        methods::PROMPTS_GET => {
            let name = string_param(params, "name")?;
            let routed = prompt_route(host, naming, name)
                .await
                .ok_or_else(|| invalid(format!("unknown prompt: {name}")))?;
            let arguments = prompt_arguments(params)?;
            let _caller = match (made_for, QualifiedMcpToolName::parse(&routed)) {
                (Some(m), Ok(route)) => (m.enter)(Arc::from(route.server())),
                _ => None,
            };
            let options = MadeFor::options(made_for);
            match host.get_prompt_with(&routed, &arguments, &options).await {
                Ok(got) => Ok(got.raw),
                Err(CallError::UnknownPrompt(_)) => Err(invalid(format!("unknown prompt: {name}"))),
                Err(e) => Err(upstream_error(e)),
            }
        }
        methods::COMPLETE => complete(host, naming, params).await,
        other => Err(ErrorObject {
            code: error_codes::METHOD_NOT_FOUND,
            message: format!("method not found: {other}"),
            data: None,
        }),
    }
}

/// The server that serves `uri`, for reads and subscriptions. A guess from
/// templates is made only when every server could be listed: a server whose
/// listing failed may be the one that has it.
pub(crate) async fn owner(host: &Host, uri: &str) -> Result<Arc<str>, ErrorObject> {
    let resources = flat_resources(host).await;
    match resources.flat.get(uri) {
        Some(Ok(entry)) => return Ok(server_of(entry)),
        Some(Err(servers)) => return Err(not_found(uri, Some(servers))),
        None => {}
    }
    let templates = flat_templates(host).await;
    let unlisted: Vec<&Arc<str>> = resources.failed.iter().chain(&templates.failed).collect();
    if let Some(server) = unlisted.first() {
        return Err(ErrorObject {
            code: RESOURCE_NOT_FOUND,
            message: format!(
                "resource {uri:?} is not listed, and server `{server}` could not be listed to find it"
            ),
            data: None,
        });
    }
    // The longest fixed beginning wins; a template two servers share claims for both.
    let mut best: Vec<(usize, Arc<str>)> = Vec::new();
    for (template, entry) in &templates.flat {
        let fixed = template.split('{').next().unwrap_or("");
        if fixed.is_empty() || !uri.starts_with(fixed) {
            continue;
        }
        let claimants = match entry {
            Ok(entry) => vec![server_of(entry)],
            Err(servers) => servers.clone(),
        };
        for server in claimants {
            match best.first() {
                Some((len, _)) if *len > fixed.len() => {}
                Some((len, _)) if *len == fixed.len() => best.push((fixed.len(), server)),
                _ => best = vec![(fixed.len(), server)],
            }
        }
    }
    best.sort();
    best.dedup();
    match &best[..] {
        [(_, server)] => Ok(server.clone()),
        [] => Err(not_found(uri, None)),
        several => {
            let servers: Vec<Arc<str>> = several.iter().map(|(_, s)| s.clone()).collect();
            Err(not_found(uri, Some(&servers)))
        }
    }
}

/// The routed prompt a session's prompt name stands for.
async fn prompt_route(host: &Host, naming: Naming, advertised: &str) -> Option<String> {
    match naming {
        Naming::Original => {
            let catalog = host.prompts().await;
            naming.route(advertised, catalog.entries.iter().map(|p| &p.name))
        }
        _ => naming.route(advertised, []),
    }
}

async fn complete(host: &Host, naming: Naming, params: Option<&Value>) -> Outcome {
    let reference = params
        .and_then(|p| p.get("ref"))
        .ok_or_else(|| invalid("`ref` is required"))?;
    let argument = params
        .and_then(|p| p.get("argument"))
        .ok_or_else(|| invalid("`argument` is required"))?;
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| invalid(format!("`{key}` must be a string")))
    };
    let target = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = text(reference, "name")?;
            let routed = prompt_route(host, naming, &name)
                .await
                .ok_or_else(|| invalid(format!("unknown prompt: {name}")))?;
            CompletionTarget::Prompt(routed)
        }
        Some("ref/resource") => {
            let uri = text(reference, "uri")?;
            let server = match flat_templates(host).await.flat.remove(&uri) {
                Some(Ok(entry)) => server_of(&entry),
                Some(Err(servers)) => return Err(not_found(&uri, Some(&servers))),
                None => return Err(not_found(&uri, None)),
            };
            CompletionTarget::ResourceTemplate {
                server: server.to_string(),
                uri_template: uri,
            }
        }
        _ => return Err(invalid("`ref.type` must be ref/prompt or ref/resource")),
    };
    let done = host
        .complete(&target, &text(argument, "name")?, &text(argument, "value")?)
        .await
        .map_err(|e| match e {
            CallError::UnknownPrompt(name) => invalid(format!("unknown prompt: {name}")),
            e => upstream_error(e),
        })?;
    Ok(json!({ "completion": done }))
}

/// Each key (URI or template) with its one entry, or the servers that share it.
type Flat = BTreeMap<String, Result<Value, Vec<Arc<str>>>>;

/// The flat view of one kind, and the servers that could not be listed.
struct View {
    flat: Flat,
    failed: Vec<Arc<str>>,
}

async fn flat_resources(host: &Host) -> View {
    let catalog = host.resources().await;
    View {
        flat: flatten(catalog.entries.into_iter().map(|r| {
            let key = r.resource.uri.clone();
            (key, r.server, serde_json::to_value(&r.resource))
        })),
        failed: catalog.failed.into_iter().map(|(s, _)| s).collect(),
    }
}

async fn flat_templates(host: &Host) -> View {
    let catalog = host.resource_templates().await;
    View {
        flat: flatten(catalog.entries.into_iter().map(|t| {
            let key = t.template.uri_template.clone();
            (key, t.server, serde_json::to_value(&t.template))
        })),
        failed: catalog.failed.into_iter().map(|(s, _)| s).collect(),
    }
}

fn flatten(entries: impl Iterator<Item = (String, Arc<str>, serde_json::Result<Value>)>) -> Flat {
    let mut claims: HashMap<String, Vec<(Arc<str>, Value)>> = HashMap::new();
    for (key, server, value) in entries {
        if let Ok(value) = value {
            claims.entry(key).or_default().push((server, value));
        }
    }
    claims
        .into_iter()
        .map(|(key, mut claimants)| {
            let entry = if claimants.len() == 1 {
                let (server, value) = claimants.remove(0);
                Ok(tag(value, &server))
            } else {
                Err(claimants.into_iter().map(|(s, _)| s).collect())
            };
            (key, entry)
        })
        .collect()
}

/// An entry as a client at `revision` may see it: icons that pass, from 2025-11-25.
fn with_icons(mut entry: Value, revision: Revision) -> Value {
    if let Value::Object(members) = &mut entry {
        if revision.rules().icons {
            Icon::clean(members);
        } else {
            members.remove("icons");
        }
    }
    entry
}

/// `value` with its server in `_meta`.
fn tag(mut value: Value, server: &Arc<str>) -> Value {
    if let Value::Object(map) = &mut value {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_META.into(), Value::String(server.to_string()));
        }
    }
    value
}

fn server_of(entry: &Value) -> Arc<str> {
    Arc::from(
        entry
            .pointer(&format!("/_meta/{}", SERVER_META.replace('/', "~1")))
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

/// One page of `items` under `key`, from offset `cursor`.
fn page(items: Vec<Value>, key: &str, cursor: Option<usize>, page_size: usize) -> Outcome {
    let start = cursor.unwrap_or(0);
    if start > items.len() {
        return Err(invalid("invalid cursor"));
    }
    let end = (start + page_size.max(1)).min(items.len());
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(items[start..end].to_vec()));
    if end < items.len() {
        result.insert("nextCursor".into(), Value::String(end.to_string()));
    }
    Ok(Value::Object(result))
}

fn cursor(params: Option<&Value>) -> Result<Option<usize>, ErrorObject> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) if c.len() <= 20 => {
            c.parse().map(Some).map_err(|_| invalid("invalid cursor"))
        }
        Some(_) => Err(invalid("invalid cursor")),
    }
}

fn string_param<'a>(params: Option<&'a Value>, key: &str) -> Result<&'a str, ErrorObject> {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("`{key}` must be a string")))
}

fn prompt_arguments(params: Option<&Value>) -> Result<BTreeMap<String, String>, ErrorObject> {
    match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(invalid(format!("argument `{k}` must be a string"))),
            })
            .collect(),
        Some(_) => Err(invalid("`arguments` must be an object")),
    }
}

fn invalid(message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code: error_codes::INVALID_PARAMS,
        message: message.into(),
        data: None,
    }
}

fn not_found(uri: &str, shared_by: Option<&[Arc<str>]>) -> ErrorObject {
    let message = match shared_by {
        Some(servers) => {
            let names: Vec<&str> = servers.iter().map(|s| &**s).collect();
            format!(
                "resource {uri:?} is offered by servers {}; it is not routed",
                names.join(", ")
            )
        }
        None => format!("resource not found: {uri:?}"),
    };
    ErrorObject {
        code: RESOURCE_NOT_FOUND,
        message,
        data: None,
    }
}

/// A server's own error passes through as it was; anything else is a sentence.
pub(crate) fn upstream_error(e: CallError) -> ErrorObject {
    match e {
        CallError::Rpc { error, .. } => error,
        e @ (CallError::UnknownServer(_) | CallError::UnknownPrompt(_)) => invalid(e.to_string()),
        CallError::InvalidRequest(message) => invalid(message),
        e @ CallError::NotOffered { .. } => ErrorObject {
            code: error_codes::METHOD_NOT_FOUND,
            message: e.to_string(),
            data: None,
        },
        e => ErrorObject {
            code: error_codes::INTERNAL_ERROR,
            message: e.to_string(),
            data: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_two_servers_share_is_served_by_neither() {
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        let flat = flatten(
            [
                ("x://1".to_string(), a.clone(), Ok(json!({"uri": "x://1"}))),
                (
                    "x://2".to_string(),
                    a.clone(),
                    Ok(json!({"uri": "x://2", "_meta": 3})),
                ),
                ("x://1".to_string(), b.clone(), Ok(json!({"uri": "x://1"}))),
            ]
            .into_iter(),
        );
        assert_eq!(flat["x://1"], Err(vec![a.clone(), b]));
        let two = flat["x://2"].as_ref().unwrap();
        assert_eq!(server_of(two), a);
        assert_eq!(two["_meta"][SERVER_META], "a");
    }

    #[test]
    fn pages_hand_out_offsets() {
        let items: Vec<Value> = (0..5).map(|i| json!(i)).collect();
        let first = page(items.clone(), "k", None, 2).unwrap();
        assert_eq!(first["k"], json!([0, 1]));
        assert_eq!(first["nextCursor"], "2");
        let last = page(items.clone(), "k", Some(4), 2).unwrap();
        assert_eq!(last["k"], json!([4]));
        assert!(last.get("nextCursor").is_none());
        assert!(page(items, "k", Some(6), 2).is_err());
    }
}
