//! Readings of this process and of others from /proc (Linux): what the
//! resource band and the leak check measure, and what the tests read (through
//! the test kit). A reading that cannot be made is 0 or empty, never a panic.

use std::fs;

/// Threads, open file descriptors and resident memory at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sample {
    /// Threads of this process.
    pub threads: usize,
    /// Open file descriptors of this process.
    pub fds: usize,
    /// Resident set size, KiB.
    pub rss_kib: u64,
}

impl Sample {
    /// Reads this process now.
    pub fn now() -> Sample {
        Sample {
            threads: thread_count(),
            fds: fd_count(),
            rss_kib: rss_kib(),
        }
    }
}

/// Threads of this process.
pub fn thread_count() -> usize {
    fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Open file descriptors of this process; the one that lists them is not counted.
pub fn fd_count() -> usize {
    fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1))
}

/// This process's resident set size, KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// A `kB` line of `/proc/self/status` (`VmRSS:`, `VmHWM:`, …); 0 when unread.
pub fn status_kib(key: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What `/proc/<pid>/stat` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The process.
    pub pid: u32,
    /// Its state letter: `R`, `S`, `T` (stopped), `Z` (zombie), …
    pub state: char,
    /// Its parent.
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
}

impl Stat {
    /// Neither gone nor a zombie.
    pub fn is_live(&self) -> bool {
        self.state != 'Z'
    }
}

/// `pid`'s stat, if it exists.
pub fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: the fields start after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    Some(Stat {
        pid,
        state: fields.next()?.chars().next()?,
        ppid: fields.next()?.parse().ok()?,
        pgrp: fields.next()?.parse().ok()?,
    })
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

/// Live (not zombie) processes in process group `pgid`.
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|s| s.pgrp == pgid && s.is_live())
        .map(|s| s.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_as_running() {
        let now = Sample::now();
        assert!(
            now.threads >= 1 && now.fds >= 3 && now.rss_kib > 0,
            "{now:?}"
        );
        let me = std::process::id();
        let mine = stat(me).unwrap();
        assert!(mine.is_live() && mine.ppid > 0, "{mine:?}");
        assert!(live_group_members(mine.pgrp).contains(&me));
    }
}
