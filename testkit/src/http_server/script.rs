//! What the fixture does: the knobs a test turns, before start or at run time.

/// How POSTs carrying requests are answered (when no tool knob applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerMode {
    /// 200 `application/json`: the response alone (an array for a batch POST).
    Json,
    /// 200 `application/json`: an array of a `notifications/message`, then the responses.
    JsonBatch,
    /// 200 `text/event-stream`: each response as `id: <n>\ndata: <json>\n\n`.
    #[default]
    Sse,
    /// Like `Sse`, with a `notifications/message` event ("before the answer") first.
    SseNotifyFirst,
}

/// How `GET /mcp` (the server-to-client stream) is answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GetMode {
    /// 405: this server offers no GET stream.
    #[default]
    NotAllowed,
    /// 409: a GET stream is already open (as real servers answer a second one).
    Conflict,
    /// 200 `text/event-stream`: `events` `notifications/message` events with ids
    /// `g-1`, `g-2`, … (data = the id), `interval_ms` apart; numbering goes on across
    /// reconnections, and after `Last-Event-ID: g-k` the next one is `g-(k+1)`. Then the
    /// stream ends if `then_close`, else stays open with `: keepalive` each second and
    /// carries [`HttpMcpServer::push`](super::HttpMcpServer::push)ed messages. An open
    /// stream ends within a second once its session is deleted or expired.
    Stream {
        events: usize,
        then_close: bool,
        interval_ms: u64,
    },
    /// 200 `text/event-stream` holding only `retry: <retry_ms>`, then the end.
    RetryThenClose { retry_ms: u64 },
    /// 307 to this URL.
    Redirect(&'static str),
}

/// The fixture's behaviour. Tool knobs apply to a POST holding that single
/// `tools/call`; each named tool is also listed by `tools/list` and, where its knob
/// lets it answer, answers the text "<name> done".
#[derive(Clone, Debug, Default)]
pub struct Script {
    pub answer: AnswerMode,
    pub get: GetMode,
    /// In the SSE modes, the end of an answer's stream comes this long after its
    /// last event (a server that flushes the answer, then closes).
    pub end_delay_ms: u64,
    /// Answered with the priming event `id: p-<2k-1>\nretry: 500\ndata: \n\n` and then
    /// the end of the stream, without the response; a GET with that Last-Event-ID gets
    /// the response as event `p-<2k>` and then the end of its stream (k counts cuts).
    pub cut_tool: Option<String>,
    /// Never answered: the response (JSON modes) or its event stream (SSE modes) stays
    /// pending, the connection open.
    pub hang_tool: Option<String>,
    /// Answered as `text/event-stream` with malformed lines and events first (a non-UTF-8
    /// line, `data: {not json`, `data: [1,2]`, a field line without colon, a comment),
    /// then the valid response event, itself split over two chunks.
    pub garbage_tool: Option<String>,
    /// Answered as `text/event-stream` with one event whose data line is 10 MiB of `x`
    /// (in 64 KiB chunks), then the valid response event.
    pub huge_event_tool: Option<String>,
    /// Answered with this HTTP status and the plain-text body "fixture failure".
    pub fail_status_tool: Option<(String, u16)>,
    /// Extra tools to list, each answering "<name> done".
    pub extra_tools: Vec<String>,
    /// Answer an unknown or expired session with 400 and a JSON-RPC error body (as the
    /// TypeScript SDK does) instead of 404.
    pub dead_session_400: bool,
    /// Never answer POSTs that hold only notifications (no 202), the connection open.
    pub hang_notifications: bool,
    /// Never answer POSTs of `notifications/cancelled` only.
    pub hang_cancels: bool,
    /// Answer DELETE with 405.
    pub delete_not_allowed: bool,
    /// Keep no record of requests (for long runs, where the record would grow
    /// without end): [`HttpMcpServer::requests`](super::HttpMcpServer::requests) stays empty.
    pub unrecorded: bool,
    /// Answer every `initialize` with 2025-03-26, whatever the client offers.
    pub only_2025_03_26: bool,
    /// Offer resources (one, `note://stuck`) and never answer `resources/read`: the
    /// response (JSON modes) or its event stream (SSE modes) stays pending.
    pub hang_resource_reads: bool,
    /// Answer `initialize` this long after it arrives (a session that takes time to
    /// open, so requests sent meanwhile meet the renewal).
    pub slow_initialize_ms: u64,
    /// Answer a GET (its status and headers) this long after it arrives: a
    /// notification stream slow to open.
    pub slow_get_ms: u64,
}

impl Script {
    /// The tools this script names, besides `echo`, `add` and `slow`, without repeats.
    pub(super) fn knob_tools(&self) -> Vec<&str> {
        let named = [
            self.cut_tool.as_deref(),
            self.hang_tool.as_deref(),
            self.garbage_tool.as_deref(),
            self.huge_event_tool.as_deref(),
            self.fail_status_tool
                .as_ref()
                .map(|(name, _)| name.as_str()),
        ];
        let mut out: Vec<&str> = Vec::new();
        for name in named
            .into_iter()
            .flatten()
            .chain(self.extra_tools.iter().map(String::as_str))
        {
            if !out.contains(&name) && !super::mcp::BUILT_IN_TOOLS.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// The knob that applies to a call of `tool`, if any.
    pub(super) fn knob_for(&self, tool: &str) -> Option<Knob> {
        let is = |knob: &Option<String>| knob.as_deref() == Some(tool);
        let failing = self.fail_status_tool.as_ref();
        if let Some((_, status)) = failing.filter(|(name, _)| name == tool) {
            Some(Knob::FailStatus(*status))
        } else if is(&self.hang_tool) {
            Some(Knob::Hang)
        } else if is(&self.cut_tool) {
            Some(Knob::Cut)
        } else if is(&self.garbage_tool) {
            Some(Knob::Garbage)
        } else if is(&self.huge_event_tool) {
            Some(Knob::HugeEvent)
        } else {
            None
        }
    }
}

/// A tool knob, resolved for one call.
#[derive(Clone, Copy, Debug)]
pub(super) enum Knob {
    FailStatus(u16),
    Hang,
    Cut,
    Garbage,
    HugeEvent,
}
