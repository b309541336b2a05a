//! Warnings as one readable line each: `mcpvisor: warning: <what> (<details>)`,
//! without the time, level and module path of a log line. What a one-shot
//! command shows unless `-v` or `RUST_LOG` asks for the full diagnostics.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The one-line format.
pub(crate) struct OneLine;

impl<S, N> FormatEvent<S, N> for OneLine
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let kind = if *event.metadata().level() == tracing::Level::ERROR {
            "error"
        } else {
            "warning"
        };
        let message = crate::output::clean_line(&fields.message);
        write!(writer, "mcpvisor: {kind}: {message}")?;
        if !fields.details.is_empty() {
            let details = crate::output::clean_line(&fields.details.join(", "));
            write!(writer, " ({details})")?;
        }
        writeln!(writer)
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    details: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.details.push(format!("{}: {value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.details.push(format!("{}: {value:?}", field.name()));
        }
    }
}
