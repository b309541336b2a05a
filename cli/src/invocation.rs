//! How this run of `mcpvisor` was invoked, for the commands it suggests: each
//! one exact and copy-pasteable, with `--config` when one was given and
//! shell quoting where a word needs it.

use std::path::PathBuf;

/// The parts of the command line a suggested command must repeat.
#[derive(Debug, Clone, Default)]
pub(crate) struct Invocation {
    /// `--config`, as given.
    pub(crate) config: Option<PathBuf>,
}

impl Invocation {
    /// `mcpvisor [--config PATH] <words>`, quoted for a POSIX shell.
    pub(crate) fn command(&self, words: &[&str]) -> String {
        let mut all: Vec<String> = vec!["mcpvisor".into()];
        if let Some(config) = &self.config {
            all.push("--config".into());
            all.push(config.to_string_lossy().into_owned());
        }
        all.extend(words.iter().map(|w| w.to_string()));
        all.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
    }
}

/// `word` as a shell reads it back: bare when that is safe, else single-quoted.
pub(crate) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_commands_read_back_as_given() {
        let plain = Invocation::default();
        assert_eq!(plain.command(&["enable", "git"]), "mcpvisor enable git");
        let odd = Invocation {
            config: Some(PathBuf::from("my dir/it's.json")),
        };
        let shown = odd.command(&["enable", "my server"]);
        assert_eq!(
            shown,
            r"mcpvisor --config 'my dir/it'\''s.json' enable 'my server'"
        );
        let words = shlex::split(&shown).unwrap();
        assert_eq!(
            words,
            [
                "mcpvisor",
                "--config",
                "my dir/it's.json",
                "enable",
                "my server"
            ]
        );
    }
}
