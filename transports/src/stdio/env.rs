//! The environment a stdio server starts with: not the host's, but a short
//! allowlist of the host's variables, the names the settings and the entry pass
//! through, and the entry's own `env`. A token one server was given never
//! reaches another.

use std::ffi::OsString;

use crate::secret::SecretString;

/// Host variables every server gets when the host has them: what a program needs
/// to find binaries, a home, a temporary directory, a terminal and a locale.
/// (The official SDKs pass HOME, LOGNAME, PATH, SHELL, TERM and USER; codex adds
/// the locale, TMPDIR and TZ.)
pub const DEFAULT_PASSTHROUGH: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER", "LANG", "LC_ALL",
    "LC_CTYPE",
];

/// The child's whole environment: the allowlist and the `passthrough` names
/// (taken from `host` where set), then the entry's own variables, which win.
///
/// A host value that starts with `()` is left out: it is an exported shell
/// function, which a shell in the child would evaluate.
pub fn child_environment<'a>(
    passthrough: impl IntoIterator<Item = &'a str>,
    own: &[(String, SecretString)],
    host: impl Fn(&str) -> Option<OsString>,
) -> Vec<(String, OsString)> {
    let mut out: Vec<(String, OsString)> = Vec::new();
    let names = DEFAULT_PASSTHROUGH.iter().copied().chain(passthrough);
    for name in names {
        if out.iter().any(|(n, _)| n == name) || own.iter().any(|(n, _)| n == name) {
            continue;
        }
        match host(name) {
            Some(v) if !v.as_encoded_bytes().starts_with(b"()") => {
                out.push((name.to_string(), v));
            }
            _ => {}
        }
    }
    out.extend(
        own.iter()
            .map(|(k, v)| (k.clone(), OsString::from(v.expose()))),
    );
    out
}

/// The names of [`child_environment`], for display (never the values).
pub fn child_environment_names<'a>(
    passthrough: impl IntoIterator<Item = &'a str>,
    own: &[(String, SecretString)],
    host: impl Fn(&str) -> Option<OsString>,
) -> Vec<String> {
    let mut names: Vec<String> = child_environment(passthrough, own, host)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Option<OsString> {
        match name {
            "PATH" => Some("/usr/bin".into()),
            "HOME" => Some("/home/u".into()),
            "GITHUB_PAT" => Some("ghp_secret".into()),
            "EXTRA" => Some("extra".into()),
            "BASH_FUNC_x%%" => Some("() { evil; }".into()),
            "TERM" => Some("() { evil; }".into()),
            _ => None,
        }
    }

    #[test]
    fn only_the_allowlist_passthrough_and_own_variables_are_given() {
        let own = vec![("TOKEN".to_string(), SecretString::new("t".to_string()))];
        let env = child_environment(["EXTRA", "MISSING"], &own, host);
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["HOME", "PATH", "EXTRA", "TOKEN"]);
        assert!(!names.contains(&"GITHUB_PAT"));
    }

    #[test]
    fn the_entry_overrides_a_passed_through_variable() {
        let own = vec![(
            "PATH".to_string(),
            SecretString::new("/opt/bin".to_string()),
        )];
        let env = child_environment([], &own, host);
        let paths: Vec<_> = env.iter().filter(|(n, _)| n == "PATH").collect();
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0].1, OsString::from("/opt/bin"));
    }

    #[test]
    fn exported_shell_functions_are_not_passed() {
        let env = child_environment(["BASH_FUNC_x%%"], &[], host);
        assert!(env.iter().all(|(n, _)| n != "TERM" && n != "BASH_FUNC_x%%"));
    }

    #[test]
    fn names_are_sorted_and_carry_no_values() {
        let own = vec![("A_KEY".to_string(), SecretString::new("v".to_string()))];
        let names = child_environment_names(["GITHUB_PAT"], &own, host);
        assert_eq!(names, ["A_KEY", "GITHUB_PAT", "HOME", "PATH"]);
    }
}
