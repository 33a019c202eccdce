//! `BlockStore`: the SQLite store of pages, blocks, links and tags behind every note read and write.
//!
//! Architecture invariant: this crate knows nothing of markdown. The command layer parses a note and
//! hands over flat records ([`PageRecord`], [`NewBlock`], [`NewLink`]); the store keeps them, gives
//! blocks stable ids, and answers the lookups the tools need (pages, backlinks, tags, link targets).
//!
//! Concurrency: [`BlockStore::open`] gives two handles. [`BlockStore`] reads, through a small pool
//! of read-only connections, and is shared by everyone; [`StoreWriter`] owns the one write
//! connection and is the only way to change the store (it is not `Clone`: whoever holds it, the
//! vault's writer thread, writes alone). The database runs in WAL mode, so reads never wait on a
//! write in progress.

mod error;
mod model;
mod read;
mod schema;
mod store;
mod write;

pub use error::StoreError;
pub use model::{NewBlock, NewLink, PageChange, PageRecord, PageRow, StoredBlock, StoredLink};
pub use schema::SCHEMA_VERSION;
pub use store::{BlockStore, StoreWriter};
