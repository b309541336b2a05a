//! Faults a host can deal to its own servers, to prove that an agent survives
//! them: what each is, how it is written (`stop:2s`, `drop:3`), and why one
//! could not be applied.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A fault for [`Host::inject`](crate::Host::inject).
///
/// Process faults (stdio servers) act on the server's process group; wire
/// faults act in the client's own transport layer, so they work on servers
/// nobody controls, HTTP included. Each ends by itself or on
/// [`Host::clear_faults`](crate::Host::clear_faults).
///
/// Written as text (the CLI, `mcpvisor chaos`, the `mcpvisor/inject` method)
/// as `kill`, `stop[:DURATION]`, `close-stdin`, `exit-during-initialize`,
/// `garbage[:LINES]`, `oversize`, `delay[:BY[:FOR]]`, `drop[:COUNT]`,
/// `cut-stream`, `reset`; durations as `250ms`, `2s`, `1m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// SIGKILL to the server's process group.
    Kill,
    /// SIGSTOP to the group, SIGCONT after `duration` (or on clear).
    Stop {
        /// How long the server stays frozen.
        duration: Duration,
    },
    /// The server's stdin is closed: it reads end of input.
    CloseStdin,
    /// The next start's process is killed once `initialize` has been written to it.
    ExitDuringInitialize,
    /// Malformed lines arrive as if the server had written them.
    Garbage {
        /// How many.
        lines: u32,
    },
    /// The next answer on the live connection arrives as a frame over the
    /// limit: a stdio connection ends; over HTTP that request fails.
    Oversize,
    /// Answers arriving within `during` from now are delivered `by` late.
    DelayAnswers {
        /// The delay of each answer.
        by: Duration,
        /// How long the fault lasts.
        during: Duration,
    },
    /// The next `count` answers on the live connection are swallowed, so their
    /// calls time out; what is left of the count ends with that connection.
    DropAnswers {
        /// How many.
        count: u32,
    },
    /// HTTP: the next answer stream closes after its headers, before the answer.
    CutStream,
    /// HTTP: requests in flight lose their connections and fail; the GET stream
    /// drops and reconnects.
    ResetConnections,
}

/// The kind of a [`Fault`], without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// [`Fault::Kill`].
    Kill,
    /// [`Fault::Stop`].
    Stop,
    /// [`Fault::CloseStdin`].
    CloseStdin,
    /// [`Fault::ExitDuringInitialize`].
    ExitDuringInitialize,
    /// [`Fault::Garbage`].
    Garbage,
    /// [`Fault::Oversize`].
    Oversize,
    /// [`Fault::DelayAnswers`].
    DelayAnswers,
    /// [`Fault::DropAnswers`].
    DropAnswers,
    /// [`Fault::CutStream`].
    CutStream,
    /// [`Fault::ResetConnections`].
    ResetConnections,
}

impl FaultKind {
    /// Every kind, in the order they are documented.
    pub const ALL: [FaultKind; 10] = [
        FaultKind::Kill,
        FaultKind::Stop,
        FaultKind::CloseStdin,
        FaultKind::ExitDuringInitialize,
        FaultKind::Garbage,
        FaultKind::Oversize,
        FaultKind::DelayAnswers,
        FaultKind::DropAnswers,
        FaultKind::CutStream,
        FaultKind::ResetConnections,
    ];

    /// Its name as written: `kill`, `stop`, `close-stdin`, …
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Stop => "stop",
            FaultKind::CloseStdin => "close-stdin",
            FaultKind::ExitDuringInitialize => "exit-during-initialize",
            FaultKind::Garbage => "garbage",
            FaultKind::Oversize => "oversize",
            FaultKind::DelayAnswers => "delay",
            FaultKind::DropAnswers => "drop",
            FaultKind::CutStream => "cut-stream",
            FaultKind::ResetConnections => "reset",
        }
    }

    /// True for faults on the server's process (stdio servers only).
    pub fn is_process(self) -> bool {
        matches!(
            self,
            FaultKind::Kill
                | FaultKind::Stop
                | FaultKind::CloseStdin
                | FaultKind::ExitDuringInitialize
        )
    }

    /// True for faults only an HTTP connection has.
    pub fn is_http_only(self) -> bool {
        matches!(self, FaultKind::CutStream | FaultKind::ResetConnections)
    }

    /// True if it can be dealt to a server on this transport (`http`: Streamable HTTP).
    pub fn applies_to(self, http: bool) -> bool {
        if http {
            !self.is_process()
        } else {
            !self.is_http_only()
        }
    }

    /// The fault of this kind with its default parameters.
    pub fn default_fault(self) -> Fault {
        match self {
            FaultKind::Kill => Fault::Kill,
            FaultKind::Stop => Fault::Stop {
                duration: Duration::from_secs(2),
            },
            FaultKind::CloseStdin => Fault::CloseStdin,
            FaultKind::ExitDuringInitialize => Fault::ExitDuringInitialize,
            FaultKind::Garbage => Fault::Garbage { lines: 3 },
            FaultKind::Oversize => Fault::Oversize,
            FaultKind::DelayAnswers => Fault::DelayAnswers {
                by: Duration::from_millis(500),
                during: Duration::from_secs(5),
            },
            FaultKind::DropAnswers => Fault::DropAnswers { count: 1 },
            FaultKind::CutStream => Fault::CutStream,
            FaultKind::ResetConnections => Fault::ResetConnections,
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FaultKind {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| FaultParseError(format!("unknown fault `{}`", shown(s))))
    }
}

impl Fault {
    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Kill => FaultKind::Kill,
            Fault::Stop { .. } => FaultKind::Stop,
            Fault::CloseStdin => FaultKind::CloseStdin,
            Fault::ExitDuringInitialize => FaultKind::ExitDuringInitialize,
            Fault::Garbage { .. } => FaultKind::Garbage,
            Fault::Oversize => FaultKind::Oversize,
            Fault::DelayAnswers { .. } => FaultKind::DelayAnswers,
            Fault::DropAnswers { .. } => FaultKind::DropAnswers,
            Fault::CutStream => FaultKind::CutStream,
            Fault::ResetConnections => FaultKind::ResetConnections,
        }
    }

    /// Checks the fault's durations and counts against [`MAX_FAULT_TIME`] and
    /// [`MAX_FAULT_COUNT`], as its text form is checked when read.
    pub fn check(&self) -> Result<(), FaultParseError> {
        let time = |d: &Duration| {
            if d.is_zero() || *d > MAX_FAULT_TIME {
                Err(FaultParseError(format!(
                    "`{}`: durations must be more than zero and at most 1h",
                    self.kind()
                )))
            } else {
                Ok(())
            }
        };
        let count = |n: u32| {
            if (1..=MAX_FAULT_COUNT).contains(&n) {
                Ok(())
            } else {
                Err(FaultParseError(format!(
                    "`{}`: counts must be from 1 to {MAX_FAULT_COUNT}",
                    self.kind()
                )))
            }
        };
        match self {
            Fault::Stop { duration } => time(duration),
            Fault::DelayAnswers { by, during } => time(by).and(time(during)),
            Fault::Garbage { lines: n } | Fault::DropAnswers { count: n } => count(*n),
            _ => Ok(()),
        }
    }

    /// How long the fault lasts once applied, for faults that last: a stop,
    /// a delay.
    pub fn lasts(&self) -> Option<Duration> {
        match self {
            Fault::Stop { duration } => Some(*duration),
            Fault::DelayAnswers { during, .. } => Some(*during),
            _ => None,
        }
    }

    /// The same fault lasting `lasts` instead (the CLI's `--for`); faults that
    /// do not last are returned as they are.
    pub fn lasting(self, lasts: Duration) -> Fault {
        match self {
            Fault::Stop { .. } => Fault::Stop { duration: lasts },
            Fault::DelayAnswers { by, .. } => Fault::DelayAnswers { by, during: lasts },
            other => other,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind().as_str();
        match self {
            Fault::Stop { duration } => write!(f, "{kind}:{}", written(*duration)),
            Fault::Garbage { lines } => write!(f, "{kind}:{lines}"),
            Fault::DelayAnswers { by, during } => {
                write!(f, "{kind}:{}:{}", written(*by), written(*during))
            }
            Fault::DropAnswers { count } => write!(f, "{kind}:{count}"),
            _ => f.write_str(kind),
        }
    }
}

/// Longest a fault may last or delay: a fault is a test, not a way to park a server.
pub const MAX_FAULT_TIME: Duration = Duration::from_secs(3600);
/// Most lines or answers one fault may name.
pub const MAX_FAULT_COUNT: u32 = 10_000;

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(':');
        let kind: FaultKind = parts.next().unwrap_or_default().parse()?;
        let args: Vec<&str> = parts.collect();
        let most = match kind {
            FaultKind::Stop | FaultKind::Garbage | FaultKind::DropAnswers => 1,
            FaultKind::DelayAnswers => 2,
            _ => 0,
        };
        if args.len() > most {
            return Err(FaultParseError(format!(
                "`{}` takes {most} parameter(s) at most",
                kind.as_str()
            )));
        }
        let mut fault = kind.default_fault();
        match (&mut fault, args.as_slice()) {
            (_, []) => {}
            (Fault::Stop { duration }, [d]) => *duration = parse_duration(d)?,
            (Fault::Garbage { lines: n }, [c]) | (Fault::DropAnswers { count: n }, [c]) => {
                *n = parse_count(c)?
            }
            (Fault::DelayAnswers { by, during }, [b, rest @ ..]) => {
                *by = parse_duration(b)?;
                if let [d] = rest {
                    *during = parse_duration(d)?;
                }
            }
            _ => {}
        }
        Ok(fault)
    }
}

/// Why a fault's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FaultParseError(String);

/// Reads `250ms`, `2s`, `1m` or `1h`: more than zero, at most [`MAX_FAULT_TIME`].
pub fn parse_duration(text: &str) -> Result<Duration, FaultParseError> {
    let bad = || {
        FaultParseError(format!(
            "`{}` is not a duration (like 250ms, 2s, 1m)",
            shown(text)
        ))
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let millis = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => None,
    }
    .ok_or_else(bad)?;
    let d = Duration::from_millis(millis);
    if d.is_zero() || d > MAX_FAULT_TIME {
        return Err(FaultParseError(format!(
            "`{}` must be more than zero and at most 1h",
            shown(text)
        )));
    }
    Ok(d)
}

fn parse_count(text: &str) -> Result<u32, FaultParseError> {
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_FAULT_COUNT).contains(&n) => Ok(n),
        _ => Err(FaultParseError(format!(
            "`{}` is not a count from 1 to {MAX_FAULT_COUNT}",
            shown(text)
        ))),
    }
}

/// A duration as [`parse_duration`] reads it.
fn written(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Input echoed in an error: bounded, control characters escaped.
fn shown(text: &str) -> String {
    text.chars().take(40).flat_map(char::escape_debug).collect()
}

/// Why a fault was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultError {
    /// No server of this name runs under the host.
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// The fault has no meaning on this server's transport.
    #[error(
        "`{fault}` cannot be dealt to `{server}`: it applies to {applies}, and `{server}` is {transport}"
    )]
    NotApplicable {
        /// The server.
        server: String,
        /// The fault's kind.
        fault: FaultKind,
        /// The server's transport (`stdio` or `http`).
        transport: &'static str,
        /// Where the fault applies.
        applies: &'static str,
    },
    /// A duration or count past the limits ([`MAX_FAULT_TIME`], [`MAX_FAULT_COUNT`]).
    #[error("{0}")]
    OutOfRange(String),
    /// The server has no live connection to deal the fault to.
    #[error("`{0}` has no live connection now (starting, restarting, failed or stopped)")]
    NotRunning(String),
    /// Applying it failed (a signal was refused).
    #[error("the fault could not be applied to `{server}`: {reason}")]
    Failed {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The host is shutting down.
    #[error("the host is shutting down")]
    Shutdown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_reads_back_what_it_writes() {
        for kind in FaultKind::ALL {
            let fault = kind.default_fault();
            assert_eq!(fault.to_string().parse::<Fault>(), Ok(fault), "{fault}");
            assert_eq!(kind.as_str().parse::<FaultKind>(), Ok(kind));
        }
        let fault: Fault = "delay:250ms:1m".parse().unwrap();
        assert_eq!(
            fault,
            Fault::DelayAnswers {
                by: Duration::from_millis(250),
                during: Duration::from_secs(60)
            }
        );
        assert_eq!(fault.to_string(), "delay:250ms:1m");
        assert_eq!("drop:3".parse(), Ok(Fault::DropAnswers { count: 3 }));
        assert_eq!(
            "stop:1h".parse(),
            Ok(Fault::Stop {
                duration: MAX_FAULT_TIME
            })
        );
    }

    #[test]
    fn bad_text_is_refused_with_a_reason() {
        for bad in [
            "",
            "explode",
            "kill:1",
            "stop:0s",
            "stop:2h",
            "stop:5",
            "stop:s",
            "stop:99999999999999999999h",
            "drop:0",
            "drop:-1",
            "garbage:10001",
            "delay:1s:2s:3s",
            "stop:\u{1b}[31m",
        ] {
            let e = bad.parse::<Fault>().expect_err(bad);
            assert!(!e.to_string().is_empty());
            assert!(!e.to_string().contains('\u{1b}'), "{e}");
        }
    }

    #[test]
    fn faults_made_in_code_are_checked_like_text() {
        assert!(
            Fault::Stop {
                duration: Duration::MAX
            }
            .check()
            .is_err()
        );
        assert!(
            Fault::Stop {
                duration: Duration::ZERO
            }
            .check()
            .is_err()
        );
        assert!(
            Fault::DelayAnswers {
                by: Duration::from_secs(1),
                during: Duration::MAX
            }
            .check()
            .is_err()
        );
        assert!(Fault::Garbage { lines: u32::MAX }.check().is_err());
        assert!(Fault::DropAnswers { count: 0 }.check().is_err());
        for kind in FaultKind::ALL {
            assert_eq!(kind.default_fault().check(), Ok(()));
        }
    }

    #[test]
    fn kinds_say_where_they_apply() {
        assert!(FaultKind::Kill.applies_to(false) && !FaultKind::Kill.applies_to(true));
        assert!(FaultKind::CutStream.applies_to(true) && !FaultKind::CutStream.applies_to(false));
        assert!(
            FaultKind::DropAnswers.applies_to(true) && FaultKind::DropAnswers.applies_to(false)
        );
    }
}
