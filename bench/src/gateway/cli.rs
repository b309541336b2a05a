//! `mcpvisor call` as a user runs it: a process from start to exit, attached
//! to a running `mcpvisor serve` for the configuration, and one-shot
//! (`--no-attach`: it starts the server, calls, and stops it).

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, ensure};

use super::process::{GatewayProcess, QUALIFIED_TOOL};
use super::{Gateway, GatewaySetup, median_or_nan};
use crate::servers::PAYLOAD;

/// Starts a serve for a fresh configuration, then times `plan.cli_runs` calls
/// of each kind, alternating; returns the medians (attached, one-shot) in ms.
pub async fn measure(
    plan: &crate::figures::Plan,
    setup: &GatewaySetup,
    _round: usize,
) -> anyhow::Result<(f64, f64)> {
    let serve = GatewayProcess::start(Gateway::Mcpvisor, setup).await?;
    serve.wait_for_log("mcpvisor: listening on").await?;
    let project = serve.project().context("no project")?;
    let arguments = serde_json::json!({"text": PAYLOAD}).to_string();
    let call = |attach: bool| {
        let mut c = setup.mcpvisor_command(&project.config, &project.home);
        if !attach {
            c.arg("--no-attach");
        }
        c.args(["call", QUALIFIED_TOOL, &arguments]);
        c
    };
    let (attached, one_shot) = tokio::task::block_in_place(|| {
        // Warm the page cache and the serve's session path before timing.
        for _ in 0..3 {
            timed(call(true))?;
            timed(call(false))?;
        }
        let mut attached = Vec::with_capacity(plan.cli_runs);
        let mut one_shot = Vec::with_capacity(plan.cli_runs);
        for _ in 0..plan.cli_runs {
            attached.push(timed(call(true))?);
            one_shot.push(timed(call(false))?);
        }
        anyhow::Ok((attached, one_shot))
    })?;
    serve.stop();
    Ok((median_or_nan(&attached), median_or_nan(&one_shot)))
}

/// Runs `command` to its exit; milliseconds from spawn to exit.
fn timed(mut command: Command) -> anyhow::Result<f64> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let output = command.output()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    ensure!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(ms)
}
