//! One serve per configuration: a stale socket is replaced, the socket is
//! private, and a serve that stops answers what is attached and leaves nothing.

use super::*;

#[test]
fn one_serve_per_configuration_a_stale_socket_is_replaced_and_stop_leaves_nothing() {
    let dir = empty_dir("single");
    let mut first = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    let first_demo = demo_pid(&dir, &[]);

    let second = run(&dir, &["serve"]);
    assert!(
        !second.status.success(),
        "{}",
        describe(&["serve"], &second)
    );
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("already running"), "{said}");
    assert_eq!(
        demo_pid(&dir, &[]),
        first_demo,
        "the first serve still serves"
    );

    // A serve that is killed cannot remove its socket.
    let status = first.stop(Signal::SIGKILL);
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    assert!(
        first.socket.exists(),
        "the killed serve's socket {} stays",
        first.socket.display()
    );
    assert!(
        eventually(Duration::from_secs(10), || !is_alive(first_demo)),
        "the killed serve's demo server {first_demo} outlived it"
    );
    // Meanwhile the commands see that nobody answers there and run on their own.
    let alone = demo_pid(&dir, &[]);
    assert_ne!(alone, first_demo);
    let out = run(&dir, &["restart", "demo"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        describe(&["restart", "demo"], &out)
    );

    let mut next = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    assert_eq!(
        next.socket, first.socket,
        "the same configuration, the same socket"
    );
    // The socket now leads to the new serve: a call attaches to its server.
    let next_demo = demo_pid(&dir, &[]);
    assert_ne!(next_demo, first_demo);
    assert_eq!(
        parent_of(next_demo),
        Some(next.pid()),
        "the call reached the new serve's demo server"
    );
    assert_eq!(demo_pid(&dir, &[]), next_demo);

    let status = next.stop(Signal::SIGTERM);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        next.stderr.finish(Duration::from_secs(2))
    );
    assert!(
        !next.socket.exists(),
        "the socket {} is removed on exit",
        next.socket.display()
    );
    assert!(!is_alive(next_demo), "serve's demo server stopped with it");
    assert!(
        eventually(Duration::from_secs(2), || live_group_members(next_demo)
            .is_empty()),
        "the demo server's group still has {:?}",
        live_group_members(next_demo)
    );
    assert!(
        eventually(Duration::from_secs(2), || processes_in(&dir).is_empty()),
        "processes left in the project directory: {:?}",
        processes_in(&dir)
    );
    // Nothing runs: the commands are one-shot again.
    let out = run(&dir, &["restart", "demo"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_socket_is_private_to_its_owner() {
    let dir = empty_dir("modes");
    let mut serve = Serve::start(&dir, &["serve"]);
    let meta = std::fs::symlink_metadata(&serve.socket).unwrap();
    assert!(meta.file_type().is_socket(), "{}", serve.socket.display());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let parent = serve.socket.parent().unwrap();
    assert_eq!(parent, dir.join("home").join("run"));
    let meta = std::fs::symlink_metadata(parent).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}

#[test]
fn stopping_serve_answers_attached_commands_and_leaves_nothing() {
    let dir = empty_dir("stop");
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());
    let demo = demo_pid(&dir, &[]);
    let mut watch = Running::start(&dir, &["watch"]);
    watch.wait_watching(&dir, "demo");
    let mut call = Running::start(&dir, &["call", "mcp__demo__sleep", r#"{"ms":60000}"#]);
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(
        matches!(call.child.try_wait(), Ok(None)),
        "the sleep call is in flight\n{}",
        call.output()
    );

    let started = Instant::now();
    let status = serve.stop(Signal::SIGTERM);
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        serve.stderr.finish(Duration::from_secs(2))
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "serve took {:?} to stop",
        started.elapsed()
    );

    // The call in flight is told that serve went away, instead of hanging.
    let Some(code) = wait_timeout(&mut call.child, EXIT_TIMEOUT) else {
        panic!(
            "the attached call outlived serve by {EXIT_TIMEOUT:?}\n{}",
            call.output()
        );
    };
    assert_eq!(code.code(), Some(1), "{}", call.output());
    let said = call.stdout.finish(Duration::from_secs(2));
    assert!(said.contains("shutting down"), "{}", call.output());

    let Some(code) = wait_timeout(&mut watch.child, EXIT_TIMEOUT) else {
        panic!(
            "watch outlived serve by {EXIT_TIMEOUT:?}\n{}",
            watch.output()
        );
    };
    assert_eq!(code.code(), Some(0), "{}", watch.output());
    assert!(
        watch
            .stderr
            .finish(Duration::from_secs(2))
            .contains("serve stopped"),
        "{}",
        watch.output()
    );

    assert!(!serve.socket.exists(), "the socket is removed on exit");
    assert!(!is_alive(demo));
    assert!(
        eventually(Duration::from_secs(2), || processes_in(&dir).is_empty()),
        "processes left in the project directory: {:?}",
        processes_in(&dir)
    );
}

#[test]
fn a_configured_project_is_attached_from_its_directory_and_by_path() {
    let dir = empty_dir("configured");
    let config = serde_json::json!({"mcpServers": {
        "svc": {"command": testkit::mcpvisor_exe(), "args": ["demo-server"]}
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    run_ok(&dir, &["enable", "svc"]);
    let mut serve = Serve::start(&dir, &[&FAST_RESTARTS[..], &["serve"]].concat());

    let pid = |cwd: &Path, flags: &[&str]| -> u32 {
        let args = [flags, &["call", "mcp__svc__pid", "{}"]].concat();
        let mut cmd = mcpvisor(cwd);
        // The home of the project, wherever the command runs.
        cmd.env("MCPVISOR_HOME", dir.join("home")).args(&args);
        let mut child = cmd.spawn().unwrap();
        let stdout = Lines::start(child.stdout.take().unwrap());
        let stderr = Lines::start(child.stderr.take().unwrap());
        let Some(status) = wait_timeout(&mut child, COMMAND_TIMEOUT) else {
            kill_group(&mut child);
            panic!("`mcpvisor {}` hung\n{}", args.join(" "), stderr.text());
        };
        let out = stdout.finish(Duration::from_secs(5));
        assert!(
            status.success(),
            "`mcpvisor {}`: {status}\n{out}\n{}",
            args.join(" "),
            stderr.finish(Duration::from_secs(5))
        );
        out.trim().parse().unwrap()
    };
    let here = pid(&dir, &[]);
    assert_eq!(parent_of(here), Some(serve.pid()));
    let elsewhere = empty_dir("configured-elsewhere");
    let config_path = dir.join(".mcp.json");
    let by_path = pid(&elsewhere, &["--config", config_path.to_str().unwrap()]);
    assert_eq!(by_path, here, "--config names the same configuration");
    let explicit = pid(&dir, &["--config", ".mcp.json"]);
    assert_eq!(explicit, here);

    assert_eq!(serve.stop(Signal::SIGTERM).code(), Some(0));
}
