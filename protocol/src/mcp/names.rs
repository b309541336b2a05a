//! Qualified tool names: `mcp__<server>__<tool>`.
//!
//! [`QualifiedMcpToolName`] is the only way to build or read one. The rules make
//! the mapping injective: components are non-empty ASCII letters, digits, `_`
//! and `-`, never contain `__`, and a server name never ends in `_` (otherwise
//! `a_` + `b` and `a` + `_b` would both give `mcp__a___b`). The whole name is at
//! most 64 bytes, the limit model APIs put on tool names.

use std::fmt;

/// Prefix of every qualified name.
pub const PREFIX: &str = "mcp__";
/// Separator between the server and tool components.
pub const SEPARATOR: &str = "__";
/// Longest qualified name, in bytes.
pub const MAX_LEN: usize = 64;

/// Why a name component or qualified name is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// A component is empty.
    #[error("{0} name is empty")]
    Empty(Component),
    /// A component has a byte outside ASCII letters, digits, `_` and `-`.
    #[error("{0} name has a character outside [A-Za-z0-9_-]")]
    InvalidCharacter(Component),
    /// A component contains the separator `__`.
    #[error("{0} name contains \"__\"")]
    ContainsSeparator(Component),
    /// The server name ends in `_`, which would make routes ambiguous.
    #[error("server name ends in \"_\"")]
    ServerEndsWithUnderscore,
    /// The qualified name is longer than [`MAX_LEN`].
    #[error("qualified name is {0} bytes, more than {MAX_LEN}")]
    TooLong(usize),
    /// The string does not start with `mcp__` or has no `__` after the server.
    #[error("not of the form mcp__<server>__<tool>")]
    Malformed,
}

/// Which component an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// The server component.
    Server,
    /// The tool component.
    Tool,
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Component::Server => "server",
            Component::Tool => "tool",
        })
    }
}

/// A validated `mcp__server__tool` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QualifiedMcpToolName {
    full: String,
    /// Byte offset where the tool component starts.
    tool_at: usize,
}

impl QualifiedMcpToolName {
    /// Builds the name for `tool` on `server`, validating both.
    pub fn new(server: &str, tool: &str) -> Result<Self, NameError> {
        validate_server_name(server)?;
        validate_component(tool, Component::Tool)?;
        let len = PREFIX.len() + server.len() + SEPARATOR.len() + tool.len();
        if len > MAX_LEN {
            return Err(NameError::TooLong(len));
        }
        let mut full = String::with_capacity(len);
        full.push_str(PREFIX);
        full.push_str(server);
        full.push_str(SEPARATOR);
        full.push_str(tool);
        Ok(QualifiedMcpToolName {
            full,
            tool_at: len - tool.len(),
        })
    }

    /// Reads a qualified name. The server component ends at the first `__`
    /// after the prefix, which is unambiguous because components never contain `__`
    /// and server names never end in `_`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        if name.len() > MAX_LEN {
            return Err(NameError::TooLong(name.len()));
        }
        let rest = name.strip_prefix(PREFIX).ok_or(NameError::Malformed)?;
        let split = rest.find(SEPARATOR).ok_or(NameError::Malformed)?;
        let (server, tool) = (&rest[..split], &rest[split + SEPARATOR.len()..]);
        Self::new(server, tool)
    }

    /// The server component.
    pub fn server(&self) -> &str {
        &self.full[PREFIX.len()..self.tool_at - SEPARATOR.len()]
    }

    /// The tool component.
    pub fn tool(&self) -> &str {
        &self.full[self.tool_at..]
    }

    /// The whole name.
    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl fmt::Display for QualifiedMcpToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

/// Checks a server name as a route component (used for every configured server).
pub fn validate_server_name(server: &str) -> Result<(), NameError> {
    validate_component(server, Component::Server)?;
    if server.ends_with('_') {
        return Err(NameError::ServerEndsWithUnderscore);
    }
    Ok(())
}

fn validate_component(s: &str, which: Component) -> Result<(), NameError> {
    if s.is_empty() {
        return Err(NameError::Empty(which));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(NameError::InvalidCharacter(which));
    }
    if s.contains(SEPARATOR) {
        return Err(NameError::ContainsSeparator(which));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn builds_and_reads_back() {
        let n = QualifiedMcpToolName::new("demo", "echo").unwrap();
        assert_eq!(n.as_str(), "mcp__demo__echo");
        assert_eq!((n.server(), n.tool()), ("demo", "echo"));
        let p = QualifiedMcpToolName::parse("mcp__my-srv__get_thing").unwrap();
        assert_eq!((p.server(), p.tool()), ("my-srv", "get_thing"));
        let u = QualifiedMcpToolName::parse("mcp__a__b_").unwrap();
        assert_eq!((u.server(), u.tool()), ("a", "b_"));
        let lead = QualifiedMcpToolName::parse("mcp__a___b").unwrap();
        assert_eq!((lead.server(), lead.tool()), ("a", "_b"));
    }

    #[test]
    fn rejects_each_rule() {
        use NameError::*;
        assert_eq!(
            QualifiedMcpToolName::new("", "t"),
            Err(Empty(Component::Server))
        );
        assert_eq!(
            QualifiedMcpToolName::new("s", ""),
            Err(Empty(Component::Tool))
        );
        assert_eq!(
            QualifiedMcpToolName::new("a_", "b"),
            Err(ServerEndsWithUnderscore)
        );
        assert_eq!(
            QualifiedMcpToolName::new("a__b", "c"),
            Err(ContainsSeparator(Component::Server))
        );
        assert_eq!(
            QualifiedMcpToolName::new("a", "b__c"),
            Err(ContainsSeparator(Component::Tool))
        );
        assert_eq!(
            QualifiedMcpToolName::new("a", "b c"),
            Err(InvalidCharacter(Component::Tool))
        );
        assert_eq!(
            QualifiedMcpToolName::new("é", "b"),
            Err(InvalidCharacter(Component::Server))
        );
        assert_eq!(
            QualifiedMcpToolName::new("a", "b.c"),
            Err(InvalidCharacter(Component::Tool))
        );
        let long = "t".repeat(MAX_LEN);
        assert_eq!(
            QualifiedMcpToolName::new("s", &long),
            Err(TooLong(MAX_LEN + 8))
        );
        let exact = "t".repeat(MAX_LEN - 8);
        assert!(QualifiedMcpToolName::new("s", &exact).is_ok());
        assert_eq!(QualifiedMcpToolName::parse("mcp_s__t"), Err(Malformed));
        assert_eq!(QualifiedMcpToolName::parse("mcp__st"), Err(Malformed));
        assert_eq!(QualifiedMcpToolName::parse("x"), Err(Malformed));
    }

    fn component() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_-]{1,20}"
    }

    proptest! {
        #[test]
        fn parse_inverts_new(server in component(), tool in component()) {
            if let Ok(n) = QualifiedMcpToolName::new(&server, &tool) {
                let p = QualifiedMcpToolName::parse(n.as_str()).unwrap();
                prop_assert_eq!(p.server(), server.as_str());
                prop_assert_eq!(p.tool(), tool.as_str());
                prop_assert_eq!(p, n);
            }
        }

        #[test]
        fn distinct_pairs_never_share_a_name(
            s1 in component(), t1 in component(), s2 in component(), t2 in component()
        ) {
            if let (Ok(a), Ok(b)) = (QualifiedMcpToolName::new(&s1, &t1), QualifiedMcpToolName::new(&s2, &t2)) {
                if (s1.as_str(), t1.as_str()) != (s2.as_str(), t2.as_str()) {
                    prop_assert_ne!(a.as_str(), b.as_str());
                }
            }
        }

        #[test]
        fn near_collisions_around_underscores(a in "[a-z]{1,4}", b in "[a-z]{1,4}") {
            // The shapes most likely to collide: servers and tools that start or end in `_`.
            let pairs = [
                (a.clone(), format!("_{b}")),
                (format!("{a}_"), b.clone()),
                (a.clone(), format!("{b}_")),
                (format!("{a}-"), format!("_{b}")),
                (format!("_{a}"), b.clone()),
            ];
            let names: Vec<_> = pairs.iter()
                .filter_map(|(s, t)| QualifiedMcpToolName::new(s, t).ok().map(|n| (n, (s, t))))
                .collect();
            for (i, (n1, p1)) in names.iter().enumerate() {
                let back = QualifiedMcpToolName::parse(n1.as_str()).unwrap();
                prop_assert_eq!((back.server(), back.tool()), (p1.0.as_str(), p1.1.as_str()));
                for (n2, p2) in &names[i + 1..] {
                    if p1 != p2 { prop_assert_ne!(n1, n2); }
                }
            }
        }
    }
}
