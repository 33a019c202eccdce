//! `BlockStore`: connections, the reader pool, and the public API. The SQL lives in `read` and
//! `write`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use pkm_core::VaultPath;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::StoreError;
use crate::model::{NewBlock, PageRecord, PageRow, StoredBlock, StoredLink};
use crate::{read, schema, write};

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle read connections kept for reuse; a burst beyond this opens (and then closes) extra ones.
const MAX_IDLE_READERS: usize = 8;
/// Page cache of the writer (negative: in KiB). A vault scan inserts into random-keyed indexes
/// (block ids, link targets); with SQLite's default 2 MiB cache those pages are evicted and read
/// back over and over, and a 10k-page scan took twice as long.
const WRITER_CACHE_KIB: i64 = -65_536;
/// Bytes of WAL kept on disk after a checkpoint.
const WAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// Room for every distinct statement of the store, so none is ever re-prepared.
const STATEMENT_CACHE: usize = 64;

/// The block store. `Send + Sync`; share it in an `Arc`.
pub struct BlockStore {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Committed write transactions so far: caches derived from the store compare it.
    writes: AtomicU64,
}

/// Saves pages inside a transaction opened by [`BlockStore::in_one_transaction`].
pub struct PageWriter<'a> {
    tx: &'a Connection,
}

impl PageWriter<'_> {
    /// [`BlockStore::save_page`] for each page, in order; returns each page's block ids.
    pub fn save_pages(
        &self,
        pages: &[(PageRecord, Vec<NewBlock>)],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        pages
            .iter()
            .map(|(page, blocks)| write::save_page(self.tx, page, blocks))
            .collect()
    }
}

/// A poisoned lock only means another thread panicked while holding it; the connection inside is
/// still sound (an open transaction was rolled back when its guard dropped).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn read_in_transaction<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let out = f(&tx)?;
    // A read transaction has nothing to commit; ending it releases the snapshot.
    tx.finish()?;
    Ok(out)
}

/// Settings every connection gets, writer and readers alike.
fn configure(conn: &Connection) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Without the query planner stability guarantee SQLite re-plans a cached statement on every
    // bind when a parameter could sway the plan (`col = ?1 ... ORDER BY`), which costs a full
    // re-prepare per call. Our plans are index lookups that do not depend on the values.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Sorts (ORDER BY on a computed key) stay in memory instead of opening temp files.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

impl BlockStore {
    /// Opens (creating if needed) the store at `db_path` and brings its schema up to date. WAL
    /// journal, 5 s busy timeout, foreign keys on, `synchronous=NORMAL`. A database written by a
    /// newer schema is refused with [`StoreError::NewerSchema`].
    pub fn open(db_path: &Path) -> Result<BlockStore, StoreError> {
        let mut conn = Connection::open(db_path)?;
        configure(&conn)?;
        // Check the version before changing anything about the file.
        let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if found > schema::SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found,
                supported: schema::SCHEMA_VERSION,
            });
        }
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::InvalidInput(format!(
                "the database refused WAL mode (got {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)?;
        // A vault scan is one large transaction; afterwards the WAL is cut back to this size.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
        schema::migrate(&mut conn)?;
        Ok(BlockStore {
            path: db_path.to_path_buf(),
            writer: Mutex::new(conn),
            readers: Mutex::new(Vec::new()),
            writes: AtomicU64::new(0),
        })
    }

    fn open_reader(&self) -> Result<Connection, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&self.path, flags)?;
        configure(&conn)?;
        Ok(conn)
    }

    /// Runs `f` on a read connection inside one read transaction, so that its queries see one
    /// snapshot. Takes a pooled connection, or opens one when the pool is empty; never waits on
    /// the writer.
    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // Bound first, so the pool's lock is not held while a connection is opened.
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => self.open_reader()?,
        };
        let out = read_in_transaction(&conn, f);
        let mut pool = lock(&self.readers);
        if pool.len() < MAX_IDLE_READERS {
            pool.push(conn);
        }
        out
    }

    /// Runs `f` in one write transaction (taking the write lock up front, so it cannot fail
    /// half-way with SQLITE_BUSY), committed only if `f` succeeds.
    fn write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut conn = lock(&self.writer);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let out = f(&tx)?;
        tx.commit().map_err(StoreError::from)?;
        self.writes.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// The number of write transactions committed through this handle. Read it before reading
    /// the store to build a cache; the cache is current while the number is unchanged.
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Replaces a page's row, blocks, links and tags in one transaction; returns the block ids in
    /// input order. Ids are stable: an `explicit_id` wins (unless another block already holds it);
    /// otherwise the id of an old block of the page with identical content (first unused match in
    /// document order); otherwise a new UUID v4.
    pub fn save_page(
        &self,
        page: &PageRecord,
        blocks: &[NewBlock],
    ) -> Result<Vec<String>, StoreError> {
        self.write(|tx| write::save_page(tx, page, blocks))
    }

    /// [`Self::save_page`] for many pages in one transaction (the vault scan).
    pub fn save_pages(
        &self,
        pages: &[(PageRecord, Vec<NewBlock>)],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.write(|tx| PageWriter { tx }.save_pages(pages))
    }

    /// Runs `f` with a [`PageWriter`] whose saves all go into one write transaction, committed
    /// when `f` returns `Ok` and rolled back otherwise. For a large vault scan: a transaction per
    /// chunk would write every page of the block-id index (random UUIDs) to the WAL once per
    /// chunk. Other writes through this store wait until `f` returns.
    pub fn in_one_transaction<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&PageWriter<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write(|tx| f(&PageWriter { tx }))
    }

    /// Removes a page and everything attached to it; `true` if it existed.
    pub fn delete_page(&self, path: &VaultPath) -> Result<bool, StoreError> {
        self.write(|tx| write::delete_page(tx, path.as_str()))
    }

    /// Removes many pages (by stored path) in one transaction.
    pub fn delete_pages(&self, paths: &[String]) -> Result<(), StoreError> {
        self.write(|tx| {
            for p in paths {
                write::delete_page(tx, p)?;
            }
            Ok(())
        })
    }

    pub fn get_page(&self, path: &VaultPath) -> Result<Option<PageRow>, StoreError> {
        self.read(|c| read::page(c, path.as_str()))
    }

    /// The page's blocks in document (pre-)order.
    pub fn get_blocks_by_page(&self, path: &VaultPath) -> Result<Vec<StoredBlock>, StoreError> {
        self.read(|c| read::blocks_of_page(c, path.as_str()))
    }

    #[cfg(feature = "test-support")]
    pub fn get_block(&self, id: &str) -> Result<Option<StoredBlock>, StoreError> {
        self.read(|c| read::block(c, id))
    }

    /// The links going out of a page, in document order.
    #[cfg(feature = "test-support")]
    pub fn links_of_page(&self, path: &VaultPath) -> Result<Vec<StoredLink>, StoreError> {
        self.read(|c| read::links_of_page(c, path.as_str()))
    }

    /// Up to `limit` pages with a path after `after`, ordered by path (keyset paging).
    pub fn list_pages(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PageRow>, StoreError> {
        self.read(|c| read::list_pages(c, after, limit))
    }

    pub fn all_pages(&self) -> Result<Vec<PageRow>, StoreError> {
        self.read(|c| read::list_pages(c, None, usize::MAX))
    }

    /// Path → (mtime_ns, size, hash) of every page, for incremental scans.
    pub fn fingerprints(&self) -> Result<HashMap<String, (i64, u64, String)>, StoreError> {
        self.read(read::fingerprints)
    }

    pub fn page_count(&self) -> Result<u64, StoreError> {
        self.read(|c| read::count(c, "SELECT COUNT(*) FROM pages"))
    }

    pub fn block_count(&self) -> Result<u64, StoreError> {
        self.read(|c| read::count(c, "SELECT COUNT(*) FROM blocks"))
    }

    /// Links whose `target_key` is one of `keys` (a page's lowercased candidate names), with the
    /// linking block's content; for backlinks. Ordered by source page, then document order.
    pub fn links_to_keys(&self, keys: &[String]) -> Result<Vec<(StoredLink, String)>, StoreError> {
        self.read(|c| read::links_to_keys(c, keys))
    }

    /// Every `((uuid))` block-reference key whose block exists, with the path of its page.
    pub fn block_ref_pages(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(read::block_ref_pages)
    }

    /// Every link, ordered by source page, then document order; for the graph.
    #[cfg(feature = "test-support")]
    pub fn all_links(&self) -> Result<Vec<StoredLink>, StoreError> {
        self.read(read::all_links)
    }

    /// Calls `f(source page path, target, alias)` for every link, in document order within each
    /// page, from one snapshot; nothing is collected, so a 100k-note graph costs no link list.
    pub fn for_each_link(
        &self,
        mut f: impl FnMut(&str, &str, Option<&str>),
    ) -> Result<(), StoreError> {
        self.read(|c| read::for_each_link(c, &mut f))
    }

    /// Paths of the pages carrying page tag `tag` (case-insensitive), sorted.
    #[cfg(feature = "test-support")]
    pub fn pages_with_tag(&self, tag: &str) -> Result<Vec<String>, StoreError> {
        self.read(|c| read::pages_with_tag(c, tag))
    }

    /// Blocks carrying inline tag `tag` (case-insensitive), by page path then document order.
    #[cfg(feature = "test-support")]
    pub fn blocks_with_tag(&self, tag: &str, limit: usize) -> Result<Vec<StoredBlock>, StoreError> {
        self.read(|c| read::blocks_with_tag(c, tag, limit))
    }

    /// Distinct page tags (case-insensitive, in their most common spelling) with the number of
    /// pages carrying each, sorted by lowercased tag.
    pub fn all_tags(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.read(read::all_tags)
    }

    pub fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| read::meta(c, key))
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.write(|tx| write::set_meta(tx, key, value))
    }

    /// `PRAGMA integrity_check` reports `ok`.
    #[cfg(feature = "test-support")]
    pub fn integrity_check(&self) -> Result<bool, StoreError> {
        self.read(read::integrity_check)
    }

    /// Drops every page (and its blocks, links and tags) in one transaction; meta survives.
    pub fn clear(&self) -> Result<(), StoreError> {
        self.write(write::clear)
    }

    /// Records that the index entries of `paths` may be behind (before a save or delete).
    pub fn mark_index_lag(&self, paths: &[&str]) -> Result<(), StoreError> {
        self.write(|tx| {
            let mut st = tx.prepare_cached("INSERT OR IGNORE INTO index_lag (path) VALUES (?1)")?;
            for p in paths {
                st.execute([p])?;
            }
            Ok(())
        })
    }

    /// Records that the index has caught up with `paths` (after an index commit).
    pub fn clear_index_lag(&self, paths: &[&str]) -> Result<(), StoreError> {
        self.write(|tx| {
            let mut st = tx.prepare_cached("DELETE FROM index_lag WHERE path = ?1")?;
            for p in paths {
                st.execute([p])?;
            }
            Ok(())
        })
    }

    /// Every note whose index entries may be behind, in path order.
    pub fn index_lag(&self) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached("SELECT path FROM index_lag ORDER BY path")?;
            let rows = st.query_map([], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// How many notes' index entries may be behind.
    pub fn index_lag_count(&self) -> Result<u64, StoreError> {
        self.read(|c| {
            Ok(c.prepare_cached("SELECT COUNT(*) FROM index_lag")?
                .query_row([], |r| r.get::<_, i64>(0))?
                .max(0) as u64)
        })
    }
}
