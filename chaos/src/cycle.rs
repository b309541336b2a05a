//! One cycle: every server ready, load on, one fault in, wait for the faulted
//! server to answer again, load off, faults cleared, invariants checked.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mcpvisor::{Fault, FaultKind, ServerState, ServerStatus};

use crate::callers::{Running, Tally};
use crate::engine::{Engine, state_text};
use crate::explains::explains;
use crate::invariant::Invariant;
use crate::load::Target;
use crate::options::Progress;
use crate::plan::Deal;

/// Restarts a run asks for in one recovery before it gives a server up.
const MAX_RESTARTS_ON_REQUEST: u32 = 3;
/// Load before the fault, so the fault meets calls in flight.
const LEAD: Duration = Duration::from_millis(100);
/// How long a call's failure may come before the restart it causes shows.
const LATE_BITE: Duration = Duration::from_secs(1);

impl Engine {
    /// Runs cycle `index`; false when the fault drawn had nowhere to go.
    pub(crate) async fn cycle(&mut self, index: usize) -> bool {
        let Some((fault, victim)) = self.draw() else {
            return false;
        };
        self.all_ready(index).await;
        if self.given_up[victim] {
            return false;
        }
        let name = self.names[victim].clone();
        self.report.dealt(fault.kind().as_str(), victim);
        let load = Running::start(
            &self.host,
            &self.open_calls(),
            &self.callers,
            self.pace(),
            self.chaos.seed ^ (index as u64 + 1),
        );
        tokio::time::sleep(LEAD).await;

        let restarts_before = self.status(&name).map(|s| s.restarts);
        let dealt_at = Instant::now();
        if let Err(e) = self.deal(&name, fault).await {
            let detail = format!("{fault} was not applied: {e}");
            self.violate(Invariant::FaultsApplied, Some(index), Some(victim), detail);
        }
        let mut probes = Tally::default();
        let mut recovered = self.recover(index, victim, dealt_at, &mut probes).await;
        let back = (Instant::now(), self.status(&name).map(|s| s.restarts));
        // The server serves the load again before the load stops.
        tokio::time::sleep(self.chaos.settle).await;
        let mut by_server = load.stop().await;
        // Every fault ends by itself; ending it here keeps cycles apart.
        let _ = self.host.clear_faults(&name).await;
        if recovered.is_ok() && self.bitten_late(&name, back, &by_server).await {
            recovered = self.recover(index, victim, dealt_at, &mut probes).await;
        }
        let recovered = match recovered {
            Ok(after) => {
                self.report.recovered(fault.kind().as_str(), after);
                Some(after)
            }
            Err(what) => {
                self.violate(Invariant::Recovered, Some(index), Some(victim), what);
                self.give_up(victim);
                None
            }
        };
        by_server.entry(name.clone()).or_default().add(probes);
        let calls = by_server.values().map(|t| t.ok + t.failed()).sum();
        self.check_calls(index, fault, &name, &by_server);
        let restarted = self.status(&name).map(|s| s.restarts) != restarts_before;
        if fault.kind() == FaultKind::Garbage && restarted {
            let detail = "malformed lines restarted the connection".to_string();
            self.violate(
                Invariant::ErrorsExplained,
                Some(index),
                Some(victim),
                detail,
            );
        }
        self.check_leftovers(index).await;
        self.chaos.tell(Progress::Cycle {
            index,
            fault,
            server: name,
            recovered_in: recovered,
            calls,
        });
        true
    }

    /// The next fault and its server; a fault with nowhere to go is counted
    /// as skipped.
    fn draw(&mut self) -> Option<(Fault, usize)> {
        let given_up = &self.given_up;
        match self.plan.next(&self.wires, |i| !given_up[i])? {
            Deal::To(fault, victim) => Some((fault, victim)),
            Deal::Skipped(fault) => {
                self.report.skipped(fault.kind().as_str());
                self.chaos.tell(Progress::Skipped { fault });
                None
            }
        }
    }

    /// Whether the fault bit after the server first answered again (`back`:
    /// when, and its restart count then). A dropped answer ends the connection
    /// when its call times out; the caller hears of it before the supervisor
    /// has restarted anything, so a failure after `back` gets a moment to show
    /// as a restart.
    async fn bitten_late(
        &self,
        name: &str,
        back: (Instant, Option<u64>),
        by_server: &BTreeMap<String, Tally>,
    ) -> bool {
        let (back_at, restarts) = back;
        let changed = || {
            let now = self.status(name);
            now.as_ref().map(|s| s.restarts) != restarts
                || now.is_none_or(|s| s.state != ServerState::Ready)
        };
        let failed_later = by_server
            .get(name)
            .and_then(|t| t.last_failure)
            .is_some_and(|at| at > back_at);
        if failed_later {
            let deadline = Instant::now() + LATE_BITE;
            while !changed() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        changed()
    }

    /// What a cycle must leave behind: no process of a gone connection,
    /// resources in the band, no panic.
    async fn check_leftovers(&mut self, index: usize) {
        let statuses = self.host.servers();
        self.track_groups(&statuses);
        let in_use = statuses.iter().filter_map(|s| s.pid).collect();
        self.check_groups(Some(index), &in_use).await;
        self.check_resources(index);
        self.check_panics(Some(index));
    }

    /// Deals `fault`. A fault on the next start is armed, then the running
    /// process is killed, so the next start comes now.
    async fn deal(&self, name: &str, fault: Fault) -> Result<(), mcpvisor::FaultError> {
        self.host.inject(name, fault).await?;
        if fault == Fault::ExitDuringInitialize {
            self.host.inject(name, Fault::Kill).await?;
        }
        Ok(())
    }

    /// Waits until the faulted server answers a ping again: directly, through
    /// the supervisor's restarts, or through `Host::restart` once it was
    /// marked failed (after checking that the policy allowed that). Returns
    /// the time from the fault.
    async fn recover(
        &mut self,
        index: usize,
        victim: usize,
        dealt_at: Instant,
        probes: &mut Tally,
    ) -> Result<Duration, String> {
        let name = self.names[victim].clone();
        let deadline = dealt_at + self.chaos.recovery_timeout;
        let probe = Target::Ping {
            server: name.clone(),
        };
        let mut asked = 0;
        loop {
            let state = self.status(&name).map(|s| s.state);
            match &state {
                Some(ServerState::Ready) => {
                    let started = Instant::now();
                    let timeout = self.chaos.probe_timeout;
                    let outcome = crate::callers::call_once(&self.host, &probe, timeout).await;
                    let answered = outcome.is_ok();
                    let slack = self.chaos.timeout_slack;
                    probes.record(&probe.label(), outcome, started.elapsed(), timeout, slack);
                    if answered {
                        return Ok(dealt_at.elapsed());
                    }
                }
                Some(ServerState::Failed { reason }) => {
                    let policy = self.supervisor.restart.clone();
                    for what in self.events.check_failed(&name, &policy).await {
                        self.violate(Invariant::FailedPerPolicy, Some(index), Some(victim), what);
                    }
                    if asked >= MAX_RESTARTS_ON_REQUEST {
                        return Err(format!(
                            "failed again after {asked} restart(s) on request: {reason}"
                        ));
                    }
                    asked += 1;
                    self.events.reset(&name);
                    match self.host.restart(&name).await {
                        Ok(n) if n >= 1 => self.report.restarted_on_request += 1,
                        Ok(_) => {} // Already on its way back.
                        Err(e) => return Err(format!("Host::restart failed: {e}")),
                    }
                    continue;
                }
                Some(s @ (ServerState::LoginRequired { .. } | ServerState::Stopped)) => {
                    return Err(format!("will not come back by itself: {}", state_text(s)));
                }
                None => return Err("no longer listed by the host".into()),
                Some(_) => {} // Starting or restarting.
            }
            if Instant::now() > deadline {
                let state = state.map_or("gone".into(), |s| state_text(&s));
                return Err(format!(
                    "not answering {:?} after the fault: {state}",
                    self.chaos.recovery_timeout
                ));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Every server not given up must be ready when a cycle starts; one that
    /// is not after the recovery bound is a violation, and is given up so
    /// that one failure does not spill into every later cycle.
    async fn all_ready(&mut self, index: usize) {
        let deadline = Instant::now() + self.chaos.recovery_timeout;
        for i in 0..self.names.len() {
            if self.given_up[i] {
                continue;
            }
            loop {
                match self.status(&self.names[i]).map(|s| s.state) {
                    Some(ServerState::Ready) => break,
                    Some(state) if Instant::now() > deadline || state.is_settled() => {
                        let detail =
                            format!("not ready when the cycle started: {}", state_text(&state));
                        self.violate(Invariant::Recovered, Some(index), Some(i), detail);
                        self.give_up(i);
                        break;
                    }
                    None => {
                        let detail = "no longer listed by the host".to_string();
                        self.violate(Invariant::Recovered, Some(index), Some(i), detail);
                        self.give_up(i);
                        break;
                    }
                    Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }
    }

    /// The cycle's calls: every call on a healthy server answered, every
    /// error on the faulted server explained by its fault, every call ended in
    /// time, no caller panicked.
    fn check_calls(
        &mut self,
        index: usize,
        fault: Fault,
        victim: &str,
        by_server: &BTreeMap<String, Tally>,
    ) {
        self.report.add_calls(by_server, victim);
        for (server, t) in by_server {
            let i = self.index_of(server);
            let unexplained: Vec<String> = t
                .errors
                .iter()
                .filter(|(kind, _)| server == victim && !explains(fault.kind(), kind))
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            if !unexplained.is_empty() {
                let detail = format!(
                    "call(s) ended in ways {} does not explain: {}",
                    fault.kind(),
                    unexplained.join(", ")
                );
                self.violate(Invariant::ErrorsExplained, Some(index), Some(i), detail);
            }
            if server != victim && t.failed() > 0 {
                let errors: Vec<String> =
                    t.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
                let detail = format!(
                    "{} call(s) failed while another server had the fault: {}",
                    t.failed(),
                    errors.join(", ")
                );
                self.violate(Invariant::HealthyUnaffected, Some(index), Some(i), detail);
            }
            for late in &t.late_examples {
                let detail = format!(
                    "{} ended ({}) after {:?}, past its timeout of {:?} and the slack",
                    late.what, late.outcome, late.elapsed, late.timeout
                );
                self.violate(Invariant::AnsweredInTime, Some(index), Some(i), detail);
            }
            if t.caller_panics > 0 {
                let detail = format!("{} caller task(s) panicked", t.caller_panics);
                self.violate(Invariant::NoPanic, Some(index), Some(i), detail);
            }
        }
    }

    fn status(&self, name: &str) -> Option<ServerStatus> {
        self.host.servers().into_iter().find(|s| &*s.name == name)
    }
}
