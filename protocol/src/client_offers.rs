//! What a client offers servers besides calling their tools: the requests it
//! answers (sampling, elicitation, roots) and its roots.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::messages::methods;

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
    /// `elicitation/create`.
    pub elicitation: bool,
    /// `roots/list` (and `notifications/roots/list_changed` when roots change).
    pub roots: bool,
}

impl ClientCapabilities {
    /// The `capabilities` member of `initialize`.
    pub fn to_value(self) -> Value {
        let mut map = Map::new();
        if self.sampling {
            map.insert("sampling".into(), Value::Object(Map::new()));
        }
        if self.elicitation {
            map.insert("elicitation".into(), Value::Object(Map::new()));
        }
        if self.roots {
            let mut roots = Map::new();
            roots.insert("listChanged".into(), Value::Bool(true));
            map.insert("roots".into(), Value::Object(roots));
        }
        Value::Object(map)
    }

    /// Whether a server request for `method` is one of these.
    pub fn offers(self, method: &str) -> bool {
        match method {
            methods::CREATE_MESSAGE => self.sampling,
            methods::ELICIT => self.elicitation,
            methods::ROOTS_LIST => self.roots,
            _ => false,
        }
    }
}
