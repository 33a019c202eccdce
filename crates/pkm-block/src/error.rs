//! The store's one error enum, and its mapping onto the shared `ErrorKind`s.

use pkm_core::KbError;
use rusqlite::ErrorCode;

/// Everything that can go wrong in the block store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error (busy past the timeout, a constraint, an I/O failure, ...).
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    /// The database file is damaged or is not a SQLite database; rebuild it from the vault.
    #[error("the block store is corrupt: {0}")]
    Corrupt(String),
    /// The database was written by a newer version of the program, with a schema this build does
    /// not know; opening it could lose data.
    #[error(
        "the block store has schema version {found}, newer than the {supported} this build supports; \
         upgrade the program or rebuild the store"
    )]
    NewerSchema { found: i64, supported: i64 },
    /// The caller handed over records that cannot be stored as given (a block whose parent does
    /// not precede it, a number out of range).
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                StoreError::Corrupt(e.to_string())
            }
            _ => StoreError::Sqlite(e),
        }
    }
}

impl From<StoreError> for KbError {
    /// Every store failure is `External` with a generic message: the cause (SQL, file names) is
    /// for the server log, never for a client.
    fn from(e: StoreError) -> Self {
        let base = KbError::external("the block store");
        match e {
            StoreError::Corrupt(_) => {
                base.with_hint("The block store is damaged; rebuild it with {rebuild}.")
            }
            StoreError::NewerSchema { .. } => base.with_hint(
                "The block store was created by a newer version; upgrade the server or rebuild the store.",
            ),
            StoreError::Sqlite(_) | StoreError::InvalidInput(_) => base,
        }
    }
}
