//! Tests that read every log line (TRACE, the HTTP stack's `log` records
//! included) to prove a secret never reaches one: their own binary, because the
//! capturing subscriber is global (`testkit::logs::capture`).

mod fault_injection;
mod oauth_identity_assertion;
mod oauth_logs;
mod redaction;
