//! Contract §8: the only place that picks JSON-RPC error codes. Every failure leaves the server as
//! an `McpError` with a code, a one-line message and `data.kind` / `data.hint`; internals (SQLite,
//! Tantivy and IO causes, absolute paths) are logged, never sent.

use pkm_core::{ErrorKind, KbError, Operation};
use serde_json::{Map, Value, json};

/// The §8.1 vocabulary, plus the HTTP door's `Unauthenticated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidArgs,
    Internal,
    External,
    NotFound,
    Conflict,
    RateLimited,
    ScopesDenied,
    VaultLocked,
    Unauthenticated,
    /// The HTTP door's shared store (a fleet's Redis) is unreachable and the operator chose to
    /// refuse rather than serve on alone: an `External` error (-32000) with HTTP 503.
    Unavailable,
}

impl Kind {
    pub fn code(self) -> i32 {
        match self {
            Kind::ParseError => -32700,
            Kind::InvalidRequest | Kind::Unauthenticated => -32600,
            Kind::MethodNotFound => -32601,
            Kind::InvalidArgs => -32602,
            Kind::Internal => -32603,
            Kind::External | Kind::Unavailable => -32000,
            Kind::NotFound => -32001,
            Kind::Conflict => -32002,
            Kind::RateLimited => -32003,
            Kind::ScopesDenied => -32005,
            Kind::VaultLocked => -32006,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::ParseError => "ParseError",
            Kind::InvalidRequest => "InvalidRequest",
            Kind::MethodNotFound => "MethodNotFound",
            Kind::InvalidArgs => "InvalidArgs",
            Kind::Internal => "Internal",
            Kind::External | Kind::Unavailable => "External",
            Kind::NotFound => "NotFound",
            Kind::Conflict => "Conflict",
            Kind::RateLimited => "RateLimited",
            Kind::ScopesDenied => "ScopesDenied",
            Kind::VaultLocked => "VaultLocked",
            Kind::Unauthenticated => "Unauthenticated",
        }
    }
}

/// A JSON-RPC error as it leaves the server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpError {
    pub kind: Kind,
    pub message: String,
    pub hint: Option<String>,
    pub note_path: Option<String>,
    pub retry_after_seconds: Option<u64>,
}

impl McpError {
    pub fn new(kind: Kind, message: impl Into<String>) -> McpError {
        McpError {
            kind,
            message: message.into(),
            hint: None,
            note_path: None,
            retry_after_seconds: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> McpError {
        self.hint = Some(hint.into());
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> McpError {
        self.retry_after_seconds = Some(seconds.max(1));
        self
    }

    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The `data` member: `kind`, `hint`, and `note_path` / `retry_after_seconds` when known.
    pub fn data(&self) -> Value {
        let mut d = Map::new();
        d.insert("kind".into(), json!(self.kind.name()));
        if let Some(p) = &self.note_path {
            d.insert("note_path".into(), json!(p));
        }
        d.insert(
            "hint".into(),
            json!(
                self.hint
                    .clone()
                    .unwrap_or_else(|| default_hint(self.kind).into())
            ),
        );
        if let Some(s) = self.retry_after_seconds {
            d.insert("retry_after_seconds".into(), json!(s));
        }
        Value::Object(d)
    }

    /// The JSON-RPC `error` object.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code(), "message": self.message, "data": self.data()})
    }

    pub fn method_not_found(method: &str) -> McpError {
        McpError::new(Kind::MethodNotFound, format!("Unknown method: {method}"))
    }

    pub fn unknown_tool(name: &str) -> McpError {
        McpError::new(Kind::MethodNotFound, format!("Unknown tool: {name}"))
            .with_hint("Call tools/list for the available kb_* tools.")
    }
}

fn default_hint(kind: Kind) -> &'static str {
    match kind {
        Kind::ParseError => "Send a valid JSON-RPC 2.0 message.",
        Kind::InvalidRequest => "Send a JSON-RPC 2.0 request object with jsonrpc, id and method.",
        Kind::MethodNotFound => "Call tools/list for the available kb_* tools.",
        Kind::InvalidArgs => "Check the arguments against the tool's inputSchema.",
        Kind::Internal | Kind::External => "Retry; if it persists, check the server log.",
        Kind::NotFound => "Check the path; kb_list_pages lists the notes.",
        Kind::Conflict => "Read the note again, merge, and retry with the new modified_at.",
        Kind::RateLimited => "Slow down and retry after retry_after_seconds.",
        Kind::ScopesDenied => "Use a token that holds the tool's scope.",
        Kind::VaultLocked | Kind::Unavailable => "Retry after retry_after_seconds.",
        Kind::Unauthenticated => {
            "Send Authorization: Bearer <token> (see 'stratum-mcp token create')."
        }
    }
}

/// How an MCP client invokes an [`Operation`] a hint names: its tool.
fn tool_for(op: Operation) -> &'static str {
    match op {
        Operation::OpenPage => "kb_get_page",
        Operation::SavePage => "kb_write_page",
        Operation::ListPages => "kb_list_pages",
        Operation::Rebuild => "kb_reindex with mode \"rebuild\"",
        Operation::IndexStatus => "kb_index_status",
    }
}

/// A hint of the layers below, its operations named by the tools that do them.
fn worded(hint: String) -> String {
    Operation::ALL.into_iter().fold(hint, |h, op| {
        if h.contains(op.placeholder()) {
            h.replace(op.placeholder(), tool_for(op))
        } else {
            h
        }
    })
}

/// The one conversion from the command layer's error to the wire's.
impl From<KbError> for McpError {
    fn from(e: KbError) -> McpError {
        let kind = match e.kind {
            ErrorKind::InvalidArgs => Kind::InvalidArgs,
            ErrorKind::NotFound => Kind::NotFound,
            ErrorKind::Conflict => Kind::Conflict,
            ErrorKind::VaultLocked => Kind::VaultLocked,
            ErrorKind::External => Kind::External,
            ErrorKind::Internal => Kind::Internal,
        };
        McpError {
            kind,
            message: e.message,
            hint: e.hint.map(worded),
            note_path: e.note_path,
            retry_after_seconds: e.retry_after_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_errors_keep_their_kind_path_and_retry() {
        let e = McpError::from(KbError::not_found("a/b.md"));
        assert_eq!(e.code(), -32001);
        assert_eq!(e.data()["kind"], "NotFound");
        assert_eq!(e.data()["note_path"], "a/b.md");
        let e = McpError::from(KbError::locked(3));
        assert_eq!(
            (e.code(), e.data()["retry_after_seconds"].as_u64()),
            (-32006, Some(3))
        );
        assert!(e.data()["hint"].is_string());
    }

    #[test]
    fn hints_name_the_tools_that_do_what_they_advise() {
        let e = McpError::from(KbError::not_found("a.md"));
        assert_eq!(
            e.hint.as_deref(),
            Some(
                "Create it with kb_write_page, or check the path (kb_list_pages lists the notes)."
            )
        );
        for op in Operation::ALL {
            let hint = worded(format!("use {}", op.placeholder()));
            assert!(hint.starts_with("use kb_") && !hint.contains('{'), "{hint}");
        }
    }
}
