//! Linux: starting a server the way `posix_spawn` does, with the parent-death
//! signal set between the clone and the `exec`.
//!
//! The standard library falls back to a full `fork` as soon as anything must run
//! in the child before `exec`, and the parent-death signal must. A full fork
//! copies the host's page tables and leaves every page the host writes afterwards
//! to fault once; it cost about 1 ms of host CPU per server at 100 servers, and
//! more the bigger the host grows, so a fleet's start-up grew faster than the
//! fleet. Here the child shares the host's memory (`CLONE_VM | CLONE_VFORK`),
//! runs a few system calls on a stack of its own, and either `exec`s or leaves
//! its `errno` for the parent; the parent's thread is suspended until then.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::libc;

/// The child's stack until it `exec`s: a handful of system calls deep.
const CHILD_STACK: usize = 64 * 1024;

/// What a started server hands back: its pid and the host's ends of its pipes.
pub(crate) struct Launched {
    pub(crate) pid: libc::pid_t,
    pub(crate) stdin: OwnedFd,
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
}

/// What to start, prepared before the clone: the child may not allocate.
pub(crate) struct Launch<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a [(String, OsString)],
    pub(crate) cwd: Option<&'a Path>,
}

/// Everything the child reads, by raw pointer, and the slot it writes its
/// failure to (the memory is shared until `exec`).
struct ChildPlan {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    /// The child's ends of stdin, stdout and stderr, each at 3 or above so that
    /// putting one in place never overwrites another.
    fds: [RawFd; 3],
    parent: libc::pid_t,
    errno: AtomicI32,
}

/// Starts `launch` in a new process group of its own, with SIGKILL as its
/// parent-death signal. Must run on a thread that outlives the child (the
/// signal follows the thread that cloned it) and inside a Tokio runtime.
pub(crate) fn launch(launch: &Launch<'_>) -> io::Result<Launched> {
    let program = resolve(launch.command, launch.env, launch.cwd)?;
    let program = c_string(program.as_os_str())?;
    let mut args = Vec::with_capacity(launch.args.len() + 1);
    args.push(c_string(OsStr::new(launch.command))?);
    for arg in launch.args {
        args.push(c_string(OsStr::new(arg))?);
    }
    let mut env = Vec::with_capacity(launch.env.len());
    for (name, value) in launch.env {
        let mut pair = OsString::from(name);
        pair.push("=");
        pair.push(value);
        env.push(c_string(&pair)?);
    }
    let cwd = launch.cwd.map(|d| c_string(d.as_os_str())).transpose()?;
    let argv = null_terminated(&args);
    let envp = null_terminated(&env);

    let (stdin_child, stdin) = pipe()?;
    let (stdout, stdout_child) = pipe()?;
    let (stderr, stderr_child) = pipe()?;
    let (stdin_child, stdout_child, stderr_child) = (
        above_stdio(stdin_child)?,
        above_stdio(stdout_child)?,
        above_stdio(stderr_child)?,
    );
    let plan = ChildPlan {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        fds: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        parent: std::process::id() as libc::pid_t,
        errno: AtomicI32::new(0),
    };
    let mut stack = vec![0u8; CHILD_STACK];
    // SAFETY: the stack grows down on every Linux target Rust supports; its top
    // is aligned down to 16 bytes as the ABIs require.
    let top = unsafe { stack.as_mut_ptr().add(CHILD_STACK) };
    let top = ((top as usize) & !15) as *mut libc::c_void;

    let pid = {
        let _blocked = BlockedSignals::all()?;
        // SAFETY: CLONE_VFORK suspends this thread until the child execs or
        // exits, so `plan`, `stack` and everything they point to outlive the
        // child's use of them. Every signal is blocked, so no handler of the
        // host runs on the child's side of the shared memory; the child resets
        // handled signals before unblocking them.
        unsafe {
            libc::clone(
                child_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_ref(&plan).cast_mut().cast(),
            )
        }
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    let failed = plan.errno.load(Ordering::Acquire);
    if failed != 0 {
        // The child has exited already: reap it so no zombie is left.
        let mut status = 0;
        // SAFETY: plain system call on our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(io::Error::from_raw_os_error(failed));
    }
    Ok(Launched {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// The child's whole life before `exec`: only async-signal-safe system calls,
/// no allocation, no locks. Any failure leaves its `errno` in the plan.
extern "C" fn child_main(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `launch` passes a `ChildPlan` that lives until the child execs or exits.
    let plan = unsafe { &*(plan as *const ChildPlan) };
    // SAFETY: each call below is a thin wrapper of a system call; the pointers
    // come from the plan, whose C strings and arrays the parent keeps alive.
    unsafe {
        reset_handled_signals();
        if libc::setpgid(0, 0) != 0 {
            return fail(plan);
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return fail(plan);
        }
        // The host died before the signal was armed: it would never come.
        if libc::getppid() != plan.parent {
            plan.errno.store(libc::ESRCH, Ordering::Release);
            libc::_exit(127);
        }
        for (target, fd) in plan.fds.iter().enumerate() {
            if libc::dup2(*fd, target as libc::c_int) < 0 {
                return fail(plan);
            }
        }
        if !plan.cwd.is_null() && libc::chdir(plan.cwd) != 0 {
            return fail(plan);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(plan.program, plan.argv, plan.envp);
        fail(plan)
    }
}

/// Records `errno` for the parent and ends the child.
unsafe fn fail(plan: &ChildPlan) -> libc::c_int {
    // SAFETY: reading errno right after the failed call, in the same thread.
    let errno = unsafe { *libc::__errno_location() };
    plan.errno.store(errno.max(1), Ordering::Release);
    // SAFETY: ends the child without running anything of the host's.
    unsafe { libc::_exit(127) }
}

/// Handlers of the host would run in its memory: the child puts every handled
/// signal back to its default (and SIGPIPE too, which Rust programs ignore and
/// servers expect to kill them), keeping the ones the host ignores ignored.
unsafe fn reset_handled_signals() {
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: sigaction with a zeroed struct to read, then to set the default.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Every signal blocked on this thread while alive; the old mask comes back on drop.
struct BlockedSignals(libc::sigset_t);

impl BlockedSignals {
    fn all() -> io::Result<BlockedSignals> {
        // SAFETY: sigset_t is plain data; the calls fill and apply it.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            let mut old: libc::sigset_t = std::mem::zeroed();
            let rc = libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(BlockedSignals(old))
        }
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `all`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// A pipe, both ends close-on-exec: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fd` moved to 3 or above (a host whose own stdio is closed gets pipes at
/// 0–2, and the child's `dup2`s would then overwrite one another).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicates an fd we own; the copy is ours too.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a command, argument or variable contains a NUL byte",
        )
    })
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// The program `exec` gets. A command with a slash is used as written (relative
/// to the server's directory, as `exec` after `chdir` sees it); a bare name is
/// looked up on the `PATH` the server gets, else the host's, like the standard
/// library's `Command`.
fn resolve(command: &str, env: &[(String, OsString)], cwd: Option<&Path>) -> io::Result<PathBuf> {
    if command.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "empty command"));
    }
    if command.contains('/') {
        return Ok(PathBuf::from(command));
    }
    let path = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(&path) {
        // An empty entry means the current directory: the server's.
        let dir = match (dir.as_os_str().is_empty(), cwd) {
            (true, Some(cwd)) => cwd.to_path_buf(),
            (true, None) => PathBuf::from("."),
            (false, _) => dir,
        };
        let candidate = dir.join(command);
        let executable = std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if executable {
            return Ok(candidate);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOENT))
}

#[cfg(test)]
mod tests;
