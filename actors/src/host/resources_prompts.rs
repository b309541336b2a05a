//! What a host reaches besides tools: resources, resource templates, prompts
//! (routed as `mcp__server__prompt`, like tools), completion and log levels.
//!
//! Every request goes on the server's call lane, with the calls' deadline rule
//! (a request that times out ends the connection, which is restarted) and
//! cancellation (dropping the future sends `notifications/cancelled`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::join_all;
use mcpvisor_protocol::QualifiedMcpToolName;
use mcpvisor_protocol::mcp::completion::{Completion, CompletionRef, complete_params};
use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::prompts::{GetPromptResult, Prompt, get_prompt_params};
use mcpvisor_protocol::mcp::resources::{
    ReadResourceResult, Resource, ResourceTemplate, uri_params,
};
use serde_json::{Map, Value};

use super::Host;
use crate::error::CallError;
use crate::options::CallOptions;
use crate::restart_replay::{MAX_SUBSCRIPTIONS, MAX_URI_BYTES, Recorded, RestartReplay};
use crate::server_lists::{ServerLink, ServerList};
use crate::status::ServerState;

/// Withdraws a recorded subscription when dropped.
struct Undo<'a> {
    restart_replay: &'a RestartReplay,
    server: &'a str,
    uri: &'a str,
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        self.restart_replay.unsubscribe(self.server, self.uri);
    }
}

/// What every ready server listed of one kind, sorted, with what could not be listed.
#[derive(Debug, Clone)]
pub struct Catalog<T> {
    /// The entries.
    pub entries: Vec<T>,
    /// Entries left out, and why (unreadable, listed twice, a name that cannot be routed).
    pub skipped: Vec<Skipped>,
    /// Servers whose listing failed, and how.
    pub failed: Vec<(Arc<str>, CallError)>,
}

/// An entry a catalog left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Which server listed it.
    pub server: Arc<str>,
    /// The entry (its name or URI, or where it was in the listing).
    pub entry: String,
    /// Why it was left out.
    pub reason: String,
}

/// A resource and the server that serves it (URIs are unique per server only).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerResource {
    /// The server.
    pub server: Arc<str>,
    /// The resource, as listed.
    pub resource: Resource,
}

/// A resource template and the server that serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTemplate {
    /// The server.
    pub server: Arc<str>,
    /// The template, as listed.
    pub template: ResourceTemplate,
}

/// A prompt under its routed name.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutedPrompt {
    /// `mcp__server__prompt`.
    pub name: QualifiedMcpToolName,
    /// The server.
    pub server: Arc<str>,
    /// The prompt, as listed (its `name` is the server's own).
    pub prompt: Prompt,
}

/// What an argument to complete belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionTarget {
    /// A prompt, by its routed name.
    Prompt(String),
    /// A resource template of a server.
    ResourceTemplate {
        /// The server.
        server: String,
        /// The URI template, as listed.
        uri_template: String,
    },
}

impl Host {
    /// Every resource of every ready server that offers resources, sorted by
    /// server and URI. A URI one server lists twice is left out (`skipped`).
    pub async fn resources(&self) -> Catalog<ServerResource> {
        let lists = self
            .each_listing(|link| async move { link.resources().await })
            .await;
        gather(lists, |server, resource: &Resource| {
            (
                resource.uri.clone(),
                ServerResource {
                    server: server.clone(),
                    resource: resource.clone(),
                },
            )
        })
    }

    /// Every resource template of every ready server that offers resources.
    pub async fn resource_templates(&self) -> Catalog<ServerTemplate> {
        let lists = self
            .each_listing(|link| async move { link.templates().await })
            .await;
        gather(lists, |server, template: &ResourceTemplate| {
            (
                template.uri_template.clone(),
                ServerTemplate {
                    server: server.clone(),
                    template: template.clone(),
                },
            )
        })
    }

    /// Reads resource `uri` of `server`.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, CallError> {
        self.read_resource_with(server, uri, &CallOptions::default())
            .await
    }

    /// [`Host::read_resource`] with `options`: of them, what the read is made
    /// for ([`CallOptions::answering`]: what a 2026-07-28 server is told, and
    /// may ask in rounds, the host's handler answering).
    pub async fn read_resource_with(
        &self,
        server: &str,
        uri: &str,
        options: &CallOptions,
    ) -> Result<ReadResourceResult, CallError> {
        let link = self.link(server)?;
        link.require(link.offers.resources, "resources")?;
        let value = link
            .ask_for(
                methods::RESOURCES_READ,
                Some(uri_params(uri)),
                options.answers,
            )
            .await?;
        ReadResourceResult::parse(value).map_err(|source| CallError::InvalidResult {
            server: link.name.clone(),
            source,
        })
    }

    /// Subscribes to resource `uri` of `server`: each change is a
    /// [`crate::HostEvent::ResourceUpdated`]. The subscription is renewed
    /// whenever the server restarts, until [`Host::unsubscribe`]. At most
    /// 1,024 per server.
    pub async fn subscribe(&self, server: &str, uri: &str) -> Result<(), CallError> {
        let link = self.link(server)?;
        link.require(link.offers.subscribe, "resource subscriptions")?;
        if uri.len() > MAX_URI_BYTES {
            return Err(CallError::InvalidRequest(format!(
                "a URI to subscribe to is at most {MAX_URI_BYTES} bytes"
            )));
        }
        let restart_replay = &self.0.restart_replay;
        let added = match restart_replay.subscribe(&link.name, uri) {
            Recorded::Full => {
                return Err(CallError::InvalidRequest(format!(
                    "server `{server}` has {MAX_SUBSCRIPTIONS} subscriptions, as many as a host may hold"
                )));
            }
            Recorded::Added => true,
            Recorded::Existing => false,
        };
        if link.lane.is_stateless() {
            // MCP 2026-07-28: the subscription rides in the connection's
            // `subscriptions/listen`, opened anew with it (and after every restart).
            if added {
                link.lane.relisten();
            }
            return Ok(());
        }
        // A subscription this call added is withdrawn unless the server took it,
        // also when the call is dropped before the answer.
        let mut undo = added.then(|| Undo {
            restart_replay,
            server,
            uri,
        });
        let asked = link
            .ask(methods::RESOURCES_SUBSCRIBE, Some(uri_params(uri)))
            .await;
        if asked.is_ok() {
            if let Some(kept) = undo.take() {
                std::mem::forget(kept);
            }
        }
        asked.map(drop)
    }

    /// Ends a subscription. The host stops reporting updates at once, whatever
    /// the server answers.
    pub async fn unsubscribe(&self, server: &str, uri: &str) -> Result<(), CallError> {
        if !self.0.restart_replay.unsubscribe(server, uri) {
            return Err(CallError::InvalidRequest(format!(
                "not subscribed to {uri:?} on server `{server}`"
            )));
        }
        let link = self.link(server)?;
        if link.lane.is_stateless() {
            link.lane.relisten();
            return Ok(());
        }
        link.ask(methods::RESOURCES_UNSUBSCRIBE, Some(uri_params(uri)))
            .await
            .map(drop)
    }

    /// Every prompt of every ready server that offers prompts, routed as
    /// `mcp__server__prompt` by the tools' rules: a name that cannot form a
    /// route, or that a server lists twice, is left out (`skipped`).
    pub async fn prompts(&self) -> Catalog<RoutedPrompt> {
        let lists = self
            .each_listing(|link| async move { link.prompts().await })
            .await;
        let mut catalog = gather(lists, |server, prompt: &Prompt| {
            (prompt.name.clone(), (server.clone(), prompt.clone()))
        });
        let mut entries = Vec::with_capacity(catalog.entries.len());
        for (server, prompt) in catalog.entries {
            match QualifiedMcpToolName::new(&server, &prompt.name) {
                Ok(name) => entries.push(RoutedPrompt {
                    name,
                    server,
                    prompt,
                }),
                Err(e) => catalog.skipped.push(Skipped {
                    server,
                    entry: prompt.name,
                    reason: format!("cannot be routed: {e}"),
                }),
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Catalog {
            entries,
            skipped: catalog.skipped,
            failed: catalog.failed,
        }
    }

    /// Fills in the prompt routed as `name` with `arguments`. Its required
    /// arguments must be given.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<GetPromptResult, CallError> {
        self.get_prompt_with(name, arguments, &CallOptions::default())
            .await
    }

    /// [`Host::get_prompt`] with `options` (see [`Host::read_resource_with`]).
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
        options: &CallOptions,
    ) -> Result<GetPromptResult, CallError> {
        let (link, prompt) = self.routed_prompt(name).await?;
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !arguments.contains_key(&a.name))
        {
            return Err(CallError::InvalidRequest(format!(
                "prompt `{name}` needs argument `{}`",
                missing.name
            )));
        }
        let arguments: Map<String, Value> = arguments
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let value = link
            .ask_for(
                methods::PROMPTS_GET,
                Some(get_prompt_params(&prompt.name, &arguments)),
                options.answers,
            )
            .await?;
        GetPromptResult::parse(value).map_err(|source| CallError::InvalidResult {
            server: link.name.clone(),
            source,
        })
    }

    /// Suggestions for argument `argument` of a prompt or resource template,
    /// whose value so far is `value` (`completion/complete`).
    pub async fn complete(
        &self,
        target: &CompletionTarget,
        argument: &str,
        value: &str,
    ) -> Result<Completion, CallError> {
        let (link, reference) = match target {
            CompletionTarget::Prompt(name) => {
                let (link, prompt) = self.routed_prompt(name).await?;
                (link, CompletionRef::Prompt(prompt.name.clone()))
            }
            CompletionTarget::ResourceTemplate {
                server,
                uri_template,
            } => (
                self.link(server)?,
                CompletionRef::ResourceTemplate(uri_template.clone()),
            ),
        };
        link.require(link.offers.completions, "completions")?;
        let result = link
            .ask(
                methods::COMPLETE,
                Some(complete_params(&reference, argument, value)),
            )
            .await?;
        Completion::parse(result).map_err(|source| CallError::InvalidResult {
            server: link.name.clone(),
            source,
        })
    }

    /// Asks `server` to send log messages at `level` and above. The level is
    /// kept and asked again whenever the server restarts; a server that is not
    /// ready now gets it when it is.
    pub async fn set_log_level(&self, server: &str, level: LogLevel) -> Result<(), CallError> {
        let link = match self.link(server) {
            Ok(link) => link,
            Err(CallError::ServerUnavailable { server, .. }) => {
                self.0.restart_replay.set_level(&server, level);
                self.level_when_published(server, level);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if link.lane.is_stateless() {
            // MCP 2026-07-28: the level rides in each request from now on
            // (and in a new connection's, from the restart replay).
            self.0.restart_replay.set_level(&link.name, level);
            link.lane.set_log_level(level);
            return Ok(());
        }
        link.require(link.offers.logging, "logging")?;
        self.0.restart_replay.set_level(&link.name, level);
        link.ask(methods::SET_LOG_LEVEL, Some(level.params()))
            .await
            .map(drop)
    }

    /// A connection between its first report and its publication was asked
    /// for the level it had then: ask it once more when it is published (an
    /// idempotent repeat for one that read the new level). Gives up when the
    /// server settles without a connection, or after a minute.
    fn level_when_published(&self, server: Arc<str>, level: LogLevel) {
        let (routes, status) = (self.0.routes.clone(), self.0.status.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut changed = status.watch();
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                if let Some(link) = routes.load().server(&server).cloned() {
                    if link.offers.logging {
                        let _ = link.ask(methods::SET_LOG_LEVEL, Some(level.params())).await;
                    }
                    return;
                }
                let starting = status
                    .snapshot()
                    .iter()
                    .any(|s| s.name == server && matches!(s.state, ServerState::Starting { .. }));
                if !starting
                    || tokio::time::timeout_at(deadline, changed.changed())
                        .await
                        .is_err()
                {
                    return;
                }
            }
        });
    }

    /// The ready server named `server`.
    pub(super) fn link(&self, server: &str) -> Result<Arc<ServerLink>, CallError> {
        if let Some(link) = self.0.routes.load().server(server) {
            return Ok(link.clone());
        }
        match self.0.status.named(server) {
            Some(s) => Err(s.unavailable()),
            None => Err(CallError::UnknownServer(server.to_string())),
        }
    }

    /// The server and prompt routed as `name`, from the server's prompt list.
    async fn routed_prompt(&self, name: &str) -> Result<(Arc<ServerLink>, Prompt), CallError> {
        let unknown = || CallError::UnknownPrompt(name.to_string());
        let qualified = QualifiedMcpToolName::parse(name).map_err(|_| unknown())?;
        let link = match self.link(qualified.server()) {
            Err(CallError::UnknownServer(_)) => return Err(unknown()),
            other => other?,
        };
        let list = link.prompts().await?;
        let mut named = list.items.iter().filter(|p| p.name == qualified.tool());
        match (named.next(), named.next()) {
            (Some(prompt), None) => Ok((link.clone(), prompt.clone())),
            _ => Err(unknown()),
        }
    }

    /// Runs `list` on every ready server at once.
    async fn each_listing<T, F, Fut>(
        &self,
        list: F,
    ) -> Vec<(Arc<str>, Result<Arc<ServerList<T>>, CallError>)>
    where
        F: Fn(Arc<ServerLink>) -> Fut,
        Fut: std::future::Future<Output = Result<Arc<ServerList<T>>, CallError>>,
    {
        let links: Vec<Arc<ServerLink>> = self.0.routes.load().servers().cloned().collect();
        let names: Vec<Arc<str>> = links.iter().map(|l| l.name.clone()).collect();
        let lists = join_all(links.into_iter().map(list)).await;
        names.into_iter().zip(lists).collect()
    }
}

/// Each server's listing of one kind, by server name.
type Listings<T> = Vec<(Arc<str>, Result<Arc<ServerList<T>>, CallError>)>;

/// Joins each server's list into one catalog keyed by `key` per server: an
/// entry whose key its server lists twice is left out; servers that do not
/// offer the kind are passed over.
fn gather<T, E>(lists: Listings<T>, entry: impl Fn(&Arc<str>, &T) -> (String, E)) -> Catalog<E> {
    let mut catalog = Catalog {
        entries: Vec::new(),
        skipped: Vec::new(),
        failed: Vec::new(),
    };
    let mut lists = lists;
    lists.sort_by(|a, b| a.0.cmp(&b.0));
    for (server, list) in lists {
        let list = match list {
            Ok(list) => list,
            Err(CallError::NotOffered { .. }) => continue,
            Err(e) => {
                catalog.failed.push((server, e));
                continue;
            }
        };
        for rejected in &list.rejected {
            catalog.skipped.push(Skipped {
                server: server.clone(),
                entry: rejected.clone(),
                reason: "not a valid entry".into(),
            });
        }
        let mut keyed: BTreeMap<String, Vec<E>> = BTreeMap::new();
        for item in &list.items {
            let (key, e) = entry(&server, item);
            keyed.entry(key).or_default().push(e);
        }
        let mut twice: HashMap<String, usize> = HashMap::new();
        for (key, mut es) in keyed {
            if es.len() == 1 {
                catalog.entries.extend(es.pop());
            } else {
                twice.insert(key, es.len());
            }
        }
        for (key, times) in twice {
            catalog.skipped.push(Skipped {
                server: server.clone(),
                entry: key,
                reason: format!("listed {times} times"),
            });
        }
    }
    catalog
}
