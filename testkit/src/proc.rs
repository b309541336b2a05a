//! Readings of this process and of others from /proc, shared by the tests and
//! the chaos engine (which keeps its own copy, in the mcpvisor-chaos crate).

use std::fs;

/// Threads of this process.
pub fn thread_count() -> usize {
    fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Open file descriptors of this process (the one used to list them excluded).
pub fn fd_count() -> usize {
    fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1))
}

/// This process's resident set size in KiB.
pub fn rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The most this process has had resident since it started or since
/// [`reset_peak`] (VmHWM), in KiB: what a buffer that was freed again still shows in.
pub fn peak_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Sets the peak back to what is resident now (Linux 4.0+: `5` to
/// `/proc/self/clear_refs`); returns that, in KiB.
pub fn reset_peak() -> u64 {
    fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS (Linux 4.0 or later)");
    rss_kib()
}

/// What `/proc/<pid>/stat` says of a process.
pub struct Stat {
    pub pid: u32,
    /// One letter: `R`, `S`, `Z`, …
    pub state: String,
    pub ppid: String,
    pub pgrp: String,
}

/// Every process that can be read now.
pub fn processes() -> Vec<Stat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// `pid`'s stat, if it exists.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: the fields start after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    Some(Stat {
        pid,
        state: fields.next()?.to_string(),
        ppid: fields.next()?.to_string(),
        pgrp: fields.next()?.to_string(),
    })
}

/// Live (non-zombie) processes in process group `pgid`.
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    let pgid = pgid.to_string();
    processes()
        .into_iter()
        .filter(|s| s.pgrp == pgid && s.state != "Z")
        .map(|s| s.pid)
        .collect()
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != "Z")
}

/// Children of this process, zombies included (pid, state).
pub fn children() -> Vec<(u32, String)> {
    let me = std::process::id().to_string();
    processes()
        .into_iter()
        .filter(|s| s.ppid == me)
        .map(|s| (s.pid, s.state))
        .collect()
}
