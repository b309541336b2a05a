//! A host for a project in one call: what the README's five lines do.

use std::path::Path;

use mcpvisor_actors::{Host, StartError};

use crate::config::{EntryProblem, process_env};
use crate::project::{Project, ProjectError};
use crate::settings::Settings;

/// Why [`start_project`] could not start a host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartProjectError {
    /// The `.mcp.json` or its approvals could not be read.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The supervisor could not start.
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Opens the `.mcp.json` at `config` with the approvals and settings of
/// `settings`, and starts a host for its enabled entries (variables from the
/// process environment). Entries that cannot run are returned as problems, one
/// per entry and field; they do not stop the others. Servers start in the
/// background: use [`Host::wait_ready`] or [`Host::events`].
pub async fn start_project(
    config: &Path,
    settings: &Settings,
) -> Result<(Host, Vec<EntryProblem>), StartProjectError> {
    let project = Project::open(config, &settings.home)?;
    let (specs, problems) = project.enabled_specs(&process_env)?;
    let host = Host::start(specs, settings.supervisor_options()).await?;
    Ok((host, problems))
}
