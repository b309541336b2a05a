//! The built `mcpvisor` binary the tests run: the CLI itself, and the demo
//! server (`mcpvisor demo-server`) most tests supervise.
//!
//! Only the CLI's own tests are told where cargo put it (`CARGO_BIN_EXE_*`
//! exists for a package's own binaries); every other crate's tests find it
//! beside their own executable, in the profile's directory. A workspace test
//! run (`cargo test --workspace`) builds it before any test runs; a run of one
//! crate's tests does not, so a missing binary, or one older than a file its
//! dep-info names, stops the test with the command that fixes it, instead of
//! testing what the code was.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The path of the built `mcpvisor` binary (checked once per test binary).
pub fn mcpvisor_exe() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = locate();
        if let Err(why) = fresh(&exe) {
            panic!(
                "{why}: build it first with `cargo build -p mcpvisor-cli` \
                 (`cargo test --workspace` builds it)"
            );
        }
        exe.to_str()
            .expect("the target directory's path is UTF-8")
            .to_string()
    })
}

/// `target/<profile>/mcpvisor`: a test executable is `target/<profile>/deps/<test>-<hash>`.
fn locate() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own executable");
    let profile = test
        .parent()
        .and_then(Path::parent)
        .expect("a test executable lives in <target>/<profile>/deps");
    profile.join(format!("mcpvisor{}", std::env::consts::EXE_SUFFIX))
}

fn fresh(exe: &Path) -> Result<(), String> {
    let built = std::fs::metadata(exe)
        .and_then(|m| m.modified())
        .map_err(|_| format!("the CLI binary {} is not built", exe.display()))?;
    // cargo's dep-info beside the binary names every file it was built from:
    // exactly the files whose change makes cargo build it again.
    let Ok(depinfo) = std::fs::read_to_string(exe.with_extension("d")) else {
        return Ok(());
    };
    for source in dependencies(&depinfo) {
        let changed = std::fs::metadata(&source).and_then(|m| m.modified());
        if changed.is_ok_and(|when| when > built) {
            return Err(format!(
                "the CLI binary {} is older than {}",
                exe.display(),
                source.display()
            ));
        }
    }
    Ok(())
}

/// The files a dep-info file (`target: a.rs b.rs …`, spaces in names escaped
/// with a backslash) says its target depends on.
fn dependencies(depinfo: &str) -> Vec<PathBuf> {
    let line = depinfo.lines().next().unwrap_or("");
    let Some((_, files)) = line.split_once(": ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = files.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => current.push(chars.next().unwrap_or(' ')),
            ' ' => {
                if !current.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(PathBuf::from(current));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::dependencies;
    use std::path::PathBuf;

    #[test]
    fn a_dep_info_line_gives_its_files_with_escaped_spaces_kept() {
        let info = "/t/debug/mcpvisor: /w/cli/src/main.rs /w/a\\ b/lib.rs\n\n/w/cli/src/main.rs:\n";
        assert_eq!(
            dependencies(info),
            [
                PathBuf::from("/w/cli/src/main.rs"),
                PathBuf::from("/w/a b/lib.rs")
            ]
        );
    }
}
