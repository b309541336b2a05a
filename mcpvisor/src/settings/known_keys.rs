//! `settings.toml` holds only keys this version reads: a misspelt key
//! (`request_timeout = 5000`) would otherwise be ignored without a word and the
//! default used.

use std::path::Path;

use config::{Config, Source};

use super::{ENV_PASSTHROUGH, KEYS, LOG_LEVEL, PROTOCOL_VERSIONS, SAMPLING_COMMAND, SettingsError};

/// Every key `settings.toml` may hold.
pub(super) fn known_keys() -> Vec<&'static str> {
    let mut keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
    keys.extend([
        ENV_PASSTHROUGH,
        SAMPLING_COMMAND,
        LOG_LEVEL,
        PROTOCOL_VERSIONS,
    ]);
    keys
}

/// Fails on the first key of the file (in name order) that is not a setting.
pub(super) fn refuse_unknown(file_layer: &Config, file: &Path) -> Result<(), SettingsError> {
    let table = file_layer
        .collect()
        .map_err(|e| SettingsError::Invalid(e.to_string()))?;
    let known = known_keys();
    let mut unknown: Vec<&String> = table
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .collect();
    unknown.sort();
    match unknown.first() {
        Some(key) => Err(SettingsError::UnknownKey {
            key: (*key).clone(),
            file: file.to_path_buf(),
            known: known.join(", "),
        }),
        None => Ok(()),
    }
}
