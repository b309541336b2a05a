//! What each tool does when called. Every handler runs in its own task.

use std::time::Duration;

use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, Message, RequestId, Response, error_codes};
use serde_json::{Map, Number, Value, json};

use super::state::{Shared, lock};
use super::tools::ToolKind;

/// Largest `flood` answer: well past the 1 MiB client limit, yet bounded so a
/// stray call cannot exhaust memory.
pub(crate) const FLOOD_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Most `progress` steps one call may ask for.
pub(crate) const PROGRESS_MAX_STEPS: u64 = 100_000;

/// One `tools/call`, already matched to a listed tool.
#[derive(Debug)]
pub(crate) struct ToolCall {
    pub(crate) id: RequestId,
    pub(crate) name: String,
    pub(crate) kind: ToolKind,
    pub(crate) args: Map<String, Value>,
    pub(crate) progress_token: Option<Value>,
}

/// Runs the tool; `Err` becomes a JSON-RPC error response.
pub(crate) async fn call_tool(shared: &Shared, call: &ToolCall) -> Result<Value, ErrorObject> {
    let args = Args {
        tool: &call.name,
        map: &call.args,
    };
    match call.kind {
        ToolKind::Echo | ToolKind::ExtraEcho => Ok(text(args.str("text")?)),
        ToolKind::Add if shared.hostile == Some(super::hostile::Hostile::WrongOutput) => {
            let mut result = add(&args)?;
            result["structuredContent"] = json!({ "sum": "many" });
            Ok(result)
        }
        ToolKind::Add => add(&args),
        ToolKind::Sleep => {
            let ms = args.u64("ms")?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(text(&format!("slept {ms} ms")))
        }
        ToolKind::Cancelled => {
            let recorded = Value::Array(shared.cancellations());
            Ok(text(&recorded.to_string()))
        }
        ToolKind::Fail => {
            let message = args.opt_str("message")?;
            let mut result = text(message.unwrap_or("the tool failed on purpose"));
            result["isError"] = Value::Bool(true);
            Ok(result)
        }
        ToolKind::Crash => {
            let code = args.opt_i64("code")?.unwrap_or(3);
            let code = i32::try_from(code).map_err(|_| args.error("`code` must fit in an i32"))?;
            tracing::warn!(code, "crash tool called: exiting without answering");
            std::process::exit(code)
        }
        ToolKind::Flood => {
            let bytes = args.u64("bytes")?;
            if bytes > FLOOD_MAX_BYTES {
                return Err(args.error(&format!("`bytes` must be at most {FLOOD_MAX_BYTES}")));
            }
            // Bounded just above, so the conversion cannot truncate.
            Ok(flood(&call.id, bytes as usize))
        }
        ToolKind::Progress => progress(shared, call, &args).await,
        ToolKind::Pid => Ok(text(&std::process::id().to_string())),
        ToolKind::GrandchildPid => match shared.grandchild_pid {
            Some(pid) => Ok(text(&pid.to_string())),
            None => {
                let mut result = text("no grandchild: start the server with --grandchild");
                result["isError"] = Value::Bool(true);
                Ok(result)
            }
        },
        ToolKind::Log => {
            let level = args.opt_str("level")?.unwrap_or("info");
            let message = args.str("message")?;
            // As the specification asks: nothing quieter than the client's level.
            let floor = *lock(&shared.log_level);
            let quieter = match (level.parse::<LogLevel>(), floor) {
                (Ok(level), Some(floor)) => level < floor,
                _ => false,
            };
            if quieter {
                return Ok(text(&format!(
                    "not sent: below {}",
                    floor.map_or("", |f| f.as_str())
                )));
            }
            let params = json!({ "level": level, "logger": "demo", "data": message });
            shared.outbox.notify(methods::LOG_MESSAGE, params).await;
            Ok(text("logged"))
        }
        ToolKind::Garbage => {
            for line in super::hostile::garbage_lines() {
                shared.outbox.send_raw(line).await;
            }
            Ok(text("garbage sent"))
        }
        ToolKind::CutAnswer => {
            let answer = Message::Response(Response {
                id: call.id.clone(),
                result: text("this answer is cut in half"),
            });
            super::hostile::cut_and_exit(shared, &answer, 5).await
        }
        ToolKind::ClientAnswers => {
            let seen = Value::Array(lock(&shared.client_answers).clone());
            Ok(text(&seen.to_string()))
        }
        ToolKind::AddTool => {
            let name = args.str("name")?;
            lock(&shared.tools).add_echo(name);
            shared
                .outbox
                .notify(methods::TOOLS_LIST_CHANGED, json!({}))
                .await;
            Ok(text(&format!("added {name}")))
        }
    }
}

/// A result with one text block.
fn text(s: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": s }] })
}

fn add(args: &Args<'_>) -> Result<Value, ErrorObject> {
    let (a, b) = (args.number("a")?, args.number("b")?);
    // i128 holds any sum of two JSON integers, so integer sums stay exact.
    let int = |n: &Number| n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
    let exact = int(a)
        .zip(int(b))
        .and_then(|(x, y)| Number::from_i128(x + y));
    let sum = match exact {
        Some(n) => n,
        None => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            Number::from_f64(x + y).ok_or_else(|| args.error("the sum is not a finite number"))?
        }
    };
    // Rust's Display prints a whole f64 (1.5 + 1.5) as "3", JSON's as "3.0".
    let shown = match sum.as_f64() {
        Some(f) if sum.is_f64() => f.to_string(),
        _ => sum.to_string(),
    };
    let mut result = text(&shown);
    result["structuredContent"] = json!({ "sum": sum });
    Ok(result)
}

/// A text result padded with 'x' so that the response line for `id` is exactly
/// `bytes` long, or the shortest possible response when `bytes` is smaller.
pub(crate) fn flood(id: &RequestId, bytes: usize) -> Value {
    let minimal = Message::Response(Response {
        id: id.clone(),
        result: text(""),
    })
    .to_vec()
    .len();
    // 'x' needs no escaping, so each one adds exactly one byte to the line.
    text(&"x".repeat(bytes.saturating_sub(minimal)))
}

async fn progress(shared: &Shared, call: &ToolCall, args: &Args<'_>) -> Result<Value, ErrorObject> {
    let steps = args.u64("steps")?;
    if steps > PROGRESS_MAX_STEPS {
        return Err(args.error(&format!("`steps` must be at most {PROGRESS_MAX_STEPS}")));
    }
    let delay = args.opt_u64("delay_ms")?.map(Duration::from_millis);
    for i in 1..=steps {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        if let Some(token) = &call.progress_token {
            let params = json!({
                "progressToken": token,
                "progress": i,
                "total": steps,
                "message": format!("step {i}"),
            });
            shared.outbox.notify(methods::PROGRESS, params).await;
        }
    }
    Ok(text(&format!("done {steps} steps")))
}

/// A tool's arguments, with typed getters whose errors name the tool and key.
struct Args<'a> {
    tool: &'a str,
    map: &'a Map<String, Value>,
}

impl Args<'_> {
    fn error(&self, detail: &str) -> ErrorObject {
        ErrorObject {
            code: error_codes::INVALID_PARAMS,
            message: format!("invalid arguments for tool {:?}: {detail}", self.tool),
            data: None,
        }
    }

    /// The value under `key`, treating `null` as absent.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn missing(&self, key: &str) -> ErrorObject {
        self.error(&format!("`{key}` is required"))
    }

    fn opt_str(&self, key: &str) -> Result<Option<&str>, ErrorObject> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.error(&format!("`{key}` must be a string"))),
        }
    }

    fn str(&self, key: &str) -> Result<&str, ErrorObject> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    fn number(&self, key: &str) -> Result<&Number, ErrorObject> {
        match self.get(key) {
            None => Err(self.missing(key)),
            Some(Value::Number(n)) => Ok(n),
            Some(_) => Err(self.error(&format!("`{key}` must be a number"))),
        }
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, ErrorObject> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.error(&format!("`{key}` must be a non-negative integer"))),
        }
    }

    fn u64(&self, key: &str) -> Result<u64, ErrorObject> {
        self.opt_u64(key)?.ok_or_else(|| self.missing(key))
    }

    fn opt_i64(&self, key: &str) -> Result<Option<i64>, ErrorObject> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.error(&format!("`{key}` must be an integer"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("test arguments must be an object"),
        }
    }

    fn sum_text(a: Value, b: Value) -> Result<(String, Value), ErrorObject> {
        let map = args(json!({ "a": a, "b": b }));
        let r = add(&Args {
            tool: "add",
            map: &map,
        })?;
        let shown = r["content"][0]["text"].as_str().unwrap_or("").to_string();
        Ok((shown, r["structuredContent"]["sum"].clone()))
    }

    #[test]
    fn add_prints_integers_without_a_fraction() {
        assert_eq!(
            sum_text(json!(2), json!(3)).unwrap(),
            ("5".into(), json!(5))
        );
        assert_eq!(
            sum_text(json!(-7), json!(3)).unwrap(),
            ("-4".into(), json!(-4))
        );
        assert_eq!(
            sum_text(json!(1.5), json!(1)).unwrap(),
            ("2.5".into(), json!(2.5))
        );
        let big = sum_text(json!(u64::MAX - 1), json!(1)).unwrap();
        assert_eq!(big.0, u64::MAX.to_string());
        let overflow = sum_text(json!(i64::MAX), json!(1)).unwrap();
        assert_eq!(overflow.0, (i64::MAX as u64 + 1).to_string());
        assert!(sum_text(json!(1e308), json!(1e308)).is_err());
        assert!(sum_text(json!("1"), json!(2)).is_err());
    }

    #[test]
    fn flood_line_has_the_requested_length() {
        for id in [RequestId::Number(7), RequestId::String("a\"b".into())] {
            for bytes in [0usize, 10, 200, 1_048_577] {
                let result = flood(&id, bytes);
                let line = Message::Response(Response {
                    id: id.clone(),
                    result,
                })
                .to_vec();
                let minimal = flood(&id, 0);
                let min_len = Message::Response(Response {
                    id: id.clone(),
                    result: minimal,
                })
                .to_vec()
                .len();
                assert_eq!(line.len(), bytes.max(min_len), "id {id}, bytes {bytes}");
            }
        }
    }

    #[test]
    fn argument_errors_name_the_tool_and_key() {
        let map = args(json!({ "ms": -1, "text": 5 }));
        let a = Args {
            tool: "sleep",
            map: &map,
        };
        let e = a.u64("ms").unwrap_err();
        assert_eq!(e.code, error_codes::INVALID_PARAMS);
        assert!(e.message.contains("\"sleep\"") && e.message.contains("`ms`"));
        assert!(
            a.str("text")
                .unwrap_err()
                .message
                .contains("must be a string")
        );
        assert!(a.str("absent").unwrap_err().message.contains("is required"));
    }
}
