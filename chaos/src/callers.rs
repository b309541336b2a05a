//! The load running: callers on each server, each picking its server's calls
//! by weight, in a loop until told to stop. Each server has callers of its
//! own, so a call stuck on a hung server never slows another server's load.
//! What the callers saw is kept as counts plus a few examples, so a long run
//! holds no growing record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcpvisor::{CallOptions, Host};
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::error_kind::error_kind;
use crate::load::{CALL_TOKEN, LoadCall, Target, with_token};
use crate::rng::Rng;

/// Examples of late calls kept per server and cycle.
const LATE_EXAMPLES: usize = 8;
/// Error kinds counted apart; past this (a server inventing error codes),
/// further kinds are counted together as [`OTHER_KINDS`].
const MAX_ERROR_KINDS: usize = 64;
/// Where error kinds past [`MAX_ERROR_KINDS`] are counted.
const OTHER_KINDS: &str = "other-kinds";

/// A call that ended later than its timeout plus the slack.
#[derive(Debug, Clone)]
pub(crate) struct LateCall {
    pub(crate) what: String,
    pub(crate) elapsed: Duration,
    pub(crate) timeout: Duration,
    pub(crate) outcome: String,
}

/// What the callers of one server saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    /// Calls answered (a tool result, or a ping's answer).
    pub(crate) ok: u64,
    /// Of those, tool results flagged `isError` (the tool ran and said it failed).
    pub(crate) tool_errors: u64,
    /// Calls that ended with an error, by kind.
    pub(crate) errors: BTreeMap<String, u64>,
    /// Calls that ended past their timeout plus the slack, however they ended.
    pub(crate) late: u64,
    pub(crate) late_examples: Vec<LateCall>,
    /// Caller tasks that panicked.
    pub(crate) caller_panics: u64,
    /// When the last failed call ended.
    pub(crate) last_failure: Option<Instant>,
}

impl Tally {
    pub(crate) fn failed(&self) -> u64 {
        self.errors.values().sum()
    }

    pub(crate) fn add(&mut self, other: Tally) {
        self.ok += other.ok;
        self.tool_errors += other.tool_errors;
        for (kind, n) in other.errors {
            self.count_error(kind, n);
        }
        self.late += other.late;
        for late in other.late_examples {
            self.note_late(late);
        }
        self.caller_panics += other.caller_panics;
        self.last_failure = self.last_failure.max(other.last_failure);
    }

    fn count_error(&mut self, kind: String, n: u64) {
        let full = self.errors.len() >= MAX_ERROR_KINDS && !self.errors.contains_key(&kind);
        let key = if full { OTHER_KINDS.to_string() } else { kind };
        *self.errors.entry(key).or_default() += n;
    }

    fn note_late(&mut self, late: LateCall) {
        if self.late_examples.len() < LATE_EXAMPLES {
            self.late_examples.push(late);
        }
    }

    /// Counts one call's outcome (`Err` holds the error kind).
    pub(crate) fn record(
        &mut self,
        what: &str,
        outcome: Result<bool, String>,
        elapsed: Duration,
        timeout: Duration,
        slack: Duration,
    ) {
        if elapsed > timeout + slack {
            self.late += 1;
            self.note_late(LateCall {
                what: what.to_string(),
                elapsed,
                timeout,
                outcome: match &outcome {
                    Ok(_) => "answered".into(),
                    Err(kind) => kind.clone(),
                },
            });
        }
        match outcome {
            Ok(tool_error) => {
                self.ok += 1;
                self.tool_errors += u64::from(tool_error);
            }
            Err(kind) => {
                self.count_error(kind, 1);
                self.last_failure = Some(Instant::now());
            }
        }
    }
}

/// How the callers call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub(crate) timeout: Duration,
    pub(crate) slack: Duration,
    /// Pause between one caller's calls.
    pub(crate) pause: Duration,
}

/// The load running now.
pub(crate) struct Running {
    stop: Arc<AtomicBool>,
    callers: Vec<(String, JoinHandle<Tally>)>,
}

impl Running {
    /// Starts `callers[server]` callers on each server of `calls`.
    pub(crate) fn start(
        host: &Host,
        calls: &BTreeMap<String, Vec<LoadCall>>,
        callers: &BTreeMap<String, usize>,
        pace: Pace,
        seed: u64,
    ) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        let mut rng = Rng::new(seed);
        for (server, list) in calls {
            let n = callers.get(server).copied().unwrap_or(0);
            for _ in 0..n {
                let (host, stop) = (host.clone(), stop.clone());
                let list = list.clone();
                let caller_rng = Rng::new(rng.next_u64());
                let id = handles.len();
                let task = tokio::spawn(caller(id, host, list, pace, stop, caller_rng));
                handles.push((server.clone(), task));
            }
        }
        Running {
            stop,
            callers: handles,
        }
    }

    /// Stops the callers and returns what each server's callers saw.
    pub(crate) async fn stop(mut self) -> BTreeMap<String, Tally> {
        self.stop.store(true, Ordering::Relaxed);
        let mut by_server: BTreeMap<String, Tally> = BTreeMap::new();
        for (server, task) in std::mem::take(&mut self.callers) {
            let tally = task.await.unwrap_or_else(|_| Tally {
                caller_panics: 1,
                ..Tally::default()
            });
            by_server.entry(server).or_default().add(tally);
        }
        by_server
    }
}

/// A run dropped half-way (a test's timeout, Ctrl-C) stops its callers too.
impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn caller(
    id: usize,
    host: Host,
    calls: Vec<LoadCall>,
    pace: Pace,
    stop: Arc<AtomicBool>,
    mut rng: Rng,
) -> Tally {
    let mut tally = Tally::default();
    let total: u64 = calls.iter().map(|c| u64::from(c.weight)).sum();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(call) = pick(&calls, total, &mut rng) else {
            break;
        };
        n += 1;
        let token = format!("{id}-{n}");
        let started = Instant::now();
        let outcome = call_with_token(&host, call, &token, pace.timeout).await;
        let failed = outcome.is_err();
        tally.record(
            &call.target.label(),
            outcome,
            started.elapsed(),
            pace.timeout,
            pace.slack,
        );
        // A server that is down fails calls at once: do not spin on it.
        let nap = if failed {
            Duration::from_millis(20).max(pace.pause)
        } else {
            pace.pause
        };
        tokio::time::sleep(nap).await;
    }
    tally
}

/// A call picked in proportion to the weights.
fn pick<'a>(calls: &'a [LoadCall], total: u64, rng: &mut Rng) -> Option<&'a LoadCall> {
    if total == 0 {
        return calls.first();
    }
    let mut point = rng.next_u64() % total;
    for call in calls {
        let w = u64::from(call.weight);
        if point < w {
            return Some(call);
        }
        point -= w;
    }
    calls.last()
}

/// One call of the load, `{call}` replaced by `token`; an answer whose text
/// is not the one expected is a `wrong-answer`.
async fn call_with_token(
    host: &Host,
    call: &LoadCall,
    token: &str,
    timeout: Duration,
) -> Result<bool, String> {
    let Target::Tool { name, arguments } = &call.target else {
        return call_once(host, &call.target, timeout).await;
    };
    let arguments = with_token(&Value::Object(arguments.clone()), token);
    let answer = host
        .call(
            name.as_str(),
            arguments,
            CallOptions::default().timeout(timeout),
        )
        .await
        .map_err(|e| error_kind(&e))?;
    match &call.expect {
        Some(text) if answer.text() != text.replace(CALL_TOKEN, token) => Err(WRONG_ANSWER.into()),
        _ => Ok(answer.is_error),
    }
}

/// The kind of an answer that is not the one expected.
pub(crate) const WRONG_ANSWER: &str = "wrong-answer";

/// One call: `Ok(is_error)` when answered, `Err(kind)` when it failed.
pub(crate) async fn call_once(
    host: &Host,
    target: &Target,
    timeout: Duration,
) -> Result<bool, String> {
    match target {
        Target::Tool { name, arguments } => host
            .call(
                name.as_str(),
                Value::Object(arguments.clone()),
                CallOptions::default().timeout(timeout),
            )
            .await
            .map(|r| r.is_error)
            .map_err(|e| error_kind(&e)),
        Target::Ping { server } => host
            .ping(server, Some(timeout))
            .await
            .map(|_| false)
            .map_err(|e| error_kind(&e)),
    }
}

/// Callers per server: `per_server` each on average, shared in proportion to
/// each server's total weight, at least one each.
pub(crate) fn callers_for(
    calls: &BTreeMap<String, Vec<LoadCall>>,
    per_server: usize,
) -> BTreeMap<String, usize> {
    let weight = |list: &[LoadCall]| list.iter().map(|c| u64::from(c.weight)).sum::<u64>();
    let total: u64 = calls.values().map(|l| weight(l)).sum();
    let all = (per_server.max(1) * calls.len()) as u64;
    calls
        .iter()
        .map(|(server, list)| {
            let share = (all * weight(list)).div_ceil(total.max(1));
            (server.clone(), share.max(1) as usize)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ping(server: &str, weight: u32) -> LoadCall {
        LoadCall::new(
            Target::Ping {
                server: server.into(),
            },
            weight,
        )
    }

    #[test]
    fn calls_and_callers_follow_the_weights() {
        let calls = vec![ping("a", 3), ping("b", 1)];
        let mut rng = Rng::new(3);
        let picks: Vec<String> = (0..4000)
            .map(|_| {
                pick(&calls, 4, &mut rng)
                    .unwrap()
                    .target
                    .server()
                    .to_string()
            })
            .collect();
        let a = picks.iter().filter(|s| *s == "a").count();
        assert!((2700..3300).contains(&a), "{a}");
        let by_server: BTreeMap<String, Vec<LoadCall>> = [
            ("a".to_string(), vec![ping("a", 3)]),
            ("b".to_string(), vec![ping("b", 1)]),
        ]
        .into();
        let callers = callers_for(&by_server, 2);
        assert_eq!(callers["a"], 3);
        assert_eq!(callers["b"], 1);
    }

    #[test]
    fn a_late_call_is_counted_with_an_example_and_examples_are_bounded() {
        let mut t = Tally::default();
        let (timeout, slack) = (Duration::from_secs(1), Duration::from_secs(1));
        for _ in 0..20 {
            t.record(
                "ping a",
                Err("timeout".into()),
                Duration::from_secs(3),
                timeout,
                slack,
            );
        }
        t.record("ping a", Ok(true), Duration::from_millis(5), timeout, slack);
        assert_eq!((t.ok, t.tool_errors, t.failed(), t.late), (1, 1, 20, 20));
        assert_eq!(t.late_examples.len(), LATE_EXAMPLES);
        for code in 0..200 {
            t.record(
                "x",
                Err(format!("rpc/{code}")),
                Duration::ZERO,
                timeout,
                slack,
            );
        }
        assert_eq!(t.errors.len(), MAX_ERROR_KINDS + 1);
        assert_eq!(t.failed(), 220);
    }
}
