//! The lane over recording ports, with no actor alive: calls answered,
//! cancelled (with the notification on the wire), failed alone, closed, and
//! timed out by the connection's own deadline task while nobody polls the call
//! (on paused time: the clock moves only when every task waits).

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, ErrorResponse, Response};
use mcpvisor_protocol::{Message, RequestId};
use serde_json::json;

use super::test_ports::{Told, Wrote, recorded_lane};
use super::{CallLane, ToolShape};
use crate::error::CallError;

fn lane() -> (
    Arc<CallLane>,
    tokio::sync::mpsc::UnboundedReceiver<Told>,
    tokio::sync::mpsc::UnboundedReceiver<Wrote>,
) {
    let (lane, wrote, told) = recorded_lane("s", 4);
    lane.start_deadlines();
    lane.open();
    (lane, told, wrote)
}

fn answer(id: i64, text: &str) -> Message {
    Message::Response(Response {
        id: RequestId::Number(id),
        result: json!({"content": [{"type": "text", "text": text}]}),
    })
}

#[tokio::test]
async fn an_answer_completes_its_call_and_a_second_goes_to_the_actor() {
    let (lane, _s, mut t) = lane();
    let (id, answer_rx) = lane
        .start(
            "echo",
            None,
            None,
            ToolShape::default(),
            Duration::from_secs(60),
            None,
        )
        .unwrap();
    let Some(Wrote::Send(out)) = t.recv().await else {
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
    let (lane, _s, mut t) = lane();
    let (id, answer_rx) = lane
        .start(
            "slow",
            None,
            None,
            ToolShape::default(),
            Duration::from_secs(60),
            None,
        )
        .unwrap();
    let _request = t.recv().await;
    lane.cancel(id);
    assert!(matches!(
        answer_rx.await.unwrap(),
        Err(CallError::Cancelled)
    ));
    assert!(matches!(t.recv().await, Some(Wrote::Abandon(RequestId::Number(n))) if n == id));
    let Some(Wrote::Send(note)) = t.recv().await else {
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

#[tokio::test(start_paused = true)]
async fn the_deadline_fires_without_anyone_polling() {
    let (lane, mut s, _t) = lane();
    let (id, answer_rx) = lane
        .start(
            "hang",
            None,
            None,
            ToolShape::default(),
            Duration::from_millis(50),
            None,
        )
        .unwrap();
    // Nobody polls `answer_rx`: the lane's own task ends the call and tells the actor.
    let told = tokio::time::timeout(Duration::from_secs(10), s.recv())
        .await
        .unwrap();
    assert!(
        matches!(told, Some(Told::TimedOut { id: n, after }) if n == id && after == Duration::from_millis(50))
    );
    assert!(lane.take_expired(id), "the connection must end");
    assert!(matches!(
        answer_rx.await.unwrap(),
        Err(CallError::Timeout { after, .. }) if after == Duration::from_millis(50)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_sooner_deadline_wakes_the_timer() {
    let (lane, mut s, _t) = lane();
    let (_long, _long_rx) = lane
        .start(
            "a",
            None,
            None,
            ToolShape::default(),
            Duration::from_secs(600),
            None,
        )
        .unwrap();
    let (short, _short_rx) = lane
        .start(
            "b",
            None,
            None,
            ToolShape::default(),
            Duration::from_millis(50),
            None,
        )
        .unwrap();
    let told = tokio::time::timeout(Duration::from_secs(10), s.recv())
        .await
        .unwrap();
    assert!(matches!(told, Some(Told::TimedOut { id, .. }) if id == short));
}

#[tokio::test]
async fn limits_failures_and_close_are_typed() {
    let (lane, _s, _t) = lane();
    let mut waiting = Vec::new();
    for _ in 0..4 {
        waiting.push(start_x(&lane).unwrap());
    }
    assert!(matches!(
        start_x(&lane),
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
        start_x(&lane),
        Err(CallError::ServerUnavailable { .. })
    ));
}

#[tokio::test]
async fn a_failed_write_is_reported_once_and_the_call_fails_typed() {
    let (lane, mut told, wrote) = lane();
    // The connection's writer is gone: every write fails from now on.
    drop(wrote);
    for _ in 0..2 {
        assert!(matches!(
            start_x(&lane),
            Err(CallError::ServerUnavailable { .. })
        ));
    }
    assert!(matches!(
        told.try_recv(),
        Ok(Told::WriteFailed(
            mcpvisor_transports::TransportError::Closed
        ))
    ));
    assert!(told.try_recv().is_err(), "told once, not per write");
}

/// A call of tool `x` with nothing else to it, due in a minute.
fn start_x(lane: &CallLane) -> Result<(i64, super::Answer), CallError> {
    lane.start(
        "x",
        None,
        None,
        ToolShape::default(),
        Duration::from_secs(60),
        None,
    )
}
