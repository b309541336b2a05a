//! What a client offers servers besides calling their tools: the requests it
//! answers (sampling, elicitation, roots) and its roots.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp::messages::methods;
use crate::mcp::revision::Revision;

/// A root: a place the host lets servers work in (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri` without a name.
    pub fn new(uri: impl Into<String>) -> Root {
        Root {
            uri: uri.into(),
            name: None,
        }
    }
}

/// What a client offers servers: the requests a server may send it. A client
/// declares exactly what its host answers; a server may register features
/// (tools that sample or elicit) only for clients that declare them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `elicitation/create` (forms).
    pub elicitation: bool,
    /// `elicitation/create` in URL mode (from 2025-11-25; needs `elicitation`).
    pub elicitation_url: bool,
    /// Sampling requests that offer the model tools (from 2025-11-25; needs `sampling`).
    pub sampling_tools: bool,
    /// `roots/list` (and `notifications/roots/list_changed` when roots change).
    pub roots: bool,
}

impl ClientCapabilities {
    /// Every kind of request a handler can answer: sampling (tools offered
    /// too), forms and URL elicitation. Not roots: those are the host's data,
    /// declared where the host has them.
    pub const EVERY_REQUEST: ClientCapabilities = ClientCapabilities {
        sampling: true,
        sampling_tools: true,
        elicitation: true,
        elicitation_url: true,
        roots: false,
    };

    /// The `capabilities` member of `initialize` at 2025-03-26.
    pub fn to_value(self) -> Value {
        self.to_value_at(Revision::V2025_03_26)
    }

    /// The `capabilities` member of `initialize` offering `revision`: what
    /// only later revisions have (URL elicitation, sampling with tools) is
    /// declared only where the revision has it.
    pub fn to_value_at(self, revision: Revision) -> Value {
        let rules = revision.rules();
        let empty = || Value::Object(Map::new());
        let mut map = Map::new();
        if self.sampling {
            let mut sampling = Map::new();
            if self.sampling_tools && rules.sampling_tools {
                sampling.insert("tools".into(), empty());
            }
            map.insert("sampling".into(), Value::Object(sampling));
        }
        let url = self.elicitation_url && rules.url_elicitation;
        if self.elicitation || url {
            // An empty object means forms alone, as before URL mode existed.
            let mut elicitation = Map::new();
            if url {
                if self.elicitation {
                    elicitation.insert("form".into(), empty());
                }
                elicitation.insert("url".into(), empty());
            }
            map.insert("elicitation".into(), Value::Object(elicitation));
        }
        if self.roots {
            let mut roots = Map::new();
            roots.insert("listChanged".into(), Value::Bool(true));
            map.insert("roots".into(), Value::Object(roots));
        }
        Value::Object(map)
    }

    /// The capabilities a client declared in its `initialize` (`capabilities`)
    /// at `revision`: what the revision lacks is not taken as offered.
    pub fn declared_by(capabilities: Option<&Value>, revision: Revision) -> ClientCapabilities {
        let rules = revision.rules();
        let member = |name: &str| {
            capabilities
                .and_then(|c| c.get(name))
                .filter(|v| v.is_object())
        };
        let within = |outer: Option<&Value>, name: &str| {
            outer
                .and_then(|o| o.get(name))
                .is_some_and(Value::is_object)
        };
        let elicitation = member("elicitation");
        let sampling = member("sampling");
        let url = rules.url_elicitation && within(elicitation, "url");
        // `{}` is forms alone; with modes named, forms only if named.
        let named = within(elicitation, "form") || within(elicitation, "url");
        ClientCapabilities {
            sampling: sampling.is_some(),
            sampling_tools: rules.sampling_tools && within(sampling, "tools"),
            elicitation: elicitation.is_some() && (!named || within(elicitation, "form")),
            elicitation_url: url,
            roots: member("roots").is_some(),
        }
    }

    /// Whether a server request for `method` with `params` is one of these:
    /// an elicitation in the mode it asks for, a sampling request with tools
    /// only where tools are offered.
    pub fn offers_request(self, method: &str, params: &Value) -> bool {
        match method {
            methods::ELICIT if crate::mcp::url_elicitation::is_url_mode(params) => {
                self.elicitation_url
            }
            methods::ELICIT => self.elicitation,
            methods::CREATE_MESSAGE if params.get("tools").is_some() => {
                self.sampling && self.sampling_tools
            }
            _ => self.offers(method),
        }
    }

    /// What both `self` and `other` answer (a gateway's, narrowed to what
    /// the client a call is made for answers).
    pub fn within(self, other: ClientCapabilities) -> ClientCapabilities {
        ClientCapabilities {
            sampling: self.sampling && other.sampling,
            elicitation: self.elicitation && other.elicitation,
            elicitation_url: self.elicitation_url && other.elicitation_url,
            sampling_tools: self.sampling_tools && other.sampling_tools,
            roots: self.roots && other.roots,
        }
    }

    /// Whether a server request for `method` is one of these.
    pub fn offers(self, method: &str) -> bool {
        match method {
            methods::CREATE_MESSAGE => self.sampling,
            methods::ELICIT => self.elicitation || self.elicitation_url,
            methods::ROOTS_LIST => self.roots,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_capabilities_are_declared_and_read_only_where_the_revision_has_them() {
        let all = ClientCapabilities {
            sampling: true,
            sampling_tools: true,
            elicitation: true,
            elicitation_url: true,
            roots: true,
        };
        let newest = all.to_value_at(Revision::V2025_11_25);
        assert_eq!(
            newest,
            json!({"sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": true}})
        );
        // Older revisions: exactly what they had.
        for older in [Revision::V2025_03_26, Revision::V2025_06_18] {
            assert_eq!(
                all.to_value_at(older),
                json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
            );
            assert_eq!(
                ClientCapabilities::declared_by(Some(&newest), older),
                ClientCapabilities {
                    sampling_tools: false,
                    elicitation_url: false,
                    ..all
                }
            );
        }
        assert_eq!(
            ClientCapabilities::declared_by(Some(&newest), Revision::V2025_11_25),
            all
        );
        // `{"url": {}}` alone is URL mode without forms; `{}` is forms alone.
        let url_only = json!({"elicitation": {"url": {}}});
        let read = ClientCapabilities::declared_by(Some(&url_only), Revision::V2025_11_25);
        assert!(read.elicitation_url && !read.elicitation);
        let url = json!({"mode": "url"});
        assert!(read.offers_request(methods::ELICIT, &url));
        assert!(!read.offers_request(methods::ELICIT, &json!({})));
        let forms = ClientCapabilities::declared_by(
            Some(&json!({"elicitation": {}})),
            Revision::V2025_11_25,
        );
        assert!(forms.elicitation && !forms.elicitation_url);
        assert!(!forms.offers_request(methods::ELICIT, &url));
        // Sampling with tools only where tools are offered.
        let plain = ClientCapabilities {
            sampling: true,
            ..Default::default()
        };
        let with_tools = json!({"messages": [], "tools": []});
        assert!(!plain.offers_request(methods::CREATE_MESSAGE, &with_tools));
        assert!(all.offers_request(methods::CREATE_MESSAGE, &with_tools));
    }
}
