//! Where a command's `.mcp.json` is: the nearest one in the working directory
//! or above it, as git finds `.git`, so a command run in a subdirectory of a
//! project uses the project's servers.

use std::path::{Path, PathBuf};

use super::FILE_NAME;

/// The nearest `.mcp.json` in `start` or one of its ancestors, as an absolute
/// path (so errors never show a `../../..` chain); `None` when there is none.
/// `start` is made absolute against the process's working directory.
pub fn find_upward(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        // A directory or a dangling link named `.mcp.json` is not a project file;
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
}
