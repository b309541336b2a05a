//! Stand-in actors for unit tests: each forwards what it receives to a channel,
//! so a test sees exactly what the code under test sent.

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;

/// Records every message of type `M` it receives.
pub(crate) struct Recorder<M>(std::marker::PhantomData<fn() -> M>);

impl<M: ractor::Message> Actor for Recorder<M> {
    type Msg = M;
    type State = mpsc::UnboundedSender<M>;
    type Arguments = mpsc::UnboundedSender<M>;

    async fn pre_start(
        &self,
        _myself: ActorRef<M>,
        tx: mpsc::UnboundedSender<M>,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(tx)
    }

    async fn handle(
        &self,
        _myself: ActorRef<M>,
        msg: M,
        tx: &mut mpsc::UnboundedSender<M>,
    ) -> Result<(), ActorProcessingErr> {
        let _ = tx.send(msg);
        Ok(())
    }
}

/// A recorder of `M` and the channel that receives what it records.
pub(crate) async fn recorder<M: ractor::Message>() -> (ActorRef<M>, mpsc::UnboundedReceiver<M>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (actor, _) = Actor::spawn(None, Recorder(std::marker::PhantomData), tx)
        .await
        .expect("spawn a recorder");
    (actor, rx)
}
