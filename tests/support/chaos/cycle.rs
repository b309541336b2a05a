//! One chaos cycle: load on, one fault in, wait for the victim to come back,
//! load off, check the invariants.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mcpvisor::transports::TransportError;
use mcpvisor::{CallError, CallOptions, HostEvent, ServerState, ServerStatus};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

use super::load::{CallRecord, CallerTally, Load, error_kind};
use super::plan::FaultKind;
use super::{Harness, HttpSlot, http_script};
use crate::http_server::HttpMcpServer;

type Events = Pin<Box<dyn Stream<Item = HostEvent> + Send>>;

/// What the fault's own probe call must end with.
enum Expect {
    /// The answer, or an error the fault explains (the server is coming back).
    AnswerOrExplained,
    Ok,
    Timeout,
    FrameTooLarge,
    Exited,
}

impl Harness {
    pub(super) async fn cycle(&mut self, index: usize) {
        let (kind, pick) = self.plan.next();
        let victim = if kind.is_http() {
            self.cfg.stdio_servers + pick % self.cfg.http_servers
        } else {
            pick % self.cfg.stdio_servers
        };
        let name = self.names[victim].clone();
        self.all_ready(index).await;
        *self.report.faults.entry(kind.name()).or_default() += 1;
        let mut events: Events = Box::pin(self.host.events());
        let before = self.status(&name);
        let load = Load::start(
            &self.host,
            &self.names,
            self.cfg.callers_per_server,
            self.cfg.call_timeout,
            self.cfg.call_pause,
        );
        tokio::time::sleep(Duration::from_millis(100)).await;

        let mut probes = Vec::new();
        if let Err(what) = self.inject(kind, victim, &before, &mut probes).await {
            self.report
                .violation(index, format!("{} on {name}: {what}", kind.name()));
        }
        if let Err(what) = self
            .recover(index, kind, victim, &before, &mut events)
            .await
        {
            self.report
                .violation(index, format!("{} on {name}: {what}", kind.name()));
        }
        // The victim serves the load again before the load stops.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let tallies = load.stop().await;
        self.check_calls(index, kind, victim, &tallies, &probes);
        self.count_events(&mut events);
        self.track_groups();
        let in_use = self.pids_in_use();
        self.check_groups(index, &in_use).await;
        if let (FaultKind::Stop, Some(pid)) = (kind, before.pid) {
            // Checked (and killed if left over) above; if the connection was never
            // torn down, the process is still in use: wake it rather than leave it
            // stopped for good.
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
        }
        self.check_resources(index);
        if self.cfg.verbose {
            let after = self.status(&name);
            eprintln!(
                "chaos: cycle {index}: {} on {name}: {} calls, state {:?}, pid {:?} -> {:?}, rss {} KiB",
                kind.name(),
                tallies
                    .iter()
                    .map(|t| t.ok + t.failed.len() as u64)
                    .sum::<u64>()
                    + probes.len() as u64,
                after.state,
                before.pid,
                after.pid,
                crate::proc::rss_kib()
            );
        }
    }

    /// Every server must be ready when a cycle starts; one that is not (after a
    /// recovery that went wrong) is a violation, and is brought back so that one
    /// failure does not spill into the next cycles.
    async fn all_ready(&mut self, index: usize) {
        for name in self.names.clone() {
            let state = self.status(&name).state;
            if state == ServerState::Ready {
                continue;
            }
            let what = format!("{name} not ready when the cycle started: {state:?}");
            self.report.violation(index, what);
            if matches!(state, ServerState::Failed { .. }) {
                if let Err(what) = self.restart_on_request(index, &name).await {
                    self.report.violation(index, what);
                }
            }
            let deadline = Instant::now() + self.cfg.recovery_timeout;
            while self.status(&name).state != ServerState::Ready && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    fn status(&self, name: &str) -> ServerStatus {
        self.host
            .servers()
            .into_iter()
            .find(|s| &*s.name == name)
            .expect("every configured server has a status")
    }

    /// Injects `kind` into `victim`; probe calls go to `probes`.
    async fn inject(
        &mut self,
        kind: FaultKind,
        victim: usize,
        before: &ServerStatus,
        probes: &mut Vec<CallRecord>,
    ) -> Result<(), String> {
        let pid = || before.pid.ok_or("no pid for a stdio server".to_string());
        let (tool, args, timeout, expect) = match kind {
            FaultKind::Kill => {
                signal(pid()?, Signal::SIGKILL)?;
                return Ok(());
            }
            FaultKind::Stop => {
                signal(pid()?, Signal::SIGSTOP)?;
                (
                    "echo",
                    json!({"text": "stopped"}),
                    self.cfg.fault_timeout,
                    Expect::Timeout,
                )
            }
            FaultKind::Garbage => ("garbage", json!({}), self.cfg.call_timeout, Expect::Ok),
            FaultKind::OversizeLine => (
                "flood",
                json!({"bytes": 1_048_577}),
                self.cfg.call_timeout,
                Expect::FrameTooLarge,
            ),
            FaultKind::EofMidAnswer => (
                "cut_answer",
                json!({}),
                self.cfg.call_timeout,
                Expect::Exited,
            ),
            FaultKind::ExitDuringInitialize | FaultKind::NeverAnswersInitialize => {
                let what = if kind == FaultKind::ExitDuringInitialize {
                    "exit"
                } else {
                    "hang"
                };
                std::fs::write(&self.fault_files[victim], what).map_err(|e| e.to_string())?;
                signal(pid()?, Signal::SIGKILL)?;
                return Ok(());
            }
            FaultKind::HttpStall => ("hang", json!({}), self.cfg.fault_timeout, Expect::Timeout),
            FaultKind::HttpReset => {
                let slot = victim - self.cfg.stdio_servers;
                self.http[slot].server.stop();
                // Calls meanwhile meet a closed port.
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.restart_http(slot).await?;
                (
                    "echo",
                    json!({"text": "x"}),
                    self.cfg.call_timeout,
                    Expect::AnswerOrExplained,
                )
            }
            FaultKind::HttpRestartSamePort => {
                let slot = victim - self.cfg.stdio_servers;
                self.http[slot].server.stop();
                self.restart_http(slot).await?;
                (
                    "echo",
                    json!({"text": "x"}),
                    self.cfg.call_timeout,
                    Expect::AnswerOrExplained,
                )
            }
        };
        let route = format!("mcp__{}__{tool}", self.names[victim]);
        let started = Instant::now();
        let outcome = self
            .host
            .call(
                &route,
                args.clone(),
                CallOptions::default().timeout(timeout),
            )
            .await;
        probes.push(CallRecord {
            server: victim,
            error: outcome.as_ref().err().map(error_kind),
            elapsed: started.elapsed(),
            timeout,
        });
        let explained = match (&expect, &outcome) {
            (Expect::AnswerOrExplained, Ok(r)) => r.text() == args["text"],
            (Expect::AnswerOrExplained, Err(e)) => kind.explains(&error_kind(e)),
            _ => false,
        };
        let matched = explained
            || matches!(
                (&expect, &outcome),
                (Expect::Ok, Ok(_))
                    | (Expect::Timeout, Err(CallError::Timeout { .. }))
                    | (
                        Expect::FrameTooLarge,
                        Err(CallError::Transport {
                            source: TransportError::FrameTooLarge { .. },
                            ..
                        })
                    )
                    | (
                        Expect::Exited,
                        Err(CallError::Transport {
                            source: TransportError::Exited { .. },
                            ..
                        })
                    )
            );
        if matched {
            Ok(())
        } else {
            Err(format!(
                "{tool} {args} ended with {:?}",
                outcome.map(|r| r.text())
            ))
        }
    }

    /// Brings the HTTP fixture in `slot` back on its port, with no sessions.
    async fn restart_http(&mut self, slot: usize) -> Result<(), String> {
        let port = self.http[slot].port;
        // The old listener closes once its aborted task is dropped.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("port {port} did not free up"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let server = HttpMcpServer::start_on(port, http_script()).await;
        self.http[slot] = HttpSlot { server, port };
        Ok(())
    }

    /// Waits until the victim is back and answers; through `Host::restart`
    /// when it reached `Failed`.
    async fn recover(
        &mut self,
        index: usize,
        kind: FaultKind,
        victim: usize,
        before: &ServerStatus,
        events: &mut Events,
    ) -> Result<(), String> {
        let name = self.names[victim].clone();
        let deadline = Instant::now() + self.cfg.recovery_timeout;
        match kind {
            FaultKind::ExitDuringInitialize => {
                // Each restart exits again: the supervisor must give up.
                while !matches!(self.status(&name).state, ServerState::Failed { .. }) {
                    if Instant::now() > deadline {
                        let _ = std::fs::remove_file(&self.fault_files[victim]);
                        return Err(format!("never Failed: {:?}", self.status(&name).state));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                std::fs::remove_file(&self.fault_files[victim]).map_err(|e| e.to_string())?;
                self.restart_on_request(index, &name).await?;
            }
            FaultKind::NeverAnswersInitialize => {
                // Restarted after the startup timeout, or Failed when earlier faults
                // (or the kill that set this one up) used up the restart budget.
                let timed_out = wait_event(events, deadline, |e| match e {
                    HostEvent::ServerRestarting { server, reason, .. } => {
                        **server == *name && reason.to_string().contains("startup")
                    }
                    HostEvent::ServerFailed { server, .. } => **server == *name,
                    _ => false,
                })
                .await;
                // `wait_event` may have taken a restart off the stream: count it here.
                let failed = matches!(self.status(&name).state, ServerState::Failed { .. });
                self.report.restarts += u64::from(timed_out && !failed);
                std::fs::remove_file(&self.fault_files[victim]).map_err(|e| e.to_string())?;
                if !timed_out {
                    return Err("no restart after the startup timeout".into());
                }
            }
            _ => {}
        }
        let replaced = !matches!(kind, FaultKind::Garbage) && !kind.is_http();
        loop {
            let now = self.status(&name);
            let new_process = !replaced || (now.pid.is_some() && now.pid != before.pid);
            if now.state == ServerState::Ready && new_process {
                break;
            }
            if matches!(now.state, ServerState::Failed { .. }) {
                // Earlier faults used up the restart budget (checked against the
                // policy before the restart): ask, as a host would.
                self.restart_on_request(index, &name).await?;
                continue;
            }
            if Instant::now() > deadline {
                return Err(format!("not back: {:?}, pid {:?}", now.state, now.pid));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if kind == FaultKind::Garbage && self.status(&name).restarts != before.restarts {
            return Err("garbage on stdout restarted the connection".into());
        }
        // Back means answering: an HTTP server may need a new session first.
        loop {
            let route = format!("mcp__{name}__echo");
            let timeout = CallOptions::default().timeout(self.cfg.call_timeout);
            match self
                .host
                .call(&route, json!({"text": "back"}), timeout)
                .await
            {
                Ok(r) if r.text() == "back" => return Ok(()),
                Ok(r) => return Err(format!("wrong answer after recovery: {}", r.text())),
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("not answering after recovery: {e}"));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Restarts a `Failed` server as a host would, after checking that it was
    /// allowed to fail: as many restarts within the window as the policy allows.
    async fn restart_on_request(&mut self, index: usize, name: &str) -> Result<(), String> {
        let policy = super::supervisor_options(&self.cfg).restart;
        for what in self.restarts.check_failed(name, &policy).await {
            self.report.violation(index, what);
        }
        self.restarts.reset(name);
        match self.host.restart(name).await {
            Ok(n) if n >= 1 => {
                self.report.restarted_on_request += 1;
                Ok(())
            }
            Ok(_) => Ok(()), // Already on its way back.
            Err(e) => Err(format!("Host::restart failed: {e}")),
        }
    }

    fn check_calls(
        &mut self,
        index: usize,
        kind: FaultKind,
        victim: usize,
        tallies: &[CallerTally],
        probes: &[CallRecord],
    ) {
        for t in tallies {
            if t.server == victim {
                self.report.faulted_ok += t.ok;
            } else {
                self.report.healthy_ok += t.ok;
            }
        }
        let late = tallies.iter().flat_map(|t| &t.late).chain(probes);
        let mut hung = Vec::new();
        for r in late.filter(|r| r.elapsed > r.timeout + self.cfg.timeout_slack) {
            hung.push(format!(
                "call on {} hung: {:?} > {:?}",
                r.server, r.elapsed, r.timeout
            ));
        }
        let mut healthy_failures: BTreeMap<(usize, String), u64> = BTreeMap::new();
        let mut unexplained = std::collections::BTreeSet::new();
        let failed = tallies.iter().flat_map(|t| &t.failed).chain(probes);
        for r in failed {
            match (&r.error, r.server == victim) {
                (None, _) => self.report.faulted_ok += 1, // a probe that went well
                (Some(e), _) if e.starts_with("wrong answer") || e.starts_with("caller") => {
                    hung.push(format!("server {}: {e}", r.server));
                }
                (Some(e), true) => {
                    if !kind.explains(e) {
                        unexplained.insert(e.clone());
                    }
                    *self.report.faulted_failed.entry(e.clone()).or_default() += 1
                }
                (Some(e), false) => {
                    self.report.healthy_failed += 1;
                    *healthy_failures.entry((r.server, e.clone())).or_default() += 1;
                }
            }
        }
        for what in hung {
            self.report.violation(index, what);
        }
        for e in unexplained {
            let what = format!(
                "a call on the faulted server ended with {e}, which {} does not explain",
                kind.name()
            );
            self.report.violation(index, what);
        }
        for ((server, e), n) in healthy_failures {
            let what = format!(
                "healthy server {} failed {n} call(s): {e}",
                self.names[server]
            );
            self.report.violation(index, what);
        }
    }

    /// Counts restarts and session renewals seen during the cycle.
    fn count_events(&mut self, events: &mut Events) {
        while let Some(Some(event)) = futures::FutureExt::now_or_never(events.next()) {
            match event {
                HostEvent::ServerRestarting { .. } => self.report.restarts += 1,
                HostEvent::SessionRenewed { .. } => self.report.sessions_renewed += 1,
                _ => {}
            }
        }
    }
}

fn signal(pid: u32, sig: Signal) -> Result<(), String> {
    kill(Pid::from_raw(pid as i32), sig).map_err(|e| format!("{sig} to {pid}: {e}"))
}

/// Waits for an event matching `pred` until `deadline`; false when none came.
async fn wait_event(
    events: &mut Events,
    deadline: Instant,
    mut pred: impl FnMut(&HostEvent) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::from_std(deadline);
    loop {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(e)) if pred(&e) => return true,
            Ok(Some(_)) => continue,
            _ => return false,
        }
    }
}
