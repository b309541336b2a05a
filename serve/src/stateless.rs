//! The gateway's side of MCP 2026-07-28, the stateless revision: what a
//! request must carry in its `_meta` in place of `initialize` (its revision,
//! the client's capabilities, optionally its name and a log level), the
//! methods the revision removed, and what every answer must carry
//! (`resultType`, the gateway's name, caching hints on lists and reads).
//!
//! A request is of this era when its `_meta` names a protocol version (or,
//! over HTTP, its `MCP-Protocol-Version` header names one that has no
//! handshake); the transports decide that, and this module reads the rest.

use mcpvisor_protocol::mcp::discover::{SERVER_DISCOVER, SERVER_INFO_KEY};
use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::mcp::modern_errors::UNSUPPORTED_PROTOCOL_VERSION;
use mcpvisor_protocol::mcp::request_meta::{
    CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use mcpvisor_protocol::mcp::revision::{Revision, Versions};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, Request, error_codes};
use serde_json::{Map, Value, json};

/// What one stateless request says of its client.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Modern {
    /// The revision it names (one the gateway speaks).
    pub(crate) revision: Revision,
    /// What the client answers, for this request alone.
    pub(crate) client: ClientCapabilities,
    /// The least level of the log messages it wants with its answer.
    pub(crate) log_level: Option<usize>,
}

/// Methods 2026-07-28 removed: a request for one is answered as for a method
/// the gateway does not have, which is what the revision says to do.
const REMOVED: [&str; 5] = [
    methods::INITIALIZE,
    methods::PING,
    "logging/setLevel",
    methods::RESOURCES_SUBSCRIBE,
    methods::RESOURCES_UNSUBSCRIBE,
];

/// Results that carry caching hints at this revision.
const CACHEABLE: [&str; 6] = [
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_READ,
    methods::RESOURCE_TEMPLATES_LIST,
    SERVER_DISCOVER,
];

/// The version a request's `_meta` names, if it names one (a string or not).
pub(crate) fn named_version(request: &Request) -> Option<&Value> {
    request
        .params
        .as_ref()?
        .get("_meta")?
        .get(PROTOCOL_VERSION_KEY)
}

/// Whether a request without a session is a stateless one: it names a
/// version in `_meta`, or it is the discovery probe (which, malformed, must
/// still be answered as this revision answers).
/// An `initialize` that names its own version opens a session, whatever
/// its `_meta` says.
pub(crate) fn is_stateless(request: &Request) -> bool {
    if request.method == methods::INITIALIZE {
        return is_modern_initialize(request);
    }
    named_version(request).is_some() || request.method == SERVER_DISCOVER
}

/// Whether `initialize` is the removed method of a stateless client (its
/// params name a version only in `_meta`), not a session's first request.
pub(crate) fn is_modern_initialize(request: &Request) -> bool {
    request.method == methods::INITIALIZE
        && named_version(request).is_some()
        && request
            .params
            .as_ref()
            .and_then(|p| p.get("protocolVersion"))
            .is_none()
}

/// Reads a stateless request's `_meta`: -32602 when it lacks what the
/// revision requires, -32022 (with the versions spoken and the one asked)
/// for a revision the gateway does not speak statelessly.
pub(crate) fn read(request: &Request, versions: &Versions) -> Result<Modern, ErrorObject> {
    let meta = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            invalid(format!(
                "`params._meta` is required: at 2026-07-28 every request carries `{PROTOCOL_VERSION_KEY}` and `{CLIENT_CAPABILITIES_KEY}` there (older clients send `initialize` first)"
            ))
        })?;
    let requested = meta
        .get(PROTOCOL_VERSION_KEY)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("`_meta.{PROTOCOL_VERSION_KEY}` must be a string")))?;
    let capabilities = meta
        .get(CLIENT_CAPABILITIES_KEY)
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            invalid(format!(
                "`_meta.{CLIENT_CAPABILITIES_KEY}` must be an object (`{{}}` for none)"
            ))
        })?;
    let revision = spoken(requested, versions).ok_or_else(|| unsupported(requested, versions))?;
    let log_level = match meta.get(LOG_LEVEL_KEY) {
        None | Some(Value::Null) => None,
        Some(level) => Some(level.as_str().and_then(|l| l.parse::<LogLevel>().ok()).map(|l| l as usize).ok_or_else(|| {
            invalid(format!(
                "`_meta.{LOG_LEVEL_KEY}` must be one of debug, info, notice, warning, error, critical, alert, emergency"
            ))
        })?),
    };
    Ok(Modern {
        revision,
        // Roots too: a 2026-07-28 server may ask them in a call made for this client.
        client: ClientCapabilities::declared_by(Some(capabilities), revision),
        log_level,
    })
}

/// The stateless revision `name` names, if the gateway speaks it.
pub(crate) fn spoken(name: &str, versions: &Versions) -> Option<Revision> {
    let revision = name.parse::<Revision>().ok()?;
    (versions.stateless() == Some(revision)).then_some(revision)
}

/// The revisions served per request (what `server/discover` lists).
pub(crate) fn supported(versions: &Versions) -> Vec<&'static str> {
    versions
        .stateless()
        .into_iter()
        .map(Revision::as_str)
        .collect()
}

/// -32022: the revision asked is not spoken; the error lists those that are.
pub(crate) fn unsupported(requested: &str, versions: &Versions) -> ErrorObject {
    let shown: String = requested.chars().take(40).collect();
    ErrorObject {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        message: format!(
            "protocol version {shown:?} is not spoken here; use one of the supported versions (or `initialize` for 2025-03-26 … 2025-11-25)"
        ),
        data: Some(json!({"supported": supported(versions), "requested": shown})),
    }
}

fn invalid(message: String) -> ErrorObject {
    ErrorObject {
        code: error_codes::INVALID_PARAMS,
        message,
        data: None,
    }
}

/// Whether the revision removed `method`.
pub(crate) fn removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// The answer to `server/discover`.
pub(crate) fn discover(versions: &Versions) -> Value {
    let mut result = crate::handshake::initialize_result(Revision::V2026_07_28);
    let map = result.as_object_mut().expect("an object");
    map.remove("protocolVersion");
    map.remove("serverInfo");
    map.insert("supportedVersions".into(), json!(supported(versions)));
    if let Some(Value::Object(capabilities)) = map.get_mut("capabilities") {
        // Servers' logs are not tied to the request that a client asks them
        // with (`logLevel`), so none are sent at this revision: no logging.
        // `resources.subscribe` now means `resourceSubscriptions` on a listen.
        capabilities.remove("logging");
    }
    result
}

/// Writes what every answer at this revision carries into `result`:
/// `resultType` (unless the result already says what it is), the gateway's
/// name in `_meta`, and caching hints on the results that take them, in the
/// `scope` the endpoint allows (a listing behind a token is not for shared
/// caches). Upstream hints already in a result are kept.
pub(crate) fn complete(method: &str, result: &mut Value, scope: &'static str) {
    let Value::Object(map) = result else {
        return;
    };
    map.entry("resultType")
        .or_insert_with(|| Value::String("complete".into()));
    let meta = map
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            SERVER_INFO_KEY.into(),
            json!({"name": "mcpvisor", "version": env!("CARGO_PKG_VERSION")}),
        );
    }
    if CACHEABLE.contains(&method) {
        // The gateway's lists change whenever a server restarts or its tools
        // do: fresh for no time, so a client re-reads or listens.
        map.entry("ttlMs").or_insert_with(|| json!(0));
        map.entry("cacheScope")
            .or_insert_with(|| Value::String(scope.into()));
    }
}

/// The 2025 code for a resource not found, which 2026-07-28 made -32602.
const RESOURCE_NOT_FOUND_2025: i64 = -32002;

/// Writes what an error at this revision says differently: a resource not
/// found is invalid params (-32602), with the URI asked in `data.uri`.
pub(crate) fn error_at(params: Option<&Value>, error: &mut ErrorObject) {
    if error.code != RESOURCE_NOT_FOUND_2025 {
        return;
    }
    error.code = error_codes::INVALID_PARAMS;
    let uri = params.and_then(|p| p.get("uri")).cloned();
    let data = error.data.get_or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(data), Some(uri)) = (data, uri) {
        data.entry("uri").or_insert(uri);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpvisor_protocol::wire::jsonrpc::RequestId;

    fn request(method: &str, params: Value) -> Request {
        Request::new(RequestId::Number(7), method, Some(params))
    }

    fn meta(extra: Value) -> Value {
        let mut meta = json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"elicitation": {}},
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut meta, extra) {
            m.extend(e);
        }
        json!({ "_meta": meta })
    }

    #[test]
    fn a_request_reads_its_revision_capabilities_and_log_level_from_meta() {
        let versions = Versions::default();
        let read = read(
            &request("tools/list", meta(json!({LOG_LEVEL_KEY: "warning"}))),
            &versions,
        )
        .unwrap();
        assert_eq!(read.revision, Revision::V2026_07_28);
        assert!(read.client.elicitation);
        assert!(!read.client.sampling);
        assert_eq!(read.log_level, Some(LogLevel::Warning as usize));
    }

    #[test]
    fn what_the_revision_requires_in_meta_is_checked_each_with_its_code() {
        let versions = Versions::default();
        for params in [
            json!({}),
            json!({"_meta": {CLIENT_CAPABILITIES_KEY: {}}}),
            json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}),
            json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: []}}),
            meta(json!({LOG_LEVEL_KEY: "loud"})),
        ] {
            let e = read(&request("server/discover", params.clone()), &versions).unwrap_err();
            assert_eq!(e.code, error_codes::INVALID_PARAMS, "{params}");
        }
        let e = read(
            &request(
                "server/discover",
                json!({"_meta": {PROTOCOL_VERSION_KEY: "v999.0.0", CLIENT_CAPABILITIES_KEY: {}}}),
            ),
            &versions,
        )
        .unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
        );
        // A revision with a handshake is not served per request.
        let e = read(
            &request(
                "tools/list",
                json!({"_meta": {PROTOCOL_VERSION_KEY: "2025-11-25", CLIENT_CAPABILITIES_KEY: {}}}),
            ),
            &versions,
        )
        .unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
    }

    #[test]
    fn a_gateway_told_not_to_speak_2026_refuses_it_and_lists_nothing() {
        let versions = Versions::parse(&["2025-11-25"]).unwrap();
        let e = read(&request("tools/list", meta(json!({}))), &versions).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["supported"], json!([]));
    }

    #[test]
    fn only_an_initialize_without_a_version_of_its_own_is_the_removed_method() {
        assert!(is_modern_initialize(&request(
            "initialize",
            meta(json!({}))
        )));
        let legacy = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "_meta": {PROTOCOL_VERSION_KEY: "x"}});
        assert!(!is_modern_initialize(&request(
            "initialize",
            legacy.clone()
        )));
        assert!(!is_stateless(&request("initialize", legacy)));
        assert!(is_stateless(&request("server/discover", json!({}))));
        assert!(removed("ping") && removed("logging/setLevel") && !removed("tools/call"));
    }

    #[test]
    fn every_answer_says_what_it_is_and_who_answered_and_lists_carry_hints() {
        let mut listed = json!({"tools": []});
        complete("tools/list", &mut listed, "public");
        assert_eq!(listed["resultType"], "complete");
        assert_eq!(listed["_meta"][SERVER_INFO_KEY]["name"], "mcpvisor");
        assert_eq!(
            (listed["ttlMs"].clone(), listed["cacheScope"].clone()),
            (json!(0), json!("public"))
        );

        let mut called = json!({"content": [], "_meta": {"k": 1}});
        complete("tools/call", &mut called, "public");
        assert_eq!(called["_meta"]["k"], 1, "the result's own _meta is kept");
        assert!(called.get("ttlMs").is_none());

        let mut asked = json!({"resultType": "input_required", "inputRequests": {}});
        complete("tools/call", &mut asked, "private");
        assert_eq!(asked["resultType"], "input_required");

        let mut read = json!({"contents": [], "ttlMs": 5000, "cacheScope": "private"});
        complete("resources/read", &mut read, "public");
        assert_eq!(
            (read["ttlMs"].clone(), read["cacheScope"].clone()),
            (json!(5000), json!("private"))
        );
    }

    #[test]
    fn a_resource_not_found_is_invalid_params_naming_the_uri() {
        let mut e = ErrorObject {
            code: -32002,
            message: "no".into(),
            data: None,
        };
        error_at(Some(&json!({"uri": "test://x"})), &mut e);
        assert_eq!((e.code, e.data), (-32602, Some(json!({"uri": "test://x"}))));
        let mut other = ErrorObject {
            code: -32603,
            message: "no".into(),
            data: None,
        };
        error_at(Some(&json!({"uri": "test://x"})), &mut other);
        assert_eq!((other.code, other.data), (-32603, None));
    }

    #[test]
    fn discovery_lists_the_revision_and_the_capabilities_served_at_it() {
        let found = discover(&Versions::default());
        assert_eq!(found["supportedVersions"], json!(["2026-07-28"]));
        assert!(
            found["capabilities"]["tools"]["listChanged"]
                .as_bool()
                .unwrap()
        );
        assert!(found["capabilities"].get("logging").is_none());
        assert_eq!(found["capabilities"]["resources"]["subscribe"], true);
        assert!(found.get("protocolVersion").is_none());
    }
}
