//! Readings of this process and of process groups from /proc (Linux): what
//! the resource band and the leak check measure. A reading that cannot be
//! made is 0 or empty, never a panic.

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

fn thread_count() -> usize {
    fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The descriptor that lists the directory is not counted.
fn fd_count() -> usize {
    fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1))
}

fn rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Live (not zombie) processes in process group `pgid`.
pub(crate) fn live_group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&pid| group_and_state(pid).is_some_and(|(g, state)| g == pgid && state != 'Z'))
        .collect()
}

/// The process group and state letter of `pid`, if it exists.
fn group_and_state(pid: u32) -> Option<(u32, char)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command may hold spaces and parentheses: the fields start after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((pgrp, state))
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
        let (group, _) = group_and_state(me).unwrap();
        assert!(live_group_members(group).contains(&me));
    }
}
