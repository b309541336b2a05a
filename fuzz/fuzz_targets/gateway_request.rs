//! A POST to `mcpvisor serve --http` as the gateway screens it before any
//! session sees it: the Host, Origin and token checks, the media types, the
//! declared length, the JSON-RPC body (one message or a batch) and the rules
//! for `initialize`.
//!
//! Input: header lines (`name: value`), an empty line, then the body.
//! Oracles: no panic; a refusal is one of the statuses the gateway answers
//! with before a session (400, 401, 403, 406, 413, 415); what passes carried
//! the token and an allowed Host, took no more than the body limit, holds at
//! least one message and no more than the batch limit, and an `initialize`
//! passes alone and without a session id.
#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use libfuzzer_sys::fuzz_target;
use mcpvisor_serve::http::{BearerToken, ScreenLimits, screen_post};

const MAX_BODY: usize = 4096;
const MAX_BATCH: usize = 8;

fuzz_target!(|data: &[u8]| {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let (head, body) = data.split_at(split);
    let body = body.get(2..).unwrap_or_default();
    let mut headers = HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(value.trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let limits = ScreenLimits {
        loopback: true,
        port: 8808,
        token: Some(BearerToken::new("t0k")),
        allowed_origins: vec!["https://app.example".to_string()],
        max_body: MAX_BODY,
        max_batch: MAX_BATCH,
    };
    match screen_post(&headers, body, &limits) {
        Err(status) => assert!(
            [
                StatusCode::BAD_REQUEST,
                StatusCode::UNAUTHORIZED,
                StatusCode::FORBIDDEN,
                StatusCode::NOT_ACCEPTABLE,
                StatusCode::PAYLOAD_TOO_LARGE,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ]
            .contains(&status),
            "refused with {status}"
        ),
        Ok(screened) => {
            let token = headers
                .get("authorization")
                .map(|v| v.as_bytes().to_ascii_lowercase());
            assert_eq!(token.as_deref(), Some(&b"bearer t0k"[..]), "passed without the token");
            assert!(headers.contains_key("host"), "passed without a Host");
            assert!(body.len() <= MAX_BODY, "took {} bytes", body.len());
            assert!(screened.messages >= 1 && screened.messages <= MAX_BATCH);
            assert!(screened.batch || screened.messages == 1);
            if screened.initialize {
                assert_eq!(screened.messages, 1, "initialize passed in a batch");
                assert!(!headers.contains_key("mcp-session-id"));
            }
        }
    }
});
