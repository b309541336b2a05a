//! Where a command's servers file is: the nearest one in the working
//! directory or above it, as git finds `.git`, so a command run in a
//! subdirectory of a project uses the project's servers. In each directory,
//! `.mcp.json` (Claude Code's) comes first, then Cursor's `.cursor/mcp.json`
//! and VS Code's `.vscode/mcp.json`, which hold the same entries.

use std::path::{Path, PathBuf};

use super::FILE_NAME;

/// The files looked for in each directory, first found first taken.
pub const CANDIDATES: [&str; 3] = [FILE_NAME, ".cursor/mcp.json", ".vscode/mcp.json"];

/// The nearest servers file (see [`CANDIDATES`]) in `start` or one of its
/// ancestors, as an absolute path (so errors never show a `../../..` chain);
/// `None` when there is none. `start` is made absolute against the process's
/// working directory.
pub fn find_upward(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .flat_map(|dir| CANDIDATES.iter().map(move |name| dir.join(name)))
        // A directory or a dangling link of that name is not a project file;
        // anything else is taken, so a broken one is reported rather than skipped.
        .find(|candidate| candidate.metadata().is_ok_and(|m| !m.is_dir()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_file_wins_and_is_absolute() {
        let root = std::env::temp_dir().join(format!("mcpvisor-discover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let deep = root.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.join(FILE_NAME), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(root.join(FILE_NAME)));
        std::fs::write(root.join("a").join(FILE_NAME), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(root.join("a").join(FILE_NAME)));
        // A directory of that name is passed over.
        std::fs::create_dir_all(root.join("a/b").join(FILE_NAME)).unwrap();
        assert_eq!(find_upward(&deep), Some(root.join("a").join(FILE_NAME)));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn cursor_and_vs_code_files_are_found_after_a_directorys_own() {
        let root =
            std::env::temp_dir().join(format!("mcpvisor-discover-editors-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let deep = root.join("a/b");
        std::fs::create_dir_all(deep.join(".vscode")).unwrap();
        std::fs::create_dir_all(root.join("a/.cursor")).unwrap();
        std::fs::write(deep.join(".vscode/mcp.json"), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(deep.join(".vscode/mcp.json")));
        std::fs::create_dir_all(deep.join(".cursor")).unwrap();
        std::fs::write(deep.join(".cursor/mcp.json"), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(deep.join(".cursor/mcp.json")));
        std::fs::write(deep.join(FILE_NAME), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(deep.join(FILE_NAME)));
        // The nearest directory wins over a file of higher rank further up.
        std::fs::remove_file(deep.join(FILE_NAME)).unwrap();
        std::fs::write(root.join(FILE_NAME), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(deep.join(".cursor/mcp.json")));
        let _ = std::fs::remove_dir_all(&root);
    }
}
