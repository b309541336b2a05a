//! Resources, templates, subscriptions, prompts, completion and log levels,
//! routed by server, against server-everything (stdio) and the demo server
//! (which offers tools and logging only).

use std::collections::BTreeMap;
use std::time::Duration;

use mcpvisor::{CallError, CompletionTarget, Host, HostEvent, LogLevel, ResourceContents};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use testkit::peers::{Peer, Wire};
use testkit::{call, demo, fast_options, wait_for};

const DOC: &str = "demo://resource/static/document/architecture.md";

async fn host_with_everything_and_demo() -> Host {
    let everything = Peer::Everything.run(Wire::Stdio);
    let host = Host::start(vec![everything.spec, demo("demo", &[])], fast_options())
        .await
        .unwrap();
    host.wait_ready(Duration::from_secs(30)).await;
    host
}

#[tokio::test]
async fn resources_and_templates_are_listed_by_server_and_read() {
    let host = host_with_everything_and_demo().await;
    let resources = host.resources().await;
    assert!(resources.failed.is_empty(), "{:?}", resources.failed);
    assert!(resources.skipped.is_empty(), "{:?}", resources.skipped);
    let uris: Vec<&str> = resources
        .entries
        .iter()
        .map(|r| r.resource.uri.as_str())
        .collect();
    assert!(uris.contains(&DOC), "{uris:?}");
    assert!(resources.entries.iter().all(|r| &*r.server == "everything"));
    let mut sorted = uris.clone();
    sorted.sort();
    assert_eq!(uris, sorted, "entries are sorted by URI within a server");
    let doc = resources
        .entries
        .iter()
        .find(|r| r.resource.uri == DOC)
        .unwrap();
    assert_eq!(doc.resource.mime_type.as_deref(), Some("text/markdown"));

    let templates = host.resource_templates().await;
    let names: Vec<&str> = templates
        .entries
        .iter()
        .map(|t| t.template.uri_template.as_str())
        .collect();
    assert!(
        names.contains(&"demo://resource/dynamic/blob/{resourceId}"),
        "{names:?}"
    );

    let read = host.read_resource("everything", DOC).await.unwrap();
    match &read.contents[..] {
        [ResourceContents::Text { uri, text, .. }] => {
            assert_eq!(uri, DOC);
            assert!(!text.is_empty());
        }
        other => panic!("expected one text part, got {other:?}"),
    }
    let blob = host
        .read_resource("everything", "demo://resource/dynamic/blob/7")
        .await
        .unwrap();
    assert!(
        matches!(&blob.contents[..], [ResourceContents::Blob { blob, .. }] if !blob.is_empty()),
        "{:?}",
        blob.contents
    );

    // The demo server offers no resources: a typed refusal, nothing sent.
    let err = host.read_resource("demo", DOC).await.unwrap_err();
    assert!(
        matches!(&err, CallError::NotOffered { server, feature: "resources" } if &**server == "demo"),
        "{err:?}"
    );
    let err = host.read_resource("nosuch", DOC).await.unwrap_err();
    assert!(matches!(err, CallError::UnknownServer(_)), "{err:?}");
    // A server's own error for a resource it does not have comes back as its error.
    let err = host
        .read_resource("everything", "demo://no/such/resource")
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Rpc { .. }), "{err:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_subscription_reports_updates_and_survives_a_restart() {
    let host = host_with_everything_and_demo().await;
    let mut events = Box::pin(host.events());
    host.subscribe("everything", DOC).await.unwrap();
    let updated = |e: &HostEvent| matches!(e, HostEvent::ResourceUpdated { server, uri } if &**server == "everything" && &**uri == DOC);
    // server-everything sends updates for subscribed resources once this tool runs.
    call(
        &host,
        "mcp__everything__toggle-subscriber-updates",
        serde_json::json!({}),
    )
    .await
    .unwrap();
    wait_for(&mut events, Duration::from_secs(30), updated).await;

    // A new process knows nothing of the subscription: mcpvisor renews it.
    let pid = host
        .servers()
        .iter()
        .find(|s| &*s.name == "everything")
        .and_then(|s| s.pid)
        .unwrap();
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    wait_for(
        &mut events,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::ServerReady { server, .. } if &**server == "everything"),
    )
    .await;
    call(
        &host,
        "mcp__everything__toggle-subscriber-updates",
        serde_json::json!({}),
    )
    .await
    .unwrap();
    wait_for(&mut events, Duration::from_secs(30), updated).await;

    host.unsubscribe("everything", DOC).await.unwrap();
    let again = host.unsubscribe("everything", DOC).await.unwrap_err();
    assert!(matches!(again, CallError::InvalidRequest(_)), "{again:?}");
    let err = host.subscribe("demo", DOC).await.unwrap_err();
    assert!(matches!(err, CallError::NotOffered { .. }), "{err:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn prompts_are_routed_by_qualified_name_and_filled_in() {
    let host = host_with_everything_and_demo().await;
    let prompts = host.prompts().await;
    assert!(prompts.failed.is_empty(), "{:?}", prompts.failed);
    let names: Vec<&str> = prompts.entries.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"mcp__everything__simple-prompt"),
        "{names:?}"
    );
    let args = prompts
        .entries
        .iter()
        .find(|p| p.name.as_str() == "mcp__everything__args-prompt")
        .unwrap();
    assert_eq!(args.prompt.name, "args-prompt");
    assert!(
        args.prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );

    let mut arguments = BTreeMap::new();
    arguments.insert("city".to_string(), "Lisbon".to_string());
    let got = host
        .get_prompt("mcp__everything__args-prompt", &arguments)
        .await
        .unwrap();
    let text = serde_json::to_string(&got.raw).unwrap();
    assert!(text.contains("Lisbon"), "{text}");

    // A required argument left out is refused before anything is sent.
    let err = host
        .get_prompt("mcp__everything__args-prompt", &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CallError::InvalidRequest(m) if m.contains("city")),
        "{err:?}"
    );
    for unknown in [
        "mcp__everything__nosuch",
        "mcp__nosuch__simple-prompt",
        "simple-prompt",
    ] {
        let err = host
            .get_prompt(unknown, &BTreeMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, CallError::UnknownPrompt(_)),
            "{unknown}: {err:?}"
        );
    }
    host.shutdown().await;
}

#[tokio::test]
async fn arguments_are_completed_for_prompts_and_templates() {
    let host = host_with_everything_and_demo().await;
    let prompt = CompletionTarget::Prompt("mcp__everything__completable-prompt".into());
    let done = host.complete(&prompt, "department", "S").await.unwrap();
    assert_eq!(
        done.values,
        vec!["Sales".to_string(), "Support".to_string()]
    );
    let template = CompletionTarget::ResourceTemplate {
        server: "everything".into(),
        uri_template: "demo://resource/dynamic/text/{resourceId}".into(),
    };
    let done = host.complete(&template, "resourceId", "3").await.unwrap();
    assert_eq!(done.values, vec!["3".to_string()]);
    let demo = CompletionTarget::ResourceTemplate {
        server: "demo".into(),
        uri_template: "x://{y}".into(),
    };
    let err = host.complete(&demo, "y", "").await.unwrap_err();
    assert!(matches!(err, CallError::NotOffered { .. }), "{err:?}");
    host.shutdown().await;
}

/// Both servers take a level; an unknown server is a typed error. (What a
/// level does is checked on the demo server below: server-everything logs at
/// random levels, which no bounded test could tell apart.)
#[tokio::test]
async fn log_levels_are_set_per_server() {
    let host = host_with_everything_and_demo().await;
    host.set_log_level("everything", LogLevel::Debug)
        .await
        .unwrap();
    host.set_log_level("demo", LogLevel::Error).await.unwrap();
    let err = host
        .set_log_level("nosuch", LogLevel::Info)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownServer(_)), "{err:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_list_changed_notice_is_an_event_and_the_next_listing_is_fresh() {
    let host = host_with_everything_and_demo().await;
    let mut events = Box::pin(host.events());
    let before = host.resources().await.entries.len();
    // server-everything adds a session resource (and says its list changed).
    let added = call(
        &host,
        "mcp__everything__gzip-file-as-resource",
        serde_json::json!({"name": "tiny.txt", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}),
    )
    .await
    .unwrap();
    assert!(!added.is_error, "{}", added.text());
    wait_for(
        &mut events,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::ResourcesChanged { server } if &**server == "everything"),
    )
    .await;
    let after = host.resources().await.entries.len();
    assert_eq!(after, before + 1);
    host.shutdown().await;
}

/// A server that adds a prompt and says so: `HostEvent::PromptsChanged`, and
/// the next listing has the new prompt (the Python SDK peer).
#[tokio::test]
async fn a_prompts_changed_notice_is_an_event_and_the_next_listing_is_fresh() {
    let peer = Peer::PythonSdk.run(Wire::Stdio);
    let host = Host::start(vec![peer.spec.clone()], fast_options())
        .await
        .unwrap();
    host.wait_ready(Duration::from_secs(60)).await;
    let names = |prompts: &[mcpvisor::RoutedPrompt]| -> Vec<String> {
        prompts.iter().map(|p| p.name.to_string()).collect()
    };
    let before = names(&host.prompts().await.entries);
    assert!(!before.iter().any(|n| n.ends_with("__fresh")), "{before:?}");
    let mut events = Box::pin(host.events());
    let added = call(
        &host,
        "mcp__py__add_prompt",
        serde_json::json!({"name": "fresh"}),
    )
    .await
    .unwrap();
    assert_eq!(added.text(), "added fresh");
    wait_for(
        &mut events,
        Duration::from_secs(30),
        |e| matches!(e, HostEvent::PromptsChanged { server } if &**server == "py"),
    )
    .await;
    let after = names(&host.prompts().await.entries);
    assert!(after.contains(&"mcp__py__fresh".to_string()), "{after:?}");
    assert_eq!(after.len(), before.len() + 1, "{before:?} → {after:?}");
    host.shutdown().await;
}

/// The demo server honours `logging/setLevel` and says when it held a message
/// back: the host's default level reaches every new connection, and a level
/// set per server replaces it, also after a restart.
#[tokio::test]
async fn the_default_log_level_is_asked_of_every_connection() {
    let mut options = fast_options();
    options.log_level = Some(LogLevel::Warning);
    let host = Host::start(vec![demo("demo", &[])], options).await.unwrap();
    host.wait_ready(Duration::from_secs(30)).await;
    let log = |level: &'static str| {
        let host = host.clone();
        async move {
            call(
                &host,
                "mcp__demo__log",
                serde_json::json!({"level": level, "message": "m"}),
            )
            .await
            .unwrap()
            .text()
        }
    };
    assert_eq!(log("info").await, "not sent: below warning");
    assert_eq!(log("error").await, "logged");
    host.set_log_level("demo", LogLevel::Debug).await.unwrap();
    assert_eq!(log("info").await, "logged");
    // A new process starts knowing nothing: mcpvisor asks again, with the level set last.
    let pid = host.servers()[0].pid.unwrap();
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    let back = testkit::eventually(Duration::from_secs(30), || {
        let s = &host.servers()[0];
        s.state == mcpvisor::ServerState::Ready && s.pid.is_some_and(|p| p != pid)
    })
    .await;
    assert!(back, "the demo server did not come back");
    assert_eq!(log("info").await, "logged");
    host.set_log_level("demo", LogLevel::Critical)
        .await
        .unwrap();
    assert_eq!(log("error").await, "not sent: below critical");
    host.shutdown().await;
}

/// A server that declares no tools and refuses `tools/list` (it offers
/// resources or prompts, or only logging) is ready, with no tools, and stays up.
#[tokio::test]
async fn a_server_without_tools_is_ready_with_none() {
    let host = Host::start(vec![demo("bare", &["--no-tools"])], fast_options())
        .await
        .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(
        statuses[0].state,
        mcpvisor::ServerState::Ready,
        "{statuses:?}"
    );
    assert_eq!(statuses[0].restarts, 0);
    assert!(host.tools().is_empty());
    // It is reachable for what it does offer.
    host.set_log_level("bare", LogLevel::Error).await.unwrap();
    host.shutdown().await;
}
