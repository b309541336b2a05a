//! What a chaos run found, and its printed summary.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// Threads, open file descriptors and RSS at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub threads: usize,
    pub fds: usize,
    pub rss_kib: u64,
}

impl Sample {
    pub fn now() -> Sample {
        Sample {
            threads: crate::proc::thread_count(),
            fds: crate::proc::fd_count(),
            rss_kib: crate::proc::rss_kib(),
        }
    }
}

/// Smallest and largest of a reading over the run.
#[derive(Clone, Copy, Debug)]
pub struct Band<T> {
    pub min: T,
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

/// Everything a run counted; `violations` lists each broken invariant.
#[derive(Debug)]
pub struct Report {
    pub seed: u64,
    pub stdio_servers: usize,
    pub http_servers: usize,
    pub cycles: usize,
    pub faults: BTreeMap<&'static str, usize>,
    pub healthy_ok: u64,
    pub healthy_failed: u64,
    pub faulted_ok: u64,
    pub faulted_failed: BTreeMap<String, u64>,
    /// Restarts the supervisor made (from the servers' restart counters).
    pub restarts: u64,
    /// Times a server reached `Failed` and came back through `Host::restart`.
    pub restarted_on_request: u64,
    pub sessions_renewed: u64,
    /// Process groups seen running at the end of a cycle, each checked once gone.
    pub process_groups: u64,
    pub leaked_processes: u64,
    pub panics: usize,
    pub baseline: Sample,
    pub threads: Band<usize>,
    pub fds: Band<usize>,
    pub rss_kib: Band<u64>,
    /// Threads and fds after the host shut down.
    pub after_shutdown: Sample,
    pub elapsed: Duration,
    pub violations: Vec<String>,
}

impl Report {
    pub fn new(seed: u64, stdio_servers: usize, http_servers: usize, baseline: Sample) -> Report {
        Report {
            seed,
            stdio_servers,
            http_servers,
            cycles: 0,
            faults: BTreeMap::new(),
            healthy_ok: 0,
            healthy_failed: 0,
            faulted_ok: 0,
            faulted_failed: BTreeMap::new(),
            restarts: 0,
            restarted_on_request: 0,
            sessions_renewed: 0,
            process_groups: 0,
            leaked_processes: 0,
            panics: 0,
            baseline,
            threads: Band::new(baseline.threads),
            fds: Band::new(baseline.fds),
            rss_kib: Band::new(baseline.rss_kib),
            after_shutdown: Sample::default(),
            elapsed: Duration::ZERO,
            violations: Vec::new(),
        }
    }

    pub fn add_sample(&mut self, s: Sample) {
        self.threads.add(s.threads);
        self.fds.add(s.fds);
        self.rss_kib.add(s.rss_kib);
    }

    pub fn violation(&mut self, cycle: usize, what: impl Into<String>) {
        let what = what.into();
        eprintln!("chaos: cycle {cycle}: VIOLATION: {what}");
        self.violations.push(format!("cycle {cycle}: {what}"));
    }

    pub fn faulted_failed_total(&self) -> u64 {
        self.faulted_failed.values().sum()
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "chaos: seed {}, {} cycles, {} stdio + {} HTTP servers, {:.1} s",
            self.seed,
            self.cycles,
            self.stdio_servers,
            self.http_servers,
            self.elapsed.as_secs_f64()
        )?;
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(f, "faults: {}", faults.join(", "))?;
        writeln!(
            f,
            "calls on healthy servers: {} ok, {} failed",
            self.healthy_ok, self.healthy_failed
        )?;
        let errors: Vec<String> = self
            .faulted_failed
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        writeln!(
            f,
            "calls on faulted servers: {} ok, {} ended with a typed error ({})",
            self.faulted_ok,
            self.faulted_failed_total(),
            errors.join(", ")
        )?;
        writeln!(
            f,
            "restarts: {} (Failed after the intensity limit, back on request: {}); HTTP sessions renewed: {}",
            self.restarts, self.restarted_on_request, self.sessions_renewed
        )?;
        writeln!(
            f,
            "process groups checked: {}, leaked processes: {}",
            self.process_groups, self.leaked_processes
        )?;
        writeln!(
            f,
            "threads: {}..{} (baseline {}, after shutdown {}); fds: {}..{} (baseline {}, after shutdown {})",
            self.threads.min,
            self.threads.max,
            self.baseline.threads,
            self.after_shutdown.threads,
            self.fds.min,
            self.fds.max,
            self.baseline.fds,
            self.after_shutdown.fds
        )?;
        writeln!(
            f,
            "RSS: {}..{} MiB (baseline {} MiB, max {} MiB)",
            mib(self.rss_kib.min),
            mib(self.rss_kib.max),
            mib(self.baseline.rss_kib),
            mib(self.rss_kib.max)
        )?;
        writeln!(f, "panics: {}", self.panics)?;
        write!(f, "violations: {}", self.violations.len())?;
        for v in &self.violations {
            write!(f, "\n  {v}")?;
        }
        Ok(())
    }
}
