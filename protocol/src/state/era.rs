//! How a connection reaches its server, without I/O: through `initialize` at
//! a dated revision, or stateless at 2026-07-28, and when to switch from one
//! to the other. The driver (the actors' connection) sends what this says and
//! tells it what came back.
//!
//! The rules it keeps (the 2026-07-28 versioning page's, and the guide's):
//! - by default the connection initializes at the first revision with a
//!   handshake (2025-03-26 unless the settings say otherwise);
//! - with 2026-07-28 first in the list it probes with `server/discover`
//!   first, and falls back to `initialize` on anything that is not a modern
//!   answer (an answer, or a modern error), whatever the code, and on no answer;
//! - a server that refuses `initialize` as only a modern server does is
//!   reached at 2026-07-28 (unless the list leaves it out), once: never a loop;
//! - a modern error to a probe is not a reason to initialize: the probe is
//!   sent again, at most once (unless the revisions the server names are
//!   ones with a handshake: then it is initialized at one);
//! - a server that refused `initialize` is never asked it again.

use serde_json::Value;

use crate::mcp::modern_errors::{
    ModernError, identifies_modern_server, refuses_initialize_as_modern,
};
use crate::mcp::revision::{Revision, Versions};
use crate::wire::jsonrpc::ErrorObject;

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send `server/discover` at this (stateless) revision.
    Discover(Revision),
    /// Send `initialize` offering this revision.
    Initialize(Revision),
    /// The server is reached at this stateless revision: list its tools.
    Stateless(Revision),
    /// No revision both sides speak: the connection fails with this.
    Fail(EraError),
}

/// Why no revision could be settled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EraError {
    /// The server speaks only 2026-07-28 and the list leaves it out.
    #[error(
        "the server speaks only MCP 2026-07-28, which the protocol_versions setting leaves out"
    )]
    ModernLeftOut,
    /// The server is older and the list has no revision with a handshake.
    #[error(
        "the server does not speak MCP 2026-07-28 and protocol_versions names no older revision"
    )]
    NoHandshake,
    /// The server speaks no revision of the list.
    #[error("the server speaks none of the revisions in protocol_versions")]
    NoCommonRevision,
    /// `initialize` was refused as a modern server refuses it, and the probe
    /// that followed was not answered as a modern server answers.
    #[error(
        "the server refused initialize as only an MCP 2026-07-28 server does, but did not answer server/discover as one"
    )]
    RefusedBoth,
    /// The probe was refused twice with a 2026-07-28 error.
    #[error("the server refused server/discover twice with an MCP 2026-07-28 error")]
    ProbeRefused,
}

/// What came back for a `server/discover` probe.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe<'a> {
    /// A result.
    Answered(&'a Value),
    /// An error.
    Refused(&'a ErrorObject),
    /// No answer in time, or the connection gave none (an older server may
    /// ignore a method it does not know).
    Silent,
}

/// The choice of how to reach one server, across the steps it takes.
#[derive(Debug, Clone)]
pub struct Era {
    versions: Versions,
    /// A modern error asked for a revision once already.
    probe_retried: bool,
    /// A probe was sent (a refused `initialize` does not lead to another).
    probed: bool,
    /// `initialize` was refused as a modern server refuses it.
    initialize_refused: bool,
}

impl Era {
    /// The choice under the host's preference.
    pub fn new(versions: Versions) -> Era {
        Era {
            versions,
            probe_retried: false,
            probed: false,
            initialize_refused: false,
        }
    }

    /// The first step.
    pub fn first(&mut self) -> Step {
        match (
            self.versions.stateless_first(),
            self.versions.stateless(),
            self.versions.handshake(),
        ) {
            (true, Some(modern), _) | (_, Some(modern), None) => self.probe(modern),
            (_, _, Some(revision)) => Step::Initialize(revision),
            (_, None, None) => Step::Fail(EraError::NoCommonRevision),
        }
    }

    fn probe(&mut self, revision: Revision) -> Step {
        self.probed = true;
        Step::Discover(revision)
    }

    fn initialize_or(&self, otherwise: EraError) -> Step {
        if self.initialize_refused {
            return Step::Fail(EraError::RefusedBoth);
        }
        self.versions
            .handshake()
            .map_or(Step::Fail(otherwise), Step::Initialize)
    }

    /// Whether a probe's result is a modern server's answer: an object that,
    /// if it lists its revisions, lists this one.
    pub fn answers_as_modern(result: &Value, modern: Revision) -> bool {
        result.is_object()
            && match result.get("supportedVersions") {
                None | Some(Value::Null) => true,
                Some(Value::Array(list)) => list.iter().any(|v| v == modern.as_str()),
                Some(_) => false,
            }
    }

    /// What the probe's answer means.
    pub fn on_probe(&mut self, probe: Probe<'_>) -> Step {
        let Some(modern) = self.versions.stateless() else {
            return self.initialize_or(EraError::NoCommonRevision);
        };
        match probe {
            Probe::Answered(result) => {
                // Not an answer a modern server gives (not an object, or a
                // list of revisions without this one): initialize where it can be.
                if Era::answers_as_modern(result, modern) {
                    Step::Stateless(modern)
                } else {
                    self.initialize_or(EraError::NoCommonRevision)
                }
            }
            Probe::Refused(error) if identifies_modern_server(error) => {
                match ModernError::read(error) {
                    Some(ModernError::UnsupportedVersion { supported, .. })
                        if !self.probe_retried && supported.contains(&modern) =>
                    {
                        // It asks for the revision that was sent (some servers
                        // refuse a first request so): once more, then no more.
                        self.probe_retried = true;
                        Step::Discover(modern)
                    }
                    Some(ModernError::UnsupportedVersion { .. }) if self.probe_retried => {
                        Step::Fail(EraError::NoCommonRevision)
                    }
                    Some(ModernError::UnsupportedVersion { supported, .. })
                        if supported.iter().any(|r| r.initializes()) =>
                    {
                        self.initialize_or(EraError::NoCommonRevision)
                    }
                    Some(ModernError::UnsupportedVersion { .. }) => {
                        Step::Fail(EraError::NoCommonRevision)
                    }
                    // A header or a capability: a modern server that wants
                    // the probe otherwise; once more, then no more.
                    _ if !self.probe_retried => {
                        self.probe_retried = true;
                        Step::Discover(modern)
                    }
                    _ => Step::Fail(EraError::ProbeRefused),
                }
            }
            Probe::Refused(_) | Probe::Silent => self.initialize_or(EraError::NoHandshake),
        }
    }

    /// What a refused `initialize` means: a modern-only server is probed at
    /// 2026-07-28 (once); anything else is a failed handshake (`None`: the
    /// connection fails as it always has).
    pub fn on_initialize_refused(&mut self, error: &ErrorObject) -> Option<Step> {
        if !refuses_initialize_as_modern(error) || self.probed {
            return None;
        }
        self.initialize_refused = true;
        Some(match self.versions.stateless() {
            Some(modern) => self.probe(modern),
            None => Step::Fail(EraError::ModernLeftOut),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MODERN: Revision = Revision::V2026_07_28;

    fn error(code: i64, data: Value) -> ErrorObject {
        ErrorObject {
            code,
            message: "m".into(),
            data: Some(data),
        }
    }

    #[test]
    fn by_default_it_initializes_and_reaches_a_modern_only_server_once() {
        let mut era = Era::new(Versions::default());
        assert_eq!(era.first(), Step::Initialize(Revision::V2025_03_26));
        let modern_only = error(-32022, json!({"supported": ["2026-07-28"]}));
        assert_eq!(
            era.on_initialize_refused(&modern_only),
            Some(Step::Discover(MODERN))
        );
        assert_eq!(
            era.on_probe(Probe::Answered(
                &json!({"supportedVersions": ["2026-07-28"]})
            )),
            Step::Stateless(MODERN)
        );
        // A second refusal of initialize leads to no second probe.
        assert_eq!(era.on_initialize_refused(&modern_only), None);

        // Refused, then a probe not answered as a modern server: never initialize again.
        for probe in [Probe::Silent, Probe::Refused(&error(-32601, json!(null)))] {
            let mut era = Era::new(Versions::default());
            era.first();
            era.on_initialize_refused(&modern_only);
            assert_eq!(era.on_probe(probe), Step::Fail(EraError::RefusedBoth));
        }

        // Any other refusal is a failed handshake, as before.
        let mut era = Era::new(Versions::default());
        era.first();
        assert_eq!(era.on_initialize_refused(&error(-32602, json!({}))), None);
    }

    #[test]
    fn a_list_without_2026_07_28_says_why_a_modern_server_is_out_of_reach() {
        let mut era = Era::new(Versions::parse(&["2025-11-25"]).unwrap());
        assert_eq!(era.first(), Step::Initialize(Revision::V2025_11_25));
        assert_eq!(
            era.on_initialize_refused(&error(-32601, json!(null))),
            Some(Step::Fail(EraError::ModernLeftOut))
        );
        // 2026-07-28 alone where it may not be used: nothing is sent at all.
        let mut era = Era::new(Versions::parse(&["2026-07-28"]).unwrap().never_stateless());
        assert_eq!(era.first(), Step::Fail(EraError::NoCommonRevision));
    }

    #[test]
    fn probing_first_falls_back_on_anything_but_a_modern_answer() {
        let first = || Era::new(Versions::parse(&["2026-07-28", "2025-06-18"]).unwrap());
        let mut era = first();
        assert_eq!(era.first(), Step::Discover(MODERN));
        for answer in [
            Probe::Refused(&error(-32601, json!(null))),
            Probe::Refused(&error(-32602, json!(null))),
            Probe::Refused(&error(-32000, json!(null))),
            Probe::Silent,
        ] {
            let mut era = first();
            era.first();
            assert_eq!(
                era.on_probe(answer.clone()),
                Step::Initialize(Revision::V2025_06_18),
                "{answer:?}"
            );
        }
        // An answer that lists other revisions only: initialize instead.
        let mut era = first();
        era.first();
        assert_eq!(
            era.on_probe(Probe::Answered(
                &json!({"supportedVersions": ["2027-01-01"]})
            )),
            Step::Initialize(Revision::V2025_06_18)
        );
        // 2026-07-28 alone and an older server: nothing to fall back to.
        let mut only = Era::new(Versions::parse(&["2026-07-28"]).unwrap());
        assert_eq!(only.first(), Step::Discover(MODERN));
        assert_eq!(
            only.on_probe(Probe::Silent),
            Step::Fail(EraError::NoHandshake)
        );
    }

    #[test]
    fn a_modern_error_to_the_probe_is_answered_once_never_by_initializing() {
        let mut era = Era::new(Versions::parse(&["2026-07-28", "2025-03-26"]).unwrap());
        era.first();
        let again = error(
            -32022,
            json!({"supported": ["2026-07-28"], "requested": "2026-07-28"}),
        );
        assert_eq!(era.on_probe(Probe::Refused(&again)), Step::Discover(MODERN));
        assert_eq!(
            era.on_probe(Probe::Refused(&again)),
            Step::Fail(EraError::NoCommonRevision),
            "bounded"
        );
        // A modern server refusing the probe for a header: once more, then no more.
        let mut era = Era::new(Versions::parse(&["2026-07-28"]).unwrap());
        era.first();
        let header = error(-32020, json!(null));
        assert_eq!(
            era.on_probe(Probe::Refused(&header)),
            Step::Discover(MODERN)
        );
        assert_eq!(
            era.on_probe(Probe::Refused(&header)),
            Step::Fail(EraError::ProbeRefused)
        );
        // What is not a modern answer is no answer: initialize instead.
        for answer in [
            json!(null),
            json!([]),
            json!({"supportedVersions": "2026-07-28"}),
        ] {
            let mut era = Era::new(Versions::parse(&["2026-07-28", "2025-03-26"]).unwrap());
            era.first();
            assert_eq!(
                era.on_probe(Probe::Answered(&answer)),
                Step::Initialize(Revision::V2025_03_26),
                "{answer}"
            );
        }
        // A modern server that names only revisions this client cannot speak.
        let mut era = Era::new(Versions::parse(&["2026-07-28", "2025-03-26"]).unwrap());
        era.first();
        assert_eq!(
            era.on_probe(Probe::Refused(&error(
                -32022,
                json!({"supported": ["2099-01-01"]})
            ))),
            Step::Fail(EraError::NoCommonRevision)
        );
    }
}
