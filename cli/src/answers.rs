//! The CLI's answers to what servers ask of the host: a person at the terminal
//! fills an elicitation's form or chooses whether to open the page a URL
//! elicitation names, and the configured `sampling_command` answers sampling.
//!
//! Both capabilities are declared to every server, so tools that ask are
//! listed and their calls get a clear answer: off a terminal an elicitation is
//! declined, and without a `sampling_command` sampling is refused, each with a
//! line on stderr saying why. Text from a server is shown escaped
//! ([`crate::output::clean`]): servers are not trusted with the terminal.

mod elicit;
mod fields;
mod sampling;
mod url;

use std::sync::Arc;

use mcpvisor::settings::{SAMPLING_COMMAND, Settings};
use mcpvisor::{
    ClientHandler, ElicitAction, ElicitAnswer, FormRequest, HostAnswer, SamplingRequest,
    SamplingResult, SharedClientHandler, UrlRequest,
};
use mcpvisor_protocol::mcp::messages::ClientCapabilities;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;

use crate::Failure;
use crate::output::clean_line;

pub(crate) use elicit::release_terminal;

/// The one-shot CLI's [`ClientHandler`].
struct CliAnswers {
    /// The argv of `sampling_command`, if set.
    sampling: Option<Arc<[String]>>,
}

/// The handler for a CLI run with `settings`; a `sampling_command` that cannot
/// be split into words is a settings error.
pub(crate) fn handler(settings: &Settings) -> Result<SharedClientHandler, Failure> {
    let sampling = match settings.sampling_command().0 {
        None => None,
        Some(command) => match shlex::split(command) {
            Some(argv) if !argv.is_empty() => Some(Arc::from(argv)),
            _ => {
                return Err(Failure(
                    format!("settings: `{SAMPLING_COMMAND}` is not a command (check its quotes)"),
                    2,
                ));
            }
        },
    };
    Ok(SharedClientHandler(Arc::new(CliAnswers { sampling })))
}

impl ClientHandler for CliAnswers {
    fn capabilities(&self) -> ClientCapabilities {
        // The sampling command gets the request as it is, tools included.
        ClientCapabilities::EVERY_REQUEST
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        Box::pin(elicit::elicit(request))
    }

    fn elicit_url(&self, request: UrlRequest) -> HostAnswer<ElicitAction> {
        Box::pin(url::open(request))
    }

    fn create_message(&self, request: SamplingRequest) -> HostAnswer<SamplingResult> {
        let Some(argv) = &self.sampling else {
            eprintln!(
                "mcpvisor: {} asked for a model completion; declined: no {SAMPLING_COMMAND} is set",
                clean_line(&request.server)
            );
            return Box::pin(std::future::ready(Err(ErrorObject {
                // What MCP suggests for a sampling request the user rejects.
                code: -1,
                message: format!(
                    "sampling declined: mcpvisor has no {SAMPLING_COMMAND} to answer it"
                ),
                data: None,
            })));
        };
        Box::pin(sampling::sample(argv.clone(), request))
    }
}
