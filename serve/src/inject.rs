//! `mcpvisor/inject`: a fault dealt to one of the gateway's servers on a
//! client's request, so a team can break an upstream server while its agent
//! talks to the gateway and watch what the agent does.
//!
//! Params are `{"server": "git", "fault": "stop:2s"}`, with `"for": "10s"` to
//! set how long a `stop` or `delay` lasts; `{"server": "git", "clear": true}`
//! ends every fault set on the server. The fault is written as
//! [`mcpvisor::Fault`] reads it. The result names what was done:
//! `{"server": "git", "fault": "stop:10s"}` or `{"server": "git", "cleared": true}`.
//!
//! Off unless the gateway was started with `allow_faults`
//! (`mcpvisor serve --allow-faults`), and refused to HTTP sessions of an
//! endpoint without a bearer token. Errors carry `data.reason`, one word a
//! client can match on: `disabled`, `needs_token`, `bad_params`,
//! `unknown_server`, `not_applicable`, `not_running`, `failed`, `shutdown`.

use mcpvisor::{Fault, FaultError, parse_duration};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use serde_json::{Value, json};

use crate::gateway::Gateway;
use crate::ingress::Ingress;
use crate::outcome::Outcome;

/// The gateway was started without `allow_faults`.
pub const FAULTS_DISABLED: i64 = -32050;
/// An HTTP session asked, and the endpoint requires no bearer token.
pub const FAULTS_NEED_TOKEN: i64 = crate::ingress::NEEDS_TOKEN;
/// The server has no live connection to deal the fault to (starting,
/// restarting, failed or stopped).
pub const SERVER_NOT_LIVE: i64 = -32052;

/// What a client asked of `mcpvisor/inject`.
#[derive(Debug, PartialEq)]
enum Asked {
    Inject(Fault),
    Clear,
}

/// Answers one `mcpvisor/inject` request of a session that came in by `ingress`.
pub(crate) async fn answer(gateway: &Gateway, ingress: Ingress, params: Option<&Value>) -> Outcome {
    if !gateway.options().allow_faults {
        return Err(refusal(
            FAULTS_DISABLED,
            "disabled",
            "fault injection is off in this serve: start it with `mcpvisor serve --allow-faults`",
        ));
    }
    if !ingress.is_trusted() {
        return Err(crate::ingress::needs_token("mcpvisor/inject"));
    }
    let (server, asked) = read(params)?;
    let host = gateway.host();
    let done = match asked {
        Asked::Inject(fault) => host
            .inject(&server, fault)
            .await
            .map(|()| json!({"server": server, "fault": fault.to_string()})),
        Asked::Clear => host
            .clear_faults(&server)
            .await
            .map(|()| json!({"server": server, "cleared": true})),
    };
    done.map_err(|e| not_dealt(&e))
}

/// The server and what to do with it, or `Invalid params` saying what is wrong.
fn read(params: Option<&Value>) -> Result<(String, Asked), ErrorObject> {
    let bad = |message: String| refusal(error_codes::INVALID_PARAMS, "bad_params", message);
    let params = params.unwrap_or(&Value::Null);
    let Some(server) = params.get("server").and_then(Value::as_str) else {
        return Err(bad("`server` (a string) is required".into()));
    };
    let clear = match params.get("clear") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(clear)) => *clear,
        Some(_) => return Err(bad("`clear` must be true or false".into())),
    };
    let text = match params.get("fault") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => {
            return Err(bad(
                "`fault` must be a string like `kill` or `stop:2s`".into()
            ));
        }
    };
    let lasting = match params.get("for") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            Some(parse_duration(text).map_err(|e| bad(format!("`for`: {e}")))?)
        }
        Some(_) => return Err(bad("`for` must be a string like `10s`".into())),
    };
    let asked = match (clear, text) {
        (true, None) if lasting.is_none() => Asked::Clear,
        (true, _) => return Err(bad("`clear` takes no `fault` and no `for`".into())),
        (false, None) => return Err(bad("`fault` is required (or `clear: true`)".into())),
        (false, Some(text)) => {
            let fault: Fault = text.parse().map_err(|e| bad(format!("`fault`: {e}")))?;
            match lasting {
                None => Asked::Inject(fault),
                Some(_) if fault.lasts().is_none() => {
                    return Err(bad(format!(
                        "`{}` does not last: `for` applies to stop and delay",
                        fault.kind()
                    )));
                }
                Some(lasts) => Asked::Inject(fault.lasting(lasts)),
            }
        }
    };
    Ok((server.to_string(), asked))
}

/// The error for a fault the host did not deal.
fn not_dealt(e: &FaultError) -> ErrorObject {
    let (code, reason) = match e {
        FaultError::UnknownServer(_) => (error_codes::INVALID_PARAMS, "unknown_server"),
        FaultError::NotApplicable { .. } => (error_codes::INVALID_PARAMS, "not_applicable"),
        FaultError::NotRunning(_) => (SERVER_NOT_LIVE, "not_running"),
        FaultError::Failed { .. } => (error_codes::INTERNAL_ERROR, "failed"),
        FaultError::Shutdown => (error_codes::INTERNAL_ERROR, "shutdown"),
        FaultError::OutOfRange(_) => (error_codes::INVALID_PARAMS, "bad_params"),
        _ => (error_codes::INTERNAL_ERROR, "failed"),
    };
    refusal(code, reason, e.to_string())
}

fn refusal(code: i64, reason: &str, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: Some(json!({ "reason": reason })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reason(e: &ErrorObject) -> &str {
        e.data
            .as_ref()
            .and_then(|d| d["reason"].as_str())
            .unwrap_or("")
    }

    #[test]
    fn params_name_a_fault_with_how_long_it_lasts_or_a_clear() {
        let read = |v: Value| read(Some(&v));
        assert_eq!(
            read(json!({"server": "git", "fault": "kill"})),
            Ok(("git".into(), Asked::Inject(Fault::Kill)))
        );
        assert_eq!(
            read(json!({"server": "git", "fault": "stop", "for": "10s"})),
            Ok((
                "git".into(),
                Asked::Inject(Fault::Stop {
                    duration: Duration::from_secs(10)
                })
            ))
        );
        assert_eq!(
            read(json!({"server": "git", "clear": true})),
            Ok(("git".into(), Asked::Clear))
        );
    }

    #[test]
    fn bad_params_are_invalid_params_that_say_why() {
        for (params, says) in [
            (json!({"fault": "kill"}), "`server`"),
            (json!({"server": "git"}), "`fault` is required"),
            (
                json!({"server": "git", "fault": "explode"}),
                "unknown fault",
            ),
            (json!({"server": "git", "fault": 3}), "must be a string"),
            (
                json!({"server": "git", "fault": "stop", "for": "soon"}),
                "`for`",
            ),
            (
                json!({"server": "git", "fault": "kill", "for": "1s"}),
                "does not last",
            ),
            (
                json!({"server": "git", "clear": true, "fault": "kill"}),
                "takes no",
            ),
            (json!({"server": "git", "clear": "yes"}), "true or false"),
        ] {
            let e = read(Some(&params)).expect_err(&params.to_string());
            assert_eq!(e.code, error_codes::INVALID_PARAMS, "{params}");
            assert_eq!(reason(&e), "bad_params");
            assert!(e.message.contains(says), "{params}: {}", e.message);
        }
        assert!(read(None).is_err());
    }

    #[test]
    fn host_refusals_keep_their_kind() {
        let e = not_dealt(&FaultError::UnknownServer("nope".into()));
        assert_eq!(
            (e.code, reason(&e)),
            (error_codes::INVALID_PARAMS, "unknown_server")
        );
        let e = not_dealt(&FaultError::NotRunning("git".into()));
        assert_eq!((e.code, reason(&e)), (SERVER_NOT_LIVE, "not_running"));
        assert!(e.message.contains("no live connection"), "{}", e.message);
    }

    #[test]
    fn only_local_clients_and_token_holders_are_trusted() {
        assert!(Ingress::Local.is_trusted());
        assert!(Ingress::Http { token: true }.is_trusted());
        assert!(!Ingress::Http { token: false }.is_trusted());
    }
}
