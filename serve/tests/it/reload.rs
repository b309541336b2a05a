//! A running `mcpvisor serve` reads its `.mcp.json` again on `mcpvisor reload`
//! and on SIGHUP: added, removed and changed entries start, stop or restart;
//! the others keep their process.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

struct Project {
    dir: PathBuf,
    home: PathBuf,
}

impl Project {
    fn new(tag: &str) -> Project {
        let root = testkit::scratch_dir(&format!("reload-{tag}"));
        let dir = root.join("project");
        std::fs::create_dir_all(&dir).unwrap();
        Project {
            dir,
            home: root.join("home"),
        }
    }

    fn write(&self, names: &[&str]) {
        let servers: serde_json::Map<String, Value> = names
            .iter()
            .map(|n| {
                let entry = json!({"command": testkit::mcpvisor_exe(), "args": ["demo-server"]});
                (n.to_string(), entry)
            })
            .collect();
        let config = json!({ "mcpServers": servers });
        std::fs::write(self.dir.join(".mcp.json"), config.to_string()).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(testkit::mcpvisor_exe());
        cmd.args(args)
            .current_dir(&self.dir)
            .env("MCPVISOR_HOME", &self.home)
            .env("RUST_LOG", "info");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `serve` (the socket only) and waits until it listens.
    fn serve(&self) -> Child {
        let mut child = self
            .command(&["serve"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < deadline, "serve did not start listening");
            match lines.next() {
                Some(Ok(line)) if line.starts_with("mcpvisor: listening on") => break,
                Some(_) => {}
                None => panic!("serve exited before listening"),
            }
        }
        // Keep draining stderr so serve never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        child
    }
}

/// A running serve, killed if the test fails before stopping it.
struct Serving(Option<Child>);

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn stop(mut serving: Serving) {
    let mut child = serving.0.take().unwrap();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("serve did not stop on SIGTERM");
    assert!(status.success(), "serve exited with {status}");
}

#[test]
fn reload_and_sighup_apply_the_edited_file() {
    let p = Project::new("edit");
    p.write(&["a"]);
    p.ok(&["enable", "a"]);
    let serve = Serving(Some(p.serve()));
    let pid_a = p.ok(&["call", "mcp__a__pid", "{}"]);
    assert!(p.ok(&["tools"]).contains("mcp__a__echo"));

    // Approving the new entry applies the edited file to the running serve.
    p.write(&["a", "b"]);
    let enabled = p.ok(&["enable", "b"]);
    assert!(enabled.contains("started: b"), "{enabled}");
    assert!(enabled.contains("unchanged: a"), "{enabled}");
    let report = p.ok(&["reload"]);
    assert!(report.contains("unchanged: a"), "{report}");
    assert!(report.contains("unchanged: b"), "{report}");
    let tools = p.ok(&["tools"]);
    assert!(tools.contains("mcp__b__echo"), "{tools}");
    assert_eq!(
        p.ok(&["call", "mcp__a__pid", "{}"]),
        pid_a,
        "a was restarted"
    );

    // SIGHUP does the same: `a` leaves the file.
    p.write(&["b"]);
    let pid = serve.0.as_ref().unwrap().id();
    kill(Pid::from_raw(pid as i32), Signal::SIGHUP).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tools = p.ok(&["tools"]);
        if !tools.contains("mcp__a__") && tools.contains("mcp__b__echo") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "SIGHUP did not remove a: {tools}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    stop(serve);
    // Without a serve there is nothing to reload.
    let out = p.run(&["reload"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mcpvisor serve"));
}
