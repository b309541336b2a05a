//! `mcpvisor inject` through a running `mcpvisor serve --allow-faults`: a kill
//! brings a new server process and calls go on, a stop holds a call until the
//! server continues, `--clear` ends a stop at once, `watch` shows the fault;
//! bad fault text and faults a server cannot take are usage errors; a serve
//! without `--allow-faults` (or no serve at all) refuses and says how to allow it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use testkit::attached::{Running, describe, eventually, pid, run, run_ok, try_pid};
use testkit::serve::HttpServe;

/// Restarts come quickly in these tests.
const FAST_RESTARTS: [&str; 2] = ["--restart-initial-backoff-ms", "50"];

/// A fresh directory without `.mcp.json`: the built-in demo server, `demo`.
fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-inject", tag)
}

/// `mcpvisor serve <flags>` in `dir`, once it serves. (It is asked for HTTP
/// on a free port too: its "serving" line says the servers were started and
/// the socket is bound.)
fn serve(dir: &Path, flags: &[&str]) -> HttpServe {
    let args = [&FAST_RESTARTS[..], flags, &["--http", "127.0.0.1:0"]].concat();
    HttpServe::start(dir, &args, None)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A `watch` line without the local time it starts with.
fn event_text(line: &str) -> &str {
    line.split_once(' ').map_or(line, |(_, rest)| rest)
}

#[test]
fn a_killed_server_comes_back_as_a_new_process_and_watch_shows_the_fault() {
    let dir = empty_dir("kill");
    let mut serve = serve(&dir, &["--allow-faults"]);
    // serve says so just after the address it is started on: it may not be read yet.
    assert!(
        eventually(Duration::from_secs(10), || serve
            .output()
            .contains("fault injection allowed")),
        "serve says faults are allowed:\n{}",
        serve.output()
    );
    let before = pid(&dir, "demo");
    let mut watch = Running::start(&dir, &["watch"]);
    watch.wait_watching(&dir, "demo");

    let said = run_ok(&dir, &["inject", "demo", "kill"]);
    assert!(said.contains("dealt `kill` to `demo`"), "{said}");

    let mut after = None;
    assert!(
        eventually(Duration::from_secs(20), || {
            after = try_pid(&dir, "demo").filter(|p| *p != before);
            after.is_some()
        }),
        "no new demo process after the kill\nserve:\n{}",
        serve.output()
    );
    assert!(!testkit::is_alive(before), "the killed process is gone");
    let echoed = run_ok(
        &dir,
        &["call", "mcp__demo__echo", r#"{"text":"still here"}"#],
    );
    assert_eq!(echoed.trim(), "still here");

    let fault = watch.stdout.wait_for(Duration::from_secs(10), |l| {
        event_text(l) == "demo: fault injected: kill"
    });
    assert!(fault.is_some(), "watch shows the fault\n{}", watch.output());
    let ready = watch.stdout.wait_for(Duration::from_secs(10), |l| {
        event_text(l).starts_with("demo: ready")
    });
    assert!(ready.is_some(), "watch shows demo back\n{}", watch.output());
    drop(watch);
    assert!(serve.terminate().success());
}

#[test]
fn a_call_made_while_the_server_is_stopped_answers_once_it_continues() {
    let dir = empty_dir("stop");
    let mut serve = serve(&dir, &["--allow-faults"]);
    let before = pid(&dir, "demo");

    let dealt = Instant::now();
    let said = run_ok(&dir, &["inject", "demo", "stop", "--for", "1500ms"]);
    assert!(said.contains("dealt `stop:1500ms` to `demo`"), "{said}");
    let echoed = run_ok(&dir, &["call", "mcp__demo__echo", r#"{"text":"after"}"#]);
    assert_eq!(echoed.trim(), "after");
    assert!(
        dealt.elapsed() >= Duration::from_millis(1500),
        "the call answered {:?} after the stop, before the server continued",
        dealt.elapsed()
    );
    assert_eq!(pid(&dir, "demo"), before, "a stop is not a restart");
    assert!(serve.terminate().success());
}

#[test]
fn clear_lets_a_stopped_server_continue_at_once() {
    let dir = empty_dir("clear");
    let mut serve = serve(&dir, &["--allow-faults"]);
    let before = pid(&dir, "demo");

    run_ok(&dir, &["inject", "demo", "stop", "--for", "10m"]);
    let started = Instant::now();
    let call = {
        let dir = dir.clone();
        std::thread::spawn(move || run(&dir, &["call", "mcp__demo__echo", r#"{"text":"freed"}"#]))
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(!call.is_finished(), "the call waits while demo is stopped");
    let said = run_ok(&dir, &["inject", "demo", "--clear"]);
    assert!(said.contains("cleared the faults of `demo`"), "{said}");
    let out = call.join().unwrap();
    assert!(out.status.success(), "{}", describe(&["call"], &out));
    assert_eq!(stdout(&out).trim(), "freed");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call waited {:?}: clear did not continue the server",
        started.elapsed()
    );
    assert_eq!(pid(&dir, "demo"), before);
    assert!(serve.terminate().success());
}

#[test]
fn bad_fault_text_and_faults_a_server_cannot_take_are_usage_errors() {
    let dir = empty_dir("bad");
    let mut serve = serve(&dir, &["--allow-faults"]);
    let before = pid(&dir, "demo");
    for (args, says) in [
        (
            &["inject", "demo", "explode"][..],
            "unknown fault `explode`",
        ),
        (&["inject", "demo", "stop:soon"], "is not a duration"),
        (
            &["inject", "demo", "kill", "--for", "1s"],
            "`kill` does not last",
        ),
        (&["inject", "demo", "stop", "--for", "2h"], "at most 1h"),
        (&["inject", "demo", "cut-stream"], "applies to HTTP servers"),
        (&["inject", "dem", "kill"], "did you mean `demo`"),
        (&["inject", "demo"], "required"),
        (
            &["inject", "demo", "kill", "--clear"],
            "cannot be used with",
        ),
    ] {
        let out = run(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{}", describe(args, &out));
        assert!(stderr(&out).contains(says), "{}", describe(args, &out));
    }
    // The list of faults comes with a name that is not one.
    let out = run(&dir, &["inject", "demo", "explode"]);
    assert!(
        stderr(&out).contains("kill, stop[:DURATION]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pid(&dir, "demo"), before, "nothing was dealt");
    assert!(serve.terminate().success());
}

#[test]
fn without_allow_faults_or_without_serve_inject_says_how_to_allow_it() {
    let dir = empty_dir("off");
    let args = ["inject", "demo", "kill"];
    let out = run(&dir, &args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(
        stderr(&out).contains("inject needs one started with `mcpvisor serve --allow-faults`"),
        "{}",
        describe(&args, &out)
    );

    let mut serve = serve(&dir, &[]);
    let before = pid(&dir, "demo");
    for args in [&args[..], &["inject", "demo", "--clear"]] {
        let out = run(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{}", describe(args, &out));
        assert!(
            stderr(&out).contains("start it with `mcpvisor serve --allow-faults`"),
            "{}",
            describe(args, &out)
        );
    }
    assert_eq!(pid(&dir, "demo"), before, "nothing was dealt");
    assert!(serve.terminate().success());
}
