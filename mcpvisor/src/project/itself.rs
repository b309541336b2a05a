//! An entry that would make mcpvisor supervise itself: `mcpvisor serve` run
//! for the very file it is an entry of (a `.mcp.json` shared with a host
//! that runs `mcpvisor serve` from it, copied in whole). Each copy would start
//! the next, and every command that starts the servers would hang on it.

use std::path::{Path, PathBuf};

use mcpvisor_transports::StdioSpec;

use crate::config::discover::find_upward;

/// Whether `spec` runs `mcpvisor serve` reading the servers file at `config`.
pub(super) fn serves(spec: &StdioSpec, config: &Path) -> bool {
    if !is_mcpvisor(&spec.command) || !spec.args.iter().any(|a| a == "serve") {
        return false;
    }
    let dir = spec
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    let read = match config_flag(&spec.args) {
        Some(named) => Some(dir.join(named)),
        None => find_upward(&dir),
    };
    read.is_some_and(|read| same_file(&read, config))
}

/// `mcpvisor` by name, or this very program by path.
fn is_mcpvisor(command: &str) -> bool {
    let path = Path::new(command);
    if path.file_name().is_some_and(|n| n == "mcpvisor") {
        return true;
    }
    std::env::current_exe().is_ok_and(|me| same_file(path, &me))
}

/// The value of `--config PATH` or `--config=PATH`.
fn config_flag(args: &[String]) -> Option<PathBuf> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(value) = arg.strip_prefix("--config=") {
            return Some(PathBuf::from(value));
        }
    }
    None
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str, args: &[&str], cwd: &Path) -> StdioSpec {
        let mut spec = StdioSpec::new(command, args.iter().copied());
        spec.cwd = Some(cwd.to_path_buf());
        spec
    }

    #[test]
    fn serve_for_the_same_file_is_itself_and_for_another_is_not() {
        let root = std::env::temp_dir().join(format!("mcpvisor-itself-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("other")).unwrap();
        let file = root.join(".mcp.json");
        std::fs::write(&file, "{}").unwrap();
        std::fs::write(root.join("other/.mcp.json"), "{}").unwrap();
        assert!(serves(&spec("mcpvisor", &["serve"], &root), &file));
        assert!(serves(
            &spec("/usr/local/bin/mcpvisor", &["serve", "--stdio"], &root),
            &file
        ));
        assert!(serves(
            &spec(
                "mcpvisor",
                &["--config", "../.mcp.json", "serve"],
                &root.join("other")
            ),
            &file
        ));
        assert!(!serves(
            &spec("mcpvisor", &["--config=other/.mcp.json", "serve"], &root),
            &file
        ));
        assert!(!serves(
            &spec("mcpvisor", &["serve"], &root.join("other")),
            &file
        ));
        assert!(!serves(&spec("mcpvisor", &["tools"], &root), &file));
        assert!(!serves(&spec("npx", &["serve"], &root), &file));
        let _ = std::fs::remove_dir_all(&root);
    }
}
