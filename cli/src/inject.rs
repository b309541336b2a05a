//! `mcpvisor inject`: a fault dealt to a server of the running `mcpvisor serve
//! --allow-faults` (or its faults cleared), so a person can break an upstream
//! server while an agent talks to the gateway and watch what the agent does.
//! There is no one-shot form: a fault in a supervisor that ends with the
//! command would show nothing.

use std::process::ExitCode;

use mcpvisor::{Fault, parse_duration};
use mcpvisor_protocol::wire::jsonrpc::error_codes;
use mcpvisor_serve::client::{Client, ClientError};
use mcpvisor_serve::inject::{FAULTS_DISABLED, FAULTS_NEED_TOKEN};
use mcpvisor_serve::session::extension;
use serde_json::{Value, json};

use crate::Failure;
use crate::cli::Command;
use crate::output;

/// How faults are written, for a fault that could not be read.
const FORMS: &str = "faults: kill, stop[:DURATION], close-stdin, exit-during-initialize, \
    garbage[:LINES], oversize, delay[:BY[:FOR]], drop[:COUNT], cut-stream, reset \
    (durations like 250ms, 2s, 1m)";

/// An `inject` read from the command line, checked before attaching so a typo
/// costs nothing: the `mcpvisor/inject` params.
pub(crate) struct Injection {
    server: String,
    params: Value,
}

impl Injection {
    /// The injection `command` asks for, if it is `inject`; a fault or
    /// duration that cannot be read is a usage error (exit 2).
    pub(crate) fn of(command: &Command) -> Result<Option<Injection>, Failure> {
        let Command::Inject {
            server,
            fault,
            lasting,
            clear,
        } = command
        else {
            return Ok(None);
        };
        let usage = |message: String| Failure(message, 2);
        let mut params = json!({ "server": server });
        if *clear {
            params["clear"] = json!(true);
        }
        if let Some(text) = fault {
            let read: Fault = text.parse().map_err(|e| usage(format!("{e}; {FORMS}")))?;
            params["fault"] = json!(text);
            if let Some(lasting) = lasting {
                parse_duration(lasting).map_err(|e| usage(format!("--for: {e}")))?;
                if read.lasts().is_none() {
                    return Err(usage(format!(
                        "`{}` does not last: --for applies to stop and delay",
                        read.kind()
                    )));
                }
                params["for"] = json!(lasting);
            }
        }
        Ok(Some(Injection {
            server: server.clone(),
            params,
        }))
    }

    /// Asks the running serve to deal it; prints what was done.
    pub(crate) async fn send(self, client: &mut Client, json: bool) -> Result<ExitCode, Failure> {
        let answer = client.request(extension::INJECT, self.params, |_| {}).await;
        let done = match answer {
            Ok(done) => done,
            Err(ClientError::Rpc(e)) => {
                // What the person asked for is wrong, or the serve does not
                // allow it: a usage error. The server not being up is not.
                let usage = [
                    error_codes::INVALID_PARAMS,
                    FAULTS_DISABLED,
                    FAULTS_NEED_TOKEN,
                ];
                let code = if usage.contains(&e.code) { 2 } else { 1 };
                return Err(Failure(e.message, code));
            }
            Err(e) => return Err(Failure(e.to_string(), 1)),
        };
        if json {
            println!("{done}");
            return Ok(ExitCode::SUCCESS);
        }
        let server = output::clean_line(&self.server);
        match done["fault"].as_str() {
            Some(fault) => println!(
                "dealt `{}` to `{server}` (`mcpvisor watch` shows what follows)",
                output::clean_line(fault)
            ),
            None => println!("cleared the faults of `{server}`"),
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// What `inject` says when no serve runs for the configuration.
pub(crate) fn needs_serve() -> Failure {
    Failure(
        "no `mcpvisor serve` runs for this configuration; inject needs one started with \
         `mcpvisor serve --allow-faults`"
            .into(),
        2,
    )
}
