//! A fixed number of calls in flight on one connection.

use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

/// Keeps `depth` calls from `call` in flight for `window`, starting a new one as
/// each completes, and returns how many completed inside the window. Calls still
/// running at the end are awaited but not counted.
pub async fn keep_in_flight<F, Fut>(
    depth: usize,
    window: Duration,
    mut call: F,
) -> anyhow::Result<u64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let mut pending: FuturesUnordered<Fut> = (0..depth).map(|_| call()).collect();
    let deadline = Instant::now() + window;
    let mut completed = 0;
    while let Some(answer) = pending.next().await {
        answer?;
        if Instant::now() < deadline {
            completed += 1;
            pending.push(call());
        }
    }
    Ok(completed)
}
