//! Configuration end to end through the CLI: approvals, enable-only expansion,
//! concurrent writers, corrupt files, settings precedence, redaction.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use mcpvisor::config::McpConfig;
use serde_json::{Value, json};
use testkit::http_server::{HttpMcpServer, Script};

/// A hang guard, not a measure.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

struct Project {
    dir: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new(tag: &str, config: &Value) -> Project {
        let root = testkit::scratch_dir(&format!("cfg-{tag}"));
        let dir = root.join("project");
        std::fs::create_dir_all(&dir).unwrap();
        let p = Project {
            dir,
            home: root.join("home"),
        };
        p.write(config);
        p
    }

    fn write(&self, config: &Value) {
        std::fs::write(
            self.dir.join(".mcp.json"),
            serde_json::to_string_pretty(config).unwrap(),
        )
        .unwrap();
    }

    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = testkit::serve::mcpvisor(&self.dir);
        cmd.args(args)
            .env("MCPVISOR_HOME", &self.home)
            .env("RUST_LOG", "trace")
            .env_remove("MCPVISOR_REQUEST_TIMEOUT_MS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        testkit::serve::finish(&mut cmd, RUN_TIMEOUT)
    }

    fn approvals(&self) -> Option<String> {
        std::fs::read_to_string(self.home.join("approvals.json")).ok()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn demo(args: &[&str]) -> Value {
    let mut all = vec!["demo-server".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": env!("CARGO_BIN_EXE_mcpvisor"), "args": all})
}

#[test]
fn only_approved_entries_run_and_a_missing_variable_fails_its_entry_alone() {
    let mut needs_var = demo(&["--extra-tool", "${TOOL_NAME}"]);
    needs_var["env"] = json!({"TOKEN": "${NEEDED}"});
    let p = Project::new(
        "approve",
        &json!({"mcpServers": {
            "alpha": demo(&[]),
            "beta": needs_var,
            "off": {"command": "${NEVER_SET}", "disabled": true},
            "later": demo(&[])
        }}),
    );
    // Nothing approved yet: nothing can run, which is said once, with the way out.
    let out = p.run(&["tools"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).trim().is_empty(),
        "nothing approved yet: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("not approved: `alpha`, `beta`, `later`")
            && text(&out).contains("run `mcpvisor enable --all`"),
        "{}",
        text(&out)
    );

    assert!(p.run(&["enable", "alpha"], &[]).status.success());
    let refused = p.run(&["enable", "beta"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused).contains("`NEEDED` is not set")
            && text(&refused).contains("`TOOL_NAME` is not set"),
        "{}",
        text(&refused)
    );
    assert!(
        !p.approvals().unwrap().contains("beta"),
        "an invalid entry is not saved"
    );
    let ok = p.run(
        &["enable", "beta"],
        &[("NEEDED", "x"), ("TOOL_NAME", "extra")],
    );
    assert!(ok.status.success(), "{}", text(&ok));

    // Now beta's variables are gone: beta fails alone, alpha runs, `off` blocks nothing.
    let out = p.run(&["tools"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("mcp__alpha__echo"), "{}", text(&out));
    assert!(!stdout.contains("mcp__beta__"), "{}", text(&out));
    assert!(
        text(&out)
            .contains("server `beta`: field `env.TOKEN`: environment variable `NEEDED` is not set"),
        "{}",
        text(&out)
    );
    assert!(
        !text(&out).contains("NEVER_SET"),
        "a disabled entry is not expanded: {}",
        text(&out)
    );
    let out = p.run(&["tools"], &[("NEEDED", "x"), ("TOOL_NAME", "extra")]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("mcp__beta__extra"),
        "{}",
        text(&out)
    );

    let out = p.run(&["--json", "servers"], &[]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("alpha")["enabled"], true);
    assert_eq!(by_name("later")["approved"], false);
    assert_eq!(by_name("off")["disabled"], true);
    assert_eq!(by_name("off")["problems"], json!([]));
    assert_eq!(by_name("beta")["problems"].as_array().unwrap().len(), 2);
}

#[test]
fn approval_survives_edits_and_is_keyed_by_path() {
    let p = Project::new("edit", &json!({"mcpServers": {"srv": demo(&[])}}));
    assert!(p.run(&["enable", "srv"], &[]).status.success());
    // Edit the definition: the approval stays.
    p.write(&json!({"mcpServers": {"srv": demo(&["--page-size", "1"])}}));
    let out = p.run(&["tools"], &[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("mcp__srv__echo"),
        "{}",
        text(&out)
    );
    // The same file in another directory is another project.
    let other = p.dir.parent().unwrap().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(p.dir.join(".mcp.json"), other.join(".mcp.json")).unwrap();
    let mut cmd = testkit::serve::mcpvisor(&other);
    let out = testkit::serve::finish(cmd.arg("tools").env("MCPVISOR_HOME", &p.home), RUN_TIMEOUT);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("mcp__srv__"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("not approved"));
    // Disable withdraws it.
    assert!(p.run(&["disable", "srv"], &[]).status.success());
    assert!(!String::from_utf8_lossy(&p.run(&["tools"], &[]).stdout).contains("mcp__srv__"));
}

#[test]
fn concurrent_enables_leave_a_valid_file_with_every_approval() {
    let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let servers: serde_json::Map<String, Value> =
        names.iter().map(|n| (n.clone(), demo(&[]))).collect();
    let p = Project::new("race", &json!({"mcpServers": servers}));
    let children: Vec<_> = names
        .iter()
        .map(|n| {
            Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
                .args(["enable", n])
                .current_dir(&p.dir)
                .env("MCPVISOR_HOME", &p.home)
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let file: Value = serde_json::from_str(&p.approvals().unwrap()).expect("a valid file");
    let project = file["projects"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    for n in &names {
        assert_eq!(project[n], "approved", "{file}");
    }
}

#[test]
fn a_corrupt_approvals_file_is_a_clear_error_and_is_kept() {
    let p = Project::new("corrupt", &json!({"mcpServers": {"srv": demo(&[])}}));
    std::fs::create_dir_all(&p.home).unwrap();
    std::fs::write(p.home.join("approvals.json"), "{not json").unwrap();
    for args in [&["tools"][..], &["enable", "srv"]] {
        let out = p.run(args, &[]);
        assert!(!out.status.success());
        assert!(
            text(&out).contains("approvals file is corrupt"),
            "{}",
            text(&out)
        );
    }
    assert_eq!(p.approvals().unwrap(), "{not json");
}

#[test]
fn settings_layers_and_their_sources() {
    let p = Project::new("settings", &json!({"mcpServers": {}}));
    std::fs::create_dir_all(&p.home).unwrap();
    std::fs::write(
        p.home.join("settings.toml"),
        "request_timeout_ms = 1000\nstartup_timeout_ms = 1500\n",
    )
    .unwrap();
    let out = p.run(
        &["--json", "--startup-timeout-ms", "7", "settings"],
        &[("MCPVISOR_REQUEST_TIMEOUT_MS", "2000")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let get = |k: &str| {
        all.as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == k)
            .unwrap()
            .clone()
    };
    assert_eq!(get("request_timeout_ms")["value"], 2000);
    assert_eq!(
        get("request_timeout_ms")["source"],
        "environment MCPVISOR_REQUEST_TIMEOUT_MS"
    );
    assert_eq!(get("startup_timeout_ms")["value"], 7);
    assert_eq!(get("startup_timeout_ms")["source"], "command line");
    assert_eq!(get("restart_max_restarts")["source"], "default");
    assert_eq!(get("home")["source"], "environment MCPVISOR_HOME");
    std::fs::write(p.home.join("settings.toml"), "restart_window_ms = 5\n").unwrap();
    let out = p.run(&["--json", "settings"], &[]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let window = all
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "restart_window_ms")
        .unwrap()
        .clone();
    assert_eq!(window["value"], 5);
    assert!(
        window["source"]
            .as_str()
            .unwrap()
            .ends_with("settings.toml")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_and_header_secrets_never_reach_output() {
    // Random per run: a secret a test run left behind cannot make this one pass.
    let secret = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("s3cr3t-{:016x}", h.finish())
    };
    // The stdio server starts only if both variables reached it holding the
    // secret (checked by its digest, so the arguments never hold the secret).
    let digest = sha256_hex(&secret);
    let gate = format!(
        "for v in \"$API_TOKEN\" \"$REF\"; do \
         [ \"$(printf %s \"$v\" | sha256sum | cut -c1-64)\" = {digest} ] || exit 3; done; \
         exec \"$0\" demo-server"
    );
    let stdio = json!({
        "command": "/bin/sh",
        "args": ["-c", gate, env!("CARGO_BIN_EXE_mcpvisor")],
        "env": {"API_TOKEN": secret, "REF": "${SECRET_VAR}"}
    });
    // The HTTP server records the Authorization header each request carried.
    let server = HttpMcpServer::start(Script::default()).await;
    let bearer = format!("Bearer {secret}");
    let p = Project::new(
        "redact",
        &json!({"mcpServers": {
            "local": stdio,
            "remote": {"type": "http", "url": server.url, "headers": {"Authorization": bearer}},
            "bad": {"type": "http", "url": server.url, "headers": {"X-Bad": format!("{secret}\nx")}}
        }}),
    );
    let env = [("SECRET_VAR", secret.as_str())];
    let mut all = String::new();
    let mut answers = String::new();
    for args in [
        &["enable", "local"][..],
        &["enable", "remote"],
        &["enable", "bad"],
        &["servers"],
        &["--json", "servers"],
        &["tools"],
        &["call", "mcp__local__echo", r#"{"text":"from local"}"#],
        &["call", "mcp__remote__echo", r#"{"text":"from remote"}"#],
        &["settings"],
        &["disable", "local"],
    ] {
        let out = p.run(args, &env);
        if args[0] == "call" {
            answers.push_str(&String::from_utf8_lossy(&out.stdout));
        }
        all.push_str(&text(&out));
    }
    // The secret-bearing servers really ran and answered with the secrets in
    // hand: their silence below is not their absence.
    assert_eq!(answers, "from local\nfrom remote\n", "{all}");
    assert!(all.contains("mcp__local__echo"), "{all}");
    assert!(all.contains("mcp__remote__echo"), "{all}");
    let requests = server.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some(bearer.as_str())),
        "every request carried the configured header"
    );
    assert!(all.contains("x-bad"), "the bad header is named: {all}");
    assert!(!all.contains(&secret), "a secret leaked:\n{all}");
    // Debug of the loaded configuration.
    let cfg = McpConfig::load(&p.dir.join(".mcp.json")).unwrap();
    let shown = format!("{cfg:?}");
    assert!(!shown.contains(&secret), "{shown}");
    assert!(
        shown.contains("API_TOKEN=[redacted]") && shown.contains("Authorization: [redacted]"),
        "{shown}"
    );
}

/// SHA-256 of `text` in hex, as `sha256sum` prints it.
fn sha256_hex(text: &str) -> String {
    let out = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

#[test]
fn a_claude_code_mcp_json_loads_unchanged() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code.mcp.json");
    let cfg = McpConfig::load(&path).unwrap();
    assert_eq!(cfg.servers.len(), 5);
    assert!(cfg.unknown_fields.is_empty());
    let env = |name: &str| match name {
        "GITHUB_PAT" => Some("ghp_x".to_string()),
        "DATABASE_URL" => Some("postgres://db".to_string()),
        _ => None,
    };
    let base = cfg.base_dir();
    for name in ["github", "sentry", "filesystem", "db"] {
        assert!(cfg.servers[name].resolve(&env, &base).is_ok(), "{name}");
    }
    let legacy = cfg.servers["legacy-sse"].resolve(&env, &base).unwrap_err();
    assert!(legacy[0].to_string().contains("`sse` is not supported"));
    let problems = cfg.servers["db"].resolve(&|_| None, &base).unwrap_err();
    assert!(problems[0].to_string().contains("DATABASE_URL"));
}
