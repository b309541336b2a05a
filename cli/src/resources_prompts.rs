//! `resources`, `read`, `prompts` and `prompt`: the same requests whether the
//! CLI runs the servers itself or attaches to a running `serve`, answered the
//! same way (the gateway's flat view, each entry naming its server in `_meta`).

use std::path::Path;
use std::process::ExitCode;

use base64::Engine;
use mcpvisor::Host;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_serve::client::Client;
use mcpvisor_serve::resources_prompts::{self, SERVER_META};
use mcpvisor_serve::tools::Naming;
use serde_json::{Map, Value, json};

use crate::Failure;
use crate::output::{clean, clean_line};

/// Most entries the CLI reads from one listing.
const MAX_ENTRIES: usize = 100_000;

/// Where the requests go.
pub(crate) enum Via<'a> {
    /// The servers this command started.
    Host(&'a Host),
    /// A running `serve`.
    Serve(&'a mut Client),
}

impl Via<'_> {
    async fn ask(&mut self, method: &str, params: Value) -> Result<Value, Failure> {
        match self {
            Via::Host(host) => resources_prompts::answer(
                host,
                Naming::Qualified,
                1000,
                Revision::V2025_11_25,
                method,
                Some(&params),
            )
            .await
            .map_err(|e| Failure(e.message, 1)),
            Via::Serve(client) => client
                .request(method, params, |_| {})
                .await
                .map_err(|e| Failure(e.to_string(), 1)),
        }
    }

    /// Every entry of a listing, page by page.
    async fn all(&mut self, method: &str, key: &str) -> Result<Vec<Value>, Failure> {
        let mut entries = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self.ask(method, params).await?;
            entries.extend(page[key].as_array().into_iter().flatten().cloned());
            match page["nextCursor"].as_str() {
                Some(next) if entries.len() < MAX_ENTRIES => cursor = Some(next.to_string()),
                _ => return Ok(entries),
            }
        }
    }
}

fn server_of(entry: &Value) -> &str {
    entry["_meta"][SERVER_META].as_str().unwrap_or("")
}

fn of_server(entries: Vec<Value>, server: Option<&str>) -> Vec<Value> {
    entries
        .into_iter()
        .filter(|e| server.is_none_or(|s| server_of(e) == s))
        .collect()
}

/// `mcpvisor resources [SERVER]`: resources, then templates.
pub(crate) async fn resources(
    mut via: Via<'_>,
    server: Option<&str>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let resources = of_server(via.all(methods::RESOURCES_LIST, "resources").await?, server);
    let templates = of_server(
        via.all(methods::RESOURCE_TEMPLATES_LIST, "resourceTemplates")
            .await?,
        server,
    );
    if json {
        println!(
            "{}",
            json!({"resources": resources, "templates": templates})
        );
        return Ok(ExitCode::SUCCESS);
    }
    let line = |entry: &Value, key: &str| {
        let name = entry["description"]
            .as_str()
            .or(entry["name"].as_str())
            .unwrap_or("");
        let mime = entry["mimeType"].as_str().unwrap_or("");
        format!(
            "{:<12} {:<48} {:<24} {}",
            clean_line(server_of(entry)),
            clean_line(entry[key].as_str().unwrap_or("")),
            clean_line(mime),
            clean_line(name.lines().next().unwrap_or(""))
        )
    };
    for r in &resources {
        println!("{}", line(r, "uri"));
    }
    if !templates.is_empty() {
        if !resources.is_empty() {
            println!();
        }
        println!("templates:");
        for t in &templates {
            println!("{}", line(t, "uriTemplate"));
        }
    }
    if resources.is_empty() && templates.is_empty() {
        eprintln!("mcpvisor: no resources");
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcpvisor read SERVER URI [-o FILE]`: text to stdout; binary only to a file.
pub(crate) async fn read(
    mut via: Via<'_>,
    server: &str,
    uri: &str,
    output: Option<&Path>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let params = json!({"uri": uri, "_meta": {SERVER_META: server}});
    let read = via.ask(methods::RESOURCES_READ, params).await?;
    if json && output.is_none() {
        println!("{read}");
        return Ok(ExitCode::SUCCESS);
    }
    let parts = read["contents"].as_array().cloned().unwrap_or_default();
    let mut bytes = Vec::new();
    let mut binary = false;
    for part in &parts {
        if let Some(text) = part["text"].as_str() {
            bytes.extend_from_slice(text.as_bytes());
        } else if let Some(blob) = part["blob"].as_str() {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| {
                    Failure(format!("the server sent a blob that is not base64: {e}"), 1)
                })?;
            bytes.extend_from_slice(&decoded);
            binary = true;
        }
    }
    match output {
        Some(path) => {
            std::fs::write(path, &bytes)
                .map_err(|e| Failure(format!("cannot write {}: {e}", path.display()), 1))?;
            eprintln!(
                "mcpvisor: {} bytes written to {}",
                bytes.len(),
                path.display()
            );
        }
        None if binary => {
            return Err(Failure(
                format!(
                    "{uri} is binary ({} bytes); save it with -o FILE",
                    bytes.len()
                ),
                1,
            ));
        }
        None => println!("{}", clean(&String::from_utf8_lossy(&bytes))),
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcpvisor prompts [SERVER]`.
pub(crate) async fn prompts(
    mut via: Via<'_>,
    server: Option<&str>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let prompts = of_server(via.all(methods::PROMPTS_LIST, "prompts").await?, server);
    if json {
        println!("{}", json!({ "prompts": prompts }));
        return Ok(ExitCode::SUCCESS);
    }
    for p in &prompts {
        let description = p["description"].as_str().unwrap_or("");
        println!(
            "{:<40} {}",
            clean_line(p["name"].as_str().unwrap_or("")),
            clean_line(description.lines().next().unwrap_or(""))
        );
        let arguments: Vec<String> = p["arguments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                let name = clean_line(a["name"].as_str().unwrap_or(""));
                if a["required"].as_bool() == Some(true) {
                    format!("{name} (required)")
                } else {
                    name
                }
            })
            .collect();
        if !arguments.is_empty() {
            println!("{:<40}   arguments: {}", "", arguments.join(", "));
        }
    }
    if prompts.is_empty() {
        eprintln!("mcpvisor: no prompts");
    }
    Ok(ExitCode::SUCCESS)
}

/// A prompt's arguments from the command line: a JSON object whose values are
/// strings (numbers and booleans are taken as their text).
/// A prompt's arguments from the command line: `key=value` pairs (every
/// prompt argument is a string), or one JSON object, as `call` takes them.
pub(crate) fn prompt_arguments(given: &[String]) -> Result<Map<String, Value>, Failure> {
    let text = match given {
        [] => "{}",
        [one] if one.trim_start().starts_with('{') => one.as_str(),
        pairs => {
            let mut map = Map::new();
            for pair in pairs {
                let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                    return Err(Failure(
                        format!(
                            "prompt argument `{}` is not `key=value` (or give one JSON object)",
                            clean_line(pair)
                        ),
                        2,
                    ));
                };
                if map
                    .insert(key.to_string(), Value::String(value.to_string()))
                    .is_some()
                {
                    return Err(Failure(
                        format!("prompt argument `{}` is given twice", clean_line(key)),
                        2,
                    ));
                }
            }
            return Ok(map);
        }
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Failure(format!("arguments are not valid JSON: {e}"), 2))?;
    let Value::Object(map) = value else {
        return Err(Failure("arguments must be a JSON object".into(), 2));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(_) => Ok((k, v)),
            Value::Number(n) => Ok((k, Value::String(n.to_string()))),
            Value::Bool(b) => Ok((k, Value::String(b.to_string()))),
            _ => Err(Failure(
                format!("prompt argument `{}` must be a string", clean_line(&k)),
                2,
            )),
        })
        .collect()
}

/// `mcpvisor prompt NAME '{…}'`: the filled-in messages.
pub(crate) async fn prompt(
    mut via: Via<'_>,
    name: &str,
    arguments: Map<String, Value>,
    json: bool,
) -> Result<ExitCode, Failure> {
    let params = json!({"name": name, "arguments": arguments});
    let got = via.ask(methods::PROMPTS_GET, params).await?;
    if json {
        println!("{got}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(description) = got["description"].as_str() {
        println!("# {}", clean_line(description));
    }
    for message in got["messages"].as_array().into_iter().flatten() {
        let role = clean_line(message["role"].as_str().unwrap_or("?"));
        let content = &message["content"];
        let body = match content["type"].as_str() {
            Some("text") => clean(content["text"].as_str().unwrap_or("")),
            Some("resource") => format!(
                "[resource {}]\n{}",
                clean_line(content["resource"]["uri"].as_str().unwrap_or("")),
                clean(content["resource"]["text"].as_str().unwrap_or(""))
            ),
            Some(kind) => format!("[{}]", clean_line(kind)),
            None => "[?]".into(),
        };
        println!("{role}: {body}");
    }
    Ok(ExitCode::SUCCESS)
}
