//! The crate's error type and its mapping onto the shared error kinds.

use pkm_core::KbError;

/// Everything that can go wrong in the search index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Tantivy failed while reading or writing a healthy index.
    #[error("search index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
    /// The index on disk cannot be read; `IndexEngine::recreate` and a full reindex fix it.
    #[error("search index is unreadable: {0}")]
    Corrupt(String),
    /// The index on disk was built with another schema or analyzer version; recreate it.
    #[error("search index was built with another schema version")]
    SchemaMismatch,
    /// The embedding model compiled into the binary cannot be read (a build fault, not the
    /// vault's).
    #[error("search meaning model: {0}")]
    Model(&'static str),
    /// The filesystem failed.
    #[error("search index I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl IndexError {
    /// Whether the caller should recreate the index and reindex the vault.
    pub fn needs_rebuild(&self) -> bool {
        matches!(self, IndexError::Corrupt(_) | IndexError::SchemaMismatch)
    }
}

impl From<IndexError> for KbError {
    /// The cause stays out of the message (it may name paths or internals); the caller logs it.
    fn from(err: IndexError) -> KbError {
        let kb = KbError::external("search index");
        if err.needs_rebuild() {
            kb.with_hint("The search index needs a rebuild: run {rebuild}.")
        } else {
            kb
        }
    }
}
