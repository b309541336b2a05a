//! One page of any MCP listing (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`): the entries that parse, the
//! ones that do not (set aside with a reason, never fatal), and the cursor.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::mcp::messages::ResultError;

/// One page of a listing whose entries are `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// Entries that parsed.
    pub items: Vec<T>,
    /// Entries that did not, each with where and why.
    pub rejected: Vec<String>,
    /// Cursor for the next page, if any.
    pub next_cursor: Option<String>,
}

impl<T: DeserializeOwned> Page<T> {
    /// Reads the result of `method`, whose entries are under `key`.
    pub fn parse(value: Value, method: &'static str, key: &str) -> Result<Page<T>, ResultError> {
        let err = |detail: String| ResultError {
            what: method,
            detail,
        };
        let Value::Object(mut map) = value else {
            return Err(err("not an object".into()));
        };
        let Some(Value::Array(entries)) = map.remove(key) else {
            return Err(err(format!("`{key}` missing or not an array")));
        };
        let next_cursor = match map.remove("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(err("`nextCursor` is not a string".into())),
        };
        let mut items = Vec::with_capacity(entries.len());
        let mut rejected = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            match serde_json::from_value::<T>(entry) {
                Ok(item) => items.push(item),
                Err(e) => rejected.push(format!("{key}[{i}]: {e}")),
            }
        }
        Ok(Page {
            items,
            rejected,
            next_cursor,
        })
    }
}

/// Parameters of a listing request: the cursor, when there is one.
pub fn list_params(cursor: Option<&str>) -> Option<Value> {
    cursor.map(|c| serde_json::json!({ "cursor": c }))
}
