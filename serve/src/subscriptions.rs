//! Resource subscriptions of downstream sessions. The host holds one
//! subscription per resource while any session wants it; each session hears
//! `notifications/resources/updated` only for what it subscribed to, and what
//! it held is released when it ends.
//!
//! Counting and asking the host happen under one gateway-wide lock, so a
//! session that subscribes while another's subscribe is under way (or while a
//! closed session's release is) sees the outcome and acts on it: the host is
//! never left unsubscribed while a session believes otherwise. Subscriptions
//! are rare next to calls; a server slow to answer one holds up the others
//! for at most its request timeout.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mcpvisor::Host;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::outcome::Outcome;
use crate::resources_prompts::{owner, upstream_error};

/// Most subscriptions one session may hold.
pub const MAX_PER_SESSION: usize = 1024;

/// A resource: its server and URI.
pub(crate) type Key = (Arc<str>, String);

/// How many sessions want each resource.
#[derive(Default)]
pub(crate) struct Subscribers(Arc<tokio::sync::Mutex<Counts>>);

#[derive(Default)]
struct Counts(HashMap<Key, usize>);

impl Counts {
    /// Counts one more session; true for the first.
    fn add(&mut self, key: &Key) -> bool {
        let count = self.0.entry(key.clone()).or_default();
        *count += 1;
        *count == 1
    }

    /// Counts one session fewer; true for the last.
    fn remove(&mut self, key: &Key) -> bool {
        let all = &mut self.0;
        match all.get_mut(key) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                all.remove(key);
                true
            }
            None => false,
        }
    }
}

/// The subscriptions of one session.
#[derive(Default)]
pub(crate) struct Mine(Mutex<HashSet<Key>>);

impl Mine {
    /// Whether this session subscribed to `uri` on `server`.
    pub(crate) fn has(&self, server: &Arc<str>, uri: &str) -> bool {
        self.0.lock().contains(&(server.clone(), uri.to_string()))
    }
}

/// `resources/subscribe` for a session.
pub(crate) async fn subscribe(
    host: &Host,
    all: &Subscribers,
    mine: &Mine,
    params: Option<&Value>,
) -> Outcome {
    let uri = uri(params)?;
    let key = (owner(host, uri).await?, uri.to_string());
    let mut counts = all.0.lock().await;
    {
        let held = mine.0.lock();
        if held.contains(&key) {
            return Ok(json!({}));
        }
        if held.len() >= MAX_PER_SESSION {
            return Err(ErrorObject {
                code: error_codes::INVALID_PARAMS,
                message: format!("a session may hold {MAX_PER_SESSION} subscriptions"),
                data: None,
            });
        }
    }
    if counts.add(&key) {
        if let Err(e) = host.subscribe(&key.0, uri).await {
            counts.remove(&key);
            return Err(upstream_error(e));
        }
    }
    mine.0.lock().insert(key);
    Ok(json!({}))
}

/// `resources/unsubscribe` for a session.
pub(crate) async fn unsubscribe(
    host: &Host,
    all: &Subscribers,
    mine: &Mine,
    params: Option<&Value>,
) -> Outcome {
    let uri = uri(params)?;
    let mut counts = all.0.lock().await;
    let keys: Vec<Key> = mine
        .0
        .lock()
        .iter()
        .filter(|(_, u)| u == uri)
        .cloned()
        .collect();
    for key in keys {
        mine.0.lock().remove(&key);
        if counts.remove(&key) {
            let _ = host.unsubscribe(&key.0, uri).await;
        }
    }
    Ok(json!({}))
}

/// Releases everything a session that ended held.
pub(crate) fn release(host: &Host, all: &Subscribers, mine: &Mine) {
    let held: Vec<Key> = mine.0.lock().drain().collect();
    if held.is_empty() {
        return;
    }
    let (host, counts) = (host.clone(), all.0.clone());
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let mut counts = counts.lock().await;
            for key in held {
                if counts.remove(&key) {
                    let _ = host.unsubscribe(&key.0, &key.1).await;
                }
            }
        });
    }
}

fn uri(params: Option<&Value>) -> Result<&str, ErrorObject> {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject {
            code: error_codes::INVALID_PARAMS,
            message: "`uri` must be a string".into(),
            data: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_subscribes_for_the_first_session_and_releases_with_the_last() {
        let mut all = Counts::default();
        let key: Key = (Arc::from("s"), "x://1".into());
        assert!(all.add(&key));
        assert!(!all.add(&key));
        assert!(!all.remove(&key));
        assert!(all.remove(&key));
        assert!(!all.remove(&key), "nothing left to release");
    }
}
