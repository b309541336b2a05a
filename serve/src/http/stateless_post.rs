//! A POST of the stateless revision (2026-07-28): no session; the request's
//! `_meta` stands in for `initialize`, its headers must say what its body
//! says (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), and the HTTP
//! status of an error says which kind it is (404 for a method not found,
//! 400 for the revision's own errors), as the transport requires.
//!
//! Every stateless request is answered by a session of its own, made from
//! its `_meta` and gone with its answer. How many are answered at once is
//! bounded by the connections (each serves one request at a time); calls
//! parked for their client's retry by the bridge's own bound, listen streams
//! by the gateway's (`GatewayOptions::max_listens`).

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::modern_errors::{
    HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
};
use mcpvisor_protocol::mcp::param_headers::ParamHeaders;
use mcpvisor_protocol::mcp::revision::Revision;
use mcpvisor_protocol::mcp::route_headers::{PARAM_HEADER_PREFIX, decode_value};
use mcpvisor_protocol::mcp::subscriptions::LISTEN;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, Message, Request, error_codes};
use serde_json::Value;
use tokio::sync::mpsc;

use super::answer::answer_one;
use super::relay;
use super::screen::{refuse, refuse_error};
use super::{Endpoint, VERSION_HEADER, accepts_sse};
use crate::ingress::Ingress;
use crate::session::Session;
use crate::stateless;

const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// Whether a POST that names no session is of the stateless revision: its
/// version header names a revision without a handshake (or one unknown
/// here, which only this revision's error can answer), or its request says
/// so in `_meta`. Anything else is an older client that has not initialized.
pub(super) fn is_stateless(headers: &HeaderMap, messages: &[Message]) -> bool {
    let header = headers.get(&VERSION_HEADER).map(|v| {
        v.to_str()
            .ok()
            .and_then(|v| v.trim().parse::<Revision>().ok())
            .is_none_or(|r| !r.initializes())
    });
    header == Some(true)
        || messages
            .iter()
            .any(|m| matches!(m, Message::Request(r) if stateless::is_stateless(r)))
}

/// Answers one stateless POST.
pub(super) async fn answer(
    endpoint: &Arc<Endpoint>,
    headers: &HeaderMap,
    mut messages: Vec<Message>,
    batch: bool,
) -> Response {
    if batch {
        return refuse(
            StatusCode::BAD_REQUEST,
            error_codes::INVALID_REQUEST,
            "protocol 2026-07-28 has no JSON-RPC batches; send one message per request",
        );
    }
    let request = match messages.pop() {
        Some(Message::Request(request)) => request,
        // The revision defines none over HTTP (closing a stream cancels).
        Some(Message::Notification(_)) => return StatusCode::ACCEPTED.into_response(),
        _ => {
            return refuse(
                StatusCode::BAD_REQUEST,
                error_codes::INVALID_REQUEST,
                "at protocol 2026-07-28 a client sends requests, never answers",
            );
        }
    };
    let gateway = &endpoint.gateway;
    let checked = route_headers(headers, &request)
        .and_then(|()| stateless::read(&request, &gateway.options().protocol_versions))
        .and_then(|modern| param_headers(headers, &request, endpoint).map(|()| modern));
    let modern = match checked {
        Ok(modern) => modern,
        Err(error) => return refuse_error(StatusCode::BAD_REQUEST, request.id, error),
    };
    // Behind a load balancer: a request another node must answer goes there.
    match relay::elsewhere(endpoint, headers, &request, modern.client) {
        None => {}
        Some(Ok((node, addr))) => {
            return relay::relay(endpoint, headers, request, &node, addr).await;
        }
        Some(Err(why)) => {
            let error = ErrorObject {
                code: error_codes::INVALID_PARAMS,
                message: why,
                data: None,
            };
            return refuse_error(StatusCode::BAD_REQUEST, request.id, error);
        }
    }
    let (tx, rx) = mpsc::channel(gateway.options().outbound_queue);
    // Only a listen is told anything unsolicited, on its own stream.
    let notices = if request.method == LISTEN {
        tx.clone()
    } else {
        mpsc::channel(1).0
    };
    let ingress = Ingress::Http {
        token: endpoint.options.token.is_some(),
    };
    let naming = endpoint.options.naming;
    let session = Session::stateless(gateway.clone(), naming, ingress, None, modern, notices);
    let answering = session.answer_inline(request, tx.clone());
    answer_one(answering, tx, rx, accepts_sse(headers), (), status_of).await
}

/// The HTTP status of a stateless answer.
fn status_of(answer: &Message) -> StatusCode {
    match answer {
        Message::Error(e) => match e.error.code {
            error_codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            HEADER_MISMATCH | MISSING_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION => {
                StatusCode::BAD_REQUEST
            }
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    }
}

/// Checks the headers a stateless POST must carry against its body: the
/// version its `_meta` names (checked first: a version the gateway does not
/// speak is only told once the header agrees on it), the method, and the
/// name of what `tools/call`, `prompts/get` and `resources/read` address.
fn route_headers(headers: &HeaderMap, request: &Request) -> Result<(), ErrorObject> {
    if let Some(Value::String(named)) = stateless::named_version(request) {
        match text(headers, &VERSION_HEADER) {
            Some(sent) if sent == named => {}
            Some(sent) => {
                return Err(mismatch(format!(
                    "MCP-Protocol-Version {:?} does not match the version in `_meta` ({:?})",
                    clip(sent),
                    clip(named)
                )));
            }
            None => {
                return Err(mismatch(
                    "the MCP-Protocol-Version header is required".into(),
                ));
            }
        }
    }
    match text(headers, &METHOD_HEADER) {
        Some(sent) if sent == request.method => {}
        Some(sent) => {
            return Err(mismatch(format!(
                "Mcp-Method {:?} does not match the body's method",
                clip(sent)
            )));
        }
        None => return Err(mismatch("the Mcp-Method header is required".into())),
    }
    let field = match request.method.as_str() {
        methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
        methods::RESOURCES_READ => "uri",
        _ => return Ok(()),
    };
    let Some(named) = request
        .params
        .as_ref()
        .and_then(|p| p.get(field))
        .and_then(Value::as_str)
    else {
        // The body's own error (no name) is the session's to give.
        return Ok(());
    };
    match text(headers, &NAME_HEADER) {
        Some(sent) if decode_value(sent).as_deref() == Some(named) => Ok(()),
        Some(_) => Err(mismatch(format!(
            "Mcp-Name does not match the body's `{field}`"
        ))),
        None => Err(mismatch(format!(
            "the Mcp-Name header is required for {}",
            request.method
        ))),
    }
}

/// Checks the `Mcp-Param-*` headers of a `tools/call` against its
/// arguments, for the parameters the tool's schema mirrors (`x-mcp-header`):
/// each present and not null must come, with the same value. Headers the
/// tool does not declare are not the gateway's to judge.
fn param_headers(
    headers: &HeaderMap,
    request: &Request,
    endpoint: &Endpoint,
) -> Result<(), ErrorObject> {
    if request.method != methods::TOOLS_CALL {
        return Ok(());
    }
    let params = request.params.as_ref();
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Ok(());
    };
    let host = endpoint.gateway.host();
    let Some(routed) = crate::tools::route_of(host, endpoint.options.naming, name) else {
        return Ok(());
    };
    let table = host.routes();
    let Some(route) = table.get(&routed) else {
        return Ok(());
    };
    let Ok(Some(mirrored)) = ParamHeaders::declared(&route.definition.input_schema) else {
        return Ok(());
    };
    // A wrongly typed argument is the tool's own error to give.
    let Ok(expected) = mirrored.extract(params.and_then(|p| p.get("arguments"))) else {
        return Ok(());
    };
    for (part, value) in expected {
        let header = format!("{PARAM_HEADER_PREFIX}{part}");
        let Ok(header_name) = HeaderName::from_bytes(header.to_ascii_lowercase().as_bytes()) else {
            continue;
        };
        let sent = text(headers, &header_name).map(decode_value);
        let wanted = decode_value(&value);
        match sent {
            None => return Err(mismatch(format!("the {header} header is required"))),
            // Exact text: a proxy that routes on the header sees what the tool gets.
            Some(sent) if sent.is_some() && sent == wanted => {}
            Some(_) => {
                return Err(mismatch(format!(
                    "{header} does not match the argument it mirrors"
                )));
            }
        }
    }
    Ok(())
}

/// A header's value, without the whitespace HTTP allows around it; a value
/// that is not visible ASCII, or a header sent twice, reads as one that
/// matches nothing.
fn text<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h str> {
    let mut all = headers.get_all(name).iter();
    let value = all.next()?;
    if all.next().is_some() {
        // Sent twice: which one a proxy read cannot be known.
        return Some("\u{0}repeated");
    }
    Some(
        value
            .to_str()
            .unwrap_or("\u{0}invalid")
            .trim_matches([' ', '\t']),
    )
}

fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

fn mismatch(message: String) -> ErrorObject {
    ErrorObject {
        code: HEADER_MISMATCH,
        message: format!("header mismatch: {message}"),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use mcpvisor_protocol::wire::jsonrpc::RequestId;
    use serde_json::json;

    fn request(method: &str, params: Value) -> Request {
        Request::new(RequestId::Number(1), method, Some(params))
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    const META: &str = "io.modelcontextprotocol/protocolVersion";

    #[test]
    fn a_post_is_stateless_when_its_header_or_its_meta_says_so() {
        let plain = [Message::Request(request("tools/list", json!({})))];
        assert!(!is_stateless(&HeaderMap::new(), &plain));
        assert!(!is_stateless(
            &headers(&[("mcp-protocol-version", "2025-11-25")]),
            &plain
        ));
        assert!(is_stateless(
            &headers(&[("mcp-protocol-version", "2026-07-28")]),
            &plain
        ));
        assert!(is_stateless(
            &headers(&[("mcp-protocol-version", "v999")]),
            &plain
        ));
        let modern = [Message::Request(request(
            "tools/list",
            json!({"_meta": {META: "2026-07-28"}}),
        ))];
        assert!(is_stateless(&HeaderMap::new(), &modern));
    }

    #[test]
    fn the_headers_must_say_what_the_body_says() {
        let call = request(
            "tools/call",
            json!({"name": "Hello, 世界", "_meta": {META: "2026-07-28"}}),
        );
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ];
        assert_eq!(route_headers(&headers(&good), &call), Ok(()));
        for broken in [
            [good[0], good[1], ("mcp-name", "Hello")],
            [good[0], ("mcp-method", "TOOLS/CALL"), good[2]],
            [("mcp-protocol-version", "2025-11-25"), good[1], good[2]],
        ] {
            let e = route_headers(&headers(&broken), &call).unwrap_err();
            assert_eq!(e.code, HEADER_MISMATCH, "{broken:?}");
        }
        for missing in 0..3 {
            let some: Vec<_> = (0..3).filter(|i| *i != missing).map(|i| good[i]).collect();
            let e = route_headers(&headers(&some), &call).unwrap_err();
            assert_eq!(e.code, HEADER_MISMATCH, "without {:?}", good[missing].0);
        }
        // Whitespace around a value is not part of it.
        let spaced = [good[0], ("mcp-method", "  tools/call "), good[2]];
        assert_eq!(route_headers(&headers(&spaced), &call), Ok(()));
    }

    #[test]
    fn an_error_says_its_kind_in_the_status() {
        let error = |code| {
            Message::Error(mcpvisor_protocol::wire::jsonrpc::ErrorResponse {
                id: Some(RequestId::Number(1)),
                error: ErrorObject {
                    code,
                    message: String::new(),
                    data: None,
                },
            })
        };
        assert_eq!(status_of(&error(-32601)), StatusCode::NOT_FOUND);
        for code in [-32020, -32021, -32022] {
            assert_eq!(status_of(&error(code)), StatusCode::BAD_REQUEST);
        }
        assert_eq!(status_of(&error(-32603)), StatusCode::OK);
    }
}
