//! Readings of this process and of others from /proc: the chaos engine's
//! (`mcpvisor_chaos::proc`), and what only the tests read besides.

use std::fs;

pub use mcpvisor_chaos::proc::{
    Stat, fd_count, live_group_members, processes, rss_kib, stat, status_kib, thread_count,
};

/// The most this process has had resident since it started or since
/// [`reset_peak`] (VmHWM), in KiB: what a buffer that was freed again still shows in.
pub fn peak_kib() -> u64 {
    status_kib("VmHWM:")
}

/// Sets the peak back to what is resident now (Linux 4.0+: `5` to
/// `/proc/self/clear_refs`); returns that, in KiB.
pub fn reset_peak() -> u64 {
    fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS (Linux 4.0 or later)");
    rss_kib()
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.is_live())
}

/// The parent of `pid`, while it exists.
pub fn parent_of(pid: u32) -> Option<u32> {
    stat(pid).map(|s| s.ppid)
}

/// Children of this process, zombies included (pid, state).
pub fn children() -> Vec<(u32, char)> {
    let me = std::process::id();
    processes()
        .into_iter()
        .filter(|s| s.ppid == me)
        .map(|s| (s.pid, s.state))
        .collect()
}
