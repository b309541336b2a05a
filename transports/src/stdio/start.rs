//! How a stdio server's process is started: with the parent-death signal
//! (Linux, the default) or without it.

use std::process::Stdio;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::process::Command;

use super::StdioSpec;
#[cfg(target_os = "linux")]
use super::launch;
use super::process::{self, ServerProcess};

/// The three host-side pipe ends of a started server: stdin, stdout, stderr.
type Pipes = [std::os::fd::OwnedFd; 3];

/// Linux: the server with SIGKILL as its parent-death signal, started without
/// a full fork (see [`launch`]). Runs on a spawner thread.
#[cfg(target_os = "linux")]
pub(super) fn launch_with_parent_death(
    spec: &StdioSpec,
    env: &[(String, std::ffi::OsString)],
) -> std::io::Result<(ServerProcess, u32, Pipes)> {
    if !process::pidfd_available() {
        return spawn_plain(spec, env.to_vec(), true);
    }
    let launched = launch::launch(&launch::Launch {
        command: &spec.command,
        args: &spec.args,
        env,
        cwd: spec.cwd.as_deref(),
    })?;
    let pid = launched.pid;
    let process = process::Launched::watch(pid).inspect_err(|_| {
        // Unwatched, it could be neither waited for nor reaped: end it here.
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(Pid::from_raw(pid), None);
    })?;
    Ok((
        ServerProcess::Launched(process),
        pid as u32,
        [launched.stdin, launched.stdout, launched.stderr],
    ))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn launch_with_parent_death(
    spec: &StdioSpec,
    env: &[(String, std::ffi::OsString)],
) -> std::io::Result<(ServerProcess, u32, Pipes)> {
    spawn_plain(spec, env.to_vec(), false)
}

/// The server started by Tokio's `Command`: a `vfork`-style spawn, or with
/// `parent_death` (Linux without pidfds: old kernels, some sandboxes) a full
/// fork that sets the parent-death signal before `exec`.
pub(super) fn spawn_plain(
    spec: &StdioSpec,
    env: Vec<(String, std::ffi::OsString)>,
    parent_death: bool,
) -> std::io::Result<(ServerProcess, u32, Pipes)> {
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    if parent_death {
        die_with_host(&mut cmd);
    }
    let mut child = cmd.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("process exited at once"))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("stdio pipes missing"));
    };
    let pipes = [
        stdin.into_owned_fd()?,
        stdout.into_owned_fd()?,
        stderr.into_owned_fd()?,
    ];
    Ok((ServerProcess::Spawned(child), pid, pipes))
}

/// On Linux, the child gets SIGKILL when the host dies, however it dies: a host
/// killed with SIGKILL runs no teardown, and its servers must not live on. The
/// signal reaches the server process itself; teardown of its group remains the
/// host's job while it lives. This full-fork way is the fallback where pidfds
/// are missing.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn die_with_host(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe system calls (prctl, getppid); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            // The host died between fork and prctl: the signal was missed.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                // From a kind, not a message: nothing may allocate after fork.
                return Err(std::io::Error::from(std::io::ErrorKind::Other));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_host(_cmd: &mut Command) {}

#[cfg(all(test, target_os = "linux"))]
mod tests;
