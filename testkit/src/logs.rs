//! Every log line of a test binary at TRACE (the HTTP stack's `log` records
//! included), kept for the tests that prove a secret never reaches a log.
//! One subscriber per binary: [`capture`] installs it once.

use std::io::Write;
use std::sync::{Mutex, Once};

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static INSTALLED: Once = Once::new();

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts keeping every log line of this binary (once; later calls do nothing).
pub fn capture() {
    INSTALLED.call_once(|| {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(|| Capture)
            .with_ansi(false)
            .try_init()
            .expect("one subscriber per test binary");
    });
}

/// What was logged so far.
pub fn captured() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}
