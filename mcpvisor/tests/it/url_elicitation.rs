//! URL-mode elicitation (2025-11-25) with the Python SDK's tools
//! (testkit/peers/python_server.py): a host that offers it is asked, with the
//! URL checked first; only the action goes back; the server's completion
//! notice becomes an event, and one for an id the host was never asked about
//! does not. Where the host does not offer it, or the revision lacks it, or
//! the URL could disguise its host, the host is not asked. A `-32042` answer
//! names the URL elicitations the server needs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpvisor::ClientCapabilities;
use mcpvisor::{
    ClientHandler, ElicitAction, ElicitAnswer, FormRequest, Host, HostAnswer, HostAsk, HostEvent,
    SharedClientHandler, UrlRequest,
};
use mcpvisor::{Revision, Versions};
use serde_json::{Value, json};
use testkit::peers::{Peer, Wire};
use testkit::{call, drain, fast_options, wait_for};

/// Offers URL elicitation (or not) and answers every one with `answer`;
/// records what it was asked.
struct Consents {
    url: bool,
    answer: Value,
    asked: Mutex<Vec<HostAsk>>,
}

impl ClientHandler for Consents {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: true,
            elicitation_url: self.url,
            ..Default::default()
        }
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        self.asked.lock().unwrap().push(HostAsk::Form(request));
        let answer = ElicitAnswer::parse(&self.answer).expect("a scripted answer");
        Box::pin(async move { Ok(answer) })
    }

    fn elicit_url(&self, request: UrlRequest) -> HostAnswer<ElicitAction> {
        self.asked.lock().unwrap().push(HostAsk::Url(request));
        let answer = ElicitAnswer::parse(&self.answer).expect("a scripted answer");
        Box::pin(async move { Ok(answer.action) })
    }
}

async fn python_host(url: bool, answer: Value, revision: Revision) -> (Host, Arc<Consents>) {
    let handler = Arc::new(Consents {
        url,
        answer,
        asked: Mutex::new(Vec::new()),
    });
    let peer = Peer::PythonSdk.run(Wire::Stdio);
    let mut options = fast_options();
    options.client_handler = Some(SharedClientHandler(
        handler.clone() as Arc<dyn ClientHandler>
    ));
    options.protocol_versions = Versions::only(revision);
    let host = Host::start(vec![peer.spec], options).await.unwrap();
    host.wait_ready(Duration::from_secs(30)).await;
    (host, handler)
}

const PAGE: &str = "https://accounts.example.com/connect?session=4";

#[tokio::test]
async fn an_offered_url_elicitation_is_asked_and_its_completion_is_an_event() {
    // The person's answer carries more than an action: only the action goes back.
    let answer = json!({"action": "accept", "content": {"password": "hunter2"}});
    let (host, handler) = python_host(true, answer, Revision::V2025_11_25).await;
    let mut events = Box::pin(host.events());
    let result = call(&host, "mcp__py__connect_account", json!({"url": PAGE}))
        .await
        .unwrap();
    assert_eq!(result.text(), "connect: accept");
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].method(), "elicitation/create");
    assert_eq!(asked[0].params()["mode"], "url");
    assert_eq!(asked[0].params()["url"], PAGE);
    assert_eq!(asked[0].params()["elicitationId"], "py-connect-1");

    // The server then says "py-never-asked" and "py-connect-1" completed:
    // only the one the host was asked about is an event.
    let done = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ElicitationComplete { .. })
    })
    .await;
    let HostEvent::ElicitationComplete {
        server,
        elicitation_id,
    } = done
    else {
        unreachable!()
    };
    assert_eq!((&*server, &*elicitation_id), ("py", "py-connect-1"));
    let later = drain(&mut events, Duration::from_millis(500)).await;
    assert!(
        !later
            .iter()
            .any(|e| matches!(e, HostEvent::ElicitationComplete { .. })),
        "{later:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn unoffered_earlier_or_disguised_url_elicitations_never_reach_the_host() {
    let accept = json!({"action": "accept"});
    // Not offered by the host, and offered at a revision without URL mode.
    for (url, revision) in [
        (false, Revision::V2025_11_25),
        (true, Revision::V2025_06_18),
    ] {
        let (host, handler) = python_host(url, accept.clone(), revision).await;
        let result = call(&host, "mcp__py__connect_account", json!({"url": PAGE})).await;
        let text = match &result {
            Ok(r) => r.text(),
            Err(e) => e.to_string(),
        };
        assert!(
            !text.contains("connect: accept"),
            "{revision}, offered {url}: {text}"
        );
        assert!(handler.asked.lock().unwrap().is_empty(), "{revision}");
        host.shutdown().await;
    }
    // Offered, but the URL puts another host behind user information, or is
    // not https: refused before anyone sees it.
    let (host, handler) = python_host(true, accept, Revision::V2025_11_25).await;
    for page in [
        "https://accounts.example.com@evil.example/connect",
        "http://accounts.example.com/connect",
        "javascript:alert(1)",
    ] {
        let result = call(&host, "mcp__py__connect_account", json!({"url": page})).await;
        let text = match &result {
            Ok(r) => r.text(),
            Err(e) => e.to_string(),
        };
        assert!(!text.contains("connect: accept"), "{page}: {text}");
    }
    assert!(handler.asked.lock().unwrap().is_empty());
    assert_eq!(host.servers()[0].restarts, 0, "the connection goes on");
    host.shutdown().await;
}

#[tokio::test]
async fn a_url_elicitation_required_answer_names_what_the_server_needs() {
    let (host, _) = python_host(true, json!({"action": "accept"}), Revision::V2025_11_25).await;
    let mut events = Box::pin(host.events());
    let error = call(&host, "mcp__py__needs_connection", json!({}))
        .await
        .unwrap_err();
    let needed = error
        .url_elicitations()
        .expect("a -32042 answer")
        .expect("well-formed elicitations");
    assert_eq!(needed.len(), 1);
    assert_eq!(needed[0].elicitation_id, "py-files-7");
    assert_eq!(needed[0].host(), "files.example.com");
    assert_eq!(needed[0].message, "Authorize access to your files");
    // The server says the step is done: the host hears it, as for one it was asked.
    let done = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ElicitationComplete { .. })
    })
    .await;
    assert!(
        matches!(&done, HostEvent::ElicitationComplete { elicitation_id, .. } if &**elicitation_id == "py-files-7"),
        "{done:?}"
    );
    // Any other failure has none.
    let other = call(&host, "mcp__py__no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert!(other.url_elicitations().is_none());
    host.shutdown().await;
}
