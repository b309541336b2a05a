//! Settings, layered: defaults < `$MCPVISOR_HOME/settings.toml` < `MCPVISOR_*`
//! environment < command-line flags. Each effective value remembers where it
//! came from, so `mcpvisor settings` can say.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use config::{Config, Environment, File, FileFormat};
use mcpvisor_actors::{RestartPolicy, SupervisorOptions};
use mcpvisor_protocol::mcp::logging::LogLevel;
use mcpvisor_protocol::mcp::revision::Versions;

mod known_keys;

/// The settings with their keys (as in `settings.toml`; the environment variable
/// is `MCPVISOR_` + the key in upper case) and defaults.
pub const KEYS: &[(&str, u64)] = &[
    ("request_timeout_ms", 60_000),
    ("startup_timeout_ms", 30_000),
    ("restart_initial_backoff_ms", 200),
    ("restart_max_backoff_ms", 30_000),
    ("restart_max_restarts", 5),
    ("restart_window_ms", 60_000),
    ("failed_probe_ms", 30_000),
    ("failed_probe_max_ms", 600_000),
];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// `settings.toml` under the home.
    File(PathBuf),
    /// An environment variable.
    Environment(String),
    /// A command-line flag.
    CommandLine,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Environment(var) => write!(f, "environment {var}"),
            Source::CommandLine => f.write_str("command line"),
        }
    }
}

/// Why settings could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A layer could not be read or a value has the wrong type.
    #[error("settings: {0}")]
    Invalid(String),
    /// `settings.toml` has a key that is not a setting (misspelt, or from
    /// another version).
    #[error("settings: unknown key `{key}` in {}; the keys are: {known}", file.display())]
    UnknownKey {
        /// The key as written.
        key: String,
        /// The file.
        file: PathBuf,
        /// The keys there are, comma-separated.
        known: String,
    },
    /// No home directory could be determined.
    #[error("settings: no home directory: set MCPVISOR_HOME or HOME")]
    NoHome,
}

/// Values given on the command line (they win over everything).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--home`.
    pub home: Option<PathBuf>,
    /// `--protocol-versions`, comma-separated.
    pub protocol_versions: Option<String>,
    /// Values by key (see [`KEYS`]).
    pub values: Vec<(&'static str, u64)>,
}

/// The effective settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The home directory: approvals, OAuth tokens, `settings.toml`.
    pub home: PathBuf,
    /// Where the home came from.
    pub home_source: Source,
    values: HashMap<&'static str, (u64, Source)>,
    env_passthrough: (Vec<String>, Source),
    sampling_command: (Option<String>, Source),
    log_level: (Option<LogLevel>, Source),
    protocol_versions: (Versions, Source),
}

/// The key of the host variables every stdio server also gets (a list of names:
/// a TOML array in `settings.toml`, comma-separated in `MCPVISOR_ENV_PASSTHROUGH`).
pub const ENV_PASSTHROUGH: &str = "env_passthrough";

/// The key of the command the CLI runs to answer servers' sampling requests (a
/// string in `settings.toml` or `MCPVISOR_SAMPLING_COMMAND`; empty means unset).
/// Unset, the CLI declines sampling.
pub const SAMPLING_COMMAND: &str = "sampling_command";

/// The key of the log level asked of every server that offers logging
/// (`logging/setLevel` once it is ready): one of debug, info, notice, warning,
/// error, critical, alert, emergency, in `settings.toml` or
/// `MCPVISOR_LOG_LEVEL`. Unset, servers send what they send by default.
pub const LOG_LEVEL: &str = "log_level";

/// The key of the protocol revisions offered to servers, first preferred (a
/// TOML array in `settings.toml`, comma-separated in
/// `MCPVISOR_PROTOCOL_VERSIONS` and `--protocol-versions`). Default: 2025-03-26.
pub const PROTOCOL_VERSIONS: &str = "protocol_versions";

/// The protocol revisions from the flag, else the environment, else the file.
fn protocol_versions(
    overrides: &Overrides,
    env: &HashMap<String, String>,
    file_layer: &Config,
    file: &Path,
) -> Result<(Versions, Source), SettingsError> {
    let split = |list: &str| -> Vec<String> {
        list.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect()
    };
    let (names, source) = match (
        &overrides.protocol_versions,
        env.get(&env_var(PROTOCOL_VERSIONS)),
    ) {
        (Some(list), _) => (split(list), Source::CommandLine),
        (None, Some(list)) => (split(list), Source::Environment(env_var(PROTOCOL_VERSIONS))),
        (None, None) => match file_layer.get::<Vec<String>>(PROTOCOL_VERSIONS) {
            Ok(names) => (names, Source::File(file.to_path_buf())),
            Err(config::ConfigError::NotFound(_)) => {
                return Ok((Versions::default(), Source::Default));
            }
            Err(e) => {
                return Err(SettingsError::Invalid(format!(
                    "`{PROTOCOL_VERSIONS}`: {e}"
                )));
            }
        },
    };
    let versions = Versions::parse(&names)
        .map_err(|e| SettingsError::Invalid(format!("`{PROTOCOL_VERSIONS}` ({source}): {e}")))?;
    Ok((versions, source))
}

/// A string setting from the environment, else the file, else unset; an empty
/// value is unset (so the environment can switch off the file's value).
fn string_setting(
    key: &str,
    env: &HashMap<String, String>,
    file_layer: &Config,
    file: &Path,
) -> Result<(Option<String>, Source), SettingsError> {
    let (value, source) = match env.get(&env_var(key)) {
        Some(value) => (Some(value.clone()), Source::Environment(env_var(key))),
        None => match file_layer.get::<String>(key) {
            Ok(value) => (Some(value), Source::File(file.to_path_buf())),
            Err(config::ConfigError::NotFound(_)) => (None, Source::Default),
            Err(e) => return Err(value_error(key, file, e)),
        },
    };
    Ok((value.filter(|v| !v.trim().is_empty()), source))
}

/// A setting whose value is not of its type: the key once, the file as
/// found (absolute), not the `config` crate's relative origin.
fn value_error(key: &str, file: &Path, e: config::ConfigError) -> SettingsError {
    match e {
        config::ConfigError::Type {
            unexpected,
            expected,
            ..
        } => SettingsError::Invalid(format!(
            "`{key}` must be {expected}, not {unexpected} ({} or its environment variable {})",
            file.display(),
            env_var(key)
        )),
        other => SettingsError::Invalid(format!("`{key}`: {other}")),
    }
}

impl Settings {
    /// Loads the layers from the process environment.
    pub fn load(overrides: &Overrides) -> Result<Settings, SettingsError> {
        let env: HashMap<String, String> = std::env::vars().collect();
        Settings::load_with(overrides, &env)
    }

    /// Loads the layers with `env` as the environment (tests pass their own).
    pub fn load_with(
        overrides: &Overrides,
        env: &HashMap<String, String>,
    ) -> Result<Settings, SettingsError> {
        let (home, home_source) = match (&overrides.home, env.get("MCPVISOR_HOME"), env.get("HOME"))
        {
            (Some(h), _, _) => (h.clone(), Source::CommandLine),
            (None, Some(h), _) => (
                PathBuf::from(h),
                Source::Environment("MCPVISOR_HOME".into()),
            ),
            (None, None, Some(h)) => (Path::new(h).join(".mcpvisor"), Source::Default),
            (None, None, None) => return Err(SettingsError::NoHome),
        };
        let file = home.join("settings.toml");
        let invalid = |e: config::ConfigError| SettingsError::Invalid(e.to_string());
        let file_layer = Config::builder()
            .add_source(
                File::from(file.clone())
                    .format(FileFormat::Toml)
                    .required(false),
            )
            .build()
            .map_err(invalid)?;
        known_keys::refuse_unknown(&file_layer, &file)?;
        // Only this tool's variables, so a stray MCPVISOR_HOME is not a setting.
        let ours: config::Map<String, String> = env
            .iter()
            .filter(|(k, _)| KEYS.iter().any(|(key, _)| **k == env_var(key)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut builder = Config::builder();
        for (key, default) in KEYS {
            builder = builder.set_default(*key, *default).map_err(invalid)?;
        }
        builder = builder
            .add_source(
                File::from(file.clone())
                    .format(FileFormat::Toml)
                    .required(false),
            )
            .add_source(
                Environment::with_prefix("MCPVISOR")
                    .source(Some(ours.clone()))
                    .try_parsing(true),
            );
        for (key, value) in &overrides.values {
            builder = builder.set_override(*key, *value).map_err(invalid)?;
        }
        let merged = builder.build().map_err(invalid)?;
        let mut values = HashMap::new();
        for (key, _) in KEYS {
            let value: u64 = merged.get(key).map_err(|e| value_error(key, &file, e))?;
            let source = if overrides.values.iter().any(|(k, _)| k == key) {
                Source::CommandLine
            } else if ours.contains_key(&env_var(key)) {
                Source::Environment(env_var(key))
            } else if file_layer.get::<config::Value>(key).is_ok() {
                Source::File(file.clone())
            } else {
                Source::Default
            };
            values.insert(*key, (value, source));
        }
        let env_passthrough = match env.get(&env_var(ENV_PASSTHROUGH)) {
            Some(list) => (
                list.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(String::from)
                    .collect(),
                Source::Environment(env_var(ENV_PASSTHROUGH)),
            ),
            None => match file_layer.get::<Vec<String>>(ENV_PASSTHROUGH) {
                Ok(names) => (names, Source::File(file.clone())),
                Err(config::ConfigError::NotFound(_)) => (Vec::new(), Source::Default),
                Err(e) => {
                    return Err(SettingsError::Invalid(format!("`{ENV_PASSTHROUGH}`: {e}")));
                }
            },
        };
        if let Some(bad) = env_passthrough
            .0
            .iter()
            .find(|n| !crate::config::expand::is_variable_name(n))
        {
            return Err(SettingsError::Invalid(format!(
                "`{ENV_PASSTHROUGH}`: {bad:?} is not a variable name"
            )));
        }
        let sampling_command = string_setting(SAMPLING_COMMAND, env, &file_layer, &file)?;
        let (level, level_source) = string_setting(LOG_LEVEL, env, &file_layer, &file)?;
        let level = match level {
            Some(name) => Some(name.parse::<LogLevel>().map_err(|e| {
                SettingsError::Invalid(format!("`{LOG_LEVEL}` ({level_source}): {e}"))
            })?),
            None => None,
        };
        let log_level = (level, level_source);
        let protocol_versions = protocol_versions(overrides, env, &file_layer, &file)?;
        Ok(Settings {
            home,
            home_source,
            values,
            env_passthrough,
            sampling_command,
            log_level,
            protocol_versions,
        })
    }

    /// The protocol revisions offered to servers (first preferred), and where they came from.
    pub fn protocol_versions(&self) -> (&Versions, &Source) {
        (&self.protocol_versions.0, &self.protocol_versions.1)
    }

    /// The level asked of every server that offers logging, if set, and where it came from.
    pub fn log_level(&self) -> (Option<LogLevel>, &Source) {
        (self.log_level.0, &self.log_level.1)
    }

    /// The host variables every stdio server also gets, and where the list came from.
    pub fn env_passthrough(&self) -> (&[String], &Source) {
        (&self.env_passthrough.0, &self.env_passthrough.1)
    }

    /// The command that answers servers' sampling requests in the CLI, if set,
    /// and where it came from.
    pub fn sampling_command(&self) -> (Option<&str>, &Source) {
        (self.sampling_command.0.as_deref(), &self.sampling_command.1)
    }

    /// A value and its source, by key.
    pub fn get(&self, key: &str) -> Option<&(u64, Source)> {
        self.values.get(key)
    }

    /// Every setting in [`KEYS`] order, with its value and source.
    pub fn all(&self) -> Vec<(&'static str, u64, &Source)> {
        KEYS.iter()
            .filter_map(|(k, _)| self.values.get(k).map(|(v, s)| (*k, *v, s)))
            .collect()
    }

    fn ms(&self, key: &str) -> Duration {
        Duration::from_millis(self.values.get(key).map(|(v, _)| *v).unwrap_or(0))
    }

    /// Supervisor options with these settings applied.
    pub fn supervisor_options(&self) -> SupervisorOptions {
        let mut options = SupervisorOptions::default();
        options.request_timeout = self.ms("request_timeout_ms");
        options.startup_timeout = self.ms("startup_timeout_ms");
        options.restart = RestartPolicy {
            initial_backoff: self.ms("restart_initial_backoff_ms"),
            max_backoff: self.ms("restart_max_backoff_ms"),
            max_restarts: self
                .values
                .get("restart_max_restarts")
                .map(|(v, _)| *v as usize)
                .unwrap_or(5),
            window: self.ms("restart_window_ms"),
            // 0: a failed server waits for `mcpvisor restart`.
            probe_interval: Some(self.ms("failed_probe_ms")).filter(|d| !d.is_zero()),
            max_probe_interval: self.ms("failed_probe_max_ms"),
            ..RestartPolicy::default()
        };
        options.stdio.env_passthrough = self.env_passthrough.0.clone();
        options.log_level = self.log_level.0;
        options.protocol_versions = self.protocol_versions.0.clone();
        options
    }
}

/// `MCPVISOR_<KEY>`.
pub fn env_var(key: &str) -> String {
    format!("MCPVISOR_{}", key.to_ascii_uppercase())
}

#[cfg(test)]
mod tests;
