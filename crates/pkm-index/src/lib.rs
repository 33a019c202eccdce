//! Full-text search over a vault's blocks: the `IndexEngine` over Tantivy, the `IndexingGuard`
//! that lets a rebuild exclude writers, and autocomplete ranking.
//!
//! Architecture invariant: this crate knows nothing of markdown or SQLite. The command layer hands
//! it one [`NoteDoc`] per note, holding a [`BlockDoc`] per block, and gets back block ids, page
//! paths and snippets. The index holds one document per note (ADR-0027).
//! Architecture invariant: the user's query text never reaches Tantivy's query parser.

pub mod autocomplete;
mod directory;
mod embed;
mod engine;
mod error;
mod guard;
mod query;
mod tokenizer;

pub use engine::{
    BlockDoc, Hit, IndexEngine, IndexWriter, MAX_SCORE_MATCHES, NoteDoc, NoteMeaning,
    SCHEMA_VERSION, SearchPage, normalize_tag,
};
pub use error::IndexError;
pub use guard::{ExclusiveGuard, IndexingGuard, SharedGuard};
pub use tokenizer::SearchLanguage;
