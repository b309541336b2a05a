//! The faults and the seeded order they come in.

use super::rng::Rng;

/// One fault the harness injects into one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// SIGKILL of the server process.
    Kill,
    /// SIGSTOP: the server hangs until a call's timeout ends the connection.
    Stop,
    /// Garbage lines on stdout (then a valid answer): tolerated, no restart.
    Garbage,
    /// One line past the 1 MiB frame limit.
    OversizeLine,
    /// Half an answer line, then the process exits.
    EofMidAnswer,
    /// The restarted server exits when `initialize` arrives, until the
    /// supervisor gives up; it comes back when the host asks.
    ExitDuringInitialize,
    /// The restarted server never answers `initialize` (startup timeout).
    NeverAnswersInitialize,
    /// HTTP: the server closes its port and every connection, then comes back.
    HttpReset,
    /// HTTP: an answer stream that stops mid-way and never ends.
    HttpStall,
    /// HTTP: the server restarts on the same port; the old session is gone.
    HttpRestartSamePort,
}

impl FaultKind {
    pub const STDIO: [FaultKind; 7] = [
        FaultKind::Kill,
        FaultKind::Stop,
        FaultKind::Garbage,
        FaultKind::OversizeLine,
        FaultKind::EofMidAnswer,
        FaultKind::ExitDuringInitialize,
        FaultKind::NeverAnswersInitialize,
    ];
    pub const HTTP: [FaultKind; 3] = [
        FaultKind::HttpReset,
        FaultKind::HttpStall,
        FaultKind::HttpRestartSamePort,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "sigkill",
            FaultKind::Stop => "sigstop",
            FaultKind::Garbage => "garbage",
            FaultKind::OversizeLine => "oversize-line",
            FaultKind::EofMidAnswer => "eof-mid-answer",
            FaultKind::ExitDuringInitialize => "exit-during-initialize",
            FaultKind::NeverAnswersInitialize => "never-answers-initialize",
            FaultKind::HttpReset => "http-reset",
            FaultKind::HttpStall => "http-stall",
            FaultKind::HttpRestartSamePort => "http-restart-same-port",
        }
    }

    pub fn is_http(self) -> bool {
        FaultKind::HTTP.contains(&self)
    }

    /// Whether a call on the faulted server may end with `error` (an
    /// [`error_kind`](super::load::error_kind)) because of this fault. Every
    /// fault that ends the connection explains the errors of a server that is
    /// down (no route, not ready, its connection closed under the call); past
    /// those, only the error the fault itself causes. Garbage is tolerated: it
    /// explains no error at all.
    pub fn explains(self, error: &str) -> bool {
        const DOWN: [&str; 3] = ["unavailable", "unknown-tool", "connection-closed"];
        // A process that is gone: its exit, a write to its closed pipe, the
        // read side ending.
        const GONE: [&str; 4] = [
            "transport/Exited",
            "transport/Write",
            "transport/Read",
            "transport/Closed",
        ];
        // An HTTP server that is gone or came back without the session.
        const HTTP_GONE: [&str; 4] = [
            "transport/Http",
            "transport/SessionExpired",
            "transport/NoResponse",
            "transport/Closed",
        ];
        const HUNG: [&str; 2] = ["timeout", "connection-timed-out"];
        let caused: &[&str] = match self {
            FaultKind::Garbage => return false,
            FaultKind::Kill
            | FaultKind::EofMidAnswer
            | FaultKind::ExitDuringInitialize
            | FaultKind::NeverAnswersInitialize => &GONE,
            FaultKind::Stop | FaultKind::HttpStall => &HUNG,
            FaultKind::OversizeLine => &["transport/FrameTooLarge"],
            FaultKind::HttpReset | FaultKind::HttpRestartSamePort => &HTTP_GONE,
        };
        DOWN.contains(&error) || caused.contains(&error)
    }
}

/// Deals faults from shuffled decks holding every kind once, so any run of
/// ten cycles (seven without HTTP servers) sees each kind.
pub struct FaultPlan {
    rng: Rng,
    deck: Vec<FaultKind>,
    with_http: bool,
}

impl FaultPlan {
    pub fn new(seed: u64, with_http: bool) -> FaultPlan {
        FaultPlan {
            rng: Rng::new(seed),
            deck: Vec::new(),
            with_http,
        }
    }

    /// The next fault and a number to pick its victim with.
    pub fn next(&mut self) -> (FaultKind, usize) {
        if self.deck.is_empty() {
            self.deck.extend(FaultKind::STDIO);
            if self.with_http {
                self.deck.extend(FaultKind::HTTP);
            }
            self.rng.shuffle(&mut self.deck);
        }
        let kind = self.deck.pop().unwrap_or(FaultKind::Kill);
        (kind, self.rng.below(usize::MAX))
    }
}
