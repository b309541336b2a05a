use std::ffi::OsString;
use std::io::Read;
use std::path::Path;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect()
}

fn read_all(fd: OwnedFd) -> String {
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).unwrap();
    text
}

fn wait(pid: libc::pid_t) -> i32 {
    let mut raw = 0;
    // SAFETY: waitpid on the test's own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut raw, 0) }, pid);
    assert!(libc::WIFEXITED(raw), "ended by a signal: {raw}");
    libc::WEXITSTATUS(raw)
}

fn start(
    command: &str,
    args: &[&str],
    env: &[(String, OsString)],
    cwd: Option<&Path>,
) -> io::Result<Launched> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    launch(&Launch {
        command,
        args: &args,
        env,
        cwd,
    })
}

#[test]
fn runs_the_program_with_its_arguments_environment_and_pipes() {
    let path = std::env::var("PATH").unwrap();
    let env = env(&[("PATH", &path), ("GREETING", "hello")]);
    let child = start(
        "sh",
        &[
            "-c",
            "read line; echo \"$GREETING $line $0\"; echo oops >&2; exit 3",
        ],
        &env,
        None,
    )
    .unwrap();
    std::fs::File::from(child.stdin).write_all_and_close(b"world\n");
    assert_eq!(read_all(child.stdout), "hello world sh\n");
    assert_eq!(read_all(child.stderr), "oops\n");
    assert_eq!(wait(child.pid), 3);
}

trait WriteAllAndClose {
    fn write_all_and_close(self, bytes: &[u8]);
}

impl WriteAllAndClose for std::fs::File {
    fn write_all_and_close(mut self, bytes: &[u8]) {
        std::io::Write::write_all(&mut self, bytes).unwrap();
    }
}

#[test]
fn the_child_has_default_signals_and_nothing_blocked() {
    let child = start("cat", &["/proc/self/status"], &env(&[]), None).unwrap();
    drop(child.stdin);
    let status = read_all(child.stdout);
    assert_eq!(wait(child.pid), 0);
    let mask = |name: &str| {
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        u64::from_str_radix(hex.trim(), 16).unwrap()
    };
    assert_eq!(
        mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE still ignored"
    );
    assert_eq!(mask("SigBlk:"), 0, "signals left blocked");
}

#[test]
fn the_child_leads_a_process_group_of_its_own() {
    // Field 5 of /proc/PID/stat is the process group; `sh` is the launched process.
    let child = start(
        "sh",
        &["-c", "echo $$; cut -d' ' -f5 /proc/$$/stat"],
        &env(&[]),
        None,
    )
    .unwrap();
    drop(child.stdin);
    let printed = read_all(child.stdout);
    assert_eq!(wait(child.pid), 0);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines,
        [child.pid.to_string(), child.pid.to_string()],
        "{printed}"
    );
}

#[test]
fn runs_in_the_directory_it_is_given() {
    let dir = std::env::temp_dir();
    let child = start("pwd", &[], &env(&[]), Some(&dir)).unwrap();
    drop(child.stdin);
    let printed = read_all(child.stdout);
    assert_eq!(wait(child.pid), 0);
    assert_eq!(
        Path::new(printed.trim()).canonicalize().unwrap(),
        dir.canonicalize().unwrap()
    );
}

#[test]
fn a_missing_program_is_not_found() {
    let e = start(
        "mcpvisor-no-such-program",
        &[],
        &env(&[("PATH", "/nonexistent")]),
        None,
    )
    .err()
    .expect("started");
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let e = start("/nonexistent/server", &[], &env(&[]), None)
        .err()
        .expect("started");
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_file_that_cannot_run_fails_with_exec_s_error() {
    let dir = std::env::temp_dir().join(format!("mcpvisor-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("not-executable");
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    let e = start(file.to_str().unwrap(), &[], &env(&[]), None)
        .err()
        .expect("started");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_nul_byte_is_refused_before_anything_starts() {
    let e = start("sh", &["-c", "a\0b"], &env(&[]), None)
        .err()
        .expect("started");
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn the_child_is_killed_when_the_thread_that_started_it_ends() {
    // The parent-death signal follows the thread that cloned the child: a
    // thread that ends stands in for a host that dies.
    let pid = std::thread::spawn(|| start("sleep", &["30"], &env(&[]), None).unwrap().pid)
        .join()
        .unwrap();
    let mut raw = 0;
    // SAFETY: waitpid on the test's own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut raw, 0) }, pid);
    assert!(
        libc::WIFSIGNALED(raw) && libc::WTERMSIG(raw) == libc::SIGKILL,
        "the child outlived its parent thread: {raw}"
    );
}
