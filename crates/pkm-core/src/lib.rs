//! The ground every other crate stands on: the vault's layout on disk, `VaultPath` (the one type
//! through which a user-supplied path enters), the shared error kinds, and RFC 3339 time.
//!
//! Architecture invariant: this crate knows nothing of markdown, SQLite, Tantivy or MCP.

pub mod error;
pub mod path;
pub mod time;
pub mod vault;

pub use error::{ErrorKind, KbError, KbResult, Operation};
pub use path::{PathError, VaultPath};
pub use vault::{Vault, VaultError};
