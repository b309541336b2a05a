//! `subscriptions/listen` (MCP 2026-07-28): the one long-lived request that
//! replaces the GET stream and `resources/subscribe`. Its params say which
//! notifications the client wants (list changes, updates of named
//! resources); the server acknowledges the subset it honours, tags every
//! notification of the stream with the request's id, and answers the request
//! only when it ends the stream on its own.

use serde_json::{Value, json};

/// The request's method.
pub const LISTEN: &str = "subscriptions/listen";
/// The server's first message on a stream.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `_meta` key of every message of a stream: the listen request's id.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// The most resource URIs one stream listens for (the host's subscription bound).
pub const MAX_URIS: usize = 1024;

/// What a client listens for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    pub tools: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts: bool,
    /// `notifications/resources/list_changed`.
    pub resources: bool,
    /// `notifications/resources/updated` for these URIs.
    pub uris: Vec<String>,
}

impl ListenFilter {
    /// Whether there is anything to listen for.
    pub fn is_empty(&self) -> bool {
        !self.tools && !self.prompts && !self.resources && self.uris.is_empty()
    }

    /// The request's params (without `_meta`, which the session stamps).
    pub fn params(&self) -> Value {
        let mut notifications = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                notifications.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() {
            let uris: Vec<&String> = self.uris.iter().take(MAX_URIS).collect();
            notifications.insert("resourceSubscriptions".into(), json!(uris));
        }
        json!({ "notifications": notifications })
    }

    /// What an acknowledgement says the server honours (`None`: not one).
    pub fn acknowledged(params: Option<&Value>) -> Option<ListenFilter> {
        let notifications = params?.get("notifications")?.as_object()?;
        let on = |key: &str| notifications.get(key).and_then(Value::as_bool) == Some(true);
        let uris = notifications
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|uris| {
                uris.iter()
                    .take(MAX_URIS)
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some(ListenFilter {
            tools: on("toolsListChanged"),
            prompts: on("promptsListChanged"),
            resources: on("resourcesListChanged"),
            uris,
        })
    }
}

/// The subscription a message of a stream names in its `_meta`, if any.
pub fn subscription_of(params: Option<&Value>) -> Option<&Value> {
    params?.get("_meta")?.get(SUBSCRIPTION_ID_KEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_names_only_what_is_wanted() {
        let filter = ListenFilter {
            tools: true,
            prompts: false,
            resources: true,
            uris: vec!["file:///a".into()],
        };
        assert_eq!(
            filter.params(),
            json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true,
                "resourceSubscriptions": ["file:///a"]}})
        );
        assert!(ListenFilter::default().is_empty());
        assert_eq!(
            ListenFilter::default().params(),
            json!({"notifications": {}})
        );
    }

    #[test]
    fn an_acknowledgement_says_what_is_honoured() {
        let ack = json!({"_meta": {SUBSCRIPTION_ID_KEY: 7},
            "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a", 3]}});
        let honoured = ListenFilter::acknowledged(Some(&ack)).unwrap();
        assert!(honoured.tools && !honoured.prompts && !honoured.resources);
        assert_eq!(honoured.uris, vec!["file:///a".to_string()]);
        assert_eq!(subscription_of(Some(&ack)), Some(&json!(7)));
        assert_eq!(ListenFilter::acknowledged(Some(&json!({}))), None);
    }
}
