//! The one-shot CLI as a person meets it (issue 16's items 1–7, 13 and 14):
//! a command starts only the servers it needs and tries each once; one that
//! does not start costs one line and the exit code, never its neighbours'
//! answers; arguments come in every usual form and are checked before the
//! call; `describe` and `tools --json` show everything a tool declares;
//! mistakes get the nearest names and exact commands; output has no log
//! lines unless asked, colour only on a terminal, a progress bar there and
//! JSON lines with `--json`. Real processes, a temporary home each.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::peers_dir;
use testkit::serve::{empty_dir, finish, mcpvisor};

const DEMO: &str = env!("CARGO_BIN_EXE_mcpvisor");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A hang guard, not a measure.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn run(cmd: &mut Command) -> Output {
    finish(cmd.stdin(Stdio::null()), RUN_TIMEOUT)
}

/// A project with a healthy demo server, one whose command does not exist,
/// and one that never answers `initialize` (it writes its pid to a file when
/// it starts, so a test sees whether it was started at all). All approved.
fn project(tag: &str) -> PathBuf {
    let dir = empty_dir("cli-oneshot", tag);
    let marker = dir.join("hung-started");
    let mut config = json!({"mcpServers": {
        "demo": {"command": DEMO, "args": ["demo-server"]},
        "broken": {"command": DEMO, "args": ["demo-server"]},
        "hung": {"command": "sh", "args": ["-c",
            format!("echo $$ >> '{}'; exec '{DEMO}' demo-server --hang-initialize", marker.display())]},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for name in ["demo", "broken", "hung"] {
        let out = run(mcpvisor(&dir).args(["enable", name]));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    // `enable` checks that the command exists; the program goes missing later
    // (an uninstall, a typo in an edit), and the approval stands.
    config["mcpServers"]["broken"] = json!({"command": "/nonexistent/mcp-server-git"});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    dir
}

fn hung_started(dir: &Path) -> bool {
    dir.join("hung-started").exists()
}

#[test]
fn a_call_starts_only_its_server_and_broken_neighbours_cost_nothing() {
    let dir = project("call");
    let out = run(mcpvisor(&dir).args(["call", "mcp__demo__echo", "text=hello"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hello");
    assert_eq!(text(&out.stderr), "", "nothing about the neighbours");
    assert!(!hung_started(&dir), "the hung neighbour was never started");

    // `tools NAME` starts that one alone.
    let out = run(mcpvisor(&dir).args(["tools", "demo"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("mcp__demo__echo"));
    assert!(!hung_started(&dir));
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn servers_that_do_not_start_are_one_line_each_and_the_exit_code_says_so() {
    let dir = project("all");
    let out = run(mcpvisor(&dir).args(["--startup-timeout-ms", "1500", "tools"]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stdout.contains("mcp__demo__echo"),
        "the healthy server's tools: {stdout}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "mcpvisor: `broken` did not start: command not found: /nonexistent/mcp-server-git",
            "mcpvisor: `hung` did not start: startup did not finish within 1.5 s",
        ],
        "{stderr}"
    );
    // Tried once: one start of the hung server, no restart.
    let starts = std::fs::read_to_string(dir.join("hung-started")).unwrap_or_default();
    assert_eq!(starts.lines().count(), 1, "started: {starts:?}");

    // A call whose own server does not start: that line, and failure.
    let out = run(mcpvisor(&dir).args(["call", "mcp__broken__git_log"]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).trim(),
        "mcpvisor: `broken` did not start: command not found: /nonexistent/mcp-server-git"
    );
    // Asked for, the diagnostics are there.
    let out = run(mcpvisor(&dir).args(["-v", "call", "mcp__demo__echo", "text=x"]));
    assert!(
        text(&out.stderr).contains("started stdio server"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn arguments_come_in_every_form_and_are_checked_before_the_call() {
    let dir = project("args");
    let call = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = mcpvisor(&dir);
        cmd.arg("call").args(args);
        match stdin {
            Some(input) => {
                use std::io::Write;
                let mut child = cmd
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(input.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            }
            None => run(&mut cmd),
        }
    };
    // key=value typed by the schema: `a` and `b` are numbers.
    let out = call(&["--json", "mcp__demo__add", "a=2", "b=3.5"], None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 5.5);
    let out = call(&["mcp__demo__add", "a=2", "--arg", "b=40"], None);
    assert_eq!(text(&out.stdout).trim(), "42");
    let out = call(&["mcp__demo__echo", r#"text:="quoted""#], None);
    assert_eq!(text(&out.stdout).trim(), "quoted");
    let out = call(&["mcp__demo__echo", "-"], Some(r#"{"text": "from stdin"}"#));
    assert_eq!(text(&out.stdout).trim(), "from stdin");
    let file = dir.join("args.json");
    std::fs::write(&file, r#"{"text": "from a file"}"#).unwrap();
    let at = format!("@{}", file.display());
    let out = call(&["mcp__demo__echo", &at], None);
    assert_eq!(text(&out.stdout).trim(), "from a file");
    let out = call(&["mcp__demo__echo", r#"{"text": "json"}"#], None);
    assert_eq!(text(&out.stdout).trim(), "json");

    // Checked against the schema before the call: usage errors, exit 2.
    let out = call(&["mcp__demo__add", "a=two", "b=1"], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        "mcpvisor: `a` must be a number, not `two`"
    );
    let out = call(&["mcp__demo__add", "a=1"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("\"b\" is a required property"),
        "{}",
        text(&out.stderr)
    );
    // Malformed JSON is refused before any server starts (the hung one
    // would leave its file).
    let out = call(&["mcp__hung__anything", "{not json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not valid JSON"));
    let out = call(&["mcp__hung__anything", "nokey"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(!hung_started(&dir), "nothing started for a malformed call");
}

#[test]
fn describe_and_tools_json_show_everything_a_tool_declares() {
    let dir = empty_dir("cli-oneshot", "describe");
    let out = run(mcpvisor(&dir).args(["describe", "mcp__demo__add"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for part in [
        "mcp__demo__add",
        "Adds two numbers",
        "Parameters",
        "NAME  TYPE    REQUIRED  DEFAULT  DESCRIPTION",
        "a     number  yes                First addend.",
        "Output schema",
        "\"sum\"",
    ] {
        assert!(shown.contains(part), "`{part}` in:\n{shown}");
    }
    let out = run(mcpvisor(&dir).args(["--json", "tools"]));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__demo__add")
        .unwrap();
    assert_eq!(add["server"], "demo");
    assert_eq!(add["tool"], "add");
    assert_eq!(add["outputSchema"]["required"], json!(["sum"]));
    assert!(add["inputSchema"]["properties"]["a"].is_object());
    let out = run(mcpvisor(&dir).args(["--json", "describe", "mcp__demo__add"]));
    let described: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(&described, add);
}

#[test]
fn mistakes_get_the_nearest_names_and_exact_commands() {
    let dir = project("mistakes");
    let said = |args: &[&str]| {
        let out = run(mcpvisor(&dir).args(args));
        (out.status.code(), text(&out.stderr).trim().to_string())
    };
    assert_eq!(
        said(&["call", "mcp__demo__ecoh"]),
        (
            Some(2),
            "mcpvisor: no tool `mcp__demo__ecoh`; did you mean `mcp__demo__echo`?".into()
        )
    );
    assert_eq!(
        said(&["call", "mcp__dmeo__echo"]),
        (
            Some(2),
            format!(
                "mcpvisor: no server `dmeo` in {}; did you mean `demo`?",
                dir.join(".mcp.json").display()
            )
        )
    );
    assert_eq!(
        said(&["call", "echo"]),
        (
            Some(2),
            "mcpvisor: `echo` is not a qualified tool name: write mcp__<server>__<tool> (`mcpvisor tools` lists them)".into()
        )
    );
    // An unapproved server: the exact command, with the --config given, quoted.
    let odd = dir.join("my config.json");
    std::fs::write(
        &odd,
        json!({"mcpServers": {"demo": {"command": DEMO, "args": ["demo-server"]}}}).to_string(),
    )
    .unwrap();
    let config = odd.to_str().unwrap();
    let (code, message) = said(&["--config", config, "call", "mcp__demo__echo", "text=x"]);
    assert_eq!(code, Some(2));
    let expected = format!("mcpvisor --config '{config}' enable demo");
    assert!(message.ends_with(&format!("run `{expected}`")), "{message}");
    let words = shlex::split(&expected).unwrap();
    let out = run(mcpvisor(&dir).args(&words[1..]));
    assert!(
        out.status.success(),
        "the suggested command works: {}",
        text(&out.stderr)
    );
    // A server disabled in the file says so.
    std::fs::write(
        &odd,
        json!({"mcpServers": {"demo": {"command": DEMO, "args": ["demo-server"], "disabled": true}}})
            .to_string(),
    )
    .unwrap();
    let (code, message) = said(&["--config", config, "call", "mcp__demo__echo"]);
    assert_eq!(code, Some(2));
    assert!(message.contains("is disabled in"), "{message}");
    // With --json, the error is JSON on stdout.
    let out = run(mcpvisor(&dir).args(["--json", "call", "mcp__demo__ecoh"]));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        error["error"],
        "no tool `mcp__demo__ecoh`; did you mean `mcp__demo__echo`?"
    );
}

#[test]
fn ctrl_c_while_servers_start_exits_130_and_leaves_nothing() {
    let dir = project("interrupt");
    let child = mcpvisor(&dir)
        .args(["--startup-timeout-ms", "60000", "tools", "hung"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    for _ in 0..100 {
        if hung_started(&dir) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(hung_started(&dir));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    // The server it was starting is gone with it.
    let server: u32 = std::fs::read_to_string(dir.join("hung-started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = (0..100).any(|_| {
        // Gone, or a zombie its new parent has yet to reap.
        let over = !testkit::is_alive(server);
        if !over {
            std::thread::sleep(Duration::from_millis(50));
        }
        over
    });
    assert!(gone, "the server it was starting outlived the command");
}

#[test]
fn output_is_plain_off_a_terminal_and_demo_server_help_hides_the_faults() {
    let dir = empty_dir("cli-oneshot", "plain");
    for args in [
        &["tools"][..],
        &["call", "mcp__demo__progress", "steps=2"][..],
    ] {
        let out = run(mcpvisor(&dir).args(args));
        assert!(out.status.success());
        let all = [out.stdout, out.stderr].concat();
        assert!(!all.contains(&0x1b), "no escape sequences: {}", text(&all));
    }
    // Off a terminal progress is a plain line each; with --json, JSON lines.
    // First, the notice that the built-in demo server runs (no file here).
    let out = run(mcpvisor(&dir).args(["call", "mcp__demo__progress", "steps=2"]));
    assert_eq!(
        text(&out.stderr),
        "mcpvisor: no .mcp.json, .cursor/mcp.json or .vscode/mcp.json here or above; using the built-in demo server (--config PATH for a file elsewhere)\nprogress 1/2 step 1\nprogress 2/2 step 2\n"
    );
    let out = run(mcpvisor(&dir).args(["--json", "call", "mcp__demo__progress", "steps=2"]));
    let lines: Vec<Value> = text(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines[0]["notice"]
            .as_str()
            .is_some_and(|n| n.contains("built-in demo")),
        "{lines:?}"
    );
    assert_eq!(
        lines[2],
        json!({"progress": 2.0, "total": 2.0, "message": "step 2"})
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["content"][0]["text"], "done 2 steps");

    let out = run(Command::new(DEMO).args(["demo-server", "--help"]));
    let help = text(&out.stdout);
    assert!(help.contains("--page-size"), "{help}");
    for hidden in [
        "--hostile",
        "--hang-initialize",
        "--fault-file",
        "--grandchild",
    ] {
        assert!(!help.contains(hidden), "{hidden} in:\n{help}");
    }
}

/// `mcpvisor ARGS` with stdout, stderr and stdin on a pseudo-terminal.
fn on_a_terminal(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new("python3");
    cmd.arg(peers_dir().join("clients/pty_session.py"))
        .arg("[]")
        .arg("--")
        .arg(DEMO)
        .args(args)
        .current_dir(dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .env("PTY_STDOUT", "1")
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn on_a_terminal_there_is_colour_unless_no_color_and_a_progress_bar() {
    let dir = empty_dir("cli-oneshot", "tty");
    let shown = on_a_terminal(&dir, &["tools"], &[]);
    let raw = shown["raw"].as_str().unwrap();
    assert!(
        raw.contains("\u{1b}[1mmcp__demo__add"),
        "bold names: {raw:?}"
    );
    assert!(
        shown["screen"]
            .as_str()
            .unwrap()
            .contains("12 tools from 1 server"),
        "{}",
        shown["screen"]
    );
    let plain = on_a_terminal(&dir, &["tools"], &[("NO_COLOR", "1")]);
    assert!(
        !plain["raw"].as_str().unwrap().contains("\u{1b}[1m"),
        "{}",
        plain["raw"]
    );

    let shown = on_a_terminal(
        &dir,
        &["call", "mcp__demo__progress", "steps=3", "delay_ms=300"],
        &[],
    );
    let screen = shown["screen"].as_str().unwrap();
    assert!(screen.contains("done 3 steps"), "{screen}");
    assert!(
        screen.contains("] 1/3 step 1"),
        "a bar, not lines: {screen}"
    );
    assert!(!screen.contains("progress 1/3"), "{screen}");
}

/// On a narrow terminal the tool table is cut to its width (with `…`), and
/// piped it is not cut at all.
#[test]
fn tables_are_cut_to_the_terminals_width() {
    let dir = empty_dir("cli-oneshot", "narrow");
    let shown = on_a_terminal(&dir, &["tools"], &[("PTY_COLUMNS", "60")]);
    let screen = shown["screen"].as_str().unwrap();
    let table: Vec<&str> = screen
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.contains("mcp__demo__"))
        .collect();
    assert!(table.len() >= 10, "{screen}");
    for line in &table {
        assert!(
            line.chars().count() <= 60,
            "{} columns: {line:?}",
            line.chars().count()
        );
    }
    assert!(
        table.iter().any(|l| l.ends_with('…')),
        "nothing was cut: {screen}"
    );
    let piped = Command::new(DEMO)
        .arg("tools")
        .current_dir(&dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .output()
        .unwrap();
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(
        piped.lines().any(|l| l.chars().count() > 60) && !piped.contains('…'),
        "{piped}"
    );
}

#[test]
fn a_warning_is_one_plain_line() {
    let dir = empty_dir("cli-oneshot", "warning");
    let config = json!({"mcpServers": {"demo": {"command": DEMO, "args": ["demo-server"], "futureField": 1}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let out = run(mcpvisor(&dir).args(["enable", "demo"]));
    assert!(out.status.success());
    let out = run(mcpvisor(&dir).args(["call", "mcp__demo__echo", "text=x"]));
    // The file found (upward from the working directory) is named absolutely.
    let file = dir.join(".mcp.json");
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcpvisor: warning: ignoring fields this version does not use (file: {}, fields: [\"mcpServers.demo.futureField\"])\n",
            file.display()
        )
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_commands() {
    let dir = empty_dir("cli-oneshot", "shell");
    let out = run(mcpvisor(&dir).args(["completions", "bash"]));
    let bash = text(&out.stdout);
    assert!(out.status.success());
    for part in [
        "_mcpvisor()",
        "describe",
        "completions",
        "_mcpvisor_with_tools",
        "tool-names 2>/dev/null",
    ] {
        assert!(bash.contains(part), "{part}");
    }
    let out = run(Command::new("bash").args(["-n", "-c", &bash]));
    assert!(out.status.success(), "bash reads it: {}", text(&out.stderr));
    let fish = text(&run(mcpvisor(&dir).args(["completions", "fish"])).stdout);
    assert!(
        fish.contains("__fish_seen_subcommand_from call describe"),
        "{fish}"
    );
    let zsh = run(mcpvisor(&dir).args(["completions", "zsh"]));
    assert!(zsh.status.success() && text(&zsh.stdout).contains("#compdef mcpvisor"));
    let man = text(&run(mcpvisor(&dir).args(["man"])).stdout);
    assert!(
        man.starts_with(".ie"),
        "roff: {}",
        &man[..man.len().min(80)]
    );
    assert!(
        man.contains(".TH mcpvisor") && man.contains("describe"),
        "{man}"
    );
    // Without a running serve, tool names for completion are none, and
    // nothing is started to find them.
    let out = run(mcpvisor(&dir).args(["tool-names"]));
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "");
}

#[test]
fn a_reader_that_leaves_early_and_json_failures_are_handled() {
    let dir = project("manners");
    // `| head -c0`: the reader is gone before the first line; no panic, 141 as for `ls`.
    for args in [
        &["describe", "mcp__demo__add"][..],
        &["--json", "tools", "demo"][..],
    ] {
        let mut child = mcpvisor(&dir)
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            matches!(out.status.code(), Some(141) | Some(0)),
            "{:?}",
            out.status
        );
    }
    // With --json, a needed server that did not start is a JSON error on stdout.
    let out = run(mcpvisor(&dir).args(["--json", "call", "mcp__broken__git_log"]));
    assert_eq!(out.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        error["error"],
        "`broken` did not start: command not found: /nonexistent/mcp-server-git"
    );
    // `enable` is suggested only where it would succeed.
    let config = json!({"mcpServers": {
        "fresh": {"command": DEMO, "args": ["demo-server"]},
        "unset": {"command": DEMO, "args": ["demo-server"], "env": {"K": "${MCPVISOR_TEST_UNSET_VAR}"}},
    }});
    let other = dir.join("other.json");
    std::fs::write(&other, config.to_string()).unwrap();
    let config = other.to_str().unwrap();
    let said = |name: &str| {
        let tool = format!("mcp__{name}__echo");
        let out = run(mcpvisor(&dir).args(["--config", config, "call", &tool]));
        text(&out.stderr)
    };
    assert!(
        said("fresh").contains("is not approved to run; run `mcpvisor --config"),
        "{}",
        said("fresh")
    );
    let unset = said("unset");
    assert!(
        unset.contains("cannot run as written") && unset.contains("MCPVISOR_TEST_UNSET_VAR"),
        "{unset}"
    );
}
