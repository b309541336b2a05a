//! What this process uses: CPU time (all threads), resident memory, threads
//! and open file descriptors.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

/// User plus system CPU time of every thread of this process so far.
pub fn cpu_time() -> Duration {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(usage) => {
            let user = usage.user_time();
            let system = usage.system_time();
            let micros =
                (user.tv_sec() + system.tv_sec()) * 1_000_000 + (user.tv_usec() + system.tv_usec());
            Duration::from_micros(micros.max(0) as u64)
        }
        Err(_) => Duration::ZERO,
    }
}

/// Resident memory of this process, in KiB, split as `/proc/self/status` does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    /// `VmRSS`: everything resident.
    pub total_kib: u64,
    /// `RssAnon`: heap and stacks, without mapped files (code, libraries).
    pub anon_kib: u64,
}

/// Reads [`Resident`] for this process; zeros where `/proc` cannot be read.
pub fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Resident {
        total_kib: field("VmRSS:"),
        anon_kib: field("RssAnon:"),
    }
}

/// Threads of this process (`Threads:` of `/proc/self/status`); 0 where unreadable.
pub fn threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0)
}

/// Open file descriptors of this process (entries of `/proc/self/fd`, less
/// the one reading it); 0 where unreadable.
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count().saturating_sub(1) as u64)
}

/// Raises this process's soft limit of open files to its hard limit: a host
/// of a thousand stdio servers holds three pipes each. Only the harness does
/// this; the library leaves the limit to whoever embeds it.
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    Ok(hard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_while_working() {
        let before = cpu_time();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        assert!(cpu_time() > before);
    }

    #[test]
    fn resident_memory_is_read() {
        let r = resident();
        assert!(r.total_kib > 0 && r.anon_kib > 0 && r.anon_kib <= r.total_kib);
    }

    #[test]
    fn threads_and_fds_are_counted() {
        assert!(threads() >= 1);
        // stdin, stdout and stderr at least (other tests open files meanwhile).
        assert!(open_fds() >= 3);
    }
}
