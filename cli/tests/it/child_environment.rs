//! A stdio server starts from a cleared environment: the allowlist, the names
//! passed through by the settings and by its entry, and its own `env`. A token
//! one server was given never reaches another, and `servers` shows the names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use mcpvisor::{Host, ServerSpec, StdioSpec};
use serde_json::{Value, json};
use testkit::{fast_options, next_ready, peers_dir};

fn scratch(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("env-{tag}"))
}

fn mcpvisor(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = testkit::serve::mcpvisor(dir);
    cmd.args(args)
        .env("GITHUB_PAT", "ghp_only-for-server-a")
        .env("UNRELATED_SECRET", "nobody-asked-for-this")
        .env("PER_ENTRY_NAME", "for-b")
        .env("GLOBAL_NAME", "for-everyone")
        .env("MCPVISOR_ENV_PASSTHROUGH", "GLOBAL_NAME");
    testkit::serve::finish(&mut cmd, Duration::from_secs(60))
}

/// A server entry that writes its environment to `<dir>/<name>.env`, then serves.
fn dumping(dir: &Path, name: &str, extra: Value) -> Value {
    let mut entry = json!({
        "command": "sh",
        "args": ["-c", format!("env > {}/{name}.env; exec \"$0\" demo-server", dir.display()), env!("CARGO_BIN_EXE_mcpvisor")],
    });
    entry
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    entry
}

fn read_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn each_server_gets_only_the_allowlist_its_passthrough_and_its_own_variables() {
    let dir = scratch("own");
    let config = json!({"mcpServers": {
        "a": dumping(&dir, "a", json!({"env": {"GITHUB_PAT": "${GITHUB_PAT}"}})),
        "b": dumping(&dir, "b", json!({"envPassthrough": ["PER_ENTRY_NAME"]})),
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for name in ["a", "b"] {
        let out = mcpvisor(&dir, &["enable", name]);
        assert!(out.status.success(), "{out:?}");
    }
    let out = mcpvisor(&dir, &["tools"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("mcp__a__echo") && stdout.contains("mcp__b__echo"),
        "{out:?}"
    );

    let a = read_env(&dir.join("a.env"));
    let b = read_env(&dir.join("b.env"));
    assert_eq!(
        a.get("GITHUB_PAT").map(String::as_str),
        Some("ghp_only-for-server-a")
    );
    assert!(!b.contains_key("GITHUB_PAT"), "b got a's token: {b:?}");
    assert_eq!(b.get("PER_ENTRY_NAME").map(String::as_str), Some("for-b"));
    assert!(!a.contains_key("PER_ENTRY_NAME"), "{a:?}");
    for env in [&a, &b] {
        assert!(!env.contains_key("UNRELATED_SECRET"), "{env:?}");
        assert!(!env.contains_key("MCPVISOR_HOME"), "{env:?}");
        assert_eq!(
            env.get("GLOBAL_NAME").map(String::as_str),
            Some("for-everyone")
        );
        assert!(
            env.contains_key("PATH") && env.contains_key("HOME"),
            "{env:?}"
        );
    }

    // `servers` names what each server gets, never a value.
    let out = mcpvisor(&dir, &["--json", "servers"]);
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    let listed: Vec<Value> = serde_json::from_str(&shown).unwrap();
    let names = |server: &str| -> Vec<String> {
        let entry = listed.iter().find(|s| s["name"] == server).unwrap();
        serde_json::from_value(entry["environment"].clone()).unwrap()
    };
    assert!(names("a").contains(&"GITHUB_PAT".to_string()), "{shown}");
    assert!(!names("b").contains(&"GITHUB_PAT".to_string()), "{shown}");
    assert!(
        names("b").contains(&"PER_ENTRY_NAME".to_string()),
        "{shown}"
    );
    assert!(names("a").contains(&"GLOBAL_NAME".to_string()), "{shown}");
    assert!(
        !shown.contains("ghp_only") && !shown.contains("for-everyone"),
        "{shown}"
    );
    // The names are worth a line each only when asked for (-v).
    let plain = mcpvisor(&dir, &["servers"]);
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(!plain.contains("environment:"), "{plain}");
    let text = mcpvisor(&dir, &["-v", "servers"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("environment:") && text.contains("GITHUB_PAT"),
        "{text}"
    );
    assert!(!text.contains("ghp_only"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_invalid_passthrough_name_is_refused_when_enabling() {
    let dir = scratch("badname");
    let config = json!({"mcpServers": {
        "a": {"command": "true", "envPassthrough": ["NOT A NAME"]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let out = mcpvisor(&dir, &["enable", "a"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("envPassthrough"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn npx_found_on_path_still_starts_server_everything() {
    let spec = StdioSpec {
        cwd: Some(peers_dir()),
        ..StdioSpec::new("npx", ["-y", "@modelcontextprotocol/server-everything"])
    };
    let host = Host::start(vec![ServerSpec::stdio("ev", spec)], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let r = host
        .call(
            "mcp__ev__echo",
            json!({"message": "through npx"}),
            mcpvisor::CallOptions::default().timeout(Duration::from_secs(20)),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: through npx");
    host.shutdown().await;
}
