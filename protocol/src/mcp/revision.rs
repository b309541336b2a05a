//! MCP revisions this client speaks, and what each changes on the wire, as
//! data the session and the transports consult (not version comparisons
//! scattered through them).
//!
//! 2025-03-26 is the default and what a client initializes with unless asked
//! otherwise; a host opts in to later revisions with an ordered preference
//! ([`Versions`]). 2026-07-28 has no handshake and no sessions: every request
//! carries its revision, so it is reached differently (a probe, or a server
//! that refuses `initialize` as only a modern server does), never offered in
//! `initialize`.

use std::fmt;
use std::str::FromStr;

/// One MCP revision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Revision {
    /// 2025-03-26: the default.
    #[default]
    V2025_03_26,
    /// 2025-06-18: protocol-version header, no batches, structured output,
    /// elicitation, resource links, titles.
    V2025_06_18,
    /// 2025-11-25: icons, elicitation defaults and URL mode, sampling with
    /// tools, tasks.
    V2025_11_25,
    /// 2026-07-28: stateless (no `initialize`, no sessions; each request's
    /// `_meta` carries the revision, the client's capabilities and info),
    /// `server/discover`, multi-round-trip requests instead of server→client
    /// requests, `subscriptions/listen`, tasks as an extension.
    V2026_07_28,
}

/// What a revision changes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rules {
    /// Every HTTP request after `initialize` carries `MCP-Protocol-Version`.
    pub version_header: bool,
    /// JSON-RPC batches may be sent and received (a batch is a protocol error otherwise).
    pub batches: bool,
    /// A tool's `structuredContent` must match its `outputSchema`.
    pub output_schema: bool,
    /// Servers may ask for input with `elicitation/create`.
    pub elicitation: bool,
    /// Elicitation in URL mode.
    pub url_elicitation: bool,
    /// Task-augmented requests (`tasks/get`, `tasks/result`, `tasks/cancel`).
    pub tasks: bool,
    /// Sampling requests may offer the model tools (`sampling.tools`).
    pub sampling_tools: bool,
    /// Tools, resources, templates and prompts may carry icons.
    pub icons: bool,
    /// No `initialize` and no sessions: each request carries the revision,
    /// capabilities and client info in its `_meta`.
    pub stateless: bool,
}

const REVISIONS: [(Revision, &str, Rules); 4] = [
    (
        Revision::V2025_03_26,
        "2025-03-26",
        Rules {
            version_header: false,
            batches: true,
            output_schema: false,
            elicitation: false,
            url_elicitation: false,
            tasks: false,
            sampling_tools: false,
            icons: false,
            stateless: false,
        },
    ),
    (
        Revision::V2025_06_18,
        "2025-06-18",
        Rules {
            version_header: true,
            batches: false,
            output_schema: true,
            elicitation: true,
            url_elicitation: false,
            tasks: false,
            sampling_tools: false,
            icons: false,
            stateless: false,
        },
    ),
    (
        Revision::V2025_11_25,
        "2025-11-25",
        Rules {
            version_header: true,
            batches: false,
            output_schema: true,
            elicitation: true,
            url_elicitation: true,
            tasks: true,
            sampling_tools: true,
            icons: true,
            stateless: false,
        },
    ),
    (
        Revision::V2026_07_28,
        "2026-07-28",
        Rules {
            version_header: true,
            batches: false,
            output_schema: true,
            elicitation: true,
            url_elicitation: true,
            // Tasks are an extension here, of another shape.
            tasks: false,
            sampling_tools: true,
            icons: true,
            stateless: true,
        },
    ),
];

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 4] = [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// Every revision reached through `initialize`, oldest first.
    pub const HANDSHAKE: [Revision; 3] = [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ];

    /// Reached through `initialize` (not stateless).
    pub fn initializes(self) -> bool {
        !self.rules().stateless
    }

    /// Its date, as `protocolVersion` names it.
    pub fn as_str(self) -> &'static str {
        REVISIONS[self as usize].1
    }

    /// What it changes on the wire.
    pub fn rules(self) -> Rules {
        REVISIONS[self as usize].2
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version this client does not speak, or a preference it cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionsError {
    /// Not one of the revisions.
    #[error("unknown protocol version {0:?}; use 2025-03-26, 2025-06-18 or 2025-11-25")]
    Unknown(String),
    /// An empty list.
    #[error("the protocol version list is empty")]
    Empty,
    /// A version named twice.
    #[error("protocol version {0} is listed twice")]
    Repeated(&'static str),
}

impl FromStr for Revision {
    type Err = VersionsError;

    fn from_str(s: &str) -> Result<Revision, VersionsError> {
        REVISIONS
            .iter()
            .find(|(_, name, _)| *name == s)
            .map(|(r, _, _)| *r)
            .ok_or_else(|| VersionsError::Unknown(s.chars().take(40).collect()))
    }
}

/// The revisions a client accepts, in order of preference: `initialize`
/// offers the first of them that has a handshake, and a server's answer is
/// taken only if it is one of them. 2026-07-28 first means: try it first
/// (probe with `server/discover`), then initialize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    list: Vec<Revision>,
    /// Whether a server that refuses `initialize` as a modern-only server
    /// may be reached at 2026-07-28: by default yes; a list the user gives
    /// says so by naming it.
    modern: bool,
}

impl Default for Versions {
    /// 2025-03-26 for `initialize`; 2026-07-28 for a server that refuses it.
    fn default() -> Self {
        Versions {
            list: vec![Revision::V2025_03_26],
            modern: true,
        }
    }
}

impl Versions {
    /// A preference from names, first preferred.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Versions, VersionsError> {
        let mut list = Vec::with_capacity(names.len());
        for name in names {
            let revision: Revision = name.as_ref().parse()?;
            if list.contains(&revision) {
                return Err(VersionsError::Repeated(revision.as_str()));
            }
            list.push(revision);
        }
        if list.is_empty() {
            return Err(VersionsError::Empty);
        }
        let modern = list.iter().any(|r| !r.initializes());
        Ok(Versions { list, modern })
    }

    /// The same preference with the stateless revision left out (for a
    /// transport that does not carry it yet); `None` when nothing is left.
    pub fn handshake_only(&self) -> Option<Versions> {
        let list: Vec<Revision> = self
            .list
            .iter()
            .copied()
            .filter(|r| r.initializes())
            .collect();
        (!list.is_empty()).then_some(Versions {
            list,
            modern: false,
        })
    }

    /// The same list, with 2026-07-28 never to be used (for a transport that
    /// does not carry it): a list of it alone then has nothing to open with.
    pub fn never_stateless(&self) -> Versions {
        Versions {
            list: self.list.clone(),
            modern: false,
        }
    }

    /// `revision` alone (what a renewed session must settle on again).
    pub fn only(revision: Revision) -> Versions {
        Versions {
            list: vec![revision],
            modern: !revision.initializes(),
        }
    }

    /// The one `initialize` offers: the first with a handshake, or 2025-03-26
    /// for a list of 2026-07-28 alone (which never initializes:
    /// [`Versions::handshake`] is `None` then).
    pub fn offered(&self) -> Revision {
        self.handshake().unwrap_or_default()
    }

    /// The first revision reached through `initialize`, if the list has one.
    pub fn handshake(&self) -> Option<Revision> {
        self.list.iter().copied().find(|r| r.initializes())
    }

    /// 2026-07-28, where it may be used: named in the list, or by default for
    /// a server that refuses `initialize` as only a modern server does.
    pub fn stateless(&self) -> Option<Revision> {
        self.modern.then_some(Revision::V2026_07_28)
    }

    /// 2026-07-28 comes first: try it before `initialize` (a `server/discover`
    /// probe), not only after a refusal.
    pub fn stateless_first(&self) -> bool {
        self.list.first().is_some_and(|r| !r.initializes())
    }

    /// The revision an `initialize` answer names, if it is one of these
    /// (2026-07-28 never is: it has no `initialize`).
    pub fn accepts(&self, chosen: &str) -> Option<Revision> {
        chosen
            .parse::<Revision>()
            .ok()
            .filter(|r| r.initializes() && self.list.contains(r))
    }

    /// Each, first preferred.
    pub fn iter(&self) -> impl Iterator<Item = Revision> + '_ {
        self.list.iter().copied()
    }

    /// The names, comma-separated (for messages and `mcpvisor settings`).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.list.iter().map(|r| r.as_str()).collect();
        names.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_offers_and_accepts_2025_03_26_alone() {
        let v = Versions::default();
        assert_eq!(v.offered().as_str(), "2025-03-26");
        assert_eq!(v.accepts("2025-03-26"), Some(Revision::V2025_03_26));
        assert_eq!(v.accepts("2025-06-18"), None);
        assert!(Revision::V2025_03_26.rules().batches);
        assert!(!Revision::V2025_03_26.rules().version_header);
    }

    #[test]
    fn a_preference_is_ordered_unique_and_known() {
        let v = Versions::parse(&["2025-11-25", "2025-03-26"]).unwrap();
        assert_eq!(v.offered(), Revision::V2025_11_25);
        assert_eq!(v.accepts("2025-03-26"), Some(Revision::V2025_03_26));
        assert_eq!(v.accepts("2025-06-18"), None);
        assert_eq!(v.names(), "2025-11-25,2025-03-26");
        assert_eq!(
            Versions::parse(&["2025-03-26", "2025-03-26"]),
            Err(VersionsError::Repeated("2025-03-26"))
        );
        assert_eq!(Versions::parse::<&str>(&[]), Err(VersionsError::Empty));
        assert!(matches!(
            Versions::parse(&["2024-11-05"]),
            Err(VersionsError::Unknown(_))
        ));
        for r in Revision::ALL {
            assert_eq!(r.as_str().parse::<Revision>(), Ok(r));
        }
        assert!(Revision::V2025_06_18.rules().version_header);
        assert!(!Revision::V2025_11_25.rules().batches);
    }

    #[test]
    fn revision_2026_07_28_is_never_offered_in_initialize_and_is_reached_unless_left_out() {
        let stateless = Revision::V2026_07_28;
        assert!(stateless.rules().stateless && !stateless.initializes());
        assert!(!Revision::HANDSHAKE.contains(&stateless));

        // By default: initialize at 2025-03-26; 2026-07-28 for a server that refuses it.
        let v = Versions::default();
        assert_eq!(v.handshake(), Some(Revision::V2025_03_26));
        assert_eq!(v.stateless(), Some(stateless));
        assert!(!v.stateless_first());
        assert_eq!(
            v.accepts("2026-07-28"),
            None,
            "no initialize answers with it"
        );

        // A list without it leaves it out; one that starts with it probes first.
        let without = Versions::parse(&["2025-11-25"]).unwrap();
        assert_eq!(without.stateless(), None);
        let first = Versions::parse(&["2026-07-28", "2025-03-26"]).unwrap();
        assert!(first.stateless_first());
        assert_eq!(first.stateless(), Some(stateless));
        assert_eq!(first.handshake(), Some(Revision::V2025_03_26));
        assert_eq!(first.offered(), Revision::V2025_03_26);
        assert_eq!(first.names(), "2026-07-28,2025-03-26");

        // Over a transport without it: the rest of the list, if any.
        assert_eq!(
            first.handshake_only().map(|v| v.names()),
            Some("2025-03-26".to_string())
        );
        assert_eq!(first.handshake_only().unwrap().stateless(), None);

        // 2026-07-28 alone never initializes, and where it may not be used
        // either, there is nothing to open with.
        let only = Versions::parse(&["2026-07-28"]).unwrap();
        assert_eq!(only.handshake(), None);
        assert_eq!(only.never_stateless().stateless(), None);
        assert_eq!(only.never_stateless().handshake(), None);
        assert_eq!(only.accepts("2025-03-26"), None);
        assert_eq!(Versions::only(stateless), only);
    }
}
