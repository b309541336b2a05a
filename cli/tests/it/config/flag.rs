//! `--config FILE` names the configuration even where the working directory
//! has a `.mcp.json` of its own: each command reads the file it is given, and
//! without the flag the one found from the working directory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::json;

fn scratch(tag: &str) -> PathBuf {
    testkit::scratch_dir(&format!("config-flag-{tag}"))
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = testkit::serve::mcpvisor(dir);
    testkit::serve::finish(cmd.args(args), Duration::from_secs(60))
}

fn ok_stdout(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_config_flag_wins_over_the_mcp_json_of_the_working_directory() {
    let dir = scratch("wins");
    let demo = |name: &str| {
        json!({"mcpServers": {name: {
            "command": env!("CARGO_BIN_EXE_mcpvisor"), "args": ["demo-server"],
        }}})
        .to_string()
    };
    std::fs::write(dir.join(".mcp.json"), demo("here")).unwrap();
    let other = dir.join("other.json");
    std::fs::write(&other, demo("there")).unwrap();
    let other = other.display().to_string();

    ok_stdout(&dir, &["enable", "here"]);
    ok_stdout(&dir, &["--config", &other, "enable", "there"]);
    // `there` is no entry of the working directory's file.
    assert!(!run(&dir, &["enable", "there"]).status.success());

    let flagged = ok_stdout(&dir, &["--config", &other, "--no-attach", "tools"]);
    assert!(flagged.contains("mcp__there__echo"), "{flagged}");
    assert!(!flagged.contains("mcp__here__"), "{flagged}");
    let found = ok_stdout(&dir, &["--no-attach", "tools"]);
    assert!(found.contains("mcp__here__echo"), "{found}");
    assert!(!found.contains("mcp__there__"), "{found}");
    let _ = std::fs::remove_dir_all(&dir);
}
