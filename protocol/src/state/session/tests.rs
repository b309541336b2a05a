use super::*;
use crate::mcp::messages::PROTOCOL_VERSION;
use serde_json::json;

fn ready_session() -> ClientSession<&'static str> {
    let mut s = ClientSession::new("test", "1");
    let init = s.initialize().unwrap();
    let Message::Request(req) = init else {
        panic!()
    };
    let h = s.handle(Message::Response(Response {
        id: req.id,
        result: json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                       "serverInfo": {"name": "srv", "version": "1"}}),
    }));
    assert!(matches!(h.event, SessionEvent::Ready(_)));
    assert!(
        matches!(h.reply, Some(Message::Notification(ref n)) if n.method == methods::INITIALIZED)
    );
    s
}

#[test]
fn a_preference_is_offered_and_the_answer_checked_against_it() {
    let versions = Versions::parse(&["2025-11-25", "2025-06-18"]).unwrap();
    let answer = |version: &str| {
        let mut s: ClientSession<()> = ClientSession::new("t", "1").with_versions(versions.clone());
        let Message::Request(init) = s.initialize().unwrap() else {
            panic!()
        };
        assert_eq!(init.params.unwrap()["protocolVersion"], "2025-11-25");
        let h = s.handle(Message::Response(Response {
            id: init.id,
            result: json!({"protocolVersion": version, "capabilities": {},
                           "serverInfo": {"name": "srv", "version": "1"}}),
        }));
        (h.event, s.revision())
    };
    let (event, revision) = answer("2025-06-18");
    assert!(matches!(event, SessionEvent::Ready(_)));
    assert_eq!(revision, Some(Revision::V2025_06_18));
    let (event, revision) = answer("2025-03-26");
    assert!(
        matches!(event, SessionEvent::InitializeFailed(InitializeFailure::Invalid(InitializeError::UnsupportedVersion(ref v))) if v == "2025-03-26"),
        "{event:?}"
    );
    assert_eq!(revision, None);
}

#[test]
fn offered_capabilities_are_declared_and_their_requests_go_to_the_host() {
    let offered = ClientCapabilities {
        elicitation: true,
        roots: true,
        ..Default::default()
    };
    let mut s: ClientSession<&str> = ClientSession::new("t", "1").with_capabilities(offered);
    let Message::Request(init) = s.initialize().unwrap() else {
        panic!()
    };
    assert_eq!(
        init.params.unwrap()["capabilities"],
        json!({"elicitation": {}, "roots": {"listChanged": true}})
    );
    let ask = |id: i64, method: &str| {
        Message::Request(Request::new(
            RequestId::Number(id),
            method,
            Some(json!({"x": 1})),
        ))
    };
    let h = s.handle(ask(7, methods::ELICIT));
    assert_eq!(h.reply, None);
    assert_eq!(
        h.event,
        SessionEvent::HostRequest {
            id: RequestId::Number(7),
            method: methods::ELICIT.into(),
            params: Some(json!({"x": 1})),
        }
    );
    assert!(matches!(
        s.handle(ask(8, methods::ROOTS_LIST)).event,
        SessionEvent::HostRequest { .. }
    ));
    // Not offered: refused as before.
    let h = s.handle(ask(9, methods::CREATE_MESSAGE));
    assert!(matches!(h.event, SessionEvent::ServerRequest { .. }));
    let Some(Message::Error(e)) = h.reply else {
        panic!("{h:?}")
    };
    assert_eq!(e.error.code, error_codes::METHOD_NOT_FOUND);
    // A client that offers nothing declares nothing.
    let mut bare: ClientSession<&str> = ClientSession::new("t", "1");
    let Message::Request(init) = bare.initialize().unwrap() else {
        panic!()
    };
    assert_eq!(init.params.unwrap()["capabilities"], json!({}));
}

#[test]
fn handshake_then_requests_get_distinct_ids() {
    let mut s = ready_session();
    let (a, _) = s.request("tools/list", None, "a").unwrap();
    let (b, _) = s.request("tools/list", None, "b").unwrap();
    assert_ne!(a, b);
    let h = s.handle(Message::Response(Response {
        id: b,
        result: json!(2),
    }));
    assert_eq!(
        h.event,
        SessionEvent::Response {
            token: "b",
            result: json!(2)
        }
    );
    let h = s.handle(Message::Response(Response {
        id: a,
        result: json!(1),
    }));
    assert_eq!(
        h.event,
        SessionEvent::Response {
            token: "a",
            result: json!(1)
        }
    );
    assert_eq!(s.pending_len(), 0);
}

#[test]
fn requests_before_handshake_are_refused() {
    let mut s: ClientSession<()> = ClientSession::new("t", "1");
    assert_eq!(
        s.request("tools/list", None, ()).unwrap_err(),
        SessionError::NotReady
    );
    s.initialize().unwrap();
    assert_eq!(
        s.initialize().unwrap_err(),
        SessionError::AlreadyInitializing
    );
}

#[test]
fn wrong_version_fails_the_handshake() {
    let mut s: ClientSession<()> = ClientSession::new("t", "1");
    let Message::Request(req) = s.initialize().unwrap() else {
        panic!()
    };
    let h = s.handle(Message::Response(Response {
        id: req.id,
        result: json!({"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}),
    }));
    assert!(matches!(
        h.event,
        SessionEvent::InitializeFailed(InitializeFailure::Invalid(
            InitializeError::UnsupportedVersion(_)
        ))
    ));
    assert_eq!(s.state(), &HandshakeState::Closed);
}

#[test]
fn unknown_and_duplicate_answers_are_ignored() {
    let mut s = ready_session();
    let (id, _) = s.request("x", None, "t").unwrap();
    let answer = Message::Response(Response {
        id: id.clone(),
        result: json!(1),
    });
    assert!(matches!(
        s.handle(answer.clone()).event,
        SessionEvent::Response { .. }
    ));
    assert_eq!(
        s.handle(answer).event,
        SessionEvent::Ignored(Ignored::UnknownResponseId(id))
    );
    let invented = Message::Response(Response {
        id: RequestId::String("zz".into()),
        result: json!(1),
    });
    assert!(matches!(
        s.handle(invented).event,
        SessionEvent::Ignored(Ignored::UnknownResponseId(_))
    ));
}

#[test]
fn forget_frees_the_slot_and_drops_a_late_answer() {
    let mut s = ready_session();
    let (id, _) = s.request("tools/list", None, "t").unwrap();
    assert_eq!(s.forget(&id), Some("t"));
    assert_eq!(s.pending_len(), 0);
    let late = s.handle(Message::Response(Response {
        id,
        result: json!(1),
    }));
    assert!(matches!(
        late.event,
        SessionEvent::Ignored(Ignored::UnknownResponseId(_))
    ));
}

#[test]
fn server_requests_get_ping_answers_or_method_not_found() {
    let mut s = ready_session();
    let h = s.handle(Message::Request(Request::new(
        RequestId::String("p".into()),
        "ping",
        None,
    )));
    assert_eq!(
        h.reply,
        Some(Message::Response(Response {
            id: RequestId::String("p".into()),
            result: json!({})
        }))
    );
    let h = s.handle(Message::Request(Request::new(
        RequestId::Number(9),
        "sampling/createMessage",
        None,
    )));
    let Some(Message::Error(e)) = h.reply else {
        panic!()
    };
    assert_eq!(e.error.code, error_codes::METHOD_NOT_FOUND);
}

#[test]
fn notifications_become_events() {
    let mut s = ready_session();
    let n = |m: &str, p: Value| Message::Notification(Notification::new(m, Some(p)));
    assert_eq!(
        s.handle(n(methods::TOOLS_LIST_CHANGED, json!({}))).event,
        SessionEvent::ToolsChanged
    );
    let h = s.handle(n(
        methods::PROGRESS,
        json!({"progressToken": 3, "progress": 1, "total": 2}),
    ));
    assert!(matches!(
        h.event,
        SessionEvent::Progress(ProgressParams { total: Some(_), .. })
    ));
    let h = s.handle(n(
        methods::LOG_MESSAGE,
        json!({"level": "info", "data": "x"}),
    ));
    assert!(matches!(h.event, SessionEvent::Log(_)));
    let h = s.handle(n(methods::PROGRESS, json!({"nope": 1})));
    assert!(matches!(
        h.event,
        SessionEvent::Ignored(Ignored::MalformedNotification(_))
    ));
}

#[test]
fn close_returns_every_pending_token() {
    let mut s = ready_session();
    s.request("a", None, "1").unwrap();
    s.request("b", None, "2").unwrap();
    let mut tokens = s.close();
    tokens.sort_unstable();
    assert_eq!(tokens, vec!["1", "2"]);
    assert_eq!(s.request("c", None, "3").unwrap_err(), SessionError::Closed);
}

/// The request a step sends, with its id, method and params.
fn request_of(h: &Handled<&'static str>) -> (RequestId, String, Value) {
    let Some(Message::Request(r)) = &h.reply else {
        panic!("no request in {h:?}")
    };
    (
        r.id.clone(),
        r.method.clone(),
        r.params.clone().unwrap_or(Value::Null),
    )
}

fn refuse(id: RequestId, code: i64, data: Value) -> Message {
    Message::Error(ErrorResponse {
        id: Some(id),
        error: ErrorObject {
            code,
            message: "no".into(),
            data: Some(data),
        },
    })
}

#[test]
fn a_server_that_refuses_initialize_as_a_modern_one_is_reached_stateless() {
    let mut s: ClientSession<&'static str> = ClientSession::new("mcpvisor", "0.1.0");
    let first = s.open().unwrap();
    let (id, method, params) = request_of(&first);
    assert_eq!(method, methods::INITIALIZE);
    assert_eq!(params["protocolVersion"], "2025-03-26");

    let probe = s.handle(refuse(id, -32022, json!({"supported": ["2026-07-28"]})));
    assert!(matches!(
        probe.event,
        SessionEvent::Ignored(Ignored::Switched)
    ));
    let (id, method, params) = request_of(&probe);
    assert_eq!(method, "server/discover");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
        "mcpvisor"
    );
    assert!(s.is_probing());

    let ready = s.handle(Message::Response(Response {
        id,
        result: json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "py", "version": "2"}}}),
    }));
    assert!(matches!(ready.event, SessionEvent::Ready(ref r) if r.server_info.name == "py"));
    assert!(
        ready.reply.is_none(),
        "no initialized notification: {ready:?}"
    );
    assert_eq!(s.revision(), Some(Revision::V2026_07_28));

    // Every request now carries the revision; what it had stays.
    let (_, msg) = s
        .request("tools/list", Some(json!({"cursor": "c"})), "t")
        .unwrap();
    let Message::Request(r) = msg else { panic!() };
    let params = r.params.unwrap();
    assert_eq!(params["cursor"], "c");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn probing_first_falls_back_to_initialize_on_an_error_or_silence() {
    let versions = Versions::parse(&["2026-07-28", "2025-06-18"]).unwrap();
    let mut s: ClientSession<&'static str> =
        ClientSession::new("t", "1").with_versions(versions.clone());
    let (id, method, _) = request_of(&s.open().unwrap());
    assert_eq!(method, "server/discover");
    let fallback = s.handle(refuse(id, -32601, json!(null)));
    let (id, method, params) = request_of(&fallback);
    assert_eq!(method, methods::INITIALIZE);
    assert_eq!(params["protocolVersion"], "2025-06-18");
    let ready = s.handle(Message::Response(Response {
        id,
        result: json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "serverInfo": {"name": "old", "version": "1"}}),
    }));
    assert!(matches!(ready.event, SessionEvent::Ready(_)));
    assert!(ready.reply.is_some(), "initialized follows a handshake");
    assert_eq!(s.revision(), Some(Revision::V2025_06_18));
    let (_, msg) = s.request("tools/list", None, "t").unwrap();
    let Message::Request(r) = msg else { panic!() };
    assert!(r.params.is_none(), "no _meta at a dated revision");

    // No answer in time: initialize; a late error to the probe is ignored.
    let mut s: ClientSession<&'static str> =
        ClientSession::new("t", "1").with_versions(versions.clone());
    let (probe_id, _, _) = request_of(&s.open().unwrap());
    let switched = s.probe_unanswered().unwrap();
    assert_eq!(request_of(&switched).1, methods::INITIALIZE);
    assert!(s.probe_unanswered().is_none(), "once");
    let late = s.handle(refuse(probe_id, -32601, json!(null)));
    assert!(matches!(
        late.event,
        SessionEvent::Ignored(Ignored::UnknownResponseId(_))
    ));
    assert!(matches!(s.state(), HandshakeState::Initializing(_)));

    // A modern server slow to start answers the probe late: it is taken, and
    // the answer to `initialize` is not waited for.
    let mut s: ClientSession<&'static str> = ClientSession::new("t", "1").with_versions(versions);
    let (probe_id, _, _) = request_of(&s.open().unwrap());
    let (init_id, _, _) = request_of(&s.probe_unanswered().unwrap());
    let late = s.handle(Message::Response(Response {
        id: probe_id,
        result: json!({"supportedVersions": ["2026-07-28"]}),
    }));
    assert!(matches!(late.event, SessionEvent::Ready(_)), "{late:?}");
    assert_eq!(s.revision(), Some(Revision::V2026_07_28));
    let refused = s.handle(refuse(
        init_id,
        -32022,
        json!({"supported": ["2026-07-28"]}),
    ));
    assert!(matches!(
        refused.event,
        SessionEvent::Ignored(Ignored::UnknownResponseId(_))
    ));
    assert_eq!(s.revision(), Some(Revision::V2026_07_28));
}

#[test]
fn a_modern_only_server_the_settings_leave_out_fails_typed() {
    let mut s: ClientSession<&'static str> =
        ClientSession::new("t", "1").with_versions(Versions::parse(&["2025-11-25"]).unwrap());
    let (id, _, _) = request_of(&s.open().unwrap());
    let failed = s.handle(refuse(id, -32022, json!({"supported": ["2026-07-28"]})));
    let SessionEvent::InitializeFailed(failure @ InitializeFailure::RefusedAsModern(_)) =
        failed.event
    else {
        panic!("{failed:?}")
    };
    // The server's own words stay in what is reported.
    assert!(
        failure.to_string().contains("no (code -32022)"),
        "{failure}"
    );
}
