//! A call's progress notifications: a bar on a terminal, JSON lines with
//! `--json`, plain lines otherwise. All on stderr, so stdout carries the
//! result alone.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::output::clean_line;

/// Where one call's progress goes.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    json: bool,
}

impl Progress {
    /// A bar when stderr is a terminal and the output is not JSON.
    pub(crate) fn new(json: bool) -> Progress {
        use std::io::IsTerminal;
        let bar = (!json && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress { bar, json }
    }

    /// One notification: `progress` so far, of `total` if known.
    pub(crate) fn update(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let message = clean_line(message.unwrap_or(""));
        if self.json {
            eprintln!(
                "{}",
                json!({"progress": progress, "total": total, "message": message})
            );
            return;
        }
        match &self.bar {
            Some(bar) => {
                // Progress is a number that only grows; whole steps suit a bar.
                bar.set_length(total.map(|t| t.max(0.0) as u64).unwrap_or(0));
                bar.set_position(progress.max(0.0) as u64);
                bar.set_message(message);
            }
            None => {
                let total = total.map(|t| format!("/{t}")).unwrap_or_default();
                eprintln!("progress {progress}{total} {message}");
            }
        }
    }

    /// Takes the bar off the terminal before the result is printed.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
