//! Nearest names, for "did you mean": a mistyped tool or server gets the one
//! or few closest names instead of the whole list.

/// The closest of `known` to `asked`, if any is close enough to be the one meant.
pub(crate) fn nearest<'a>(asked: &str, known: &[&'a str]) -> Option<&'a str> {
    closest(asked, known, 1).into_iter().next()
}

/// Up to `most` of `known` close enough to `asked`, closest first.
pub(crate) fn closest<'a>(asked: &str, known: &[&'a str], most: usize) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = known
        .iter()
        .map(|k| (strsim::jaro_winkler(asked, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(most).map(|(_, k)| k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_its_name_and_nonsense_finds_none() {
        let known = ["mcp__demo__echo", "mcp__demo__add", "mcp__git__git_log"];
        assert_eq!(nearest("mcp__demo__ecoh", &known), Some("mcp__demo__echo"));
        assert_eq!(
            nearest("mcp__git__git_lgo", &known),
            Some("mcp__git__git_log")
        );
        assert_eq!(nearest("zzzz", &known), None);
        assert_eq!(closest("mcp__demo__ad", &known, 2)[0], "mcp__demo__add");
    }
}
