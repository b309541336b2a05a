//! Whether a resolved stdio server can start here: its program is found the way
//! the child's `exec` will find it (on the `PATH` of the environment the child
//! gets, relative to the child's working directory), and that working directory
//! exists. Checked when enabling, so a typo is reported by name then rather than
//! as a restart loop later.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use mcpvisor_transports::StdioSpec;
use mcpvisor_transports::stdio::child_environment;

use super::error::EntryProblem;

/// What `execvp` searches when the environment has no `PATH` (glibc's default).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The problems that would stop `spec` from starting: a missing working
/// directory, a program that is not found or not executable. `command` is the
/// program as written (before expansion), for the message; `passthrough` the
/// settings' passthrough names; `host` the host's environment.
pub fn start_problems(
    server: &str,
    command: &str,
    spec: &StdioSpec,
    passthrough: &[String],
    host: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<EntryProblem> {
    let mut problems = Vec::new();
    let here = std::env::current_dir().unwrap_or_default();
    let cwd = match &spec.cwd {
        Some(dir) => {
            let dir = here.join(dir);
            if !dir.is_dir() {
                let reason = if dir.exists() {
                    "is not a directory"
                } else {
                    "does not exist"
                };
                problems.push(EntryProblem::MissingCwd {
                    server: server.to_string(),
                    cwd: dir,
                    reason: reason.into(),
                });
                return problems;
            }
            dir
        }
        None => here,
    };
    let names = passthrough.iter().chain(&spec.env_passthrough);
    let environment = child_environment(names.map(String::as_str), &spec.env, host);
    let path = environment
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
        .unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    if let Err(reason) = find_program(&spec.command, &path, &cwd) {
        problems.push(EntryProblem::CommandNotFound {
            server: server.to_string(),
            command: command.to_string(),
            reason,
        });
    }
    problems
}

/// Where `exec` finds `program`: a name with a `/` is a path (relative to
/// `cwd`); a bare name is looked for in each `PATH` directory (an empty one is
/// `cwd`), and the first executable regular file wins.
fn find_program(program: &str, path: &OsString, cwd: &Path) -> Result<PathBuf, String> {
    if program.contains('/') {
        let candidate = cwd.join(program);
        return match executable(&candidate) {
            Ok(()) => Ok(candidate),
            Err(reason) => Err(reason.into()),
        };
    }
    for dir in std::env::split_paths(path) {
        let candidate = cwd.join(dir).join(program);
        if executable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err("is not found on the PATH the server gets".into())
}

fn executable(candidate: &Path) -> Result<(), &'static str> {
    match candidate.metadata() {
        Err(_) => Err("does not exist"),
        Ok(m) if !m.is_file() => Err("is not a file"),
        Ok(_) => nix::unistd::access(candidate, nix::unistd::AccessFlags::X_OK)
            .map_err(|_| "is not executable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpvisor-runnable-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        dir
    }

    fn program(path: &Path, mode: u32) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_program_is_looked_up_on_the_childs_path() {
        let dir = scratch("path");
        program(&dir.join("bin/srv"), 0o755);
        program(&dir.join("bin/plain"), 0o644);
        let bin = dir.join("bin").into_os_string();
        let host = |name: &str| (name == "PATH").then(|| bin.clone());
        let spec = StdioSpec::new("srv", Vec::<String>::new());
        assert!(start_problems("s", "srv", &spec, &[], &host).is_empty());
        // The entry's own PATH is the one the child gets.
        let mut own = spec.clone();
        own.env = vec![(
            "PATH".into(),
            mcpvisor_transports::SecretString::new("/nowhere".to_string()),
        )];
        let problems = start_problems("s", "srv", &own, &[], &host);
        assert!(
            problems[0]
                .to_string()
                .contains("`srv` is not found on the PATH"),
            "{problems:?}"
        );
        let plain = StdioSpec::new(
            dir.join("bin/plain").display().to_string(),
            Vec::<String>::new(),
        );
        let problems = start_problems("s", "plain", &plain, &[], &host);
        assert!(
            problems[0].to_string().contains("is not executable"),
            "{problems:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_relative_program_and_the_cwd_are_taken_from_the_childs_directory() {
        let dir = scratch("cwd");
        program(&dir.join("bin/srv"), 0o755);
        let host = |_: &str| None;
        let mut spec = StdioSpec::new("./bin/srv", Vec::<String>::new());
        spec.cwd = Some(dir.clone());
        assert!(start_problems("s", "./bin/srv", &spec, &[], &host).is_empty());
        spec.cwd = Some(dir.join("gone"));
        let problems = start_problems("s", "./bin/srv", &spec, &[], &host);
        assert!(
            matches!(&problems[..], [EntryProblem::MissingCwd { cwd, .. }] if cwd == &dir.join("gone")),
            "{problems:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
