//! A project `.mcp.json` with its approvals: which entries run, and why the
//! others do not.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use mcpvisor_actors::{ServerSpec, TransportSpec};
use mcpvisor_auth::OAuth;

use crate::approval::{ApprovalError, ApprovalStore};
use crate::config::{ConfigError, EntryProblem, McpConfig, ServerEntry, TransportKind};

mod enable;
mod itself;

pub use enable::{EnableOptions, Enabled};

/// Why a project could not be opened or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectError {
    /// The `.mcp.json` did not load.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Approvals could not be read or written.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// The entry is not an HTTP server (only those log in).
    #[error("server `{0}` is not an HTTP server; only HTTP servers use OAuth")]
    NotHttp(String),
    /// The entry is not enabled (approved and not disabled): nothing of it is evaluated.
    #[error("server `{0}` is not enabled; run `mcpvisor enable {0}` first")]
    NotEnabled(String),
    /// The entry is `"disabled": true` in the file; it is approved only when forced.
    #[error("server `{0}` is \"disabled\": true in the file")]
    DisabledInFile(String),
    /// No entry has that name.
    #[error("no server named `{0}` in the configuration")]
    UnknownServer(String),
    /// The entry cannot run; nothing was saved.
    #[error("server `{server}` was not enabled: {}", list(.problems))]
    Invalid {
        /// The entry.
        server: String,
        /// Every problem found.
        problems: Vec<EntryProblem>,
    },
}

fn list(problems: &[EntryProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// How one entry stands.
#[derive(Debug, Clone)]
pub struct EntryStatus {
    /// The entry's name.
    pub name: String,
    /// Its transport.
    pub kind: TransportKind,
    /// The file it comes from.
    pub source: PathBuf,
    /// Approved for this project.
    pub approved: bool,
    /// `"disabled": true` in the file.
    pub disabled: bool,
    /// Approved and not disabled: it runs.
    pub enabled: bool,
    /// Why it cannot run. Structural problems for every entry; expansion and
    /// runtime problems for enabled ones only.
    pub problems: Vec<EntryProblem>,
}

/// A `.mcp.json` and the approvals under a home.
#[derive(Debug)]
pub struct Project {
    /// The loaded file.
    pub config: McpConfig,
    key: String,
    store: ApprovalStore,
    home: PathBuf,
}

impl Project {
    /// Loads `config_path` and the approvals under `home`.
    pub fn open(config_path: &Path, home: &Path) -> Result<Project, ProjectError> {
        let config = McpConfig::load(config_path)?;
        let key = ApprovalStore::key_of(config_path)?;
        let store = ApprovalStore::new(home);
        // An entry removed by hand takes its approval with it.
        let names: Vec<&str> = config.servers.keys().map(String::as_str).collect();
        match store.retain(&key, &names) {
            Ok(gone) => {
                for gone in gone {
                    tracing::info!(server = %gone, "approval withdrawn: the entry is gone from the file");
                }
            }
            // Reading approvals reports the same trouble where it matters.
            Err(e) => tracing::warn!("stale approvals not withdrawn: {e}"),
        }
        Ok(Project {
            config,
            key,
            store,
            home: home.to_path_buf(),
        })
    }

    /// Every entry with its state and problems.
    pub fn statuses(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<EntryStatus>, ProjectError> {
        let base = self.config.base_dir();
        let mut out = Vec::new();
        for entry in self.config.servers.values() {
            let approved = self.store.is_approved(&self.key, &entry.name)?;
            let enabled = approved && !entry.disabled;
            let problems = if enabled {
                match entry.resolve(lookup, &base) {
                    Ok(spec) => self
                        .with_oauth(entry, spec, lookup)
                        .err()
                        .unwrap_or_default(),
                    Err(problems) => problems,
                }
            } else {
                entry.structural_problems()
            };
            out.push(EntryStatus {
                name: entry.name.clone(),
                kind: entry.kind.clone(),
                source: self.config.path.clone(),
                approved,
                disabled: entry.disabled,
                enabled,
                problems,
            });
        }
        Ok(out)
    }

    /// Specs of the enabled entries that resolve, and the problems of those that do not.
    pub fn enabled_specs(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Vec<ServerSpec>, Vec<EntryProblem>), ProjectError> {
        let base = self.config.base_dir();
        let mut specs = Vec::new();
        let mut problems = Vec::new();
        for entry in self.config.servers.values() {
            if entry.disabled || !self.store.is_approved(&self.key, &entry.name)? {
                continue;
            }
            match entry
                .resolve(lookup, &base)
                .and_then(|spec| self.with_oauth(entry, spec, lookup))
            {
                Ok(spec) => specs.push(spec),
                Err(p) => problems.extend(p),
            }
        }
        Ok((specs, problems))
    }

    /// Gives an HTTP spec its OAuth facade (shared by every connection to it).
    fn with_oauth(
        &self,
        entry: &ServerEntry,
        mut spec: ServerSpec,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerSpec, Vec<EntryProblem>> {
        match &mut spec.transport {
            TransportSpec::Http(http) => {
                http.oauth = self.oauth_of(entry, lookup)?.map(Arc::new);
            }
            TransportSpec::Stdio(stdio) if itself::serves(stdio, &self.config.path) => {
                return Err(vec![EntryProblem::SupervisesItself {
                    server: entry.name.clone(),
                }]);
            }
            _ => {}
        }
        Ok(spec)
    }

    fn oauth_of(
        &self,
        entry: &ServerEntry,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<OAuth>, Vec<EntryProblem>> {
        let Some(config) = entry.oauth_config(lookup, &self.config.base_dir(), &self.home)? else {
            return Ok(None);
        };
        OAuth::new(config).map(Some).map_err(|e| {
            vec![EntryProblem::OAuth {
                server: entry.name.clone(),
                reason: e.to_string(),
            }]
        })
    }

    /// The entry named `name`.
    fn entry(&self, name: &str) -> Result<&ServerEntry, ProjectError> {
        self.config
            .servers
            .get(name)
            .ok_or_else(|| ProjectError::UnknownServer(name.to_string()))
    }

    /// The OAuth facade of HTTP entry `name` (for `login`, `logout` and status).
    /// Only an enabled entry's `oauth` block is evaluated: a disabled or unapproved
    /// one may name variables and key files nobody agreed to read.
    pub fn oauth(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<OAuth, ProjectError> {
        let entry = self.entry(name)?;
        if entry.disabled || !self.store.is_approved(&self.key, name)? {
            return Err(ProjectError::NotEnabled(name.to_string()));
        }
        match self.oauth_of(entry, lookup) {
            Ok(Some(oauth)) => Ok(oauth),
            Ok(None) => Err(ProjectError::NotHttp(name.to_string())),
            Err(problems) => Err(ProjectError::Invalid {
                server: name.to_string(),
                problems,
            }),
        }
    }

    /// The OAuth facade of HTTP entry `name` for forgetting its tokens: for any
    /// entry, enabled or not, built from its URL alone (its `oauth` block, secrets
    /// and key files are not evaluated), since tokens are keyed by name and URL.
    pub fn oauth_for_logout(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<OAuth, ProjectError> {
        let entry = self.entry(name)?;
        if entry.kind != TransportKind::Http {
            return Err(ProjectError::NotHttp(name.to_string()));
        }
        let invalid = |reason: String| ProjectError::Invalid {
            server: name.to_string(),
            problems: vec![EntryProblem::OAuth {
                server: name.to_string(),
                reason,
            }],
        };
        let url = entry
            .url
            .as_deref()
            .and_then(|u| crate::config::expand::expand(u, lookup).ok())
            .ok_or_else(|| invalid("`url` does not resolve".into()))?;
        let config = mcpvisor_auth::OAuthConfig {
            server: name.to_string(),
            url,
            home: self.home.clone(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            scope: None,
            grant: mcpvisor_auth::Grant::AuthorizationCode,
            unattended: None,
        };
        OAuth::new(config).map_err(|e| invalid(e.to_string()))
    }

    /// Approves `name` after checking that it resolves; saves nothing otherwise.
    pub fn enable(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ProjectError> {
        let entry = self.entry(name)?;
        // The `oauth` block too: a grant or a secret that cannot work is refused now,
        // not at the first start.
        if let Err(problems) = entry
            .resolve(lookup, &self.config.base_dir())
            .and_then(|spec| self.with_oauth(entry, spec, lookup))
        {
            return Err(ProjectError::Invalid {
                server: name.to_string(),
                problems,
            });
        }
        self.store.set(&self.key, name, true)?;
        Ok(())
    }

    /// Withdraws the approval of `name`.
    pub fn disable(&self, name: &str) -> Result<(), ProjectError> {
        if !self.config.servers.contains_key(name) {
            return Err(ProjectError::UnknownServer(name.to_string()));
        }
        self.store.set(&self.key, name, false)?;
        Ok(())
    }
}
