//! A run on a `.mcp.json`'s enabled servers, as `start_project` starts a host.

use std::path::Path;

use mcpvisor::config::{EntryProblem, process_env};
use mcpvisor::project::{Project, ProjectError};
use mcpvisor::settings::Settings;

use crate::error::ChaosError;
use crate::options::ChaosOptions;
use crate::report::Report;

/// Why [`run_project`] did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectRunError {
    /// The `.mcp.json` or its approvals could not be read.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The run could not be made.
    #[error(transparent)]
    Chaos(#[from] ChaosError),
}

/// Runs the enabled (approved) entries of the `.mcp.json` at `config`, with
/// the supervisor options of `settings`, under `chaos`. Entries that cannot
/// run are returned as problems and left out.
pub async fn run_project(
    config: &Path,
    settings: &Settings,
    chaos: ChaosOptions,
) -> Result<(Report, Vec<EntryProblem>), ProjectRunError> {
    let project = Project::open(config, &settings.home)?;
    let (specs, problems) = project.enabled_specs(&process_env)?;
    let report = crate::run(specs, settings.supervisor_options(), chaos).await?;
    Ok((report, problems))
}
