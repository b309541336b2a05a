//! MCP revisions this client speaks, and what each changes on the wire, as
//! data the session and the transports consult (not version comparisons
//! scattered through them).
//!
//! 2025-03-26 is the default and what a client sends unless asked otherwise;
//! a host opts in to later revisions with an ordered preference ([`Versions`]).

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
}

const REVISIONS: [(Revision, &str, Rules); 3] = [
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
        },
    ),
];

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 3] = [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ];

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

/// The revisions a client accepts, in order of preference: it offers the
/// first, and takes a server's answer only if it is one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions(Vec<Revision>);

impl Default for Versions {
    /// 2025-03-26 alone.
    fn default() -> Self {
        Versions(vec![Revision::V2025_03_26])
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
        Ok(Versions(list))
    }

    /// `revision` alone (what a renewed session must settle on again).
    pub fn only(revision: Revision) -> Versions {
        Versions(vec![revision])
    }

    /// The one to offer.
    pub fn offered(&self) -> Revision {
        self.0[0]
    }

    /// The revision `chosen` names, if it is one of these.
    pub fn accepts(&self, chosen: &str) -> Option<Revision> {
        chosen
            .parse::<Revision>()
            .ok()
            .filter(|r| self.0.contains(r))
    }

    /// Each, first preferred.
    pub fn iter(&self) -> impl Iterator<Item = Revision> + '_ {
        self.0.iter().copied()
    }

    /// The names, comma-separated (for messages and `mcpvisor settings`).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.0.iter().map(|r| r.as_str()).collect();
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
}
