//! Enabling as a person does it: beyond the definition resolving, a stdio
//! server's program and working directory must exist where the child will look,
//! and an entry the file itself disables is approved only when forced.

use std::ffi::OsString;

use mcpvisor_actors::TransportSpec;

use super::{Project, ProjectError};
use crate::config::runnable::start_problems;

/// How [`Project::enable_checked`] decides.
#[derive(Debug, Clone, Default)]
pub struct EnableOptions {
    /// The settings' passthrough names: part of the environment the child
    /// gets, where its `PATH` may come from.
    pub passthrough: Vec<String>,
    /// Approve an entry that is `"disabled": true` in the file too.
    pub force: bool,
}

/// What [`Project::enable_checked`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Enabled {
    /// Approved; it runs.
    Approved,
    /// Approved when forced, but the file disables it: it runs once the file
    /// no longer does.
    DisabledInFile,
}

impl Project {
    /// Approves `name` after checking that it resolves and, for a stdio server,
    /// that its program is found on the `PATH` the child gets and its `cwd`
    /// exists. An entry that is `"disabled": true` in the file is refused
    /// unless `options.force`. Saves nothing when refused. `lookup` is the
    /// host environment (for expansion and for the child's `PATH`).
    pub fn enable_checked(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
        options: &EnableOptions,
    ) -> Result<Enabled, ProjectError> {
        let entry = self.entry(name)?;
        if entry.disabled && !options.force {
            return Err(ProjectError::DisabledInFile(name.to_string()));
        }
        self.check_runnable(name, lookup, &options.passthrough)?;
        self.store.set(&self.key, name, true)?;
        Ok(if entry.disabled {
            Enabled::DisabledInFile
        } else {
            Enabled::Approved
        })
    }

    /// What [`Project::enable_checked`] checks, without approving: `name`
    /// resolves, and a stdio server's program and `cwd` are where the child
    /// will look. Lets a command that would suggest `enable` first see whether
    /// `enable` would succeed.
    pub fn check_runnable(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
        passthrough: &[String],
    ) -> Result<(), ProjectError> {
        let entry = self.entry(name)?;
        let spec = entry
            .resolve(lookup, &self.config.base_dir())
            .and_then(|spec| self.with_oauth(entry, spec, lookup))
            .map_err(|problems| ProjectError::Invalid {
                server: name.to_string(),
                problems,
            })?;
        if let TransportSpec::Stdio(stdio) = &spec.transport {
            let host = |n: &str| lookup(n).map(OsString::from);
            let written = entry.command.as_deref().unwrap_or_default();
            let problems = start_problems(name, written, stdio, passthrough, &host);
            if !problems.is_empty() {
                return Err(ProjectError::Invalid {
                    server: name.to_string(),
                    problems,
                });
            }
        }
        Ok(())
    }

    /// Forgets whatever was decided for `name` (whether or not the file still
    /// has it): what removing an entry leaves behind.
    pub fn forget_approval(&self, name: &str) -> Result<(), ProjectError> {
        self.store.forget(&self.key, name)?;
        Ok(())
    }
}
