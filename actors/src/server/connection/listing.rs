//! The tools listing of a connection: pages under the host's bounds, the
//! report to the registry, re-listing on change.

use std::sync::Arc;

use mcpvisor_protocol::mcp::caching::CacheHint;
use mcpvisor_protocol::mcp::messages::{ToolsPage, list_tools_params, methods};
use mcpvisor_protocol::state::listing::{ListingBounds, json_size};
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use ractor::ActorRef;
use serde_json::Value;
use tokio::time::Instant;

use super::{Connection, Listing, Pending};
use crate::error::ConnectionError;
use crate::messages::{ServerMsg, SupervisorMsg};
use crate::options::TransportSpec;
use crate::registry_msg::{RegistryMsg, ToolsReport};
use crate::server_lists::ServerLink;
use crate::status::ServerState;

impl Connection {
    /// A new registry knows nothing of this connection: list the tools again and
    /// report them. A connection whose first report may have been lost with the
    /// old registry (the host still sees it starting) reports as a first one.
    pub(crate) fn report_again(&mut self, myself: &ActorRef<ServerMsg>) {
        if !self.ready {
            return;
        }
        let starting = self
            .ctx
            .status
            .snapshot()
            .iter()
            .any(|s| s.id == self.id && matches!(s.state, ServerState::Starting { .. }));
        if self.listing.is_some() {
            self.relist = true;
        } else {
            self.start_listing(myself, starting);
        }
    }

    pub(super) fn start_listing(&mut self, myself: &ActorRef<ServerMsg>, initial: bool) {
        self.list_generation += 1;
        let generation = self.list_generation;
        // The first listing is part of the startup, under its deadline.
        if !initial {
            self.deadlines
                .relisting(generation, Instant::now(), self.request_timeout());
            self.arm_deadlines(myself);
        }
        self.listing = Some(Listing {
            generation,
            initial,
            hint: None,
            tools: Vec::new(),
            rejected: Vec::new(),
            bounds: ListingBounds::new(self.ctx.options.listing),
        });
        self.request_page(None, generation);
    }

    pub(super) fn request_page(&mut self, cursor: Option<&str>, generation: u64) {
        let params = list_tools_params(cursor);
        if let Ok((_, msg)) = self.session.request(
            methods::TOOLS_LIST,
            params,
            Pending::ListTools { generation },
        ) {
            self.send(&msg);
        }
    }

    pub(super) fn on_tools_page(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        generation: u64,
        outcome: Result<Value, ErrorObject>,
    ) {
        let Some(listing) = self.listing.as_mut().filter(|l| l.generation == generation) else {
            return;
        };
        let page = match outcome {
            Ok(v) => {
                if self.session.request_meta().is_some() {
                    let page = CacheHint::of(&v);
                    listing.hint = Some(listing.hint.map_or(page, |h| h.and(page)));
                }
                // What the listing keeps: the tools (a cursor is kept as a hash).
                let bytes = v.get("tools").map_or(0, json_size);
                ToolsPage::parse(v)
                    .map(|page| (bytes, page))
                    .map_err(|e| ConnectionError::Protocol(e.to_string()))
            }
            // A server that declared no tools (resources or prompts only) may
            // refuse the listing: it has none, and is ready all the same.
            Err(_) if !self.offers.tools => Ok((
                0,
                ToolsPage {
                    tools: Vec::new(),
                    rejected: Vec::new(),
                    next_cursor: None,
                },
            )),
            Err(error) => Err(ConnectionError::Protocol(format!(
                "tools/list failed: {} (code {})",
                error.message, error.code
            ))),
        };
        let problem = match page {
            Err(problem) => Some(problem),
            Ok((bytes, page)) => {
                let counted = listing.bounds.page(
                    bytes,
                    page.tools.len() + page.rejected.len(),
                    page.next_cursor.as_deref(),
                );
                listing.tools.extend(page.tools);
                listing.rejected.extend(page.rejected);
                match (counted, page.next_cursor) {
                    (Err(error), _) => {
                        // What this listing gathered goes now, not with the connection.
                        listing.tools = Vec::new();
                        Some(ConnectionError::Listing {
                            server: self.name.clone(),
                            error,
                        })
                    }
                    (Ok(()), Some(c)) => {
                        self.request_page(Some(&c), generation);
                        return;
                    }
                    (Ok(()), None) => None,
                }
            }
        };
        let Some(listing) = self.listing.take() else {
            return;
        };
        self.deadlines.listed(generation);
        if let Some(problem) = problem {
            if listing.initial {
                self.fail(myself, problem);
            } else {
                // The routes from the last good list stay; the server is still usable.
                tracing::warn!(server = %self.name, "re-listing tools failed: {problem}");
            }
            return;
        }
        self.report(myself, listing);
        if std::mem::take(&mut self.relist) {
            self.start_listing(myself, false);
        }
    }

    /// A call found the tools list stale (its `ttlMs` ran out): it is read
    /// again, unless a listing is under way.
    pub(crate) fn tools_stale(&mut self, myself: &ActorRef<ServerMsg>) {
        if !self.ready || self.stopping {
            return;
        }
        if self.listing.is_some() {
            self.relist = true;
        } else {
            self.start_listing(myself, false);
        }
    }

    pub(super) fn report(&mut self, myself: &ActorRef<ServerMsg>, listing: Listing) {
        if let Some(hint) = listing.hint {
            self.lane.tools_fresh_for(hint.ttl);
        }
        if listing.initial {
            // Open before the routes exist, so the first call routed here is taken.
            self.lane.open();
        }
        let link = Arc::new(ServerLink {
            id: self.id,
            name: self.name.clone(),
            lane: self.lane.clone(),
            request_timeout: self.request_timeout(),
            offers: self.offers,
            lists: self.lists.clone(),
            limits: self.ctx.options.listing,
            revision: self.session.revision(),
            mirrors_params: matches!(self.spec.transport, TransportSpec::Http(_))
                && self.session.revision().is_some_and(|r| r.rules().stateless),
        });
        if listing.initial {
            self.renew(&link);
        }
        let report = ToolsReport {
            id: self.id,
            name: self.name.clone(),
            link,
            tools: listing.tools,
            rejected: listing.rejected,
            initial: listing.initial,
            pid: self.pid,
        };
        self.ctx.to_registry(RegistryMsg::Report(Box::new(report)));
        if listing.initial {
            self.ready = true;
            self.deadlines.ready();
            self.arm_deadlines(myself);
            if let Some(sup) = myself.try_get_supervisor() {
                let _ = sup.send_message(SupervisorMsg::ServerReady { id: self.id });
            }
            // Calls come first: the stream is opened once the server is ready.
            self.open_listen();
        }
    }
}
