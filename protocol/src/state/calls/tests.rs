//! The call table driven with plain values and a fake clock (u64 milliseconds):
//! every race is a sequence of inputs, not a sleep.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

type Table = CallTable<&'static str, u64>;

fn open(max: usize) -> Table {
    let mut t = CallTable::new(max);
    t.open();
    t
}

#[test]
fn an_answer_ends_its_call_once_and_a_second_is_unknown() {
    let mut t = open(8);
    t.start(1, 100, "a").unwrap();
    assert_eq!(t.answer(1), Answered::Call("a"));
    assert_eq!(t.answer(1), Answered::Unknown);
    assert!(t.is_empty());
    assert_eq!(t.next_deadline(), None);
}

#[test]
fn ids_come_from_the_connections_one_counter_and_a_refused_call_takes_none() {
    let ids = RequestIds::new();
    let mut t: Table = CallTable::with_ids(2, ids.clone());
    assert_eq!(t.start_next(100, "closed"), Err(StartRefused::Closed));
    t.open();
    assert_eq!(t.start_next(100, "a"), Ok(1));
    // The session takes the next one for its own request: the table skips it.
    assert_eq!(ids.next(), 2);
    assert_eq!(t.start_next(100, "b"), Ok(3));
    assert_eq!(t.start_next(100, "c"), Err(StartRefused::Overloaded(2)));
    assert_eq!(t.ids().next(), 4, "neither refusal took an id");
    assert_eq!(t.answer(3), Answered::Call("b"));
    assert_eq!(t.start_next(100, "d"), Ok(5));
}

#[test]
fn calls_start_only_while_open_and_within_the_limit() {
    let mut t: Table = CallTable::new(2);
    assert_eq!(t.start(1, 10, "a"), Err(StartRefused::Closed));
    t.open();
    t.start(1, 10, "a").unwrap();
    assert_eq!(t.start(1, 10, "b"), Err(StartRefused::DuplicateId(1)));
    t.start(2, 10, "b").unwrap();
    assert_eq!(t.start(3, 10, "c"), Err(StartRefused::Overloaded(2)));
    t.close();
    assert_eq!(t.start(4, 10, "d"), Err(StartRefused::Closed));
}

#[test]
fn the_earliest_deadline_is_the_only_timer() {
    let mut t = open(8);
    t.start(1, 300, "a").unwrap();
    t.start(2, 100, "b").unwrap();
    t.start(3, 200, "c").unwrap();
    assert_eq!(t.next_deadline(), Some(100));
    assert_eq!(t.answer(2), Answered::Call("b"));
    assert_eq!(t.next_deadline(), Some(200));
    assert_eq!(t.expire(250), vec![(3, "c")]);
    assert_eq!(t.next_deadline(), Some(300));
}

#[test]
fn a_timeout_and_an_answer_at_the_same_instant() {
    // The answer is handled first: the call is answered, nothing expires.
    let mut t = open(8);
    t.start(1, 100, "a").unwrap();
    assert_eq!(t.answer(1), Answered::Call("a"));
    assert!(t.expire(100).is_empty());
    assert!(!t.take_expired(1));
    // The deadline is handled first: the call times out, the answer is late and
    // dropped, and the connection still ends.
    let mut t = open(8);
    t.start(1, 100, "a").unwrap();
    assert_eq!(t.expire(100), vec![(1, "a")]);
    assert_eq!(t.answer(1), Answered::Late);
    assert!(
        t.take_expired(1),
        "a timeout ends the connection, late answer or not"
    );
    assert!(!t.take_expired(1), "once");
}

#[test]
fn a_timeout_without_an_answer_ends_the_connection() {
    let mut t = open(8);
    t.start(1, 100, "a").unwrap();
    assert!(t.expire(99).is_empty());
    assert_eq!(t.expire(100), vec![(1, "a")]);
    assert!(t.take_expired(1));
    assert_eq!(
        t.answer(1),
        Answered::Unknown,
        "the timed-out request is never reused"
    );
}

#[test]
fn a_cancel_ends_the_call_and_says_so_to_the_server() {
    let mut t = open(8);
    t.start(7, 100, "a").unwrap();
    let (payload, note) = t.cancel(7, "cancelled by the host").unwrap();
    assert_eq!(payload, "a");
    let Message::Notification(n) = note else {
        panic!("not a notification")
    };
    assert_eq!(n.method, methods::CANCELLED);
    assert_eq!(n.params.unwrap()["requestId"], 7);
    assert!(t.cancel(7, "again").is_none());
    assert_eq!(
        t.answer(7),
        Answered::Unknown,
        "a late answer to a cancel is dropped"
    );
    assert!(t.expire(1_000).is_empty());
}

#[test]
fn closing_hands_back_every_call_in_flight() {
    let mut t = open(8);
    t.start(1, 100, "a").unwrap();
    t.start(2, 100, "b").unwrap();
    t.expire(100);
    t.start(3, 500, "c").unwrap();
    let mut lost = t.close();
    lost.sort();
    assert_eq!(lost, vec![(3, "c")]);
    assert!(!t.take_expired(1), "the connection is gone already");
    assert_eq!(t.next_deadline(), None);
}

/// One input to the table.
#[derive(Debug, Clone)]
enum Op {
    Start {
        timeout: u64,
    },
    /// Starts again under an id already used (in flight, ended or expired).
    Reuse {
        pick: usize,
        timeout: u64,
    },
    Answer(usize),
    Fail(usize),
    Cancel(usize),
    Withdraw(usize),
    Advance(u64),
    TakeExpired(usize),
    /// The connection ends; `reopen` says whether a new one opens at once.
    Close {
        reopen: bool,
    },
    Open,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..50).prop_map(|timeout| Op::Start { timeout }),
        1 => (0usize..16, 1u64..50).prop_map(|(pick, timeout)| Op::Reuse { pick, timeout }),
        3 => (0usize..16).prop_map(Op::Answer),
        2 => (0usize..16).prop_map(Op::Fail),
        2 => (0usize..16).prop_map(Op::Cancel),
        1 => (0usize..16).prop_map(Op::Withdraw),
        2 => (0u64..30).prop_map(Op::Advance),
        1 => (0usize..16).prop_map(Op::TakeExpired),
        1 => any::<bool>().prop_map(|reopen| Op::Close { reopen }),
        1 => Just(Op::Open),
    ]
}

/// What the table must agree with: the calls in flight and their deadlines,
/// and the ones that timed out and were not yet taken.
#[derive(Default)]
struct Model {
    open: bool,
    in_flight: HashMap<i64, u64>,
    expired: std::collections::HashSet<i64>,
}

const MAX: usize = 8;

impl Model {
    /// What starting `id` must give: the table's refusals, in its order.
    fn start(&self, id: i64) -> Result<(), StartRefused> {
        if !self.open {
            Err(StartRefused::Closed)
        } else if self.in_flight.len() >= MAX {
            Err(StartRefused::Overloaded(MAX))
        } else if self.in_flight.contains_key(&id) || self.expired.contains(&id) {
            Err(StartRefused::DuplicateId(id))
        } else {
            Ok(())
        }
    }
}

proptest! {
    /// Every id ends exactly once (answer, failure, cancel, withdrawal, timeout
    /// or connection loss); nothing answers after that; a start is refused
    /// exactly when the connection is not open, the table is full or the id is
    /// taken; the table's count and next deadline are the model's; no call
    /// outlives its deadline once the clock has passed it.
    #[test]
    fn every_call_ends_exactly_once(ops in proptest::collection::vec(op(), 1..200)) {
        let mut t: CallTable<i64, u64> = CallTable::new(MAX);
        t.open();
        let mut model = Model { open: true, ..Model::default() };
        let mut now = 0u64;
        let mut next_id = 0i64;
        let mut started: Vec<i64> = Vec::new();
        let mut ended: HashMap<i64, &'static str> = HashMap::new();
        let end = |id: i64, how: &'static str, ended: &mut HashMap<i64, &'static str>| {
            let before = ended.insert(id, how);
            prop_assert!(before.is_none(), "id {} ended twice: {:?} then {}", id, before, how);
            Ok(())
        };
        for op in ops {
            let pick = |i: usize| started.get(i % started.len().max(1)).copied();
            match op {
                Op::Start { timeout } => {
                    next_id += 1;
                    let expected = model.start(next_id);
                    let got = t.start(next_id, now + timeout, next_id);
                    prop_assert_eq!(&got, &expected);
                    if got.is_ok() {
                        started.push(next_id);
                        model.in_flight.insert(next_id, now + timeout);
                    }
                }
                Op::Reuse { pick: i, timeout } => {
                    let Some(id) = pick(i) else { continue };
                    let expected = model.start(id);
                    let got = t.start(id, now + timeout, id);
                    prop_assert_eq!(&got, &expected);
                    if got.is_ok() {
                        // An id that ended and was forgotten may serve again: a new call.
                        prop_assert!(ended.remove(&id).is_some(), "id {} was never used", id);
                        model.in_flight.insert(id, now + timeout);
                    }
                }
                Op::Answer(i) | Op::Fail(i) => {
                    let Some(id) = pick(i) else { continue };
                    let failed = matches!(op, Op::Fail(_));
                    let got = if failed { t.fail(id) } else { t.answer(id) };
                    match got {
                        Answered::Call(p) => {
                            prop_assert_eq!(p, id);
                            prop_assert!(model.in_flight.remove(&id).is_some());
                            end(id, if failed { "failed" } else { "answer" }, &mut ended)?;
                        }
                        Answered::Late => {
                            prop_assert_eq!(ended.get(&id).copied(), Some("timeout"));
                            prop_assert!(model.expired.contains(&id));
                        }
                        Answered::Unknown => {
                            prop_assert!(ended.contains_key(&id));
                            prop_assert!(!model.in_flight.contains_key(&id) && !model.expired.contains(&id));
                        }
                    }
                }
                Op::Cancel(i) => {
                    let Some(id) = pick(i) else { continue };
                    match t.cancel(id, "test") {
                        Some((p, Message::Notification(note))) => {
                            prop_assert_eq!(p, id);
                            prop_assert_eq!(note.method.as_str(), methods::CANCELLED);
                            prop_assert!(model.in_flight.remove(&id).is_some());
                            end(id, "cancel", &mut ended)?;
                        }
                        Some((_, other)) => prop_assert!(false, "a cancel sent {:?}", other),
                        None => prop_assert!(!model.in_flight.contains_key(&id)),
                    }
                }
                Op::Withdraw(i) => {
                    let Some(id) = pick(i) else { continue };
                    match t.withdraw(id) {
                        Some(p) => {
                            prop_assert_eq!(p, id);
                            prop_assert!(model.in_flight.remove(&id).is_some());
                            end(id, "withdraw", &mut ended)?;
                        }
                        None => prop_assert!(!model.in_flight.contains_key(&id)),
                    }
                }
                Op::Advance(by) => {
                    now += by;
                    for (id, p) in t.expire(now) {
                        prop_assert_eq!(p, id);
                        let due = model.in_flight.remove(&id);
                        prop_assert!(due.is_some_and(|at| at <= now), "id {} expired early", id);
                        model.expired.insert(id);
                        end(id, "timeout", &mut ended)?;
                    }
                    if let Some(next) = t.next_deadline() {
                        prop_assert!(next > now, "a deadline at or before now survived expire");
                    }
                }
                Op::TakeExpired(i) => {
                    let Some(id) = pick(i) else { continue };
                    let taken = t.take_expired(id);
                    prop_assert_eq!(taken, model.expired.remove(&id));
                    if taken {
                        prop_assert_eq!(ended.get(&id).copied(), Some("timeout"));
                    }
                }
                Op::Close { reopen } => {
                    for (id, p) in t.close() {
                        prop_assert_eq!(p, id);
                        prop_assert!(model.in_flight.remove(&id).is_some());
                        end(id, "lost", &mut ended)?;
                    }
                    prop_assert!(model.in_flight.is_empty());
                    model.expired.clear();
                    model.open = reopen;
                    if reopen {
                        t.open();
                    }
                }
                Op::Open => {
                    t.open();
                    model.open = true;
                }
            }
            prop_assert_eq!(t.len(), model.in_flight.len());
            prop_assert_eq!(t.next_deadline(), model.in_flight.values().min().copied());
        }
        for (id, p) in t.close() {
            prop_assert_eq!(p, id);
            end(id, "lost", &mut ended)?;
        }
        for id in &started {
            prop_assert!(ended.contains_key(id), "id {} never ended", id);
        }
    }
}
