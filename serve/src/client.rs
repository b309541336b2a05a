//! The CLI's side of the local socket: an MCP client over newline JSON-RPC
//! that knows mcpvisor's own methods.

use std::collections::VecDeque;
use std::future::Future;

use mcpvisor_protocol::wire::frame::FrameDecoder;
use std::sync::Arc;

use mcpvisor::{HostAsk, SharedClientHandler};
use mcpvisor_protocol::mcp::messages::{PROTOCOL_VERSION, methods};
use mcpvisor_protocol::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Incoming, Message, Notification, Request, RequestId, Response,
    error_codes,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// The longest line the client accepts from `serve` (a page of tools with big schemas).
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Why a request through the socket failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Reading or writing the socket failed.
    #[error("the socket to `mcpvisor serve` failed: {0}")]
    Io(#[from] std::io::Error),
    /// `serve` closed the connection (it stopped).
    #[error("`mcpvisor serve` closed the connection")]
    Closed,
    /// `serve` answered with an error.
    #[error("{}", .0.message)]
    Rpc(ErrorObject),
    /// `serve` sent something this client cannot read.
    #[error("unexpected answer from `mcpvisor serve`: {0}")]
    Protocol(String),
    /// The request was cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
}

/// An initialized session with a running `serve`.
pub struct Client {
    reader: OwnedReadHalf,
    writer: OwnedWriteHalf,
    decoder: FrameDecoder,
    frames: VecDeque<Vec<u8>>,
    next_id: i64,
    /// Who answers the servers' requests `serve` forwards (sampling, elicitation).
    answers: Option<SharedClientHandler>,
}

impl Client {
    /// Initializes a session on `stream` that answers no server's request.
    pub async fn start(stream: UnixStream) -> Result<Client, ClientError> {
        Client::start_answering(stream, None).await
    }

    /// Initializes a session on `stream` whose servers' requests (forwarded
    /// by `serve` while this client's calls run) `answers` answers; it
    /// declares what `answers` offers.
    pub async fn start_answering(
        stream: UnixStream,
        answers: Option<SharedClientHandler>,
    ) -> Result<Client, ClientError> {
        let (reader, writer) = stream.into_split();
        let capabilities = answers
            .as_ref()
            .map_or(json!({}), |a| a.0.capabilities().to_value());
        let mut client = Client {
            reader,
            writer,
            decoder: FrameDecoder::new(MAX_LINE),
            frames: VecDeque::new(),
            next_id: 0,
            answers,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "mcpvisor-cli", "version": env!("CARGO_PKG_VERSION")},
        });
        client.request(methods::INITIALIZE, params, |_| {}).await?;
        client.notify(methods::INITIALIZED, json!({})).await?;
        Ok(client)
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        let message = Message::Notification(Notification {
            method: method.into(),
            params: Some(params),
        });
        self.write(&message).await
    }

    /// Sends a request and waits for its answer; notifications that arrive
    /// meanwhile go to `on_notification`.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        on_notification: impl FnMut(&Notification),
    ) -> Result<Value, ClientError> {
        self.request_until(method, params, on_notification, std::future::pending())
            .await
    }

    /// [`Client::request`] that gives up when `cancel` resolves: the request is
    /// then cancelled with `notifications/cancelled` and [`ClientError::Cancelled`]
    /// is returned.
    pub async fn request_until(
        &mut self,
        method: &str,
        params: Value,
        mut on_notification: impl FnMut(&Notification),
        cancel: impl Future<Output = ()>,
    ) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = RequestId::Number(self.next_id);
        let request = Message::Request(Request {
            id: id.clone(),
            method: method.into(),
            params: Some(params),
        });
        self.write(&request).await?;
        let mut cancel = std::pin::pin!(cancel);
        loop {
            let message = tokio::select! {
                message = self.next_message() => message?,
                () = &mut cancel => {
                    let params = json!({"requestId": id, "reason": "cancelled by the user"});
                    self.notify(methods::CANCELLED, params).await?;
                    return Err(ClientError::Cancelled);
                }
            };
            match message {
                Message::Response(r) if r.id == id => return Ok(r.result),
                Message::Error(e) if e.id.as_ref() == Some(&id) => {
                    return Err(ClientError::Rpc(e.error));
                }
                Message::Error(e) if e.id.is_none() => return Err(ClientError::Rpc(e.error)),
                Message::Notification(n) => on_notification(&n),
                Message::Request(r) => {
                    // A person may be answering: the caller's cancel still ends the wait.
                    let reply = tokio::select! {
                        reply = self.answer(r) => reply,
                        () = &mut cancel => {
                            let params = json!({"requestId": id, "reason": "cancelled by the user"});
                            self.notify(methods::CANCELLED, params).await?;
                            return Err(ClientError::Cancelled);
                        }
                    };
                    self.write(&reply).await?;
                }
                _ => {}
            }
        }
    }

    /// The answer to a request `serve` sent this client: `ping`, or a
    /// server's request this client's handler offers; `-32601` otherwise.
    async fn answer(&self, request: Request) -> Message {
        let Request { id, method, params } = request;
        let outcome = match &self.answers {
            _ if method == methods::PING => Ok(json!({})),
            Some(answers)
                if answers.0.capabilities().offers(&method) && method != methods::ROOTS_LIST =>
            {
                let params = params.unwrap_or(Value::Null);
                let server: Arc<str> = Arc::from(
                    params
                        .pointer("/_meta/mcpvisor~1server")
                        .and_then(Value::as_str)
                        .unwrap_or("a server of mcpvisor serve"),
                );
                match HostAsk::read(server, &method, params, answers.0.capabilities()) {
                    Ok(ask) => ask.answer_with(&*answers.0).await,
                    Err(refused) => Err(refused),
                }
            }
            _ => Err(ErrorObject {
                code: error_codes::METHOD_NOT_FOUND,
                message: format!("method not found: {method}"),
                data: None,
            }),
        };
        match outcome {
            Ok(result) => Message::Response(Response { id, result }),
            Err(error) => Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }),
        }
    }

    /// The next notification (for `watch`); `None` when `serve` closed the connection.
    pub async fn next_notification(&mut self) -> Result<Option<Notification>, ClientError> {
        loop {
            match self.next_message().await {
                Ok(Message::Notification(n)) => return Ok(Some(n)),
                Ok(_) => {}
                Err(ClientError::Closed) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    async fn write(&mut self, message: &Message) -> Result<(), ClientError> {
        let mut line = message.to_vec();
        line.push(b'\n');
        self.writer.write_all(&line).await?;
        Ok(())
    }

    async fn next_message(&mut self) -> Result<Message, ClientError> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            if let Some(frame) = self.frames.pop_front() {
                return match Message::parse(&frame) {
                    Ok(Incoming::Single(m)) => Ok(m),
                    Ok(Incoming::Batch(_)) => Err(ClientError::Protocol("a batch".into())),
                    Err(e) => Err(ClientError::Protocol(e.to_string())),
                };
            }
            let n = self.reader.read(&mut buf).await?;
            if n == 0 {
                return Err(ClientError::Closed);
            }
            let frames = &mut self.frames;
            self.decoder
                .push(&buf[..n], |line| frames.push_back(line.to_vec()))
                .map_err(|e| ClientError::Protocol(e.to_string()))?;
        }
    }
}
