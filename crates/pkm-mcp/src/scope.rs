//! Scopes of contract §7.2: what a token may do. Every tool requires exactly one.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Read,
    Write,
    Index,
    Search,
    /// Link-management tools (contract §6.1): `kb_move_page` (ADR-0019); granted to personal tokens.
    Link,
    Organize,
    /// Operator functions; never granted by default.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::Read,
        Scope::Write,
        Scope::Index,
        Scope::Search,
        Scope::Link,
        Scope::Organize,
        Scope::Admin,
    ];
    /// The default set of a personal access token: everything but `kb:admin`.
    pub const PERSONAL: [Scope; 6] = [
        Scope::Read,
        Scope::Write,
        Scope::Index,
        Scope::Search,
        Scope::Link,
        Scope::Organize,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "kb:read",
            Scope::Write => "kb:write",
            Scope::Index => "kb:index",
            Scope::Search => "kb:search",
            Scope::Link => "kb:link",
            Scope::Organize => "kb:organize",
            Scope::Admin => "kb:admin",
        }
    }

    /// The upper-case name used in rate-limit tier variables: `MCP_RATE_LIMIT_<NAME>_RPS`.
    pub fn tier_name(self) -> &'static str {
        match self {
            Scope::Read => "READ",
            Scope::Write => "WRITE",
            Scope::Index => "INDEX",
            Scope::Search => "SEARCH",
            Scope::Link => "LINK",
            Scope::Organize => "ORGANIZE",
            Scope::Admin => "ADMIN",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        Scope::ALL
            .into_iter()
            .find(|sc| sc.as_str() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown scope {s:?} (known: {})",
                    Scope::ALL.map(Scope::as_str).join(", ")
                )
            })
    }
}

/// Parses `kb:read,kb:search`; unknown names are an error (for the CLI) .
pub fn parse_list(s: &str) -> Result<Vec<Scope>, String> {
    let mut v: Vec<Scope> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    v.sort();
    v.dedup();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(
            parse_list("kb:search, kb:read,kb:read").unwrap(),
            vec![Scope::Read, Scope::Search]
        );
        assert!(
            parse_list("kb:read,kb:root")
                .unwrap_err()
                .contains("kb:root")
        );
        for s in Scope::ALL {
            assert_eq!(s.as_str().parse::<Scope>().unwrap(), s);
        }
    }
}
