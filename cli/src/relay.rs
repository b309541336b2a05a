//! A second `serve --stdio` for a configuration already served: its host is
//! relayed to the running `serve` over the local socket, with this session's
//! own options (`--short-names`; `--allow-faults` only where the running one
//! allows faults, else it stops and says why). When the running `serve` goes
//! away, this one takes over its servers: it binds the socket itself (or
//! relays to whichever `serve` did), replays the host's `initialize`, and
//! the host sees no more than the calls that were in flight failing and a
//! `list_changed`.

use std::collections::HashSet;
use std::io::Cursor;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use mcpvisor_serve::session::extension;
use mcpvisor_serve::socket::{self, SocketPlace};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::Failure;

/// The longest line relayed from the host (as `serve` reads them).
const MAX_LINE: usize = mcpvisor_serve::lines::MAX_LINE;
/// The longest line relayed from `serve`: an answer carries what a server
/// returned, which may be longer than anything a host sends (as the CLI's
/// own client allows).
const MAX_ANSWER: usize = 64 * 1024 * 1024;
/// Requests in flight tracked, to answer them if the running serve goes: a
/// session has at most 64 in flight at the serve; past this they go untracked.
const MAX_PENDING: usize = 4096;
/// The id the replayed `initialize` goes out with; its answer is the
/// relay's, never the host's.
const REPLAY_ID: &str = "mcpvisor-takeover";

/// What this session asks of the `serve` it is relayed to.
#[derive(Clone, Copy)]
pub(crate) struct Wanted {
    /// `--names` (or `--short-names`).
    pub(crate) naming: mcpvisor_serve::Naming,
    /// `--allow-faults`.
    pub(crate) faults: bool,
}

/// The host's side, kept across a relay and the session that takes over:
/// one stdin (a read in flight belongs to it; another handle would lose what
/// it read) and the host's line not yet relayed.
pub(crate) struct HostInput {
    stdin: BufReader<tokio::io::Stdin>,
    partial: Vec<u8>,
}

impl HostInput {
    /// The process's stdin.
    pub(crate) fn new() -> HostInput {
        HostInput {
            stdin: BufReader::new(tokio::io::stdin()),
            partial: Vec::new(),
        }
    }
}

/// What a host said to open its session, kept to open it again elsewhere.
#[derive(Default)]
pub(crate) struct Takeover {
    /// The host's `initialize` request, as it sent it.
    initialize: Option<Value>,
    /// Its `notifications/initialized`, as it sent it.
    initialized: Option<Vec<u8>>,
}

/// How a relay ended.
pub(crate) enum Relayed {
    /// The host closed its side (or went away): the session is over.
    Done,
    /// The running serve went away while the host is still there.
    ServeGone(Takeover),
}

/// Relays stdin/stdout to the running `serve` at `place`; `replay` opens the
/// host's session there again (after a takeover that lost the race to
/// another `serve`). `Ok(None)`: nothing answers at `place` yet.
pub(crate) async fn relay(
    place: &SocketPlace,
    wanted: Wanted,
    replay: Option<&Takeover>,
    host: &mut HostInput,
) -> Result<Option<Relayed>, Failure> {
    let stream = match socket::connect(place).await {
        Ok(Some(stream)) => stream,
        Ok(None) => return Ok(None),
        // A serve on its way out: its socket may be gone before its lock.
        Err(_) if replay.is_some() => return Ok(None),
        Err(e) => return Err(Failure(format!("cannot reach the running serve: {e}"), 1)),
    };
    tracing::info!("sharing the running serve for this configuration");
    let (reader, mut writer) = stream.into_split();
    let mut from_serve = BufReader::new(reader);
    let options = json!({
        "jsonrpc": "2.0", "id": "mcpvisor-relay", "method": extension::SESSION,
        "params": {"names": wanted.naming.word(), "faults": wanted.faults},
    });
    send(&mut writer, &options).await?;
    let answer = read_line(&mut from_serve)
        .await
        .map_err(|e| Failure(format!("the running serve did not answer: {e}"), 1))?
        .ok_or_else(|| Failure("the running serve closed the connection".into(), 1))?;
    let answer: Value = serde_json::from_slice(&answer).unwrap_or_default();
    if let Some(message) = answer["error"]["message"].as_str() {
        return Err(Failure(
            format!("the running serve cannot take this session: {message}"),
            2,
        ));
    }
    let mut kept = Takeover::default();
    let mut stdout = tokio::io::stdout();
    if let Some(replay) = replay {
        reopen(replay, &mut writer, &mut from_serve, &mut stdout).await?;
        kept.initialize = replay.initialize.clone();
        kept.initialized = replay.initialized.clone();
    }
    let mut pending: HashSet<String> = HashSet::new();
    // The serve's line so far, outside the futures `select!` drops (the
    // host's is kept in `host`, for a session that takes over).
    let mut down = Vec::new();
    loop {
        tokio::select! {
            line = line_into(&mut host.stdin, &mut host.partial, MAX_LINE) => {
                let Ok(Some(line)) = line else {
                    // The host is done: the serve answers what is in flight, then closes.
                    let _ = writer.shutdown().await;
                    let drain = async {
                        while let Ok(Some(line)) = read_line(&mut from_serve).await {
                            if stdout.write_all(&line).await.is_err() {
                                return;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(3), drain).await;
                    let _ = stdout.flush().await;
                    return Ok(Some(Relayed::Done));
                };
                note_from_host(&line, &mut kept, &mut pending);
                if writer.write_all(&line).await.is_err() {
                    return Ok(Some(gone(pending, kept, &mut stdout).await));
                }
            }
            line = line_into(&mut from_serve, &mut down, MAX_ANSWER) => {
                let Ok(Some(line)) = line else {
                    return Ok(Some(gone(pending, kept, &mut stdout).await));
                };
                if let Some(id) = response_id(&line) {
                    pending.remove(&id);
                }
                if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                    return Ok(Some(Relayed::Done));
                }
            }
        }
    }
}

/// The running serve went away: the host's requests in flight get an error
/// (their answers will not come), and the session is taken over.
async fn gone(pending: HashSet<String>, kept: Takeover, stdout: &mut tokio::io::Stdout) -> Relayed {
    for id in pending {
        let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32000,
            "message": "the mcpvisor serve that answered this request stopped; another takes over its servers: retry",
        }});
        if send(stdout, &error).await.is_err() {
            return Relayed::Done;
        }
    }
    Relayed::ServeGone(kept)
}

/// Opens the host's session again at a serve that never saw it: the
/// `initialize` (answered to the relay alone) and `initialized`, then tells
/// the host the lists may have changed.
async fn reopen<W: AsyncWrite + Unpin, R: AsyncRead + Unpin>(
    replay: &Takeover,
    writer: &mut W,
    from_serve: &mut BufReader<R>,
    stdout: &mut tokio::io::Stdout,
) -> Result<(), Failure> {
    let lost = |e: String| Failure(format!("the serve that took over did not answer: {e}"), 1);
    if let Some(initialize) = replay.replayed() {
        send(writer, &initialize).await?;
        loop {
            let line = read_line(from_serve)
                .await
                .map_err(|e| lost(e.to_string()))?
                .ok_or_else(|| lost("it closed the connection".into()))?;
            if response_id(&line).as_deref() == Some(&format!("\"{REPLAY_ID}\"")) {
                break;
            }
        }
        if let Some(initialized) = &replay.initialized {
            writer
                .write_all(initialized)
                .await
                .map_err(|e| lost(e.to_string()))?;
        }
    }
    for notice in LIST_CHANGED {
        send(stdout, &json!({"jsonrpc": "2.0", "method": notice})).await?;
    }
    Ok(())
}

/// What a host is told after its session moved to another serve.
const LIST_CHANGED: [&str; 3] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
];

impl Takeover {
    /// The host's `initialize` with the relay's own id.
    fn replayed(&self) -> Option<Value> {
        let mut initialize = self.initialize.clone()?;
        initialize["id"] = json!(REPLAY_ID);
        Some(initialize)
    }

    /// What the session that takes over reads before the host's next line:
    /// the replayed `initialize` and `initialized`.
    fn preface(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        if let Some(initialize) = self.replayed() {
            bytes.extend_from_slice(initialize.to_string().as_bytes());
            bytes.push(b'\n');
            if let Some(initialized) = &self.initialized {
                bytes.extend_from_slice(initialized);
            }
        }
        bytes
    }
}

/// Keeps what a takeover needs from a line the host sent.
fn note_from_host(line: &[u8], kept: &mut Takeover, pending: &mut HashSet<String>) {
    let Ok(message) = serde_json::from_slice::<Value>(line) else {
        return;
    };
    match message["method"].as_str() {
        Some("initialize") if kept.initialize.is_none() => kept.initialize = Some(message.clone()),
        Some("notifications/initialized") if kept.initialized.is_none() => {
            kept.initialized = Some(line.to_vec());
        }
        _ => {}
    }
    if message.get("method").is_some()
        && let Some(id) = message.get("id")
        && pending.len() < MAX_PENDING
    {
        pending.insert(id.to_string());
    }
}

/// The id of a response (a line with an id and no method), as JSON text.
fn response_id(line: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(line).ok()?;
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").map(Value::to_string)
}

async fn send<W: AsyncWrite + Unpin>(writer: &mut W, message: &Value) -> Result<(), Failure> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    let written = async {
        writer.write_all(&line).await?;
        writer.flush().await
    };
    written.await.map_err(|e| Failure(format!("relay: {e}"), 1))
}

/// One line from `serve`, newline included; `None` at the end. A line longer
/// than [`MAX_ANSWER`] is an error.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    line_into(reader, &mut line, MAX_ANSWER).await
}

/// [`read_line`] into `line`, which keeps what was read if the future is
/// dropped before the line ends (cancel-safe: bytes are moved out of the
/// reader's buffer and into `line` at once); the line is taken out of it.
async fn line_into<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok((!line.is_empty()).then(|| std::mem::take(line)));
        }
        let (used, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..used]);
        reader.consume(used);
        if line.len() > limit {
            return Err(std::io::Error::other("a line over the limit"));
        }
        if done {
            return Ok(Some(std::mem::take(line)));
        }
    }
}

/// What the session reads: the replayed opening, then the host's stdin.
pub(crate) type SessionInput = tokio::io::Chain<Cursor<Vec<u8>>, BufReader<tokio::io::Stdin>>;

/// The stdin and stdout of the session that took over: the replayed opening
/// first, then the host's lines; the answer to the replayed `initialize`
/// replaced by the `list_changed` notices.
pub(crate) fn stdio_after(
    takeover: Option<&Takeover>,
    host: HostInput,
) -> (SessionInput, Answers<tokio::io::Stdout>) {
    let mut preface = takeover.map(Takeover::preface).unwrap_or_default();
    let filtering = !preface.is_empty();
    preface.extend_from_slice(&host.partial);
    (
        tokio::io::AsyncReadExt::chain(Cursor::new(preface), host.stdin),
        Answers {
            inner: tokio::io::stdout(),
            filtering,
            seen: Vec::new(),
            out: Vec::new(),
        },
    )
}

/// A writer that, while `filtering`, holds lines back until the answer to
/// the replayed `initialize`, which it replaces by the `list_changed`
/// notices; after it, bytes pass through.
pub(crate) struct Answers<W> {
    inner: W,
    filtering: bool,
    /// Bytes of the line being written, while filtering.
    seen: Vec<u8>,
    /// Bytes accepted and not yet written through.
    out: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Answers<W> {
    fn take_lines(&mut self) {
        while self.filtering {
            let Some(at) = self.seen.iter().position(|b| *b == b'\n') else {
                return;
            };
            let line: Vec<u8> = self.seen.drain(..=at).collect();
            if response_id(&line).as_deref() == Some(&format!("\"{REPLAY_ID}\"")) {
                for notice in LIST_CHANGED {
                    self.out.extend_from_slice(
                        json!({"jsonrpc": "2.0", "method": notice})
                            .to_string()
                            .as_bytes(),
                    );
                    self.out.push(b'\n');
                }
                self.filtering = false;
                let rest = std::mem::take(&mut self.seen);
                self.out.extend_from_slice(&rest);
            } else {
                self.out.extend_from_slice(&line);
            }
        }
    }

    fn poll_out(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while !self.out.is_empty() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.out.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Answers<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.filtering {
            if this.seen.len() + buf.len() > MAX_ANSWER {
                // No answer to the replay this long: stop holding lines back.
                this.filtering = false;
                let held = std::mem::take(&mut this.seen);
                this.out.extend_from_slice(&held);
            } else {
                this.seen.extend_from_slice(buf);
                this.take_lines();
                let _ = this.poll_out(cx)?;
                return Poll::Ready(Ok(buf.len()));
            }
        }
        std::task::ready!(this.poll_out(cx))?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_out(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_out(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}
