//! The report as people read it: a line per fault kind with its recovery
//! times, the calls by outcome, the resources, each invariant and whether it
//! held, then the violations and the verdict.

use std::collections::BTreeMap;
use std::fmt;

use super::Report;

fn shown_ms(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(ms) if ms >= 1000.0 => format!("{:.2} s", ms / 1000.0),
        Some(ms) => format!("{ms:.0} ms"),
    }
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = self
            .servers
            .iter()
            .map(|s| {
                let lost = if s.given_up { ", given up" } else { "" };
                format!("{} ({}{lost})", s.name, s.wire.as_str())
            })
            .collect();
        writeln!(
            f,
            "chaos: seed {}, {} cycles in {:.1} s; servers: {}",
            self.seed,
            self.cycles,
            self.elapsed_ms as f64 / 1000.0,
            servers.join(", ")
        )?;
        writeln!(
            f,
            "faults (recovery: from the fault to the server answering again):"
        )?;
        for (kind, t) in &self.faults {
            let skipped = if t.skipped > 0 {
                format!(", {} skipped (no server it applies to)", t.skipped)
            } else {
                String::new()
            };
            writeln!(
                f,
                "  {kind:<24} dealt {:>3}, recovered {:>3}, p50 {}, p99 {}{skipped}",
                t.dealt,
                t.recovered,
                shown_ms(t.recovery.p50_ms),
                shown_ms(t.recovery.p99_ms),
            )?;
        }
        if !self.never_dealt.is_empty() {
            writeln!(
                f,
                "  never dealt: {} (a longer run, or servers they apply to, would reach them)",
                self.never_dealt.join(", ")
            )?;
        }
        writeln!(
            f,
            "  {:<24} {} recoveries, p50 {}, p99 {}, max {}",
            "all",
            self.recovery.count,
            shown_ms(self.recovery.p50_ms),
            shown_ms(self.recovery.p99_ms),
            shown_ms(self.recovery.max_ms)
        )?;
        let c = &self.calls;
        writeln!(
            f,
            "calls on healthy servers: {} ok, {} failed ({})",
            c.healthy_ok,
            c.healthy_failed,
            counts(&c.healthy_errors)
        )?;
        writeln!(
            f,
            "calls on faulted servers: {} ok, {} typed errors ({})",
            c.faulted_ok,
            c.faulted_failed,
            counts(&c.faulted_errors)
        )?;
        writeln!(
            f,
            "tool results flagged isError: {}; calls past their timeout and slack: {}",
            c.tool_errors, c.late
        )?;
        writeln!(
            f,
            "restarts: {} (back on request after failed: {}); HTTP sessions renewed: {}",
            self.restarts, self.restarted_on_request, self.sessions_renewed
        )?;
        writeln!(
            f,
            "process groups checked: {}, leaked processes: {}; panics: {}",
            self.process_groups, self.leaked_processes, self.panics
        )?;
        let r = &self.resources;
        writeln!(
            f,
            "threads {}..{} (baseline {}, after shutdown {}); fds {}..{} (baseline {}, after shutdown {}); RSS {}..{} MiB (baseline {})",
            r.threads.min,
            r.threads.max,
            r.baseline.threads,
            r.after_shutdown.threads,
            r.fds.min,
            r.fds.max,
            r.baseline.fds,
            r.after_shutdown.fds,
            mib(r.rss_kib.min),
            mib(r.rss_kib.max),
            mib(r.baseline.rss_kib)
        )?;
        writeln!(f, "invariants:")?;
        for check in &self.invariants {
            let mark = match (check.checked, check.held) {
                (false, _) => "n/a   ",
                (true, true) => "ok    ",
                (true, false) => "BROKEN",
            };
            let times = match (check.checked, check.held) {
                (false, _) => " (not checked: no cluster in this run)".to_string(),
                (true, true) => String::new(),
                (true, false) => format!(" ({} times)", check.violations),
            };
            writeln!(
                f,
                "  {mark} {:<20} {}{times}",
                check.name.as_str(),
                check.promise
            )?;
        }
        if !self.violations.is_empty() {
            writeln!(f, "violations:")?;
            for v in &self.violations {
                writeln!(f, "  {v}")?;
            }
            if self.violations_not_kept > 0 {
                writeln!(f, "  … and {} more", self.violations_not_kept)?;
            }
        }
        if self.passed() {
            write!(f, "result: passed")
        } else {
            let broken: Vec<&str> = self.broken().iter().map(|i| i.as_str()).collect();
            write!(f, "result: FAILED ({})", broken.join(", "))
        }
    }
}
