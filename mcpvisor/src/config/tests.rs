use std::path::Path;
use std::time::Duration;

use mcpvisor_actors::TransportSpec;

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "API_KEY" => Some("k-123".into()),
        "TOKEN" => Some("${API_KEY}".into()),
        "BASE" => Some("https://api.example.com".into()),
        _ => None,
    }
}

#[test]
fn structural_errors_carry_the_json_path_and_position_but_no_value() {
    let text = "{\"mcpServers\": {\n  \"github\": {\"command\": \"x\",\n    \"args\": [\"a\", \"b\", 12345678]}}}";
    let err = McpConfig::parse(text, Path::new("p/.mcp.json")).unwrap_err();
    let ConfigError::Structure {
        json_path,
        line,
        column,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(json_path, "mcpServers.github.args[2]");
    assert_eq!((*line, *column), (3, 31));
    let shown = err.to_string();
    assert!(shown.contains("p/.mcp.json:3:31"), "{shown}");
    assert!(shown.contains("expected a string"), "{shown}");
    assert!(!shown.contains("12345678"), "{shown}");
    let err = McpConfig::parse(
        "{\"mcpServers\": {\"a\": {\"env\": {\"K\": \"secret-v\"}} ",
        Path::new("x"),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
    let err = McpConfig::parse(
        r#"{"mcpServers": {"a": {"headers": {"H": ["secret-v"]}}}}"#,
        Path::new("x"),
    )
    .unwrap_err();
    assert!(!err.to_string().contains("secret-v"));
}

#[test]
fn every_entry_is_parsed_but_only_resolution_expands() {
    let text = r#"{"mcpServers": {
        "off": {"command": "${NOT_SET}", "disabled": true},
        "on": {"command": "srv", "args": ["--key", "${API_KEY}"], "env": {"T": "${TOKEN}"}, "futureField": 1}
    }}"#;
    let cfg = McpConfig::parse(text, Path::new("/proj/.mcp.json")).unwrap();
    assert_eq!(cfg.servers.len(), 2);
    assert_eq!(cfg.unknown_fields, vec!["mcpServers.on.futureField"]);
    assert!(cfg.servers["off"].disabled);
    let spec = cfg.servers["on"].resolve(&env, &cfg.base_dir()).unwrap();
    let TransportSpec::Stdio(s) = &spec.transport else {
        panic!()
    };
    assert_eq!(s.args, vec!["--key", "k-123"]);
    assert_eq!(
        s.env[0].1.expose(),
        "${API_KEY}",
        "a value is never expanded twice"
    );
    let problems = cfg.servers["off"]
        .resolve(&env, &cfg.base_dir())
        .unwrap_err();
    assert_eq!(problems.len(), 1);
    let shown = problems[0].to_string();
    assert!(
        shown.contains("`off`") && shown.contains("`command`") && shown.contains("NOT_SET"),
        "{shown}"
    );
}

#[test]
fn defaults_urls_headers_and_timeouts() {
    let text = r#"{"mcpServers": {
        "api": {"type": "http", "url": "${BASE}/mcp", "headers": {"Authorization": "Bearer ${API_KEY}", "X-Region": "${REGION:-eu}"},
                "timeout": 1500, "startupTimeout": 9000},
        "local": {"url": "${LOCAL_URL:-http://127.0.0.1:8080/mcp}"}
    }}"#;
    let cfg = McpConfig::parse(text, Path::new(".mcp.json")).unwrap();
    let spec = cfg.servers["api"].resolve(&env, Path::new(".")).unwrap();
    assert_eq!(spec.request_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(spec.startup_timeout, Some(Duration::from_millis(9000)));
    let TransportSpec::Http(h) = &spec.transport else {
        panic!()
    };
    assert_eq!(h.url, "https://api.example.com/mcp");
    let headers: Vec<(&str, &str)> = h
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.expose()))
        .collect();
    assert_eq!(
        headers,
        vec![("Authorization", "Bearer k-123"), ("X-Region", "eu")]
    );
    let spec = cfg.servers["local"].resolve(&env, Path::new(".")).unwrap();
    assert!(
        matches!(&spec.transport, TransportSpec::Http(h) if h.url == "http://127.0.0.1:8080/mcp")
    );
}

#[test]
fn runtime_problems_are_all_reported_and_name_the_field() {
    let text = r#"{"mcpServers": {
        "bad_": {"command": ""},
        "web": {"type": "http", "url": "ftp://x", "headers": {"Accept": "x", "X-Ok": "${MISSING}"}},
        "legacy": {"type": "sse", "url": "http://127.0.0.1/sse"},
        "nourl": {"type": "http"}
    }}"#;
    let cfg = McpConfig::parse(text, Path::new(".mcp.json")).unwrap();
    let problems = |name: &str| cfg.servers[name].resolve(&env, Path::new(".")).unwrap_err();
    let bad = problems("bad_");
    assert!(matches!(bad[0], EntryProblem::InvalidName { .. }));
    assert!(matches!(bad[1], EntryProblem::MissingCommand { .. }));
    let web = problems("web");
    assert!(
        web.iter()
            .any(|p| matches!(p, EntryProblem::Expansion { field, .. } if field == "headers.X-Ok")),
        "{web:?}"
    );
    assert!(
        web.iter()
            .any(|p| matches!(p, EntryProblem::InvalidUrl { .. })),
        "{web:?}"
    );
    let legacy = problems("legacy");
    assert!(
        legacy[0].to_string().contains("`sse` is not supported"),
        "{}",
        legacy[0]
    );
    assert!(matches!(
        problems("nourl")[0],
        EntryProblem::InvalidUrl { .. }
    ));
    let owned = cfg.servers["web"]
        .resolve(
            &|n| (n == "MISSING").then(|| "v".to_string()),
            Path::new("."),
        )
        .unwrap_err();
    assert!(
        owned
            .iter()
            .any(|p| matches!(p, EntryProblem::InvalidHeader { .. })),
        "{owned:?}"
    );
}

#[test]
fn debug_never_shows_values() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "env": {"API_TOKEN": "s3cr3t-env"}},
        "h": {"type": "http", "url": "https://h/mcp?key=s3cr3t-query", "headers": {"Authorization": "s3cr3t-hdr"}}}}"#;
    let cfg = McpConfig::parse(text, Path::new(".mcp.json")).unwrap();
    let shown = format!("{cfg:?} {cfg:#?}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(
        shown.contains("API_TOKEN=[redacted]") && shown.contains("Authorization: [redacted]"),
        "{shown}"
    );
}

#[test]
fn protocol_versions_per_entry_are_checked_when_resolved() {
    let text = r#"{"mcpServers": {
        "new": {"command": "x", "protocolVersions": ["2025-11-25", "2025-03-26"]},
        "plain": {"command": "x"},
        "bad": {"command": "x", "protocolVersions": ["2024-11-05"]},
        "twice": {"command": "x", "protocolVersions": ["2025-06-18", "2025-06-18"]},
        "empty": {"command": "x", "protocolVersions": []}
    }}"#;
    let cfg = McpConfig::parse(text, Path::new(".mcp.json")).unwrap();
    let spec = cfg.servers["new"].resolve(&env, Path::new(".")).unwrap();
    assert_eq!(
        spec.protocol_versions.map(|v| v.names()).as_deref(),
        Some("2025-11-25,2025-03-26")
    );
    let spec = cfg.servers["plain"].resolve(&env, Path::new(".")).unwrap();
    assert_eq!(spec.protocol_versions, None);
    for (name, says) in [
        ("bad", "2024-11-05"),
        ("twice", "twice"),
        ("empty", "empty"),
    ] {
        let problems = cfg.servers[name].resolve(&env, Path::new(".")).unwrap_err();
        assert!(
            matches!(&problems[..], [EntryProblem::InvalidProtocolVersions { reason, .. }] if reason.contains(says)),
            "{name}: {problems:?}"
        );
    }
}

#[test]
fn a_vs_code_file_is_read_and_streamable_http_is_http() {
    let text = r#"{"inputs": [], "servers": {
        "files": {"type": "stdio", "command": "npx", "args": ["-y", "fs"], "env": {"K": "v"}, "envFile": "x"},
        "remote": {"type": "streamable-http", "url": "https://h/mcp", "headers": {"A": "b"}}
    }}"#;
    let cfg = McpConfig::parse(text, Path::new("/p/.vscode/mcp.json")).unwrap();
    assert_eq!(cfg.servers["files"].kind, TransportKind::Stdio);
    assert_eq!(cfg.servers["files"].args, ["-y", "fs"]);
    assert_eq!(cfg.servers["remote"].kind, TransportKind::Http);
    assert!(
        cfg.servers["remote"]
            .resolve(&|_| None, Path::new("/p"))
            .is_ok()
    );
    assert_eq!(cfg.unknown_fields, ["servers.files.envFile"]);
}

#[test]
fn a_file_without_servers_or_with_both_keys_is_refused() {
    for text in [
        "{}",
        r#"{"mcpServers": null}"#,
        r#"{"mcp_servers": {"a": {}}}"#,
    ] {
        let err = McpConfig::parse(text, Path::new("p/.mcp.json")).unwrap_err();
        assert!(
            matches!(err, ConfigError::NoServers { .. }),
            "{text}: {err}"
        );
        assert!(err.to_string().contains("p/.mcp.json"), "{err}");
    }
    let both = r#"{"mcpServers": {}, "servers": {}}"#;
    let err = McpConfig::parse(both, Path::new("p/.mcp.json")).unwrap_err();
    assert!(matches!(err, ConfigError::BothServerKeys { .. }), "{err}");
    assert!(McpConfig::parse(r#"{"mcpServers": {}}"#, Path::new("p")).is_ok());
}

#[test]
fn a_stdio_server_runs_in_its_projects_directory_unless_cwd_says_otherwise() {
    let text = r#"{"mcpServers": {
        "here": {"command": "srv"},
        "there": {"command": "srv", "cwd": "sub"}
    }}"#;
    let cwd_of = |path: &str, name: &str| {
        let cfg = McpConfig::parse(text, Path::new(path)).unwrap();
        let spec = cfg.servers[name].resolve(&env, &cfg.base_dir()).unwrap();
        let TransportSpec::Stdio(s) = spec.transport else {
            panic!()
        };
        s.cwd
    };
    let proj = std::path::PathBuf::from("/proj");
    assert_eq!(cwd_of("/proj/.mcp.json", "here"), Some(proj.clone()));
    assert_eq!(cwd_of("/proj/.mcp.json", "there"), Some(proj.join("sub")));
    // An editor's file speaks for the directory that holds the editor's folder.
    assert_eq!(cwd_of("/proj/.cursor/mcp.json", "here"), Some(proj.clone()));
    assert_eq!(
        cwd_of("/proj/.vscode/mcp.json", "there"),
        Some(proj.join("sub"))
    );
}
