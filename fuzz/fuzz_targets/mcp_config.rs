//! `.mcp.json`: structural parsing of every entry, then `${VAR}` expansion,
//! runtime validation and the OAuth mapping of each, with a fake environment.
//!
//! Oracles: nothing panics, whatever the file and whatever the environment
//! holds (values that look like references themselves included); and no secret
//! shows in any error text or `Debug` output. The secrets are env values,
//! header values, URL queries and OAuth client secrets and ID tokens as
//! written, and the values of variables referenced only from those. The target
//! marks each secret with a marker of its own (a value written in the file is
//! wrapped in it; a variable's value is made of it), so finding a marker in
//! the output is a leak, never a coincidence.
#![no_main]

use std::collections::BTreeSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mcpvisor::config::McpConfig;
use serde_json::Value;

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The marker of the `i`th secret written in the file.
fn written_marker(i: usize) -> String {
    format!("Sk{:016x}q", fnv(format!("written-{i}").as_bytes()))
}

/// The marker a variable's value is made of.
fn variable_marker(name: &str) -> String {
    format!("Vk{:016x}q", fnv(name.as_bytes()))
}

/// Unset, empty, a value that looks like a reference itself (it must stay
/// literal), or a plain value; each non-empty one holds the variable's marker.
fn fake_env(name: &str) -> Option<String> {
    let marker = variable_marker(name);
    match name.len() % 4 {
        0 => None,
        1 => Some(String::new()),
        2 => Some(format!("{marker}${{{name}}}{marker}")),
        _ => Some(marker),
    }
}

/// The names `text` references, as `expand` reads them (and some more: every
/// `${` is looked at, even one inside a default).
fn referenced(text: &str, into: &mut BTreeSet<String>) {
    for (start, _) in text.match_indices("${") {
        let body = &text[start + 2..];
        let body = body.split('}').next().unwrap_or(body);
        let name = body.split(":-").next().unwrap_or(body);
        into.insert(name.to_string());
    }
}

/// What the marking pass found and put in.
#[derive(Default)]
struct Secrets {
    markers: Vec<String>,
    /// Variables referenced from a secret.
    secret_names: BTreeSet<String>,
    /// Variables referenced from anything else: their values may show.
    plain_names: BTreeSet<String>,
}

impl Secrets {
    fn next_marker(&mut self) -> String {
        let marker = written_marker(self.markers.len());
        self.markers.push(marker.clone());
        marker
    }

    /// Every string in `value` is a secret: wrapped in a marker of its own.
    fn mark_all(&mut self, value: &mut Value) {
        match value {
            Value::String(s) => {
                referenced(s, &mut self.secret_names);
                let m = self.next_marker();
                *s = format!("{m}{s}{m}");
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mark_all(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.mark_all(v)),
            _ => {}
        }
    }

    /// Strings elsewhere are not secrets, but the variables they name are seen.
    fn note_plain(&mut self, value: &Value) {
        match value {
            Value::String(s) => referenced(s, &mut self.plain_names),
            Value::Array(items) => items.iter().for_each(|v| self.note_plain(v)),
            Value::Object(map) => map.values().for_each(|v| self.note_plain(v)),
            _ => {}
        }
    }

    /// The URL's query is a secret: a marker opens it (or a new one).
    fn mark_url(&mut self, value: &mut Value) {
        let Value::String(url) = value else {
            return self.mark_all(value);
        };
        let m = self.next_marker();
        let (at, query_follows) = match (url.find('?'), url.find('#')) {
            (Some(q), Some(h)) if h < q => (h, false),
            (Some(q), _) => (q + 1, true),
            (None, Some(h)) => (h, false),
            (None, None) => (url.len(), false),
        };
        referenced(&url[..at], &mut self.plain_names);
        referenced(&url[at..], &mut self.secret_names);
        let insert = if query_follows { m } else { format!("?{m}") };
        url.insert_str(at, &insert);
    }

    fn mark_entry(&mut self, entry: &mut Value) {
        let Value::Object(fields) = entry else {
            return self.note_plain(entry);
        };
        for (key, value) in fields.iter_mut() {
            match key.as_str() {
                "env" | "headers" => self.mark_all(value),
                "url" => self.mark_url(value),
                "oauth" => self.mark_oauth(value),
                _ => self.note_plain(value),
            }
        }
    }

    fn mark_oauth(&mut self, oauth: &mut Value) {
        let Value::Object(fields) = oauth else {
            return self.note_plain(oauth);
        };
        for (key, value) in fields.iter_mut() {
            match key.as_str() {
                "clientSecret" => self.mark_all(value),
                // Read at resolution: never a file of this machine.
                "privateKeyFile" => *value = Value::String("absent/key.pem".into()),
                "identityProvider" => match value {
                    Value::Object(idp) => {
                        for (key, value) in idp.iter_mut() {
                            match key.as_str() {
                                "clientSecret" | "idToken" => self.mark_all(value),
                                _ => self.note_plain(value),
                            }
                        }
                    }
                    other => self.note_plain(other),
                },
                _ => self.note_plain(value),
            }
        }
    }

    /// The markers that must not show, less any the input itself spelled out.
    fn forbidden(&self, input: &str) -> Vec<String> {
        let variables = self
            .secret_names
            .difference(&self.plain_names)
            .filter_map(|name| fake_env(name).map(|_| variable_marker(name)));
        self.markers
            .iter()
            .cloned()
            .chain(variables)
            .filter(|m| !input.contains(m.as_str()))
            .collect()
    }
}

/// Every error text and `Debug` output of loading `text` and resolving each
/// entry (spec and OAuth settings).
fn outputs(text: &str, with_oauth: bool) -> Vec<String> {
    let path = Path::new("/fuzz/project/.mcp.json");
    let config = match McpConfig::parse(text, path) {
        Ok(config) => config,
        Err(e) => return vec![e.to_string(), format!("{e:?}")],
    };
    let mut out = vec![format!("{config:?}")];
    let base = config.base_dir();
    for entry in config.servers.values() {
        for problem in entry.structural_problems() {
            out.push(problem.to_string());
        }
        match entry.resolve(&fake_env, &base) {
            Ok(spec) => out.push(format!("{spec:?}")),
            Err(problems) => {
                out.extend(problems.iter().map(ToString::to_string));
                out.push(format!("{problems:?}"));
            }
        }
        if with_oauth {
            match entry.oauth_config(&fake_env, &base, Path::new("/fuzz/home")) {
                Ok(config) => out.push(format!("{config:?}")),
                Err(problems) => {
                    out.extend(problems.iter().map(ToString::to_string));
                    out.push(format!("{problems:?}"));
                }
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut root) = serde_json::from_str::<Value>(text) else {
        // Not JSON: the syntax error must not panic (no secret is known here).
        outputs(text, false);
        return;
    };
    let mut secrets = Secrets::default();
    match &mut root {
        Value::Object(top) => {
            for (key, value) in top.iter_mut() {
                match (key.as_str(), value) {
                    ("mcpServers" | "servers", Value::Object(servers)) => {
                        servers.values_mut().for_each(|e| secrets.mark_entry(e))
                    }
                    (_, value) => secrets.note_plain(value),
                }
            }
        }
        other => secrets.note_plain(other),
    }
    let marked = root.to_string();
    let forbidden = secrets.forbidden(text);
    // The whole file, and the file cut short after some of its secrets (a
    // syntax error there must not quote them either).
    let cut = (fnv(data) as usize % (marked.len() + 1)..=marked.len())
        .find(|&i| marked.is_char_boundary(i))
        .unwrap_or(marked.len());
    for (text, with_oauth) in [(marked.as_str(), true), (&marked[..cut], false)] {
        for output in outputs(text, with_oauth) {
            for marker in &forbidden {
                assert!(
                    !output.contains(marker.as_str()),
                    "secret {marker} shows in {output:?}\nfile: {text}"
                );
            }
        }
    }
});
