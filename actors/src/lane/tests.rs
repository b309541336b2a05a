//! The lane over recording actors: calls answered, cancelled (with the
//! notification on the wire), failed alone, closed, and timed out by the
//! connection's own deadline task while nobody polls the call.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, ErrorResponse, Response};
use mcpvisor_protocol::{Message, RequestId};
use serde_json::json;

use super::{CallLane, LaneWriter};
use crate::error::CallError;
use crate::messages::{ServerMsg, TransportMsg};
use crate::test_actors::server_and_transport;

async fn lane() -> (
    Arc<CallLane>,
    tokio::sync::mpsc::UnboundedReceiver<ServerMsg>,
    tokio::sync::mpsc::UnboundedReceiver<TransportMsg>,
) {
    let ((server, server_rx), (transport, transport_rx)) = server_and_transport().await;
    let lane = Arc::new(CallLane::new(
        Arc::from("s"),
        server,
        LaneWriter::Actor(transport),
        Arc::new(AtomicI64::new(0)),
        4,
    ));
    lane.start_deadlines();
    lane.open();
    (lane, server_rx, transport_rx)
}

fn answer(id: i64, text: &str) -> Message {
    Message::Response(Response {
        id: RequestId::Number(id),
        result: json!({"content": [{"type": "text", "text": text}]}),
    })
}

#[tokio::test]
async fn an_answer_completes_its_call_and_a_second_goes_to_the_actor() {
    let (lane, _s, mut t) = lane().await;
    let (id, answer_rx) = lane
        .start("echo", None, None, None, Duration::from_secs(60))
        .unwrap();
    let Some(TransportMsg::Send(out)) = t.recv().await else {
        panic!("the request was written")
    };
    assert_eq!(out.id, Some(RequestId::Number(id)));
    assert!(lane.complete(answer(id, "hi")).is_none());
    assert_eq!(answer_rx.await.unwrap().unwrap().text(), "hi");
    assert!(
        lane.complete(answer(id, "again")).is_some(),
        "not a call any more"
    );
}

#[tokio::test]
async fn a_cancel_answers_the_caller_and_tells_the_server() {
    let (lane, _s, mut t) = lane().await;
    let (id, answer_rx) = lane
        .start("slow", None, None, None, Duration::from_secs(60))
        .unwrap();
    let _request = t.recv().await;
    lane.cancel(id);
    assert!(matches!(
        answer_rx.await.unwrap(),
        Err(CallError::Cancelled)
    ));
    assert!(matches!(t.recv().await, Some(TransportMsg::Abandon(RequestId::Number(n))) if n == id));
    let Some(TransportMsg::Send(note)) = t.recv().await else {
        panic!("a notification was written")
    };
    let note: serde_json::Value = serde_json::from_slice(&note.line).unwrap();
    assert_eq!(note["method"], "notifications/cancelled");
    assert_eq!(note["params"]["requestId"], id);
    assert!(
        lane.complete(answer(id, "late")).is_some(),
        "a late answer is not a call's"
    );
}

#[tokio::test]
async fn the_deadline_fires_without_anyone_polling() {
    let (lane, mut s, _t) = lane().await;
    let (id, answer_rx) = lane
        .start("hang", None, None, None, Duration::from_millis(50))
        .unwrap();
    // Nobody polls `answer_rx`: the lane's own task ends the call and tells the actor.
    let told = tokio::time::timeout(Duration::from_secs(10), s.recv())
        .await
        .unwrap();
    assert!(matches!(told, Some(ServerMsg::CallTimedOut { id: n, .. }) if n == id));
    assert!(lane.take_expired(id), "the connection must end");
    assert!(matches!(
        answer_rx.await.unwrap(),
        Err(CallError::Timeout { after, .. }) if after == Duration::from_millis(50)
    ));
}

#[tokio::test]
async fn a_sooner_deadline_wakes_the_timer() {
    let (lane, mut s, _t) = lane().await;
    let (_long, _long_rx) = lane
        .start("a", None, None, None, Duration::from_secs(600))
        .unwrap();
    let (short, _short_rx) = lane
        .start("b", None, None, None, Duration::from_millis(50))
        .unwrap();
    let told = tokio::time::timeout(Duration::from_secs(10), s.recv())
        .await
        .unwrap();
    assert!(matches!(told, Some(ServerMsg::CallTimedOut { id, .. }) if id == short));
}

#[tokio::test]
async fn limits_failures_and_close_are_typed() {
    let (lane, _s, _t) = lane().await;
    let mut waiting = Vec::new();
    for _ in 0..4 {
        waiting.push(
            lane.start("x", None, None, None, Duration::from_secs(60))
                .unwrap(),
        );
    }
    assert!(matches!(
        lane.start("x", None, None, None, Duration::from_secs(60)),
        Err(CallError::Overloaded { limit: 4, .. })
    ));
    let (first, first_rx) = waiting.remove(0);
    let error = Message::Error(ErrorResponse {
        id: Some(RequestId::Number(first)),
        error: ErrorObject {
            code: -32000,
            message: "no".into(),
            data: None,
        },
    });
    assert!(lane.complete(error).is_none());
    assert!(matches!(
        first_rx.await.unwrap(),
        Err(CallError::Rpc { .. })
    ));
    lane.close(&CallError::Shutdown);
    for (_, rx) in waiting {
        assert!(matches!(rx.await.unwrap(), Err(CallError::Shutdown)));
    }
    assert!(matches!(
        lane.start("x", None, None, None, Duration::from_secs(60)),
        Err(CallError::ServerUnavailable { .. })
    ));
}
