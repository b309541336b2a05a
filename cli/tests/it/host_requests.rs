//! `mcpvisor call` answers servers' elicitation and sampling requests: a person
//! fills the form at a terminal (driven here through a pseudo-terminal), off a
//! terminal the form is declined, and sampling is declined unless the
//! `sampling_command` setting names a command, whose output is the answer.
//! Against server-everything over stdio, whose asking tools exist only for a
//! client that declares both capabilities. URL-mode elicitation against the
//! Python SDK peer at 2025-11-25: the URL and its host shown, the page opened
//! (by a stand-in `xdg-open`) only when the person chooses to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::peers_dir;
use testkit::serve::{empty_dir, finish, mcpvisor};

const ELICIT: &str = "mcp__everything__trigger-elicitation-request";
const SAMPLE: &str = "mcp__everything__trigger-sampling-request";
/// A hang guard, not a measure.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// A directory whose approved `.mcp.json` runs server-everything over stdio.
fn project(tag: &str) -> PathBuf {
    let dir = empty_dir("cli-host-requests", tag);
    let index =
        peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(index.exists(), "run `bash scripts/peers.sh`");
    let config =
        json!({"mcpServers": {"everything": {"command": "node", "args": [index, "stdio"]}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let enabled = run(mcpvisor(&dir).args(["enable", "everything"]));
    assert!(enabled.status.success(), "{}", text(&enabled.stderr));
    dir
}

/// Runs `cmd` to its end (killing its process group if it hangs).
fn run(cmd: &mut Command) -> Output {
    finish(cmd, RUN_TIMEOUT)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `mcpvisor call <tool> <args>` in `dir`, off a terminal.
fn call(dir: &Path, tool: &str, args: Value, env: &[(&str, &str)]) -> Output {
    let mut cmd = mcpvisor(dir);
    cmd.args(["call", tool, &args.to_string()]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

#[test]
fn off_a_terminal_an_elicitation_is_declined_with_a_message() {
    let dir = project("decline");
    // Both capabilities are declared, so the asking tools are listed.
    let tools = run(mcpvisor(&dir).arg("tools"));
    let listed = text(&tools.stdout);
    assert!(
        listed.contains(ELICIT) && listed.contains(SAMPLE),
        "{listed}"
    );
    let out = call(&dir, ELICIT, json!({}), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stderr.contains(
            "mcpvisor: everything asked for input (Please provide inputs for the following fields:); declined: not a terminal"
        ),
        "{stderr}"
    );
    assert!(
        stdout.contains("User declined to provide the requested information"),
        "{stdout}"
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
}

#[test]
fn sampling_without_a_command_is_declined() {
    let dir = project("no-sampling");
    let out = call(&dir, SAMPLE, json!({"prompt": "hi", "maxTokens": 5}), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stderr.contains(
            "mcpvisor: everything asked for a model completion; declined: no sampling_command is set"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("sampling declined"), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
}

#[test]
fn the_sampling_command_answers_with_the_request_it_read() {
    let dir = project("sampling");
    // Echoes its argument and the request's first message: proof that both arrived.
    let script = dir.join("sampler.py");
    std::fs::write(
        &script,
        r#"import json, sys
request = json.load(sys.stdin)
said = request["messages"][0]["content"]["text"]
print(json.dumps({"role": "assistant", "model": "scripted", "stopReason": "endTurn",
                  "content": {"type": "text", "text": "SAMPLED[" + sys.argv[2] + "]<" + said + ">"}}))
"#,
    )
    .unwrap();
    // Split into words as a shell would, but not run by one: the `;` and what
    // follows are more words for the sampler, and nothing is touched.
    let touched = dir.join("touched-by-a-shell");
    let command = format!(
        "python3 '{}' --tag 'two words' ; touch '{}'",
        script.display(),
        touched.display()
    );
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::write(
        dir.join("home/settings.toml"),
        format!("sampling_command = {}\n", json!(command)),
    )
    .unwrap();
    let settings = run(mcpvisor(&dir).arg("settings"));
    let shown = text(&settings.stdout);
    assert!(
        shown.lines().any(|l| l.starts_with("sampling_command")
            && l.contains(&command)
            && l.contains("settings.toml")),
        "{shown}"
    );
    let out = call(&dir, SAMPLE, json!({"prompt": "marker-7431"}), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stdout
            .contains("SAMPLED[two words]<Resource trigger-sampling-request context: marker-7431>"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\"model\": \"scripted\""), "{stdout}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        !touched.exists(),
        "the sampling command ran through a shell"
    );
}

#[test]
fn a_sampling_command_that_fails_gets_the_server_an_error_not_a_hang() {
    let dir = project("sampling-fails");
    let cases = [
        (
            "sh -c 'cat >/dev/null; echo garbage'",
            "its output is not JSON",
        ),
        ("sh -c 'exit 3'", "exited with exit status: 3"),
        (
            "sh -c 'head -c 5000000 /dev/zero'",
            "it printed more than 4 MiB",
        ),
        (
            r#"sh -c 'echo "{\"role\": \"assistant\"}"'"#,
            "not a sampling result",
        ),
    ];
    for (command, why) in cases {
        let out = call(
            &dir,
            SAMPLE,
            json!({"prompt": "x"}),
            &[("MCPVISOR_SAMPLING_COMMAND", command)],
        );
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            stdout.contains("the host's sampling command failed") && stdout.contains(why),
            "{command}: {stdout}\n{stderr}"
        );
        assert!(
            stderr.contains(
                "mcpvisor: everything asked for a model completion; the sampling_command failed"
            ),
            "{command}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(1), "{command}");
    }
}

#[test]
fn a_sampling_command_still_running_when_the_call_ends_is_killed_with_its_children() {
    let dir = project("sampling-killed");
    let command = "sh -c 'sleep 1000 & echo $! > child.pid; echo $$ > shell.pid; wait'";
    let mut cmd = mcpvisor(&dir);
    cmd.args(["call", "--timeout-ms", "3000", SAMPLE, r#"{"prompt": "x"}"#])
        .env("MCPVISOR_SAMPLING_COMMAND", command);
    let out = run(&mut cmd);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let pid = |file: &str| -> u32 {
        let read = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        read.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{file}: {read:?}"))
    };
    let (shell, child) = (pid("shell.pid"), pid("child.pid"));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while testkit::is_alive(shell) || testkit::is_alive(child) {
        assert!(
            std::time::Instant::now() < deadline,
            "left running: shell {} child {}",
            testkit::is_alive(shell),
            testkit::is_alive(child)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a pseudo-terminal session showed and printed.
struct Session {
    stdout: String,
    screen: String,
    code: i64,
}

/// `mcpvisor call` elicited through a pseudo-terminal, typing `steps`
/// (`[expected on screen, keys]`) in order.
fn on_a_terminal(tag: &str, steps: &[(&str, &str)]) -> Session {
    let dir = project(tag);
    let steps: Vec<[&str; 2]> = steps.iter().map(|(e, k)| [*e, *k]).collect();
    typed(&dir, &steps, &["call", ELICIT, "{}"], &[])
}

/// `mcpvisor ARGS` in `dir` on a pseudo-terminal, typing `steps` (`[expected
/// on screen, keys]`) in order; what it showed.
fn typed(dir: &Path, steps: &[[&str; 2]], args: &[&str], env: &[(String, String)]) -> Session {
    let mut cmd = Command::new("python3");
    cmd.arg(peers_dir().join("clients/pty_session.py"))
        .arg(serde_json::to_string(steps).unwrap())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_mcpvisor"))
        .args(args)
        .current_dir(dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    let session = Session {
        stdout: report["stdout"].as_str().unwrap_or("").to_string(),
        screen: report["screen"].as_str().unwrap_or("").to_string(),
        code: report["code"].as_i64().unwrap_or(-1),
    };
    assert!(
        report["failed"].is_null(),
        "{}\nscreen:\n{}\nstdout:\n{}",
        report["failed"],
        session.screen,
        session.stdout
    );
    session
}

const ENTER: &str = "\r";
/// Down once, then Enter: the second entry of a list.
const DOWN_ENTER: &str = "\x1b[B\r";
/// A prompt's help line, shown only while it waits: one per field of
/// server-everything's form, in the order the form keeps (by name).
const BIRTHDATE: &str = "Your date of birth";
const CHECK: &str = "Agree to the terms and conditions";
const EMAIL: &str = "Your email address";
const FIRST_LINE: &str = "Favorite first line of a story";
const HOMEPAGE: &str = "Portfolio / personal website";
const INTEGER: &str = "Your favorite integer";
const PET: &str = "Choose your favorite type of pet";
const NAME: &str = "Your full, legal name";
const NUMBER: &str = "Favorite number";
const FISH: &str = "Choose your favorite types of fish";
const HERO: &str = "Choose your favorite hero";
const INSTRUMENTS: &str = "Choose your favorite instruments";
const FRIEND: &str = "Choose your favorite friend";
const SEND: &str = "Enter sends; decline tells the server no";

/// Enter on every field but the required name, then `last` on the final question.
fn defaults_then(last: &str) -> Vec<(&'static str, &str)> {
    vec![
        (BIRTHDATE, ENTER),
        (CHECK, ENTER),
        (EMAIL, ENTER),
        (FIRST_LINE, ENTER),
        (HOMEPAGE, ENTER),
        (INTEGER, ENTER),
        (PET, ENTER),
        (NAME, "Ada\r"),
        (NUMBER, ENTER),
        (FISH, ENTER),
        (HERO, ENTER),
        (INSTRUMENTS, ENTER),
        (FRIEND, ENTER),
        (SEND, last),
    ]
}

#[test]
fn on_a_terminal_enter_accepts_the_forms_defaults() {
    let s = on_a_terminal("tty-defaults", &defaults_then(ENTER));
    assert!(
        s.screen
            .contains("mcpvisor: server `everything` asks for input:")
            && s.screen
                .contains("Please provide inputs for the following fields:"),
        "{}",
        s.screen
    );
    let out = &s.stdout;
    assert!(
        out.contains("User provided the requested information"),
        "{out}"
    );
    assert!(out.contains("- Name: Ada"), "{out}");
    assert!(out.contains("- Favorite Integer: 42"), "{out}");
    assert!(out.contains("- Favorite Number: 3.14"), "{out}");
    assert!(out.contains("It was a dark and stormy night."), "{out}");
    assert!(out.contains("\"legacyTitledEnum\": \"pet-1\""), "{out}");
    // An optional field without a default, left out, is not in the answer.
    assert!(!out.contains("Agreed to terms"), "{out}");
    assert_eq!(s.code, 0);
}

#[test]
fn on_a_terminal_typed_values_are_checked_then_sent() {
    let steps = vec![
        (BIRTHDATE, "1990-13-01\r"),
        ("must be a date", "\x7f\x7f\x7f\x7f\x7f12-01\r"),
        (CHECK, DOWN_ENTER),
        (EMAIL, "ada@example.com\r"),
        (FIRST_LINE, ENTER),
        (HOMEPAGE, ENTER),
        (INTEGER, "500\r"),
        ("must be at most 100", "\x7f\x7f\x7f7\r"),
        (PET, DOWN_ENTER),
        (NAME, ENTER),
        ("required: type a value", "Ada\r"),
        (NUMBER, ENTER),
        (FISH, ENTER),
        (HERO, ENTER),
        (INSTRUMENTS, ENTER),
        (FRIEND, ENTER),
        (SEND, ENTER),
    ];
    let s = on_a_terminal("tty-typed", &steps);
    let out = &s.stdout;
    assert!(out.contains("- Name: Ada"), "{out}");
    assert!(out.contains("- Birthdate: 1990-12-01"), "{out}");
    assert!(out.contains("- Agreed to terms: true"), "{out}");
    assert!(out.contains("- Email: ada@example.com"), "{out}");
    assert!(out.contains("- Favorite Integer: 7"), "{out}");
    assert!(out.contains("\"legacyTitledEnum\": \"pet-2\""), "{out}");
    assert!(!out.contains("500"), "{out}");
    assert_eq!(s.code, 0);
}

#[test]
fn on_a_terminal_decline_declines_and_esc_cancels() {
    let s = on_a_terminal("tty-decline", &defaults_then(DOWN_ENTER));
    assert!(
        s.stdout
            .contains("User declined to provide the requested information"),
        "{}",
        s.stdout
    );
    let s = on_a_terminal("tty-cancel", &[(BIRTHDATE, "\x1b")]);
    assert!(
        s.stdout.contains("User cancelled the elicitation dialog"),
        "{}",
        s.stdout
    );
    assert!(
        s.screen
            .contains("mcpvisor: input for `everything` cancelled"),
        "{}",
        s.screen
    );
}

/// Attached to a running `mcpvisor serve`, `call` answers the same way: serve
/// forwards the server's request to this client (naming the server), which
/// declines the form off a terminal.
#[test]
fn attached_to_serve_a_call_answers_the_servers_requests_too() {
    let dir = project("attached");
    let mut serve = testkit::serve::HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    // The file now names a command that cannot start: only serve's servers answer.
    let broken = json!({"mcpServers": {"everything": {"command": "/nonexistent/node"}}});
    std::fs::write(dir.join(".mcp.json"), broken.to_string()).unwrap();
    let out = call(&dir, ELICIT, json!({}), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stderr.contains("mcpvisor: everything asked for input"),
        "{stderr}"
    );
    assert!(stderr.contains("declined: not a terminal"), "{stderr}");
    assert!(
        stdout.contains("User declined to provide the requested information"),
        "{stdout}"
    );
    let out = call(&dir, SAMPLE, json!({"prompt": "hi", "maxTokens": 5}), &[]);
    assert!(
        text(&out.stderr).contains("everything asked for a model completion; declined"),
        "{}",
        text(&out.stderr)
    );
    assert!(serve.terminate().success(), "{}", serve.output());
}

const PAGE: &str = "https://accounts.example.com/connect?session=4";

/// A directory whose approved `.mcp.json` runs the Python SDK peer, spoken to
/// at 2025-11-25 (URL elicitation), with a stand-in `xdg-open` on the PATH
/// that writes down what it was asked to open.
fn url_project(tag: &str) -> (PathBuf, Vec<(String, String)>) {
    let dir = empty_dir("cli-url-elicitation", tag);
    let python = peers_dir().join("venv/bin/python");
    let config = json!({"mcpServers": {
        "py": {"command": python, "args": [peers_dir().join("python_server.py"), "stdio"]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let enabled = run(mcpvisor(&dir).args(["enable", "py"]));
    assert!(enabled.status.success(), "{}", text(&enabled.stderr));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opener = bin.join("xdg-open");
    let log = dir.join("opened");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n", log.display()),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&opener).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&opener, perms).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = vec![
        ("PATH".to_string(), path),
        (
            "MCPVISOR_PROTOCOL_VERSIONS".to_string(),
            "2025-11-25".to_string(),
        ),
    ];
    (dir, env)
}

/// `mcpvisor call mcp__py__connect_account` through a pseudo-terminal.
fn connect_on_a_terminal(tag: &str, keys: &str) -> (Session, Option<String>) {
    let (dir, env) = url_project(tag);
    let arguments = json!({ "url": PAGE }).to_string();
    let args = ["call", "mcp__py__connect_account", &arguments];
    let session = typed(
        &dir,
        &[["Only if you trust the host above", keys]],
        &args,
        &env,
    );
    // The opener runs on its own: give it time to write down what it was given.
    let opened = dir.join("opened");
    for _ in 0..20 {
        if opened.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (session, std::fs::read_to_string(opened).ok())
}

#[test]
fn on_a_terminal_a_url_is_shown_with_its_host_and_opened_only_when_chosen() {
    let (s, opened) = connect_on_a_terminal("url-open", ENTER);
    assert!(
        s.screen
            .contains("mcpvisor: server `py` asks you to open a page. It says:"),
        "{}",
        s.screen
    );
    // The server's words are marked as theirs; the host is in the question.
    assert!(
        s.screen.contains("  │ Connect your account to continue"),
        "{}",
        s.screen
    );
    assert!(
        s.screen
            .contains("Open this page on accounts.example.com for `py`?"),
        "{}",
        s.screen
    );
    assert!(
        s.screen.contains("host: accounts.example.com"),
        "{}",
        s.screen
    );
    assert!(s.screen.contains(&format!("URL:  {PAGE}")), "{}", s.screen);
    assert!(s.stdout.contains("connect: accept"), "{}", s.stdout);
    assert_eq!(opened.as_deref(), Some(format!("{PAGE}\n").as_str()));
    assert_eq!(s.code, 0);

    let (s, opened) = connect_on_a_terminal("url-decline", DOWN_ENTER);
    assert!(s.stdout.contains("connect: decline"), "{}", s.stdout);
    assert_eq!(opened, None, "nothing opened");
}

#[test]
fn off_a_terminal_a_url_elicitation_is_declined_and_nothing_opened() {
    let (dir, env) = url_project("url-off");
    let mut cmd = mcpvisor(&dir);
    cmd.args([
        "call",
        "mcp__py__connect_account",
        &json!({ "url": PAGE }).to_string(),
    ]);
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stderr.contains(
            "mcpvisor: py asks to open a page at accounts.example.com; declined: not a terminal"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("connect: decline"), "{stdout}");
    assert!(!dir.join("opened").exists());
}
