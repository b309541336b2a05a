use std::ffi::OsString;

use super::*;

#[test]
fn without_pidfds_the_fork_fallback_still_sets_the_parent_death_signal() {
    let spec = StdioSpec::new("sleep", ["30"]);
    let path: Vec<(String, OsString)> = std::env::var_os("PATH")
        .map(|p| ("PATH".to_string(), p))
        .into_iter()
        .collect();
    let pid = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _inside = runtime.enter();
        let (process, pid, _pipes) = spawn_plain(&spec, path, true).unwrap();
        // Not dropped: dropping would kill it, and the test is whether the
        // thread's end does.
        std::mem::forget(process);
        pid
    })
    .join()
    .unwrap();
    let status = nix::sys::wait::waitpid(Pid::from_raw(pid as i32), None).unwrap();
    assert_eq!(
        status,
        nix::sys::wait::WaitStatus::Signaled(Pid::from_raw(pid as i32), Signal::SIGKILL, false),
        "the child outlived its parent thread"
    );
}
