//! Sampling by the `sampling_command`: the request's params as JSON on its
//! stdin, a `CreateMessageResult` as JSON on its stdout.
//!
//! The command is run from its words, without a shell, with the CLI's own
//! environment; its stderr is the CLI's. Its output is bounded in size and its
//! run in time; it runs in a process group of its own, killed whole when the
//! request is dropped (a server that stopped waiting, the CLI ending), so a
//! script's own children do not outlive it either.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{SamplingRequest, SamplingResult};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::output::clean_line;

/// The most the command may print (a completion, not a stream).
pub(crate) const MAX_OUTPUT: usize = 4 << 20;
/// How long the command may run (a model may be slow; the host's own bound on
/// the request, `host_request_timeout`, is longer).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);

/// Why the command gave no completion.
#[derive(Debug, thiserror::Error)]
enum SamplingError {
    #[error("cannot start `{0}`: {1}")]
    Start(String, std::io::Error),
    #[error("reading its output failed: {0}")]
    Read(std::io::Error),
    #[error("it exited with {0}")]
    Exit(ExitStatus),
    #[error("it printed more than {} MiB", MAX_OUTPUT >> 20)]
    TooLarge,
    #[error("it did not finish within {} s", TIMEOUT.as_secs())]
    TimedOut,
    #[error("its output is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("its output is not a sampling result: {0}")]
    NotAResult(mcpvisor_protocol::mcp::sampling::SamplingError),
}

/// Answers one `sampling/createMessage` with the command's result.
pub(super) async fn sample(
    argv: Arc<[String]>,
    request: SamplingRequest,
) -> Result<SamplingResult, ErrorObject> {
    let params = request.request.params();
    let outcome = match tokio::time::timeout(TIMEOUT, run(&argv, params)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(SamplingError::TimedOut),
    };
    outcome.map_err(|e| {
        eprintln!(
            "mcpvisor: {} asked for a model completion; the sampling_command failed: {}",
            clean_line(&request.server),
            clean_line(&e.to_string())
        );
        ErrorObject {
            code: error_codes::INTERNAL_ERROR,
            message: format!("the host's sampling command failed: {e}"),
            data: None,
        }
    })
}

async fn run(argv: &[String], params: &Value) -> Result<SamplingResult, SamplingError> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| SamplingError::Start(argv[0].clone(), e))?;
    let mut group = GroupKill(child.id().map(|pid| Pid::from_raw(pid as i32)));
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(SamplingError::Read(std::io::Error::other("no pipes")));
    };
    let input = params.to_string();
    // Written while the output is read, so a command that answers before it
    // reads everything cannot block on a full pipe; one that never reads is fine too.
    let write = async move {
        let _ = stdin.write_all(input.as_bytes()).await;
    };
    let mut output = Vec::new();
    let mut bounded = stdout.take(MAX_OUTPUT as u64 + 1);
    let ((), read) = tokio::join!(write, bounded.read_to_end(&mut output));
    read.map_err(SamplingError::Read)?;
    if output.len() > MAX_OUTPUT {
        return Err(SamplingError::TooLarge);
    }
    let status = child.wait().await.map_err(SamplingError::Read)?;
    // Reaped: its pid, and so its group's id, may be reused from here on.
    group.0 = None;
    if !status.success() {
        return Err(SamplingError::Exit(status));
    }
    completion(&output)
}

/// The command's output as a `CreateMessageResult`.
fn completion(output: &[u8]) -> Result<SamplingResult, SamplingError> {
    let value: Value = serde_json::from_slice(output).map_err(SamplingError::NotJson)?;
    SamplingResult::parse(&value).map_err(SamplingError::NotAResult)
}

/// Kills the command's process group when dropped, until the command is reaped.
struct GroupKill(Option<Pid>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_sampling_result_is_passed_on() {
        let good = br#"{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}"#;
        assert_eq!(completion(good).unwrap().model, "m");
        for bad in [
            &b"not json"[..],
            b"[]",
            br#"{"role":"system","model":"m","content":{}}"#,
            br#"{"role":"assistant","content":{}}"#,
            br#"{"role":"assistant","model":"m","content":"hi"}"#,
        ] {
            assert!(completion(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
