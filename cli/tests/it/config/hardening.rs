//! What the configuration path refuses to read, evaluate or echo: the `oauth`
//! block of an entry nobody enabled, key files that are FIFOs, devices or
//! links, values pasted into `${…}`, the found value of a type error, expanded
//! arguments in `Debug`, and terminal control sequences from a server.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use mcpvisor::config::McpConfig;
use serde_json::json;

fn scratch(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("cfg-{tag}"))
}

/// Runs the CLI in `dir`, failing the test if it does not finish in 20 s.
fn mcpvisor(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = testkit::serve::mcpvisor(dir);
    cmd.args(args)
        .env("CLIENT_SECRET_VALUE", "cs-should-never-print");
    testkit::serve::finish(&mut cmd, Duration::from_secs(20))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_disabled_entrys_key_file_is_never_opened() {
    let dir = scratch("fifo");
    nix::unistd::mkfifo(&dir.join("key.pem"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(dir.join("regular.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    let config = json!({"mcpServers": {
        "off": {"type": "http", "url": "https://mcp.example.com/mcp", "disabled": true,
                "oauth": {"grant": "client_credentials", "clientId": "c", "privateKeyFile": "key.pem"}},
        "unapproved": {"type": "http", "url": "https://mcp.example.com/mcp",
                "oauth": {"grant": "client_credentials", "clientId": "c", "privateKeyFile": "/dev/zero"}},
        "unset": {"type": "http", "url": "https://mcp.example.com/mcp", "disabled": true,
                "oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "${NEVER_SET_VAR}"}},
        "keyed": {"type": "http", "url": "https://mcp.example.com/mcp",
                "oauth": {"grant": "password", "clientId": "c", "privateKeyFile": "regular.pem"}},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    // A FIFO opened for reading would block this for ever; /dev/zero would fill memory.
    let out = mcpvisor(&dir, &["--json", "servers"]);
    assert!(out.status.success(), "{}", text(&out));
    // Had their `oauth` blocks been evaluated, the unset variable and the
    // unsupported grant would show as problems or auth errors.
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for entry in &listed {
        assert_eq!(entry["problems"], json!([]), "{entry}");
        assert_eq!(entry["auth"], serde_json::Value::Null, "{entry}");
    }
    for name in ["off", "unapproved", "unset", "keyed"] {
        let out = mcpvisor(&dir, &["login", "--headless", name]);
        assert!(!out.status.success());
        assert!(text(&out).contains("is not enabled"), "{}", text(&out));
        // Forgetting tokens needs no evaluation: it works for any entry.
        let out = mcpvisor(&dir, &["logout", name]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains("had no stored tokens"),
            "{}",
            text(&out)
        );
    }
    // Enabling reads it under the rules: not a regular file, refused, nothing saved.
    let out = mcpvisor(&dir, &["enable", "unapproved"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("not a regular file"), "{}", text(&out));
    let listed = mcpvisor(&dir, &["--json", "servers"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("\"approved\":false"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn enable_checks_the_oauth_block_and_refuses_linked_or_large_key_files() {
    let dir = scratch("oauth");
    std::fs::write(dir.join("real.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::os::unix::fs::symlink(dir.join("real.pem"), dir.join("link.pem")).unwrap();
    std::fs::write(dir.join("big.pem"), vec![b'k'; 70 * 1024]).unwrap();
    let config = json!({"mcpServers": {
        "grant": {"type": "http", "url": "https://mcp.example.com/mcp", "oauth": {"grant": "password"}},
        "secret": {"type": "http", "url": "https://mcp.example.com/mcp",
                   "oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "${UNSET_SECRET_VAR}"}},
        "link": {"type": "http", "url": "https://mcp.example.com/mcp",
                 "oauth": {"clientId": "c", "privateKeyFile": "link.pem"}},
        "big": {"type": "http", "url": "https://mcp.example.com/mcp",
                "oauth": {"clientId": "c", "privateKeyFile": "big.pem"}},
        "both": {"type": "http", "url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer static"}, "oauth": {"clientId": "c"}},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for (name, why) in [
        ("grant", "`oauth.grant` `password` is not supported"),
        ("secret", "UNSET_SECRET_VAR"),
        ("link", "symbolic link"),
        ("big", "larger than 65536 bytes"),
        ("both", "static `Authorization` header"),
    ] {
        let out = mcpvisor(&dir, &["enable", name]);
        assert!(!out.status.success(), "{name} was enabled");
        assert!(text(&out).contains(why), "{name}: {}", text(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_never_echo_a_value() {
    let dir = scratch("echo");
    // A token pasted between the braces instead of a variable name.
    let config = json!({"mcpServers": {
        "pasted": {"command": "x", "env": {"TOKEN": "${ghp_pasted-token-value}"}},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let out = mcpvisor(&dir, &["enable", "pasted"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("env.TOKEN"), "{}", text(&out));
    assert!(!text(&out).contains("ghp_pasted"), "{}", text(&out));

    // A value of the wrong type whose text holds ", expected ".
    let path = dir.join("typed.json");
    let bad =
        r#"{"mcpServers": {"s": {"command": "x", "disabled": "sk-live-1, expected anything"}}}"#;
    std::fs::write(&path, bad).unwrap();
    let e = McpConfig::load(&path).unwrap_err().to_string();
    assert!(!e.contains("sk-live-1") && !e.contains("anything"), "{e}");
    assert!(e.contains("expected a boolean"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expanded_arguments_are_not_in_debug_output() {
    let dir = scratch("args");
    let config = json!({"mcpServers": {
        "s": {"command": "server", "args": ["--api-key", "${API_KEY}", "--token=${API_KEY}"]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let cfg = McpConfig::load(&dir.join(".mcp.json")).unwrap();
    // Random per run, and really expanded into the arguments the child gets.
    let key = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("key-{:016x}", h.finish())
    };
    let lookup = |n: &str| (n == "API_KEY").then(|| key.clone());
    let spec = cfg.servers["s"].resolve(&lookup, &dir).unwrap();
    let mcpvisor::TransportSpec::Stdio(stdio) = &spec.transport else {
        panic!("{spec:?}");
    };
    assert_eq!(stdio.args, ["--api-key", &key, &format!("--token={key}")]);
    let shown = format!("{spec:?} {spec:#?}");
    assert!(!shown.contains(&key), "{shown}");
    assert!(shown.contains("${API_KEY}"), "{shown}");
    // Built by hand, without the written form, values are hidden too.
    let by_hand = mcpvisor::StdioSpec::new("server", ["--api-key", key.as_str()]);
    assert_eq!(by_hand.args, ["--api-key", &key]);
    assert!(!format!("{by_hand:?}").contains(&key));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn terminal_control_sequences_from_a_server_are_escaped() {
    let dir = scratch("escapes");
    let config = json!({"mcpServers": {
        "d": {"command": env!("CARGO_BIN_EXE_mcpvisor"), "args": ["demo-server", "--hostile", "terminal-escapes"]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    assert!(mcpvisor(&dir, &["enable", "d"]).status.success());
    let mut shown = String::new();
    for args in [
        &["tools"][..],
        &["call", "mcp__d__echo", r#"{"text":"hi"}"#],
        &["call", "mcp__d__fail", "{}"],
    ] {
        let out = mcpvisor(&dir, args);
        shown.push_str(&text(&out));
    }
    assert!(
        shown.contains("described"),
        "the descriptions were printed: {shown}"
    );
    assert!(
        shown.contains("answered"),
        "the result was printed: {shown}"
    );
    assert!(shown.contains("failed"), "the error was printed: {shown}");
    let raw: Vec<char> = shown
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect();
    assert!(
        raw.is_empty(),
        "raw control characters reached the terminal: {raw:?}"
    );
    assert!(shown.contains("\\u{1b}"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}
