//! What a server offers besides tools — resources, resource templates, prompts —
//! and the link through which a host reaches it.
//!
//! Lists are fetched when a host first asks, on the connection's call lane
//! (with the calls' deadline rule and the tools' bounds on pages, entries and
//! bytes), and kept until the server says they changed or the connection ends:
//! a host that never asks for resources pays nothing for them. One listing per
//! kind runs at a time; hosts asking meanwhile wait for it and share its answer.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::caching::CacheHint;
use mcpvisor_protocol::mcp::messages::{ServerCapabilities, methods};
use mcpvisor_protocol::mcp::pages::{Page, list_params};
use mcpvisor_protocol::mcp::prompts::Prompt;
use mcpvisor_protocol::mcp::resources::{Resource, ResourceTemplate};
use mcpvisor_protocol::state::listing::{ListingBounds, ListingLimits, json_size};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::CallError;
use crate::lane::CallLane;
use crate::status::ServerId;

/// Which of the optional features a server declared in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// `tools`.
    pub tools: bool,
    /// `resources`: list, templates, read.
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
    /// `logging`: `logging/setLevel`.
    pub logging: bool,
    /// `tasks.requests.tools.call`: tools may run as tasks.
    pub task_calls: bool,
    /// `tasks.cancel`: a running task may be cancelled.
    pub task_cancels: bool,
}

impl Offers {
    /// Reads the features from a server's capabilities.
    pub fn from_capabilities(caps: &ServerCapabilities) -> Offers {
        let resources = caps.other.get("resources").filter(|v| v.is_object());
        Offers {
            tools: caps.tools.as_ref().is_some_and(Value::is_object),
            resources: resources.is_some(),
            subscribe: resources
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            prompts: caps.other.get("prompts").is_some_and(Value::is_object),
            completions: caps.other.get("completions").is_some_and(Value::is_object),
            logging: caps.logging.as_ref().is_some_and(Value::is_object),
            task_calls: caps
                .other
                .get("tasks")
                .and_then(|t| t.pointer("/requests/tools/call"))
                .is_some_and(Value::is_object),
            task_cancels: caps
                .other
                .get("tasks")
                .and_then(|t| t.get("cancel"))
                .is_some_and(Value::is_object),
        }
    }
}

/// A listing of one server: what parsed, and what was set aside and why.
#[derive(Debug, Clone)]
pub(crate) struct ServerList<T> {
    pub(crate) items: Vec<T>,
    pub(crate) rejected: Vec<String>,
}

/// One kind of list, kept between requests.
struct Kept<T> {
    /// Held while a listing runs, so hosts asking together share one.
    gate: tokio::sync::Mutex<()>,
    value: parking_lot::Mutex<Held<T>>,
}

/// The kept list and how many change notices came so far (a listing that
/// began before a notice is not kept). One lock for both, so a notice cannot
/// fall between the check and the store.
struct Held<T> {
    list: Option<Arc<ServerList<T>>>,
    changes: u64,
    /// At a stateless revision, when the kept list goes stale (its `ttlMs`);
    /// `None`: it stays until a change notice.
    fresh_until: Option<tokio::time::Instant>,
    /// The last list read was not kept (private, or stale at once): the next
    /// callers read theirs side by side instead of one after another.
    unshared: bool,
}

impl<T> Held<T> {
    /// The list kept, if it is still fresh.
    fn fresh(&self) -> Option<Arc<ServerList<T>>> {
        let fresh = self
            .fresh_until
            .is_none_or(|until| tokio::time::Instant::now() < until);
        self.list.clone().filter(|_| fresh)
    }
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            gate: tokio::sync::Mutex::new(()),
            value: parking_lot::Mutex::new(Held {
                list: None,
                changes: 0,
                fresh_until: None,
                unshared: false,
            }),
        }
    }
}

impl<T: DeserializeOwned> Kept<T> {
    fn forget(&self) {
        let mut held = self.value.lock();
        held.changes += 1;
        held.list = None;
    }

    async fn get(
        &self,
        link: &ServerLink,
        method: &'static str,
        key: &'static str,
    ) -> Result<Arc<ServerList<T>>, CallError> {
        let unshared = {
            let held = self.value.lock();
            if let Some(kept) = held.fresh() {
                return Ok(kept);
            }
            held.unshared
        };
        if unshared {
            let (list, hint) = list_all(link, method, key).await?;
            if hint.is_none_or(|h| !h.shareable()) {
                return Ok(Arc::new(list));
            }
            // Shareable again: kept from now on, as below.
            let list = Arc::new(list);
            let mut held = self.value.lock();
            held.unshared = false;
            held.list = Some(list.clone());
            held.fresh_until = hint.map(|h| tokio::time::Instant::now() + h.ttl);
            return Ok(list);
        }
        let _turn = self.gate.lock().await;
        let before = {
            let held = self.value.lock();
            if let Some(kept) = held.fresh() {
                return Ok(kept);
            }
            held.changes
        };
        let (list, hint) = list_all(link, method, key).await?;
        let list = Arc::new(list);
        let mut held = self.value.lock();
        // At a stateless revision the result says how long it is fresh and
        // whether it may be shared: a private or stale-at-once list is read
        // again for each caller, never served to another.
        let keep = match hint {
            None => Some(None),
            Some(hint) if hint.shareable() => Some(Some(tokio::time::Instant::now() + hint.ttl)),
            Some(_) => None,
        };
        held.unshared = keep.is_none();
        match keep {
            Some(fresh_until) if held.changes == before => {
                held.list = Some(list.clone());
                held.fresh_until = fresh_until;
            }
            _ => held.list = None,
        }
        Ok(list)
    }
}

/// The lists of one connection.
#[derive(Default)]
pub(crate) struct Lists {
    resources: Kept<Resource>,
    templates: Kept<ResourceTemplate>,
    prompts: Kept<Prompt>,
}

impl Lists {
    /// The server's resources (or templates) changed.
    pub(crate) fn resources_changed(&self) {
        self.resources.forget();
        self.templates.forget();
    }

    /// The server's prompts changed.
    pub(crate) fn prompts_changed(&self) {
        self.prompts.forget();
    }
}

/// How a host reaches one ready server for anything but a tool call.
pub(crate) struct ServerLink {
    pub(crate) id: ServerId,
    pub(crate) name: Arc<str>,
    pub(crate) lane: Arc<CallLane>,
    pub(crate) request_timeout: Duration,
    pub(crate) offers: Offers,
    pub(crate) lists: Arc<Lists>,
    pub(crate) limits: ListingLimits,
    /// The revision the handshake settled on.
    pub(crate) revision: Option<mcpvisor_protocol::mcp::revision::Revision>,
    /// Tools' `x-mcp-header` annotations are checked and mirrored: Streamable
    /// HTTP at a stateless revision (stdio may ignore them, and does).
    pub(crate) mirrors_params: bool,
}

impl std::fmt::Debug for ServerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerLink")
            .field("name", &self.name)
            .field("offers", &self.offers)
            .finish()
    }
}

impl ServerLink {
    /// Sends `method` and waits for its result, as sent. Dropping the future
    /// cancels the request (the server is sent `notifications/cancelled`).
    pub(crate) async fn ask(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        self.lane.ask(method, params, self.request_timeout).await
    }

    /// [`ServerLink::ask`] for a client that answers `answers` (see
    /// [`crate::CallOptions::answering`]).
    pub(crate) async fn ask_for(
        &self,
        method: &str,
        params: Option<Value>,
        answers: Option<mcpvisor_protocol::mcp::messages::ClientCapabilities>,
    ) -> Result<Value, CallError> {
        self.lane
            .ask_for(method, params, self.request_timeout, answers)
            .await
    }

    /// Fails unless the server declared `feature`.
    pub(crate) fn require(&self, offered: bool, feature: &'static str) -> Result<(), CallError> {
        if offered {
            Ok(())
        } else {
            Err(CallError::NotOffered {
                server: self.name.clone(),
                feature,
            })
        }
    }

    pub(crate) async fn resources(&self) -> Result<Arc<ServerList<Resource>>, CallError> {
        self.require(self.offers.resources, "resources")?;
        self.lists
            .resources
            .get(self, methods::RESOURCES_LIST, "resources")
            .await
    }

    pub(crate) async fn templates(&self) -> Result<Arc<ServerList<ResourceTemplate>>, CallError> {
        self.require(self.offers.resources, "resources")?;
        self.lists
            .templates
            .get(self, methods::RESOURCE_TEMPLATES_LIST, "resourceTemplates")
            .await
    }

    pub(crate) async fn prompts(&self) -> Result<Arc<ServerList<Prompt>>, CallError> {
        self.require(self.offers.prompts, "prompts")?;
        self.lists
            .prompts
            .get(self, methods::PROMPTS_LIST, "prompts")
            .await
    }
}

/// Every page of a listing, within the host's bounds.
/// At a stateless revision also the list's caching hints, its pages' together.
async fn list_all<T: DeserializeOwned>(
    link: &ServerLink,
    method: &'static str,
    key: &'static str,
) -> Result<(ServerList<T>, Option<CacheHint>), CallError> {
    let stateless = link.revision.is_some_and(|r| r.rules().stateless);
    let mut hint: Option<CacheHint> = None;
    let mut bounds = ListingBounds::new(link.limits);
    let mut list = ServerList {
        items: Vec::new(),
        rejected: Vec::new(),
    };
    let mut cursor: Option<String> = None;
    loop {
        let value = link.ask(method, list_params(cursor.as_deref())).await?;
        if stateless {
            let page = CacheHint::of(&value);
            hint = Some(hint.map_or(page, |h| h.and(page)));
        }
        let bytes = value.get(key).map_or(0, json_size);
        let page =
            Page::<T>::parse(value, method, key).map_err(|source| CallError::InvalidResult {
                server: link.name.clone(),
                source,
            })?;
        bounds
            .page(
                bytes,
                page.items.len() + page.rejected.len(),
                page.next_cursor.as_deref(),
            )
            .map_err(|error| CallError::Listing {
                server: link.name.clone(),
                error,
            })?;
        list.items.extend(page.items);
        list.rejected.extend(page.rejected);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((list, hint)),
        }
    }
}
