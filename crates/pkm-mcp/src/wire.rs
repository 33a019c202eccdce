//! What the processes sharing a vault say to each other over the leader's channel (`channel.rs`):
//! one JSON object per line. A follower sends an [`Envelope`] (its version and a [`Request`]); the
//! leader answers, for a scan, progress lines, then one `ok` or `err` line ([`Reply`]).

use std::io::{BufRead, Read, Write};

use pkm_core::{ErrorKind, KbError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{self, Args};

/// This build's version (`serverInfo.version`): a follower's requests carry it, and a leader of
/// another version refuses them.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The longest line a peer may send or answer (a 1 MiB note, JSON-escaped, and then some).
const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

/// What one call asks of the vault.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// A `tools/call`, arguments already checked against the tool's schema and the caller's scopes.
    Tool { name: String, args: Args },
    /// Notes in path order (`resources/list`).
    ListPages {
        limit: usize,
        cursor: Option<String>,
    },
    /// A note's raw markdown (`resources/read`).
    ReadRaw { path: String },
    /// The store's counts and freshness (`/health`).
    Info,
    /// An incremental scan or a rebuild (`stratum-mcp index`), with progress.
    Scan { rebuild: bool },
}

impl Request {
    /// Whether running it twice is harmless, so a call lost with its leader may be sent again.
    pub(crate) fn retry_safe(&self) -> bool {
        match self {
            Request::Tool { name, .. } => tools::find(name).is_some_and(|t| t.read_only),
            _ => true,
        }
    }
}

/// One line on the channel, leader to follower.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reply {
    Progress(usize, usize),
    Ok(Value),
    Err(WireError),
}

/// A follower's request line: the version guards against two different builds sharing a vault.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Envelope {
    pub version: String,
    #[serde(flatten)]
    pub request: Request,
}

/// `KbError` as it crosses the channel.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireError {
    kind: String,
    message: String,
    hint: Option<String>,
    note_path: Option<String>,
    retry_after_seconds: Option<u64>,
}

const KINDS: [ErrorKind; 6] = [
    ErrorKind::InvalidArgs,
    ErrorKind::NotFound,
    ErrorKind::Conflict,
    ErrorKind::VaultLocked,
    ErrorKind::External,
    ErrorKind::Internal,
];

impl From<KbError> for WireError {
    fn from(e: KbError) -> WireError {
        WireError {
            kind: e.kind.as_str().to_owned(),
            message: e.message,
            hint: e.hint,
            note_path: e.note_path,
            retry_after_seconds: e.retry_after_seconds,
        }
    }
}

impl From<WireError> for KbError {
    fn from(w: WireError) -> KbError {
        let kind = KINDS
            .into_iter()
            .find(|k| k.as_str() == w.kind)
            .unwrap_or(ErrorKind::Internal);
        KbError {
            kind,
            message: w.message,
            hint: w.hint,
            note_path: w.note_path,
            retry_after_seconds: w.retry_after_seconds,
        }
    }
}

/// The next whole line, at most [`MAX_LINE_BYTES`]; `None` at the end of the stream, on an
/// error, or for a line cut short.
pub(crate) fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.by_ref().take(MAX_LINE_BYTES).read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) if !line.ends_with('\n') => None,
        Ok(_) => Some(line),
    }
}

/// Writes `msg` as one line and flushes it.
pub(crate) fn write_line(out: &mut impl Write, msg: &impl Serialize) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}
