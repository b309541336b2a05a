//! The leak check: every process group a connection ran in must be empty once
//! that connection is gone. A group found alive is counted, described and
//! killed, so one leak does not spill into the next cycles.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::proc::live_group_members;

/// How long a gone connection's teardown may take to reap its group.
const REAP_WAIT: Duration = Duration::from_secs(3);

/// Process groups seen and not yet found empty (a stdio server is its own group leader).
#[derive(Debug, Default)]
pub(crate) struct Groups {
    tracked: BTreeSet<u32>,
    /// Groups ever tracked.
    pub(crate) seen: u64,
}

/// A group that outlived its connection.
pub(crate) struct Leak {
    pub(crate) group: u32,
    pub(crate) members: Vec<u32>,
}

impl Groups {
    /// Tracks these groups (already tracked ones are ignored).
    pub(crate) fn track(&mut self, groups: impl IntoIterator<Item = u32>) {
        for g in groups {
            if self.tracked.insert(g) {
                self.seen += 1;
            }
        }
    }

    /// Every tracked group not in `in_use` must be empty within [`REAP_WAIT`];
    /// those that are not are returned, and killed.
    pub(crate) async fn check(&mut self, in_use: &BTreeSet<u32>) -> Vec<Leak> {
        let gone: Vec<u32> = self.tracked.difference(in_use).copied().collect();
        let mut leaks = Vec::new();
        for group in gone {
            let deadline = Instant::now() + REAP_WAIT;
            let mut left = live_group_members(group);
            while !left.is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                left = live_group_members(group);
            }
            if !left.is_empty() {
                let pgid = Pid::from_raw(group as i32);
                // A stopped process ignores SIGKILL until continued.
                let _ = killpg(pgid, Signal::SIGCONT);
                let _ = killpg(pgid, Signal::SIGKILL);
                leaks.push(Leak {
                    group,
                    members: left,
                });
            }
            self.tracked.remove(&group);
        }
        leaks
    }
}
