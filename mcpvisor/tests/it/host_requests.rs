//! Requests servers send the host (sampling, elicitation), answered by the
//! host's `ClientHandler`, against server-everything, which offers its
//! sampling and elicitation tools only to clients that declare them.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::ClientCapabilities;
use mcpvisor::{
    ClientHandler, ElicitAnswer, FormRequest, Host, HostAnswer, HostAsk, SamplingRequest,
    SamplingResult, SharedClientHandler, SupervisorOptions,
};
use serde_json::{Value, json};
use std::sync::Mutex;
use testkit::peers::{Peer, Wire};
use testkit::{call, fast_options};

/// Answers sampling with a fixed message and elicitation with what it is
/// told; records what it was asked. `hang` makes it never answer.
struct Scripted {
    elicit_answer: ElicitAnswer,
    asked: Mutex<Vec<HostAsk>>,
    hang: bool,
}

impl Scripted {
    /// Records `ask`, then answers with `answer` (or never, when told to hang).
    fn answer<T: Send + 'static>(&self, ask: HostAsk, answer: T) -> HostAnswer<T> {
        self.asked.lock().unwrap().push(ask);
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            Ok(answer)
        })
    }
}

impl ClientHandler for Scripted {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: true,
            elicitation: true,
            ..Default::default()
        }
    }

    fn create_message(&self, request: SamplingRequest) -> HostAnswer<SamplingResult> {
        let reply = SamplingResult::text("scripted-model", "a canned reply from the host");
        self.answer(HostAsk::Sampling(request), reply)
    }

    fn elicit(&self, request: FormRequest) -> HostAnswer<ElicitAnswer> {
        self.answer(HostAsk::Form(request), self.elicit_answer.clone())
    }
}

/// `elicit_answer` is what a form gets (`null` where the handler hangs).
fn scripted(elicit_answer: Value, hang: bool) -> Arc<Scripted> {
    let elicit_answer = match hang {
        true => ElicitAnswer::cancel(),
        false => ElicitAnswer::parse(&elicit_answer).expect("a scripted answer"),
    };
    Arc::new(Scripted {
        elicit_answer,
        asked: Mutex::new(Vec::new()),
        hang,
    })
}

async fn everything_host(
    handler: Option<Arc<Scripted>>,
    tweak: impl FnOnce(&mut SupervisorOptions),
) -> Host {
    let peer = Peer::Everything.run(Wire::Stdio);
    let mut options = fast_options();
    options.client_handler = handler.map(|h| SharedClientHandler(h as Arc<dyn ClientHandler>));
    tweak(&mut options);
    let host = Host::start(vec![peer.spec], options).await.unwrap();
    host.wait_ready(Duration::from_secs(30)).await;
    host
}

fn tool_names(host: &Host) -> Vec<String> {
    host.tools().iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn without_a_handler_nothing_is_declared_and_no_such_tool_appears() {
    let host = everything_host(None, |_| {}).await;
    let tools = tool_names(&host);
    assert!(
        tools.iter().any(|t| t == "mcp__everything__echo"),
        "{tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("sampling") || t.contains("elicitation")),
        "{tools:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn sampling_is_answered_by_the_hosts_handler() {
    let handler = scripted(json!({"action": "decline"}), false);
    let host = everything_host(Some(handler.clone()), |_| {}).await;
    let result = call(
        &host,
        "mcp__everything__trigger-sampling-request",
        json!({"prompt": "say hi", "maxTokens": 5}),
    )
    .await
    .unwrap();
    assert!(
        result.text().contains("a canned reply from the host"),
        "{}",
        result.text()
    );
    let asked = handler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(&**asked[0].server(), "everything");
    assert_eq!(asked[0].method(), "sampling/createMessage");
    assert_eq!(asked[0].params()["maxTokens"], 5);
    let HostAsk::Sampling(sampled) = &asked[0] else {
        panic!("a sampling request: {:?}", asked[0])
    };
    assert_eq!(sampled.request.max_tokens, Some(5));
    host.shutdown().await;
}

#[tokio::test]
async fn an_accepted_elicitation_gets_the_forms_defaults() {
    // The person gave only the required name.
    let handler = scripted(
        json!({"action": "accept", "content": {"name": "Ada"}}),
        false,
    );
    let host = everything_host(Some(handler.clone()), |_| {}).await;
    let result = call(
        &host,
        "mcp__everything__trigger-elicitation-request",
        json!({}),
    )
    .await
    .unwrap();
    let text = result.text();
    assert!(text.contains("- Name: Ada"), "{text}");
    // Filled from the form's defaults before the answer went back.
    assert!(text.contains("- Favorite Integer: 42"), "{text}");
    assert!(text.contains("- Favorite Number: 3.14"), "{text}");
    assert!(text.contains("It was a dark and stormy night."), "{text}");
    host.shutdown().await;
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_is_not_sent() {
    let handler = scripted(
        json!({"action": "accept", "content": {"name": "Ada", "integer": 500}}),
        false,
    );
    let host = everything_host(Some(handler), |_| {}).await;
    let outcome = call(
        &host,
        "mcp__everything__trigger-elicitation-request",
        json!({}),
    )
    .await;
    // The server got an error instead of the out-of-range value; its tool fails.
    let text = match outcome {
        Ok(result) => {
            assert!(result.is_error, "{}", result.text());
            result.text()
        }
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("does not fit the form") || text.contains("integer"),
        "{text}"
    );
    assert!(!text.contains("Favorite Integer: 500"), "{text}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_handler_that_never_answers_times_out_and_the_connection_goes_on() {
    let handler = scripted(Value::Null, true);
    let host = everything_host(Some(handler), |o| {
        o.host_request_timeout = Duration::from_millis(300);
    })
    .await;
    let outcome = call(
        &host,
        "mcp__everything__trigger-sampling-request",
        json!({"prompt": "x", "maxTokens": 1}),
    )
    .await;
    let text = match outcome {
        Ok(result) => {
            assert!(result.is_error, "{}", result.text());
            result.text()
        }
        Err(e) => e.to_string(),
    };
    assert!(text.contains("did not answer"), "{text}");
    // The same connection still serves calls.
    let echoed = call(
        &host,
        "mcp__everything__echo",
        json!({"message": "still here"}),
    )
    .await
    .unwrap();
    assert!(echoed.text().contains("still here"), "{}", echoed.text());
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_floods_requests_gets_errors_not_a_queue() {
    use mcpvisor_demo::SAMPLING_FLOOD;
    let handler = scripted(Value::Null, true);
    let mut options = fast_options();
    options.client_handler = Some(SharedClientHandler(
        handler.clone() as Arc<dyn ClientHandler>
    ));
    options.max_host_requests = 8;
    options.host_request_timeout = Duration::from_secs(2);
    let host = Host::start(
        vec![testkit::demo("flood", &["--hostile", "sampling-flood"])],
        options,
    )
    .await
    .unwrap();
    host.wait_ready(Duration::from_secs(20)).await;
    // The connection keeps serving calls while its handler is busy and the rest is refused.
    let echoed = call(&host, "mcp__flood__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "still here");
    let mut answers: Vec<Value> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while answers.len() < SAMPLING_FLOOD {
        assert!(
            std::time::Instant::now() < deadline,
            "{} answers so far",
            answers.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = call(&host, "mcp__flood__client_answers", json!({}))
            .await
            .unwrap();
        answers = serde_json::from_str(&r.text()).unwrap();
    }
    let code = |c: i64| answers.iter().filter(|a| a["error"]["code"] == c).count();
    // Eight reached the handler and timed out; every other one was refused at once.
    assert_eq!(code(-32001), 8, "{answers:?}");
    assert_eq!(code(-32000), SAMPLING_FLOOD - 8);
    assert_eq!(handler.asked.lock().unwrap().len(), 8);
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}

#[tokio::test]
async fn roots_are_declared_listed_and_their_changes_announced() {
    use mcpvisor::Root;
    let host = everything_host(None, |o| {
        o.roots = Some(vec![Root {
            uri: "file:///work/project".into(),
            name: Some("project".into()),
        }]);
    })
    .await;
    let listed = |host: Host| async move {
        call(&host, "mcp__everything__get-roots-list", json!({}))
            .await
            .unwrap()
            .text()
    };
    let first = listed(host.clone()).await;
    assert!(first.contains("URI: file:///work/project"), "{first}");
    assert!(first.contains("1. project"), "{first}");
    assert!(host.set_roots(vec![Root::new("file:///a"), Root::new("file:///b")]));
    // The server asks again after the notification; poll what it knows.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = listed(host.clone()).await;
        if now.contains("(2 total)") {
            assert!(
                now.contains("URI: file:///a") && now.contains("URI: file:///b"),
                "{now}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "roots never updated: {now}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    host.shutdown().await;
    // A host without roots declares none and cannot set them.
    let bare = everything_host(None, |_| {}).await;
    assert!(!tool_names(&bare).iter().any(|t| t.contains("roots")));
    assert!(!bare.set_roots(vec![Root::new("file:///x")]));
    bare.shutdown().await;
}

/// The Python SDK's tool that elicits: an accepted answer gets the form's
/// default for the field left out; a declined one reaches the tool as declined.
#[tokio::test]
async fn the_python_sdk_elicits_through_the_hosts_handler() {
    for (answer, expected) in [
        (
            json!({"action": "accept", "content": {"confirm": true}}),
            "deleted /tmp/x (none given)",
        ),
        (json!({"action": "decline"}), "kept /tmp/x (decline)"),
    ] {
        let handler = scripted(answer, false);
        let peer = Peer::PythonSdk.run(Wire::Stdio);
        let mut options = fast_options();
        options.client_handler = Some(SharedClientHandler(
            handler.clone() as Arc<dyn ClientHandler>
        ));
        let host = Host::start(vec![peer.spec], options).await.unwrap();
        host.wait_ready(Duration::from_secs(30)).await;
        let result = call(&host, "mcp__py__confirm_delete", json!({"path": "/tmp/x"}))
            .await
            .unwrap();
        assert_eq!(result.text(), expected);
        let asked = handler.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].method(), "elicitation/create");
        assert_eq!(asked[0].params()["message"], "Delete /tmp/x?");
        host.shutdown().await;
    }
}
