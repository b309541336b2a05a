//! `enable`/`disable` of several entries, and `add`/`remove`/`get` editing the
//! `.mcp.json`, through the real binary in scratch projects with their own homes.

use std::os::unix::fs::PermissionsExt;

use super::{Scratch, approved, demo};
use serde_json::json;

const FILE: &str = "config_commands";

#[test]
fn enable_takes_several_names_and_reports_each_failure_on_one_line() {
    let s = Scratch::new(FILE, "several");
    let [program, arg] = demo();
    s.write(
        &json!({"mcpServers": {
            "good": {"command": program, "args": [arg]},
            "typo": {"command": "mcp-server-gti"},
            "nocwd": {"command": program, "cwd": "missing"},
            "abs": {"command": "/x/mcp-server-git"},
            "also": {"command": program},
        }})
        .to_string(),
    );
    let out = s.run(&["enable", "good", "typo", "nocwd", "abs", "nope", "also"]);
    assert_eq!(out.code(), Some(1), "{}", out.all());
    let lines: Vec<String> = out.stderr().lines().map(String::from).collect();
    let expected = [
        (
            "typo",
            "command `mcp-server-gti` is not found on the PATH the server gets",
        ),
        ("nocwd", "missing does not exist"),
        ("abs", "command `/x/mcp-server-git` does not exist"),
        ("nope", "no server named `nope`"),
    ];
    assert_eq!(
        lines.len(),
        expected.len(),
        "one line per failure: {lines:?}"
    );
    for ((name, why), line) in expected.iter().zip(&lines) {
        assert!(
            line.starts_with(&format!("mcpvisor: `{name}` was not enabled: "))
                && line.contains(why),
            "{line}"
        );
    }
    // The others were still done; the failures saved nothing.
    assert!(approved(&s, "good") && approved(&s, "also"));
    for name in ["typo", "nocwd", "abs"] {
        assert!(!approved(&s, name), "{name}");
    }
    let out = s.run(&["disable", "good", "nope", "also"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr().contains("`nope` was not disabled"),
        "{}",
        out.all()
    );
    assert!(!approved(&s, "good") && !approved(&s, "also"));
}

#[test]
fn enable_looks_the_command_up_on_the_path_the_child_gets() {
    let s = Scratch::new(FILE, "path");
    let bin = s.dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join("my-server");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin.display().to_string();
    s.write(
        &json!({"mcpServers": {
            "own_path": {"command": "my-server", "env": {"PATH": bin}},
            "host_path": {"command": "my-server"},
            "own_wins": {"command": "my-server", "env": {"PATH": "/nowhere"}},
        }})
        .to_string(),
    );
    let out = s.run(&["enable", "own_path", "host_path", "own_wins"]);
    assert_eq!(out.code(), Some(1), "{}", out.all());
    assert!(approved(&s, "own_path"), "{}", out.all());
    assert!(
        out.stderr().contains("`host_path` was not enabled"),
        "{}",
        out.all()
    );
    assert!(
        out.stderr().contains("`own_wins` was not enabled"),
        "{}",
        out.all()
    );
    // With the directory on the host's PATH (which the child inherits), it is found;
    // the entry's own PATH still wins over the host's.
    let host_path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let mut cmd = testkit::serve::mcpvisor(&s.dir);
    cmd.args(["enable", "host_path", "own_wins"])
        .env("MCPVISOR_HOME", s.home())
        .env("PATH", host_path);
    let out = testkit::serve::finish(&mut cmd, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("host_path"), "{err}");
    assert!(err.contains("`own_wins` was not enabled"), "{err}");
    assert!(approved(&s, "host_path"));
}

#[test]
fn an_entry_the_file_disables_needs_force_and_all_skips_it() {
    let s = Scratch::new(FILE, "force");
    let [program, arg] = demo();
    s.write(
        &json!({"mcpServers": {
            "a": {"command": program, "args": [arg]},
            "b": {"command": program, "args": [arg]},
            "off": {"command": program, "args": [arg], "disabled": true},
        }})
        .to_string(),
    );
    let out = s.run(&["enable", "off"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr()
            .contains("`off` was not enabled: it is \"disabled\": true in")
            && out.stderr().contains("--force"),
        "{}",
        out.all()
    );
    assert!(!approved(&s, "off"));
    let out = s.run(&["enable", "--all"]);
    assert!(out.ok(), "{}", out.all());
    assert!(out.stderr().contains("skipped `off`"), "{}", out.all());
    assert!(approved(&s, "a") && approved(&s, "b") && !approved(&s, "off"));
    let out = s.run(&["enable", "off", "--force"]);
    assert!(out.ok(), "{}", out.all());
    assert!(
        out.stderr()
            .contains("warning: `off` is \"disabled\": true"),
        "{}",
        out.all()
    );
    assert!(approved(&s, "off"));
    let out = s.run(&["disable", "--all"]);
    assert!(out.ok(), "{}", out.all());
    assert!(!approved(&s, "a") && !approved(&s, "b") && !approved(&s, "off"));
    // A name and --all together, or neither, is a usage error.
    assert_eq!(s.run(&["enable"]).code(), Some(2));
    assert_eq!(s.run(&["enable", "a", "--all"]).code(), Some(2));
}

const CLAUDE_FILE: &str = r#"{
  "mcpServers": {
    "zeta": {
      "command": "npx",
      "args": ["-y", "z"],
      "env": {"TOKEN": "${TOKEN}"}
    },
    "alpha": {"type": "http", "url": "https://a.example/mcp"}
  },
  "projectSetting": {"b": 1, "a": 2}
}
"#;

#[test]
fn add_and_remove_touch_one_entry_and_keep_the_rest_byte_for_byte() {
    let s = Scratch::new(FILE, "order");
    s.write(CLAUDE_FILE);
    std::fs::set_permissions(s.config(), std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = s.run(&[
        "add",
        "files",
        "--cwd",
        "sub",
        "--",
        "npx",
        "-y",
        "fs server",
        ".",
    ]);
    assert!(out.ok(), "{}", out.all());
    assert!(
        out.stdout().contains("mcpvisor enable files"),
        "{}",
        out.all()
    );
    let added = s.read();
    assert!(
        added.starts_with(CLAUDE_FILE.split("\n  },").next().unwrap()),
        "the entries before are as they were: {added}"
    );
    assert!(
        added.contains("\"projectSetting\": {\"b\": 1, \"a\": 2}"),
        "{added}"
    );
    let new: serde_json::Value = serde_json::from_str(&added).unwrap();
    assert_eq!(
        new["mcpServers"]["files"],
        json!({"type": "stdio", "command": "npx", "args": ["-y", "fs server", "."], "cwd": "sub"})
    );
    let keys = ["\"zeta\"", "\"alpha\"", "\"files\"", "\"projectSetting\""].map(|k| added.find(k));
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "order kept: {added}");
    let mode = std::fs::metadata(s.config()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the file's mode is kept");

    assert!(s.run(&["enable", "alpha"]).ok());
    let out = s.run(&["remove", "alpha"]);
    assert!(out.ok(), "{}", out.all());
    assert!(s.run(&["remove", "files"]).ok());
    assert_eq!(
        s.read(),
        CLAUDE_FILE.replace(
            ",\n    \"alpha\": {\"type\": \"http\", \"url\": \"https://a.example/mcp\"}",
            ""
        )
    );
    assert!(
        !s.home_text().contains("alpha"),
        "the approval is withdrawn"
    );
    let out = s.run(&["remove", "alpha"]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr().contains("no server named `alpha`"),
        "{}",
        out.all()
    );
}

#[test]
fn add_refuses_an_existing_or_invalid_name_and_changes_nothing() {
    let s = Scratch::new(FILE, "refuse");
    s.write(CLAUDE_FILE);
    let out = s.run(&["add", "zeta", "--", "other"]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr().contains("`zeta` already exists")
            && out.stderr().contains("run `mcpvisor remove zeta` first"),
        "{}",
        out.all()
    );
    let config = s.config().display().to_string();
    let out = s.run(&["--config", &config, "add", "zeta", "--", "other"]);
    assert!(
        out.stderr()
            .contains(&format!("`mcpvisor --config {config} remove zeta`")),
        "{}",
        out.all()
    );
    for args in [
        &["add", "bad__name", "--", "x"][..],
        &["add", "trailing_", "--", "x"],
        &["add", "web", "--url", "ftp://x.example/"],
        &[
            "add",
            "web",
            "--url",
            "https://x.example/",
            "--header",
            "Bad Name: v",
        ],
        &[
            "add",
            "web",
            "--url",
            "https://x.example/",
            "--header",
            "no-colon",
        ],
        &["add", "env", "--env", "NOEQUALS", "--", "x"],
        &["add", "nothing"],
        &["add", "both", "--url", "https://x.example/", "--", "x"],
        &["add", "stdio", "--header", "A: b", "--", "x"],
    ] {
        let out = s.run(args);
        assert!(!out.ok(), "{args:?}: {}", out.all());
        assert!(!out.stderr().contains("panicked"), "{}", out.all());
        assert_eq!(s.read(), CLAUDE_FILE, "{args:?} changed the file");
    }
}

#[test]
fn add_creates_the_file_here_or_at_the_config_path() {
    let s = Scratch::new(FILE, "create");
    let out = s.run(&["add", "web", "--url", "https://x.example/mcp"]);
    assert!(out.ok(), "{}", out.all());
    let made: serde_json::Value = serde_json::from_str(&s.read()).unwrap();
    assert_eq!(
        made,
        json!({"mcpServers": {"web": {"type": "http", "url": "https://x.example/mcp"}}})
    );
    let elsewhere = s.dir.join("elsewhere.json");
    let path = elsewhere.display().to_string();
    let out = s.run(&["--config", &path, "add", "local", "--", "srv"]);
    assert!(out.ok(), "{}", out.all());
    let made: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&elsewhere).unwrap()).unwrap();
    assert_eq!(made["mcpServers"]["local"]["command"], "srv");
    // A file that is not a configuration (no entries) gets its first entry.
    s.write("{\"inputs\": []}");
    assert!(s.run(&["servers"]).code() == Some(2), "refused as it is");
    assert!(s.run(&["add", "x", "--", "srv"]).ok());
    assert!(s.run(&["servers"]).ok());
}

#[test]
fn concurrent_adds_lose_nothing() {
    let s = Scratch::new(FILE, "concurrent");
    s.write(CLAUDE_FILE);
    let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let children: Vec<_> = names
        .iter()
        .map(|n| {
            std::process::Command::new(env!("CARGO_BIN_EXE_mcpvisor"))
                .args(["add", n, "--", "srv"])
                .current_dir(&s.dir)
                .env("MCPVISOR_HOME", s.home())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let all: serde_json::Value = serde_json::from_str(&s.read()).unwrap();
    for n in names.iter().map(String::as_str).chain(["zeta", "alpha"]) {
        assert!(all["mcpServers"].get(n).is_some(), "{n} lost: {all}");
    }
}

const SECRETS: [&str; 4] = [
    "ghp_ENV_SECRET",
    "HEADER_SECRET",
    "QUERY_SECRET",
    "PATH_TOKEN_abcdefabcdefabcdefabcdef0123456789",
];

#[test]
fn add_and_get_never_show_a_secret_and_write_it_only_to_the_file() {
    let s = Scratch::new(FILE, "secrets");
    let url = format!("https://api.example/{}/mcp?key={}", SECRETS[3], SECRETS[2]);
    let header = format!("Authorization: Bearer {}", SECRETS[1]);
    let env = format!("GITHUB_TOKEN={}", SECRETS[0]);
    let mut shown = String::new();
    for args in [
        &[
            "add",
            "gh",
            "--env",
            &env,
            "--",
            "npx",
            "-y",
            "server-github",
        ][..],
        &["add", "web", "--url", &url, "--header", &header],
        &["add", "gh", "--env", &env, "--", "npx"],
        &[
            "add",
            "bad",
            "--url",
            &url,
            "--header",
            "Bad Name: HEADER_SECRET",
        ],
        &["add", "bad2", "--env", "ghp_ENV_SECRET", "--", "x"],
        &["get", "gh"],
        &["get", "web"],
        &["--json", "get", "gh"],
        &["--json", "get", "web"],
        &["servers"],
        &["--json", "servers"],
    ] {
        shown.push_str(&s.run(args).all());
    }
    for secret in SECRETS {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
        assert!(
            !s.home_text().contains(secret),
            "{secret} written under the home"
        );
    }
    let file = s.read();
    for secret in SECRETS {
        assert!(file.contains(secret), "given values are written: {file}");
    }
    let mode = std::fs::metadata(s.config()).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode, 0o600,
        "a new file holding secrets is the user's alone"
    );

    let text = s.run(&["get", "web"]).stdout();
    assert!(text.contains("header: Authorization: [redacted]"), "{text}");
    assert!(text.contains("url: https://api.example/"), "{text}");
    assert!(text.contains("?[redacted]"), "{text}");
    let gh = s.run(&["--json", "get", "gh"]).json();
    assert_eq!(gh["env"], json!({"GITHUB_TOKEN": "[redacted]"}));
    assert_eq!(gh["command"], "npx");
    assert_eq!(gh["args"], json!(["-y", "server-github"]));
    assert_eq!(gh["state"], "not approved");
    assert_eq!(gh["config"], s.config().display().to_string());
    // A name that is not there is a usage error, as for every command.
    let out = s.run(&["get", "nope"]);
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr().contains("no server named `nope`"),
        "{}",
        out.all()
    );
}
