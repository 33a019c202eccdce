//! The MCP revisions this server speaks, and what each one changes in its answers. The router
//! (`StratumServer::handle`) asks the caller's [`Protocol`]; the doors only carry it: stdio
//! remembers what `initialize` agreed on, HTTP keeps it in the session or reads it from the
//! `MCP-Protocol-Version` header.

use std::fmt;
use std::sync::LazyLock;

use base64::Engine as _;
use serde_json::{Value, json};

/// One MCP revision with an `initialize` handshake. Ordered oldest to newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
}

impl Protocol {
    /// Every revision served, newest first.
    pub const ALL: [Protocol; 3] = [
        Protocol::V2025_11_25,
        Protocol::V2025_06_18,
        Protocol::V2025_03_26,
    ];

    /// The answer to a client asking for a revision this server does not speak.
    pub const LATEST: Protocol = Protocol::V2025_11_25;

    /// What an HTTP request is answered in when neither a session nor an `MCP-Protocol-Version`
    /// header says (the specification's rule for clients that predate the header).
    pub const ASSUMED: Protocol = Protocol::V2025_03_26;

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::V2025_03_26 => "2025-03-26",
            Protocol::V2025_06_18 => "2025-06-18",
            Protocol::V2025_11_25 => "2025-11-25",
        }
    }

    pub fn parse(s: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str() == s.trim())
    }

    /// `initialize`: the revision the client asked for when this server speaks it, else the
    /// newest (the client then decides whether it can go on).
    pub fn negotiate(requested: Option<&str>) -> Protocol {
        requested
            .and_then(Protocol::parse)
            .unwrap_or(Protocol::LATEST)
    }

    /// The revisions, newest first, for an error hint.
    pub fn listed() -> String {
        Protocol::ALL.map(Protocol::as_str).join(", ")
    }

    /// SEP-1303 (2025-11-25): a tool call whose arguments are refused answers with a tool result
    /// marked `isError`, which the model reads and can correct, instead of a JSON-RPC error.
    pub fn input_errors_are_tool_results(self) -> bool {
        self >= Protocol::V2025_11_25
    }

    /// SEP-973 (2025-11-25): tools and `serverInfo` carry a display `title` and `icons`.
    pub fn has_icons(self) -> bool {
        self >= Protocol::V2025_11_25
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The server's icon, as a `data:` URI so that no client has to fetch anything.
const ICON_SVG: &str = include_str!("../assets/stratum.svg");

/// The `icons` member of `serverInfo` and of each tool (2025-11-25).
pub fn icons() -> Value {
    static ICONS: LazyLock<Value> = LazyLock::new(|| {
        let data = base64::engine::general_purpose::STANDARD.encode(ICON_SVG);
        json!([{
            "src": format!("data:image/svg+xml;base64,{data}"),
            "mimeType": "image/svg+xml",
            "sizes": ["any"]
        }])
    });
    ICONS.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_a_known_revision_and_offers_the_newest_otherwise() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::negotiate(Some(p.as_str())), p);
        }
        for asked in [Some("2024-11-05"), Some("2026-07-28"), Some("next"), None] {
            assert_eq!(
                Protocol::negotiate(asked),
                Protocol::V2025_11_25,
                "{asked:?}"
            );
        }
    }

    #[test]
    fn only_2025_11_25_changes_tool_errors_and_adds_icons() {
        assert!(Protocol::V2025_11_25.input_errors_are_tool_results());
        assert!(!Protocol::V2025_06_18.input_errors_are_tool_results());
        assert!(!Protocol::V2025_03_26.has_icons());
        let icons = icons();
        let src = icons[0]["src"].as_str().unwrap();
        assert!(src.starts_with("data:image/svg+xml;base64,"), "{src}");
    }
}
