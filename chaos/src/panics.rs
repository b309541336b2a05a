//! Counts panics anywhere in the process (any thread, any actor) while
//! leaving whatever hook was installed to report them as before.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

static PANICS: AtomicU64 = AtomicU64::new(0);

/// Installs the counting hook once per process; returns the count so far.
pub(crate) fn count() -> u64 {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    PANICS.load(Ordering::SeqCst)
}
