//! Every stdio server is forked from one of a few threads that live as long as
//! the process.
//!
//! Linux delivers a child's parent-death signal when the *thread* that forked it
//! exits, not the process. Forking from whichever thread runs the caller (a
//! blocking-pool thread retired after idling, a thread an embedding host ends)
//! would kill healthy servers; forking from these threads, which never end,
//! leaves the signal to mean what it should: the host is gone. There is one per
//! core (at most four), so a fleet's forks run side by side.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

static SPAWNERS: OnceLock<Result<Vec<mpsc::Sender<Job>>, String>> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn spawner() -> std::io::Result<&'static mpsc::Sender<Job>> {
    let started = SPAWNERS.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        (0..threads)
            .map(|i| {
                let (tx, rx) = mpsc::channel::<Job>();
                std::thread::Builder::new()
                    .name(format!("mcpvisor-spawner-{i}"))
                    .spawn(move || {
                        for job in rx {
                            job();
                        }
                    })
                    .map(|_| tx)
                    .map_err(|e| e.to_string())
            })
            .collect()
    });
    let senders = started
        .as_ref()
        .map_err(|e| std::io::Error::other(format!("cannot start the spawner threads: {e}")))?;
    Ok(&senders[NEXT.fetch_add(1, Ordering::Relaxed) % senders.len()])
}

/// Runs `f` on the spawner thread inside `runtime`'s context and returns what it
/// returns. Blocks the caller for as long as `f` runs (a fork and exec).
pub(crate) fn on_spawner_thread<T: Send + 'static>(
    runtime: tokio::runtime::Handle,
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        // A panic here would end the thread, and with it (parent-death signal)
        // every server it ever started: it becomes this spawn's error instead.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _inside = runtime.enter();
            f()
        }))
        .unwrap_or_else(|_| Err(std::io::Error::other("starting the server panicked")));
        let _ = tx.send(outcome);
    });
    spawner()?
        .send(job)
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawner thread dropped the job"))?
}
