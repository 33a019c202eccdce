//! The ground every other crate stands on: the vault's layout on disk, `VaultPath` (the one type
//! through which a user-supplied path enters), the shared error kinds, RFC 3339 time, and
//! the durable sync of a folder's entries.
//!
//! Architecture invariant: this crate knows nothing of markdown, SQLite, Tantivy or MCP.

pub mod error;
pub mod folder;
pub mod path;
pub mod time;
pub mod vault;

pub use error::{ErrorKind, KbError, KbResult, Operation};
pub use path::{PathError, VaultPath};
pub use vault::{Vault, VaultError};
