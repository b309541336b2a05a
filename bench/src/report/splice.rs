//! Sections that can be written alone: one part of `BENCHMARKS.md` between
//! two markers and one key of `benchmarks.json`, replaced in place (or added
//! at the end) with the rest of both files left as it was.
//!
//! The gateway, curve and soak sections each have a command that measures
//! only them; a full run writes the files whole and carries over a section it
//! did not measure ([`carry_over`]).

use std::path::Path;

/// Where a section sits in the two files.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The marker line before it in `BENCHMARKS.md`.
    pub start: &'static str,
    /// The marker line after it.
    pub end: &'static str,
    /// Its key in `benchmarks.json`.
    pub key: &'static str,
}

impl Section {
    /// Puts `markdown` (starting with [`Section::start`] and ending with
    /// [`Section::end`]) into `dir/BENCHMARKS.md` and `value` under
    /// [`Section::key`] in `dir/benchmarks.json`.
    pub fn splice_into(
        &self,
        dir: &Path,
        markdown: &str,
        value: &serde_json::Value,
    ) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        let md = dir.join("BENCHMARKS.md");
        let text = std::fs::read_to_string(&md).unwrap_or_else(|_| "# Benchmarks\n".into());
        std::fs::write(&md, self.splice_markdown(&text, markdown))?;
        let json = dir.join("benchmarks.json");
        let text = std::fs::read_to_string(&json).unwrap_or_else(|_| "{}".into());
        std::fs::write(&json, self.splice_json(&text, value)?)?;
        Ok(())
    }

    /// The section as it stands in `text`, markers included.
    pub fn find<'a>(&self, text: &'a str) -> Option<&'a str> {
        match (text.find(self.start), text.find(self.end)) {
            (Some(start), Some(end)) if start < end => Some(&text[start..end + self.end.len()]),
            _ => None,
        }
    }

    /// `text` with the section replaced by `section`, or `section` appended.
    pub fn splice_markdown(&self, text: &str, section: &str) -> String {
        let section = section.trim_end();
        match (text.find(self.start), text.find(self.end)) {
            (Some(start), Some(end)) if start < end => {
                format!(
                    "{}{section}{}",
                    &text[..start],
                    &text[end + self.end.len()..]
                )
            }
            _ => format!("{}\n\n{section}\n", text.trim_end()),
        }
    }

    /// `text` (a JSON object as the full report writes it) with its key set to
    /// `value`, the rest of the text left as it is: the key is written last,
    /// replacing one already there.
    pub fn splice_json(&self, text: &str, value: &serde_json::Value) -> anyhow::Result<String> {
        let key = format!("\n  \"{}\": ", self.key);
        let pretty = serde_json::to_string_pretty(value)?.replace('\n', "\n  ");
        let body = text.trim_end();
        let head = match body.rfind(&key) {
            Some(at) => body[..at].trim_end_matches(','),
            None => body.strip_suffix('}').unwrap_or(body).trim_end(),
        };
        let comma = if head.ends_with('{') { "" } else { "," };
        let spliced = format!("{head}{comma}{key}{pretty}\n}}\n");
        match serde_json::from_str::<serde_json::Value>(&spliced) {
            Ok(v) if v.get(self.key) == Some(value) => Ok(spliced),
            // Not a file this harness wrote (or the key is not last): rewrite it whole.
            _ => {
                let mut v: serde_json::Value =
                    serde_json::from_str(text).unwrap_or_else(|_| serde_json::json!({}));
                if !v.is_object() {
                    v = serde_json::json!({});
                }
                v[self.key] = value.clone();
                Ok(serde_json::to_string_pretty(&v)? + "\n")
            }
        }
    }
}

/// What a section looked like in the files before a full run rewrote them.
#[derive(Debug)]
pub struct Kept {
    markdown: String,
    value: serde_json::Value,
}

/// Reads `section` from `dir`'s files, to put back after they are rewritten.
pub fn keep(dir: &Path, section: &Section) -> Option<Kept> {
    let md = std::fs::read_to_string(dir.join("BENCHMARKS.md")).ok()?;
    let json = std::fs::read_to_string(dir.join("benchmarks.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&json).ok()?;
    Some(Kept {
        markdown: section.find(&md)?.to_string(),
        value: value.get(section.key)?.clone(),
    })
}

/// Puts a section read by [`keep`] back into `dir`'s files.
pub fn carry_over(dir: &Path, section: &Section, kept: &Kept) -> anyhow::Result<()> {
    section.splice_into(dir, &kept.markdown, &kept.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: Section = Section {
        start: "<!-- s -->",
        end: "<!-- /s -->",
        key: "s",
    };

    #[test]
    fn splicing_twice_keeps_one_section_and_the_rest() {
        let first = SECTION.splice_markdown("# B\n\nrest\n", "<!-- s -->\none\n<!-- /s -->");
        let second = SECTION.splice_markdown(&first, "<!-- s -->\ntwo\n<!-- /s -->\n");
        assert!(second.starts_with("# B\n\nrest\n"));
        assert_eq!(second.matches("<!-- s -->").count(), 1);
        assert!(second.contains("two") && !second.contains("one"));
    }

    #[test]
    fn json_key_is_replaced_and_other_keys_kept() {
        let text = "{\n  \"rows\": [\n    1\n  ]\n}\n";
        let once = SECTION
            .splice_json(text, &serde_json::json!({"a": 1}))
            .unwrap();
        let twice = SECTION
            .splice_json(&once, &serde_json::json!({"a": 2}))
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&twice).unwrap();
        assert_eq!(v["rows"][0], 1);
        assert_eq!(v["s"]["a"], 2);
        assert_eq!(v.as_object().unwrap().len(), 2);
    }
}
