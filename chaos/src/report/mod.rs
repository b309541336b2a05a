//! What a run found: per fault kind how many were dealt and how long the
//! servers took to come back, the calls by outcome, the invariants and which
//! broke. [`Report`]'s `Display` is for people; it serializes to JSON for CI.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

mod text;

use crate::callers::Tally;
use crate::invariant::{Invariant, Violation};
use crate::plan::Wire;
use crate::proc::Sample;

/// Recovery times kept per fault kind; past this, later ones are not kept
/// (a run would need days to get there).
const MAX_SAMPLES: usize = 100_000;
/// Violations kept in full; past this, only counted.
const MAX_VIOLATIONS: usize = 1000;

/// Everything a run counted.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The plan's seed: the same seed deals the same faults to the same servers.
    pub seed: u64,
    /// The servers run.
    pub servers: Vec<ServerLine>,
    /// Cycles run (one fault each).
    pub cycles: usize,
    /// Wall time of the run, in milliseconds.
    pub elapsed_ms: u64,
    /// Per fault kind (`kill`, `stop`, …): dealt, skipped, recovery times.
    pub faults: BTreeMap<&'static str, FaultTally>,
    /// Recovery times of every fault together.
    pub recovery: Percentiles,
    /// Calls by outcome.
    pub calls: Calls,
    /// Restarts the supervisor made.
    pub restarts: u64,
    /// Servers brought back with `Host::restart` after they were marked failed.
    pub restarted_on_request: u64,
    /// HTTP sessions renewed.
    pub sessions_renewed: u64,
    /// Process groups seen, each checked once its connection was gone.
    pub process_groups: u64,
    /// Processes found alive in a group whose connection was gone (then killed).
    pub leaked_processes: u64,
    /// Panics anywhere in the process during the run.
    pub panics: u64,
    /// Threads, fds and RSS.
    pub resources: Resources,
    /// Each invariant and whether it held.
    pub invariants: Vec<InvariantCheck>,
    /// Fault kinds the run meant to deal and never did (too short a run, or
    /// no server they apply to at the time).
    pub never_dealt: Vec<&'static str>,
    /// Each time one did not (the first thousand).
    pub violations: Vec<Violation>,
    /// Violations not kept in `violations`.
    pub violations_not_kept: u64,
}

/// One server of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ServerLine {
    /// Its name.
    pub name: String,
    /// `stdio` or `http`.
    pub wire: Wire,
    /// Faults dealt to it, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// True when it did not come back and the run stopped dealing it faults.
    pub given_up: bool,
}

/// One fault kind's counts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultTally {
    /// Times dealt (applied or not).
    pub dealt: u64,
    /// Times it came up but no server it applies to was left.
    pub skipped: u64,
    /// Times the server answered again within the bound.
    pub recovered: u64,
    /// From the fault to the server answering again.
    pub recovery: Percentiles,
    #[serde(skip)]
    samples: Vec<Duration>,
}

/// A distribution of durations, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// How many.
    pub count: u64,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// Largest.
    pub max_ms: Option<f64>,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples`.
    pub fn of(samples: &[Duration]) -> Percentiles {
        let mut sorted = samples.to_vec();
        sorted.sort();
        let at = |p: f64| -> Option<f64> {
            if sorted.is_empty() {
                return None;
            }
            let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            Some(ms(sorted[rank - 1]))
        };
        Percentiles {
            count: sorted.len() as u64,
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            max_ms: sorted.last().map(|d| ms(*d)),
        }
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// Calls by outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Calls {
    /// Answered, on servers with no fault.
    pub healthy_ok: u64,
    /// Failed, on servers with no fault.
    pub healthy_failed: u64,
    /// Answered, on the faulted server (load and recovery pings).
    pub faulted_ok: u64,
    /// Failed with a typed error, on the faulted server.
    pub faulted_failed: u64,
    /// Answered tool results flagged `isError` (the tool ran and reported a failure).
    pub tool_errors: u64,
    /// Calls that ended past their timeout plus the slack.
    pub late: u64,
    /// Typed errors by kind (`timeout`, `transport/Exited`, …), on the faulted server.
    pub faulted_errors: BTreeMap<String, u64>,
    /// Typed errors by kind on servers with no fault.
    pub healthy_errors: BTreeMap<String, u64>,
}

/// A reading and its range over the run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Band<T> {
    /// Smallest seen.
    pub min: T,
    /// Largest seen.
    pub max: T,
}

impl<T: Copy + Ord> Band<T> {
    fn new(v: T) -> Band<T> {
        Band { min: v, max: v }
    }

    fn add(&mut self, v: T) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
}

/// This process's threads, fds and RSS over the run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Resources {
    /// After the warm-up, before the first fault.
    pub baseline: Sample,
    /// Threads, after each cycle.
    pub threads: Band<usize>,
    /// Open file descriptors, after each cycle.
    pub fds: Band<usize>,
    /// RSS in KiB, after each cycle.
    pub rss_kib: Band<u64>,
    /// After the host shut down.
    pub after_shutdown: Sample,
}

/// One invariant and whether it held.
#[derive(Debug, Clone, Serialize)]
pub struct InvariantCheck {
    /// Its name.
    pub name: Invariant,
    /// What it promises.
    pub promise: &'static str,
    /// False when the run could not test it (a cluster's promise in a run
    /// without nodes): it neither held nor broke.
    pub checked: bool,
    /// True when it was never broken.
    pub held: bool,
    /// Times it was broken.
    pub violations: u64,
}

impl Report {
    pub(crate) fn new(seed: u64, servers: Vec<ServerLine>, baseline: Sample) -> Report {
        Report {
            seed,
            servers,
            cycles: 0,
            elapsed_ms: 0,
            faults: BTreeMap::new(),
            recovery: Percentiles::default(),
            calls: Calls::default(),
            restarts: 0,
            restarted_on_request: 0,
            sessions_renewed: 0,
            process_groups: 0,
            leaked_processes: 0,
            panics: 0,
            resources: Resources {
                baseline,
                threads: Band::new(baseline.threads),
                fds: Band::new(baseline.fds),
                rss_kib: Band::new(baseline.rss_kib),
                after_shutdown: Sample::default(),
            },
            invariants: Vec::new(),
            never_dealt: Vec::new(),
            violations: Vec::new(),
            violations_not_kept: 0,
        }
    }

    /// The reading the band is measured from, once the warm-up is over.
    pub(crate) fn set_baseline(&mut self, baseline: Sample) {
        self.resources.baseline = baseline;
        self.resources.threads = Band::new(baseline.threads);
        self.resources.fds = Band::new(baseline.fds);
        self.resources.rss_kib = Band::new(baseline.rss_kib);
    }

    /// True when no invariant broke.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.violations_not_kept == 0
    }

    /// The invariants that broke, each once, in the report's order.
    pub fn broken(&self) -> Vec<Invariant> {
        Invariant::ALL
            .into_iter()
            .filter(|i| self.violations.iter().any(|v| v.invariant == *i))
            .collect()
    }

    pub(crate) fn violation(&mut self, v: Violation) {
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(v);
        } else {
            self.violations_not_kept += 1;
        }
    }

    pub(crate) fn dealt(&mut self, kind: &'static str, server: usize) {
        self.faults.entry(kind).or_default().dealt += 1;
        if let Some(line) = self.servers.get_mut(server) {
            *line.faults.entry(kind).or_default() += 1;
        }
    }

    pub(crate) fn node_killed(&mut self) {
        self.faults
            .entry(crate::nodes::NODE_KILL)
            .or_default()
            .dealt += 1;
    }

    pub(crate) fn skipped(&mut self, kind: &'static str) {
        self.faults.entry(kind).or_default().skipped += 1;
    }

    pub(crate) fn recovered(&mut self, kind: &'static str, after: Duration) {
        let tally = self.faults.entry(kind).or_default();
        tally.recovered += 1;
        if tally.samples.len() < MAX_SAMPLES {
            tally.samples.push(after);
        }
    }

    /// Adds one cycle's calls: those on `victim` are the faulted server's.
    pub(crate) fn add_calls(&mut self, by_server: &BTreeMap<String, Tally>, victim: &str) {
        for (server, t) in by_server {
            self.calls.tool_errors += t.tool_errors;
            self.calls.late += t.late;
            let (ok, failed, errors) = if server == victim {
                let c = &mut self.calls;
                (
                    &mut c.faulted_ok,
                    &mut c.faulted_failed,
                    &mut c.faulted_errors,
                )
            } else {
                let c = &mut self.calls;
                (
                    &mut c.healthy_ok,
                    &mut c.healthy_failed,
                    &mut c.healthy_errors,
                )
            };
            *ok += t.ok;
            *failed += t.failed();
            for (kind, n) in &t.errors {
                *errors.entry(kind.clone()).or_default() += n;
            }
        }
    }

    pub(crate) fn add_sample(&mut self, s: Sample) {
        self.resources.threads.add(s.threads);
        self.resources.fds.add(s.fds);
        self.resources.rss_kib.add(s.rss_kib);
    }

    /// Computes the distributions and the invariants' table, once the run is
    /// over: `planned`, the fault kinds the run meant to deal (those never
    /// dealt are named), and `clustered`, whether it ran nodes (the cluster's
    /// invariants are not checked without).
    pub(crate) fn seal(&mut self, elapsed: Duration, planned: &[&'static str], clustered: bool) {
        let mut never: Vec<&'static str> = planned
            .iter()
            .copied()
            .filter(|kind| self.faults.get(kind).is_none_or(|t| t.dealt == 0))
            .collect();
        never.sort_unstable();
        never.dedup();
        self.never_dealt = never;
        self.elapsed_ms = elapsed.as_millis() as u64;
        let mut all = Vec::new();
        for tally in self.faults.values_mut() {
            tally.recovery = Percentiles::of(&tally.samples);
            all.extend_from_slice(&tally.samples);
        }
        self.recovery = Percentiles::of(&all);
        self.invariants = Invariant::ALL
            .into_iter()
            .map(|name| {
                let n = self
                    .violations
                    .iter()
                    .filter(|v| v.invariant == name)
                    .count() as u64;
                InvariantCheck {
                    name,
                    promise: name.promise(),
                    checked: clustered || !name.needs_cluster(),
                    held: n == 0,
                    violations: n,
                }
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = Percentiles::of(&samples);
        assert_eq!(
            (p.count, p.p50_ms, p.p99_ms, p.max_ms),
            (100, Some(50.0), Some(99.0), Some(100.0))
        );
        assert_eq!(Percentiles::of(&[]).p50_ms, None);
    }

    #[test]
    fn a_broken_invariant_fails_the_report_and_is_named() {
        let line = ServerLine {
            name: "s".into(),
            wire: Wire::Stdio,
            faults: BTreeMap::new(),
            given_up: false,
        };
        let mut report = Report::new(1, vec![line], Sample::default());
        report.dealt("kill", 0);
        report.recovered("kill", Duration::from_millis(120));
        report.seal(Duration::from_secs(1), &["kill", "stop"], false);
        assert!(report.passed(), "{report}");
        assert!(report.to_string().ends_with("result: passed"));
        report.violation(Violation {
            invariant: Invariant::Recovered,
            cycle: Some(0),
            server: Some("s".into()),
            detail: "not back".into(),
        });
        report.seal(Duration::from_secs(1), &["kill", "stop"], false);
        assert!(!report.passed());
        assert_eq!(report.broken(), [Invariant::Recovered]);
        let text = report.to_string();
        assert!(text.contains("BROKEN recovered"), "{text}");
        assert!(text.ends_with("result: FAILED (recovered)"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["faults"]["kill"]["dealt"], 1);
        assert_eq!(json["violations"][0]["invariant"], "recovered");
        assert_eq!(json["invariants"][5]["name"], "recovered");
        assert_eq!(json["invariants"][5]["held"], false);
        // What the run never reached is said, not passed over.
        assert_eq!(report.never_dealt, ["stop"]);
        assert!(text.contains("never dealt: stop"), "{text}");
        let node = text
            .lines()
            .find(|l| l.contains("node-withdrawn"))
            .expect("the cluster's invariant is listed");
        assert!(
            node.contains("n/a") && node.contains("no cluster"),
            "{node}"
        );
        assert_eq!(json["invariants"][10]["checked"], false);
    }
}
