//! Configuration through the CLI: the commands that edit `.mcp.json`, the files
//! it reads, approvals, settings and their hardening. What the tests share: a
//! project directory with its own home, and the `mcpvisor` binary run in it.

mod commands;
mod end_to_end;
mod files;
mod flag;
mod hardening;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// A fresh directory for one test: the project in `dir`, the home in `dir/home`.
pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub fn new(file: &str, tag: &str) -> Scratch {
        let dir = testkit::scratch_dir(&format!("{file}-{tag}"));
        Scratch { dir }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    pub fn config(&self) -> PathBuf {
        self.dir.join(".mcp.json")
    }

    pub fn write(&self, text: &str) {
        std::fs::write(self.config(), text).unwrap();
    }

    pub fn read(&self) -> String {
        std::fs::read_to_string(self.config()).unwrap()
    }

    /// `mcpvisor args…` in `dir` (not the project root, when a test says so).
    pub fn run_in(&self, dir: &Path, args: &[&str]) -> Out {
        let mut cmd = testkit::serve::mcpvisor(dir);
        cmd.args(args).env("MCPVISOR_HOME", self.home());
        Out(testkit::serve::finish(&mut cmd, Duration::from_secs(60)))
    }

    pub fn run(&self, args: &[&str]) -> Out {
        self.run_in(&self.dir, args)
    }

    /// Every file under the home, as text: where a secret must not be.
    pub fn home_text(&self) -> String {
        fn walk(dir: &Path, out: &mut String) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push_str(&String::from_utf8_lossy(
                        &std::fs::read(&path).unwrap_or_default(),
                    ));
                }
            }
        }
        let mut out = String::new();
        walk(&self.home(), &mut out);
        out
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A finished command.
pub struct Out(pub Output);

impl Out {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    /// Both streams, for messages.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout(), self.stderr())
    }
    pub fn code(&self) -> Option<i32> {
        self.0.status.code()
    }
    pub fn ok(&self) -> bool {
        self.0.status.success()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout().trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.all()))
    }
}

/// The approval of `name` in `--json servers`.
pub fn approved(s: &Scratch, name: &str) -> bool {
    let listed = s.run(&["--json", "servers"]).json();
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {listed}"))["approved"]
        == true
}

/// The demo server, as a stdio command line.
pub fn demo() -> [&'static str; 2] {
    [env!("CARGO_BIN_EXE_mcpvisor"), "demo-server"]
}
