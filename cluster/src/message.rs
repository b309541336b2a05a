//! What a node's agent is sent: by other nodes (a frame, a `confirm` call),
//! or by its own host, timers and tasks. Only frames and `confirm` calls
//! cross the wire; a frame's key (see `keys`) rides in the cast's metadata.

use std::sync::Arc;

use ractor::message::{BoxedDowncastErr, SerializedMessage};
use ractor::{ActorId, RpcReplyPort};
use serde::{Deserialize, Serialize};

use crate::keys::Key;
use crate::wire::Wire;

/// The variant a `confirm` call crosses as.
const CONFIRM: &str = "confirm";

/// One encoded [`Wire`] for another node's agent, with the key that node
/// gave this one (none in a `hello`).
pub(crate) struct Frame {
    pub(crate) key: Option<Key>,
    pub(crate) bytes: Arc<[u8]>,
}

/// A `confirm` call as it crosses: "is `offer` the key you gave node `from`?"
#[derive(Serialize, Deserialize)]
struct ConfirmArgs {
    from: String,
    offer: String,
}

/// To a node's agent: from another node, or from its own host and timers.
pub(crate) enum AgentMsg {
    /// A message from another node, with the key it came with.
    Peer { key: Option<Key>, wire: Wire },
    /// A message from another node that could not be read: why (never its content).
    Unreadable(String),
    /// A message for another node's agent.
    Frame(Frame),
    /// Another node asks whether `offer` is the key this one gave node `from`.
    Confirm {
        from: String,
        offer: Key,
        reply: RpcReplyPort<Vec<u8>>,
    },
    /// The answer to this node's own `confirm` of a key `node` offered,
    /// through its agent `cell`.
    Confirmed {
        node: Arc<str>,
        cell: ActorId,
        offer: Key,
        confirmed: bool,
    },
    /// Time to tell every node this one is alive, and to check who went silent.
    Tick,
    /// This host's servers or routes changed: advertise them soon.
    LocalChanged,
    /// Advertise this host's servers to every node now.
    Advertise,
    /// Try the configured nodes this one is not connected to.
    Rejoin,
    /// A call another node asked for ended here (answered or cancelled).
    InboundDone { from: String, id: u64 },
    /// Something happened to one of this host's servers, for the other nodes.
    LocalEvent {
        kind: &'static str,
        server: String,
        text: String,
    },
}

/// A `confirm` call's answer as it crosses.
pub(crate) fn confirmation(confirmed: bool) -> Vec<u8> {
    vec![u8::from(confirmed)]
}

impl ractor::Message for AgentMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        match self {
            AgentMsg::Frame(frame) => Ok(SerializedMessage::Cast {
                variant: String::new(),
                args: frame.bytes.to_vec(),
                metadata: frame.key.map(Key::to_bytes),
            }),
            AgentMsg::Confirm { from, offer, reply } => Ok(SerializedMessage::Call {
                variant: CONFIRM.into(),
                args: serde_json::to_vec(&ConfirmArgs {
                    from,
                    offer: offer.to_text(),
                })
                .map_err(|_| BoxedDowncastErr)?,
                reply,
                metadata: None,
            }),
            // Everything else is a node's own business.
            _ => Err(BoxedDowncastErr),
        }
    }

    fn deserialize(message: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        match message {
            SerializedMessage::Cast { args, metadata, .. } => {
                let key = metadata.as_deref().and_then(Key::from_bytes);
                Ok(match serde_json::from_slice::<Wire>(&args) {
                    Ok(wire) => AgentMsg::Peer { key, wire },
                    // Where and what kind of error, not the text: a call's
                    // arguments are its caller's data.
                    Err(e) => AgentMsg::Unreadable(format!(
                        "{:?} error at line {} column {}",
                        e.classify(),
                        e.line(),
                        e.column()
                    )),
                })
            }
            SerializedMessage::Call {
                variant,
                args,
                reply,
                ..
            } if variant == CONFIRM => {
                let asked = serde_json::from_slice::<ConfirmArgs>(&args)
                    .ok()
                    .and_then(|a| Some((a.from, Key::from_text(&a.offer)?)));
                Ok(match asked {
                    Some((from, offer)) => AgentMsg::Confirm { from, offer, reply },
                    None => {
                        let _ = reply.send(confirmation(false));
                        AgentMsg::Unreadable("an unreadable confirm".into())
                    }
                })
            }
            // No reply port survives: the caller gets a closed channel.
            _ => Ok(AgentMsg::Unreadable(
                "neither a message nor a confirm".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ractor::Message;

    fn roundtrip(wire: &Wire, key: Option<Key>) -> AgentMsg {
        let bytes = wire.encode(1 << 20).unwrap();
        let serialized = AgentMsg::Frame(Frame {
            key,
            bytes: bytes.into(),
        })
        .serialize()
        .unwrap();
        AgentMsg::deserialize(serialized).unwrap()
    }

    #[test]
    fn a_call_crosses_with_its_key_and_comes_back_the_same() {
        let call = Wire::Call {
            from: "b".into(),
            id: 7,
            tool: "mcp__echo__say".into(),
            arguments: Some(serde_json::json!({"text": "hi"})),
            timeout_ms: Some(500),
            progress: true,
        };
        let key = Key::random();
        let AgentMsg::Peer {
            key: came_with,
            wire:
                Wire::Call {
                    from,
                    id,
                    tool,
                    arguments,
                    timeout_ms,
                    progress,
                },
        } = roundtrip(&call, key)
        else {
            panic!("not a call");
        };
        assert!(came_with == key);
        assert_eq!(
            (from.as_str(), id, tool.as_str(), timeout_ms, progress),
            ("b", 7, "mcp__echo__say", Some(500), true)
        );
        assert_eq!(arguments.unwrap()["text"], "hi");
        let hello = Wire::Hello {
            from: "b".into(),
            offer: Key::random().unwrap().to_text(),
        };
        assert!(matches!(
            roundtrip(&hello, None),
            AgentMsg::Peer {
                key: None,
                wire: Wire::Hello { .. }
            }
        ));
    }

    #[test]
    fn garbage_is_unreadable_and_its_content_is_not_repeated() {
        let serialized = SerializedMessage::Cast {
            variant: String::new(),
            args: br#"{"t":"call","from":"secret-argument-value"#.to_vec(),
            metadata: Some(b"not a key".to_vec()),
        };
        let AgentMsg::Unreadable(why) = AgentMsg::deserialize(serialized).unwrap() else {
            panic!("garbage was read");
        };
        assert!(!why.contains("secret"), "{why}");
    }

    #[test]
    fn only_frames_and_confirms_cross_the_wire() {
        assert!(AgentMsg::Tick.serialize().is_err());
        assert!(AgentMsg::Advertise.serialize().is_err());
        let (reply, _answer) = tokio::sync::oneshot::channel();
        let confirm = AgentMsg::Confirm {
            from: "b".into(),
            offer: Key::random().unwrap(),
            reply: reply.into(),
        };
        let SerializedMessage::Call { variant, args, .. } = confirm.serialize().unwrap() else {
            panic!("a confirm is a call");
        };
        assert_eq!(variant, CONFIRM);
        assert!(serde_json::from_slice::<ConfirmArgs>(&args).is_ok());
    }
}
