//! `mcpvisor chaos`: the configuration's enabled servers (or the built-in demo
//! server) under a described load while faults from a seeded plan are dealt
//! to them, on the engine of `mcpvisor-chaos`. Prints the report (`--json`
//! for CI); the exit code is 0 only if no invariant broke, 1 if one did, 2
//! for a usage error (a flag, a load file, a fault no server can take).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcpvisor::project::Project;
use mcpvisor::settings::Settings;
use mcpvisor::{Fault, FaultKind, parse_duration};
use mcpvisor_chaos::{ChaosError, ChaosOptions, Load, Progress, Report};

use crate::Failure;
use crate::invocation::Invocation;
use crate::oneshot::{Needed, specs_for};
use crate::output::clean_line;
use crate::stop::StopSignals;

/// A load file larger than this is refused (a load lists calls, not data).
const MAX_LOAD_BYTES: u64 = 1024 * 1024;

/// `mcpvisor chaos`'s arguments.
#[derive(Args, Debug)]
pub(crate) struct ChaosArgs {
    /// Deal faults until this much time has passed (`90s`, `5m`); with neither
    /// this nor --cycles, each fault is dealt once.
    #[arg(long, value_parser = duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Deal at most this many faults (one per cycle).
    #[arg(long, value_name = "N")]
    cycles: Option<usize>,
    /// The plan's seed: the same seed deals the same faults to the same servers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The faults to deal, comma-separated, each as `kind[:params]`: kill,
    /// stop[:DUR], close-stdin, exit-during-initialize, garbage[:LINES],
    /// oversize, delay[:BY[:FOR]], drop[:COUNT], cut-stream, reset (default: all).
    /// A fault goes only to servers whose transport it applies to.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    faults: Vec<Fault>,
    /// A JSON list of calls: {"tool": "mcp__git__git_status", "arguments": {...},
    /// "weight": 3}, or {"ping": "git"} (default: ping every server).
    #[arg(long, value_name = "FILE")]
    load: Option<PathBuf>,
    /// Timeout of each load call.
    #[arg(long, value_parser = duration, default_value = "10s", value_name = "DURATION")]
    call_timeout: Duration,
    /// How long a faulted server has to answer again.
    #[arg(long, value_parser = duration, default_value = "30s", value_name = "DURATION")]
    recovery_timeout: Duration,
}

fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// Runs the chaos command.
pub(crate) async fn chaos(
    args: ChaosArgs,
    project: Option<&Project>,
    settings: &Settings,
    invocation: &Invocation,
    json: bool,
    stop: &mut StopSignals,
) -> Result<ExitCode, Failure> {
    let load = match &args.load {
        Some(path) => read_load(path)?,
        None => Load::ping_all(),
    };
    let specs = specs_for(project, settings, &Needed::All, invocation)?;
    let mut chaos = ChaosOptions::default();
    chaos.seed = args.seed;
    chaos.duration = args.duration;
    chaos.cycles = args.cycles;
    if !args.faults.is_empty() {
        chaos.faults = args.faults;
    }
    chaos.load = load;
    chaos.call_timeout = args.call_timeout;
    chaos.recovery_timeout = args.recovery_timeout;
    chaos.on_progress = Some(Arc::new(progress));
    let run = mcpvisor_chaos::run(specs, settings.supervisor_options(), chaos);
    let outcome = tokio::select! {
        outcome = run => outcome,
        code = stop.recv() => return Ok(ExitCode::from(code)),
    };
    let report = outcome.map_err(|e| {
        let code = match e {
            ChaosError::Start(_) => 1,
            _ => 2,
        };
        Failure(e.to_string(), code)
    })?;
    print(&report, json)?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn read_load(path: &Path) -> Result<Load, Failure> {
    let shown = clean_line(&path.display().to_string());
    let file = std::fs::File::open(path)
        .map_err(|e| Failure(format!("cannot read the load file {shown}: {e}"), 2))?;
    let mut text = String::new();
    file.take(MAX_LOAD_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Failure(format!("cannot read the load file {shown}: {e}"), 2))?;
    if text.len() as u64 > MAX_LOAD_BYTES {
        return Err(Failure(
            format!("the load file {shown} is over {MAX_LOAD_BYTES} bytes"),
            2,
        ));
    }
    Load::from_json(&text)
        .map_err(|e| Failure(format!("{shown}: {}", clean_line(&e.to_string())), 2))
}

fn print(report: &Report, json: bool) -> Result<(), Failure> {
    if json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| Failure(format!("cannot write the report: {e}"), 1))?;
        println!("{text}");
    } else {
        println!("{report}");
    }
    Ok(())
}

/// One line per step on stderr: the report goes to stdout.
fn progress(p: &Progress) {
    match p {
        Progress::Started { ready, servers } => {
            eprintln!("chaos: {ready} of {servers} server(s) ready; dealing faults");
        }
        Progress::Cycle {
            index,
            fault,
            server,
            recovered_in,
            calls,
        } => {
            let back = match recovered_in {
                Some(d) => format!("back in {} ms", d.as_millis()),
                None => "NOT back".into(),
            };
            eprintln!(
                "chaos: cycle {index}: {fault} to {}: {back}; {calls} calls",
                clean_line(server)
            );
        }
        Progress::Skipped { fault } => {
            let kind: FaultKind = fault.kind();
            let to = if kind.is_process() { "stdio" } else { "HTTP" };
            eprintln!("chaos: {fault} skipped: no {to} server is left to take it");
        }
        Progress::Violation(v) => eprintln!("chaos: BROKEN: {}", clean_line(&v.to_string())),
        _ => {}
    }
}
