//! Answers coming back to the lane: a call's answer completes it (read as
//! a `CallToolResult` and checked against the tool's `outputSchema`); at a
//! stateless revision an `input_required` answer starts another round and a
//! task answer is followed; anything that answers no call goes back to the
//! server actor.

use mcpvisor_protocol::mcp::result_type::ResultType;
use mcpvisor_protocol::mcp::url_elicitation::UrlElicitation;
use mcpvisor_protocol::state::calls::Answered;
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, ErrorResponse, Response};
use mcpvisor_protocol::{CallToolResult, Message, RequestId};
use serde_json::Value;

use super::{CallLane, Reply, Slot};
use crate::error::CallError;

impl CallLane {
    /// Completes a call with `msg` if it is the answer to one; hands `msg` back otherwise.
    pub(crate) fn complete(&self, msg: Message) -> Option<Message> {
        let id = match &msg {
            Message::Response(Response {
                id: RequestId::Number(n),
                ..
            })
            | Message::Error(ErrorResponse {
                id: Some(RequestId::Number(n)),
                ..
            }) => *n,
            _ => return Some(msg),
        };
        let slot = match self.calls.lock().answer(id) {
            Answered::Call(slot) => slot,
            // The caller already has its timeout, and the connection ends for it.
            Answered::Late => return None,
            Answered::Unknown => return Some(msg),
        };
        if let Message::Response(r) = &msg
            && slot.retry.is_some()
        {
            match ResultType::of(&r.result) {
                // Another round: the host answers, the request goes again.
                Ok(ResultType::InputRequired) => {
                    self.next_round(slot, &r.result);
                    return None;
                }
                // The tasks extension: the server runs it as a task, followed here.
                Ok(ResultType::Task) => {
                    self.follow_task(slot, &r.result);
                    return None;
                }
                _ => {}
            }
        }
        self.rounds_ended(&slot);
        match msg {
            Message::Response(r) => self.deliver(slot, Ok(r.result)),
            Message::Error(e) => {
                // A `-32042` names elicitations whose completion the host may wait for.
                if let Some(Ok(needed)) = UrlElicitation::required(&e.error) {
                    let mut asked = self.asked_urls.lock();
                    for n in needed {
                        asked.remember(n.elicitation_id);
                    }
                }
                self.deliver(slot, Err(e.error));
            }
            _ => {}
        }
        None
    }

    /// Hands the caller of `slot` the answer to its request: a tool call's
    /// read as a `CallToolResult` (and checked against the tool's
    /// `outputSchema`), any other request's as sent.
    pub(super) fn deliver(&self, slot: Slot, answer: Result<Value, ErrorObject>) {
        let server = self.server.clone();
        match (slot.reply, answer) {
            (Reply::Call(tx), Ok(result))
                if let Some(error) = self.incomplete("tools/call", &result) =>
            {
                let _ = tx.send(Err(error));
            }
            (Reply::Raw(tx), Ok(result))
                if let Some(error) = self.incomplete("request", &result) =>
            {
                let _ = tx.send(Err(error));
            }
            (Reply::Call(tx), Ok(result)) => {
                let result = CallToolResult::parse(result)
                    .map_err(|source| CallError::InvalidResult {
                        server: server.clone(),
                        source,
                    })
                    .and_then(|result| match &slot.output {
                        Some(output) => {
                            output
                                .check
                                .check(&result)
                                .map(|()| result)
                                .map_err(|detail| CallError::OutputMismatch {
                                    server,
                                    tool: output.tool.clone(),
                                    detail,
                                })
                        }
                        None => Ok(result),
                    });
                let _ = tx.send(result);
            }
            (Reply::Raw(tx), Ok(result)) => {
                let _ = tx.send(Ok(result));
            }
            (reply, Err(error)) => reply.fail(CallError::Rpc { server, error }),
        }
    }
}
