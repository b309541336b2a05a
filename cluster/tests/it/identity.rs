//! A node is the node its session authenticated as: a cluster member cannot
//! speak in another node's name, nor put its agent in another node's group,
//! and under TLS a node's certificate must name it.
//!
//! No mcpvisor node sends a message in another's name, so the lying node is
//! this test process: it joins with ractor_cluster and the right cookie, as
//! any member could, and sends what an mcpvisor node's agent would send,
//! relabelled (the JSON of `cluster/src/wire.rs`, written out here).

use std::time::{Duration, Instant};

use ractor::message::{BoxedDowncastErr, SerializedMessage};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::node::{NodeConnectionMode, NodeServer};
use serde_json::json;

use testkit::cluster::{COOKIE, Node, await_tools, certify, strs, text, tls_flags, tool_names};

/// What the liar sends: a frame as an agent's cast carries it, with the
/// metadata (where a key would go) of its choosing.
struct Forged(Vec<u8>, Option<Vec<u8>>);

impl ractor::Message for Forged {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        Ok(SerializedMessage::Cast {
            variant: String::new(),
            args: self.0,
            metadata: self.1,
        })
    }

    fn deserialize(message: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        match message {
            SerializedMessage::Cast { args, metadata, .. } => Ok(Forged(args, metadata)),
            _ => Err(BoxedDowncastErr),
        }
    }
}

/// The liar's stand-in for another node's agent: it only has to exist.
struct Impostor;

impl Actor for Impostor {
    type Msg = Forged;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Forged>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cannot_speak_or_stand_in_another_nodes_name() {
    let mut a = Node::new("identity", "a", &["alpha"]);
    let mut b = Node::new("identity", "b", &["beta"]);
    a.start(&[], &[]);
    b.start(&[a.address()], &[]);
    let on_a = a.session().await;
    let mut id = 100;
    await_tools(&on_a, &mut id, &["mcp__beta__echo"], true).await;

    // The liar joins a with the cluster's cookie.
    let liar = NodeServer::new(
        0,
        COOKIE.to_string(),
        "liar".into(),
        "127.0.0.1".into(),
        None,
        Some(NodeConnectionMode::Isolated),
    )
    .with_listen_addr("127.0.0.1".parse().unwrap());
    let (liar, _) = Actor::spawn(None, liar, ()).await.unwrap();
    ractor_cluster::client_connect(&liar, a.address())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let a_agent = loop {
        let members = ractor::pg::get_scoped_members(&"mcpvisor".into(), &"node:a".into());
        if let Some(cell) = members.into_iter().find(|c| !c.get_id().is_local()) {
            break ActorRef::<Forged>::from(cell);
        }
        assert!(Instant::now() < deadline, "the liar never saw a's agent");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // An agent of its own in b's group: a must not take it for b's.
    let (impostor, _) = Actor::spawn(None, Impostor, ()).await.unwrap();
    ractor::pg::join_scoped(
        "mcpvisor".into(),
        "node:b".into(),
        vec![impostor.get_cell()],
    );
    // b's advertisement, relabelled: another server in place of b's.
    let advert = json!({
        "t": "advert", "from": "b", "listen": b.address(), "peers": [],
        "servers": [{"name": "evil", "state": "ready",
                     "tools": [{"name": "pwn", "inputSchema": {"type": "object"}}]}]
    });
    let hello = json!({"t": "hello", "from": "b", "offer": "0123456789abcdef0123456789abcdef"});
    for round in 0..10u8 {
        let bytes = |v: &serde_json::Value| serde_json::to_vec(v).unwrap();
        a_agent.cast(Forged(bytes(&hello), None)).unwrap();
        a_agent.cast(Forged(bytes(&advert), None)).unwrap();
        a_agent
            .cast(Forged(bytes(&advert), Some(vec![round; 16])))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let listed = tool_names(&on_a, &mut id).await;
    assert!(
        !listed.iter().any(|t| t.starts_with("mcp__evil__")),
        "a routed a relabelled advertisement: {listed:?}"
    );
    assert!(
        listed.iter().any(|t| t == "mcp__beta__echo"),
        "b's routes on a were replaced or withdrawn: {listed:?}"
    );
    let echoed = on_a
        .call_result(7, "mcp__beta__echo", json!({"text": "still b"}))
        .await;
    assert_eq!(text(&echoed), "still b", "{echoed}");
    liar.stop(None);
    let log = a.stop();
    assert!(log.contains("cluster message dropped"), "{log}");
    assert!(log.contains("cluster agent ignored"), "{log}");
    b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_tls_a_node_whose_certificate_names_another_stays_out() {
    let mut a = Node::new("tls-name", "a", &["alpha"]);
    let mut b = Node::new("tls-name", "b", &["beta"]);
    // e presents a certificate the cluster's CA signed, for the right
    // address, but for node x.
    let mut e = Node::new("tls-name", "e", &["epsilon"]);
    let x = Node::new("tls-name", "x", &[]);
    certify(&a.dir.clone(), &[&a, &b, &x]);
    for file in ["cert.pem", "key.pem", "ca.pem"] {
        std::fs::copy(x.dir.join(file), e.dir.join(file)).unwrap();
    }
    let (fa, fb, fe) = (tls_flags(&a), tls_flags(&b), tls_flags(&e));
    a.start(&[], &strs(&fa));
    b.start(&[a.address()], &strs(&fb));
    e.start(&[a.address()], &strs(&fe));
    let on_a = a.session().await;
    let mut id = 100;
    await_tools(&on_a, &mut id, &["mcp__beta__echo"], true).await;
    // Several of e's attempts come and go.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen = tool_names(&on_a, &mut id).await;
    assert!(
        !seen.iter().any(|t| t.starts_with("mcp__epsilon__")),
        "a node whose certificate names another was let in: {seen:?}"
    );
    let log = a.stop();
    assert!(
        log.contains("its certificate does not name the node it says it is"),
        "{log}"
    );
    b.stop();
    e.stop();
}
