//! Resource subscriptions of downstream sessions. The host holds one
//! subscription per resource while any session wants it; each session hears
//! `notifications/resources/updated` only for what it subscribed to, and what
//! it held is released when it ends.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mcpvisor::Host;
use mcpvisor_protocol::jsonrpc::{ErrorObject, error_codes};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::offered::{owner, upstream_error};
use crate::outcome::Outcome;

/// Most subscriptions one session may hold.
pub const MAX_PER_SESSION: usize = 1024;

/// A resource: its server and URI.
pub(crate) type Key = (Arc<str>, String);

/// How many sessions want each resource.
#[derive(Default)]
pub(crate) struct Subscribers(Mutex<HashMap<Key, usize>>);

impl Subscribers {
    /// Counts one more session; true for the first.
    fn add(&self, key: &Key) -> bool {
        let mut all = self.0.lock();
        let count = all.entry(key.clone()).or_default();
        *count += 1;
        *count == 1
    }

    /// Counts one session fewer; true for the last.
    fn remove(&self, key: &Key) -> bool {
        let mut all = self.0.lock();
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
    {
        let mut held = mine.0.lock();
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
        held.insert(key.clone());
    }
    if all.add(&key) {
        if let Err(e) = host.subscribe(&key.0, uri).await {
            all.remove(&key);
            mine.0.lock().remove(&key);
            return Err(upstream_error(e));
        }
    }
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
    let key = mine.0.lock().iter().find(|(_, u)| u == uri).cloned();
    if let Some(key) = key {
        mine.0.lock().remove(&key);
        if all.remove(&key) {
            let _ = host.unsubscribe(&key.0, uri).await;
        }
    }
    Ok(json!({}))
}

/// Releases everything a session that ended held.
pub(crate) fn release(host: &Host, all: &Subscribers, mine: &Mine) {
    let held: Vec<Key> = mine.0.lock().drain().collect();
    let last: Vec<Key> = held.into_iter().filter(|k| all.remove(k)).collect();
    if last.is_empty() {
        return;
    }
    let host = host.clone();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            for (server, uri) in last {
                let _ = host.unsubscribe(&server, &uri).await;
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
        let all = Subscribers::default();
        let key: Key = (Arc::from("s"), "x://1".into());
        assert!(all.add(&key));
        assert!(!all.add(&key));
        assert!(!all.remove(&key));
        assert!(all.remove(&key));
        assert!(!all.remove(&key), "nothing left to release");
    }
}
