//! Opening a session: the first step and each switch between `initialize`
//! and a `server/discover` probe, as [`Era`] chooses them, and the server
//! reached at a stateless revision (2026-07-28), whose `_meta` every later
//! request carries.

use serde_json::Value;

use super::{
    ClientSession, Handled, HandshakeState, Ignored, InitializeFailure, Pending, SessionError,
    SessionEvent, ignored, no_reply,
};
use crate::mcp::discover::{SERVER_DISCOVER, read_discovered};
use crate::mcp::messages::{InitializeError, InitializeResult};
use crate::mcp::request_meta::RequestMeta;
use crate::mcp::revision::Revision;
use crate::state::era::{Era, EraError, Probe, Step};
use crate::wire::jsonrpc::{ErrorObject, Message, Request, RequestId};

impl<T> ClientSession<T> {
    /// Starts reaching the server: the first message to send (`initialize`,
    /// or a `server/discover` probe when a stateless revision comes first).
    /// A step that cannot be taken (no revision the settings allow) is
    /// [`SessionEvent::InitializeFailed`], as a refused handshake is.
    pub fn open(&mut self) -> Result<Handled<T>, SessionError> {
        match self.state {
            HandshakeState::New => {}
            HandshakeState::Closed => return Err(SessionError::Closed),
            _ => return Err(SessionError::AlreadyInitializing),
        }
        let step = self.era.first();
        Ok(self.take(step))
    }

    /// Does what `step` says: the message it sends, or the failure.
    pub(super) fn take(&mut self, step: Step) -> Handled<T> {
        match step {
            Step::Initialize(revision) => {
                self.params.protocol_version = revision.as_str().to_string();
                self.params.capabilities = self.offered.to_value_at(revision);
                self.state = HandshakeState::New;
                match self.initialize() {
                    Ok(msg) => Handled {
                        event: SessionEvent::Ignored(Ignored::Switched),
                        reply: Some(msg),
                    },
                    Err(_) => self.fail_open(EraError::NoCommonRevision),
                }
            }
            Step::Discover(revision) => {
                let id = self.alloc_id();
                self.pending.insert(id.clone(), Pending::Discover(revision));
                self.state = HandshakeState::Discovering(id.clone());
                let meta = self.meta_at(revision);
                Handled {
                    event: SessionEvent::Ignored(Ignored::Switched),
                    reply: Some(Message::Request(Request::new(
                        id,
                        SERVER_DISCOVER,
                        Some(meta.stamp(None)),
                    ))),
                }
            }
            Step::Stateless(_) | Step::Fail(_) => {
                // The first step is never "reached"; a failure is told as one.
                let error = match step {
                    Step::Fail(e) => e,
                    _ => EraError::NoCommonRevision,
                };
                self.fail_open(error)
            }
        }
    }

    pub(super) fn fail_open(&mut self, error: EraError) -> Handled<T> {
        self.state = HandshakeState::Closed;
        no_reply(SessionEvent::InitializeFailed(
            InitializeFailure::NoRevision(error),
        ))
    }

    pub(super) fn meta_at(&self, revision: Revision) -> RequestMeta {
        // What the host answers: a server asks in input_required rounds
        // only for what a client declares.
        RequestMeta::new(
            revision,
            self.offered,
            &self.params.client_info.name,
            &self.params.client_info.version,
        )
    }

    /// The `server/discover` probe got no answer in time: an older server
    /// may ignore a method it does not know, so `initialize` is sent instead
    /// (what to send is in the reply), or the connection fails.
    pub fn probe_unanswered(&mut self) -> Option<Handled<T>> {
        if !matches!(self.state, HandshakeState::Discovering(_)) {
            return None;
        }
        // The probe stays pending: a modern server slow to start may answer
        // it yet, while `initialize` waits (see `on_discover_answer`).
        let step = self.era.on_probe(Probe::Silent);
        Some(self.take(step))
    }

    /// Whether a `server/discover` probe awaits its answer.
    pub fn is_probing(&self) -> bool {
        matches!(self.state, HandshakeState::Discovering(_))
    }

    pub(super) fn on_discover_answer(
        &mut self,
        id: RequestId,
        revision: Revision,
        outcome: Result<Value, ErrorObject>,
    ) -> Handled<T> {
        if let HandshakeState::Initializing(init) = &self.state {
            // A probe answered after its wait ran out, with `initialize` sent
            // since: a modern server's answer is taken (and the handshake's
            // is not waited for); anything else is ignored.
            return match &outcome {
                Ok(result) if Era::answers_as_modern(result, revision) => {
                    let init = init.clone();
                    self.pending.remove(&init);
                    self.reached(revision, read_discovered(result, revision))
                }
                _ => ignored(Ignored::UnknownResponseId(id)),
            };
        }
        let step = match &outcome {
            Ok(result) => self.era.on_probe(Probe::Answered(result)),
            Err(error) => self.era.on_probe(Probe::Refused(error)),
        };
        let Step::Stateless(reached) = step else {
            return self.take(step);
        };
        let discovered = match &outcome {
            Ok(result) => read_discovered(result, reached),
            Err(_) => read_discovered(&Value::Object(Default::default()), reached),
        };
        self.reached(reached, discovered)
    }

    /// The server is reached at the stateless `revision`, as `discovered` says.
    pub(super) fn reached(
        &mut self,
        revision: Revision,
        discovered: Result<InitializeResult, InitializeError>,
    ) -> Handled<T> {
        match discovered {
            Ok(result) => {
                self.stateless = Some(self.meta_at(revision));
                let result = Box::new(result);
                self.state = HandshakeState::Ready(result.clone());
                // No `initialized`: there is no handshake to close.
                no_reply(SessionEvent::Ready(result))
            }
            Err(e) => {
                self.state = HandshakeState::Closed;
                no_reply(SessionEvent::InitializeFailed(InitializeFailure::Invalid(
                    e,
                )))
            }
        }
    }
}
