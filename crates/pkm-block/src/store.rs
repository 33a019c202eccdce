//! The store's two handles: [`BlockStore`] reads (a pool of read-only connections, for everyone)
//! and [`StoreWriter`] writes (the one write connection, for the vault's writer alone). The SQL
//! lives in `read` and `write`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pkm_core::VaultPath;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::error::StoreError;
use crate::model::{NewBlock, PageChange, PageRecord, PageRow, StoredBlock, StoredLink};
use crate::{read, schema, write};

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle read connections kept for reuse; a burst beyond this opens (and then closes) extra ones.
const MAX_IDLE_READERS: usize = 8;
/// Page cache of the writer (negative: in KiB). A vault scan inserts into random-keyed indexes
/// (block ids, link targets); with SQLite's default 2 MiB cache those pages are evicted and read
/// back over and over, and a 10k-page scan took twice as long.
const WRITER_CACHE_KIB: i64 = -65_536;
/// Page cache of the writer during a bulk load (`StoreWriter::begin_bulk`), whose inserts all land
/// at the right edge of their tables and indexes: the pages it fills are written once, to the WAL,
/// and never read back, so a large cache only holds them in memory until the commit. 10k-note cold
/// index, peak RSS (medians of 2, in turns, same CPU time): 231 MB with the 64 MiB cache, 193 MB
/// at 16 MiB, 155–163 MB at 4 MiB.
const BULK_CACHE_KIB: i64 = -4_096;
/// Bytes of WAL kept on disk after a checkpoint.
const WAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// WAL pages after which a commit checkpoints on the writer's own thread (SQLite's default),
/// but during a bulk load committed in pieces (its [`Checkpointer`] does).
const AUTOCHECKPOINT_PAGES: i64 = 1000;
/// The meta keys of a bulk load's dropped indexes, `dropped_index:NAME` → its `CREATE INDEX`,
/// written in the transaction that drops them and deleted in the one that builds them again. A
/// load committed in pieces ([`StoreWriter::commit_piece`]) and cut short by a crash leaves them,
/// and the next [`BlockStore::open`] builds the indexes they name.
const DROPPED_INDEX: &str = "dropped_index:";
/// Room for every distinct statement of the store, so none is ever re-prepared.
const STATEMENT_CACHE: usize = 64;

/// The meta key of the last index commit the store relied on ([`BlockStore::index_commit`]).
const INDEX_COMMIT: &str = "index_commit";

/// The read handle of the store: every lookup, never a change. `Send + Sync`; share it in an
/// `Arc`. Its writing half is the [`StoreWriter`] that [`BlockStore::open`] hands out with it.
///
/// A read handle cannot save:
///
/// ```compile_fail,E0599
/// # fn f(store: &pkm_block::BlockStore, page: &pkm_block::PageRecord) {
/// store.save_page(page, &[]);
/// # }
/// ```
pub struct BlockStore {
    path: PathBuf,
    readers: Mutex<Vec<Connection>>,
    /// Committed write transactions so far (counted by the writer): caches derived from the store
    /// compare it.
    writes: Arc<AtomicU64>,
}

/// The writing half of the store: the one write connection. Not `Clone` and not `Sync`; whoever
/// holds it (the vault's writer thread) is the only code that can change the store.
///
/// It cannot be copied to write from a second place:
///
/// ```compile_fail,E0599
/// # fn f(writer: pkm_block::StoreWriter) {
/// let second = writer.clone();
/// # }
/// ```
pub struct StoreWriter {
    conn: Connection,
    /// The database file, for the [`Checkpointer`]'s connection.
    path: PathBuf,
    /// Whether [`StoreWriter::begin_transaction`] left a transaction open: every write joins it.
    open: bool,
    /// The bulk load [`StoreWriter::begin_bulk`] started, until its transaction ends.
    bulk: Option<Bulk>,
    writes: Arc<AtomicU64>,
}

/// A bulk load in progress: the indexes it dropped, and the block ids held meanwhile.
#[derive(Debug)]
struct Bulk {
    /// Each dropped index's name and `CREATE INDEX` statement, run again before the commit.
    indexes: Vec<(String, String)>,
    held: write::HeldIds,
    /// A write of the load failed half-way: it can only be rolled back.
    broken: bool,
    /// The load is into a store that held no page: it may be committed in pieces
    /// ([`StoreWriter::commit_piece`]).
    pieces: bool,
    /// A piece was committed: the store on disk lacks the dropped indexes until the load ends.
    committed: bool,
    /// Copies the committed pieces into the database file meanwhile (from the first piece on).
    checkpointer: Option<Checkpointer>,
}

/// Checkpoints the WAL on a thread of its own while a bulk load goes on: the copy of each
/// committed piece into the database file, and its syncs, run beside the load's next writes
/// instead of all of them in its last commit, while nothing else runs (a 100k-note cold index
/// spent ~3.7 s alone on its last commit, scripts/bench/analysis.md).
struct Checkpointer {
    wake: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checkpointer")
    }
}

impl Checkpointer {
    /// `None` when no connection or thread can be had: the load's last commit then copies it
    /// all, as an unpieced load does.
    fn start(path: &Path) -> Option<Checkpointer> {
        let conn = Connection::open(path).ok()?;
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("stratum-checkpoint".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    // PASSIVE: copies what is committed without waiting on the writer. Best
                    // effort: what is not copied here is copied by the load's last commit.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .ok()?;
        Some(Checkpointer { wake, thread })
    }

    /// Asks for a checkpoint; one already asked for and not yet begun covers this piece too.
    fn wake(&self) {
        let _ = self.wake.try_send(());
    }

    /// Waits for the checkpoint under way, if any, and ends the thread.
    fn stop(self) {
        drop(self.wake);
        let _ = self.thread.join();
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
    ///
    /// Gives the read handle, for everyone, and the writing handle, for the one thread that writes:
    ///
    /// ```no_run
    /// # fn f(page: &pkm_block::PageRecord) -> Result<(), pkm_block::StoreError> {
    /// let (store, mut writer) = pkm_block::BlockStore::open(std::path::Path::new("blocks.db"))?;
    /// writer.save_page(page, &[])?;
    /// assert_eq!(store.page_count()?, 1);
    /// # Ok(()) }
    /// ```
    pub fn open(db_path: &Path) -> Result<(BlockStore, StoreWriter), StoreError> {
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
        // Before the migrations, which expect the indexes of the schema that dropped them.
        if found > 0 {
            restore_dropped_indexes(&mut conn)?;
        }
        schema::migrate(&mut conn)?;
        let writes = Arc::new(AtomicU64::new(0));
        let store = BlockStore {
            path: db_path.to_path_buf(),
            readers: Mutex::new(Vec::new()),
            writes: Arc::clone(&writes),
        };
        let writer = StoreWriter {
            conn,
            path: db_path.to_path_buf(),
            open: false,
            bulk: None,
            writes,
        };
        Ok((store, writer))
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

    /// The number of write transactions the store's writer has committed. Read it before reading
    /// the store to build a cache; the cache is current while the number is unchanged.
    pub fn write_count(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
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

    /// The ids a save of `blocks` to `path` would keep (by the rule [`StoreWriter::save_page`]
    /// follows), `None` for the blocks that would get a new one; for answering from a file the
    /// store has not caught up with.
    pub fn kept_block_ids(
        &self,
        path: &VaultPath,
        blocks: &[NewBlock],
    ) -> Result<Vec<Option<String>>, StoreError> {
        self.read(|c| {
            let old = write::old_blocks(c, path.as_str())?;
            write::kept_ids(c, path.as_str(), &old, blocks)
        })
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

    /// Notes modified after `after_ns` (nanoseconds since the epoch), newest first, `limit`
    /// from `offset`, with how many there are in all.
    pub fn changed_since(
        &self,
        after_ns: i64,
        limit: usize,
        offset: usize,
    ) -> Result<(Vec<PageChange>, u64), StoreError> {
        self.read(|c| read::changed_since(c, after_ns, limit, offset))
    }

    pub fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| read::meta(c, key))
    }

    /// The stamp of the last index commit the store relied on ([`StoreWriter::indexed`]): an
    /// index whose own last commit is older lost commits (a machine crash) and must be rebuilt.
    /// `None` when no commit was recorded since the index was made.
    pub fn index_commit(&self) -> Result<Option<u64>, StoreError> {
        Ok(self
            .get_meta(INDEX_COMMIT)?
            .and_then(|v| v.parse::<u64>().ok()))
    }

    /// `PRAGMA integrity_check` reports `ok`.
    #[cfg(feature = "test-support")]
    pub fn integrity_check(&self) -> Result<bool, StoreError> {
        self.read(read::integrity_check)
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

impl StoreWriter {
    /// Runs `f` in one write transaction (the write lock taken up front, so it cannot fail
    /// half-way with SQLITE_BUSY), committed only if `f` succeeds; inside a transaction
    /// [`StoreWriter::begin_transaction`] opened, in a savepoint of it instead.
    fn write<T, E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_with(|tx, _| f(tx))
    }

    /// [`Self::write`], `f` given the ids held during a bulk load. A bulk load's writes run
    /// without a savepoint: the load is committed whole or not at all, so a write of it that
    /// fails half-way marks it broken, and [`Self::commit_transaction`] then rolls it back. (With
    /// a savepoint open, SQLite first copied every page the load's small cache spilled into a
    /// statement journal.)
    fn write_with<T, E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&Connection, Option<&mut write::HeldIds>) -> Result<T, E>,
    ) -> Result<T, E> {
        if self.open {
            if let Some(bulk) = &mut self.bulk {
                let out = f(&self.conn, Some(&mut bulk.held));
                bulk.broken |= out.is_err();
                return out;
            }
            let sp = self.conn.savepoint().map_err(StoreError::from)?;
            let out = f(&sp, None)?;
            sp.commit().map_err(StoreError::from)?;
            return Ok(out);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let out = f(&tx, None)?;
        tx.commit().map_err(StoreError::from)?;
        self.writes.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// Replaces a page's row, blocks, links and tags in one transaction; returns the block ids in
    /// input order. Ids are stable: an `explicit_id` wins (unless another block already holds it);
    /// otherwise the id of an old block of the page with identical content (first unused match in
    /// document order); otherwise a new UUID v4.
    pub fn save_page(
        &mut self,
        page: &PageRecord,
        blocks: &[NewBlock],
    ) -> Result<Vec<String>, StoreError> {
        let mut ids = self.save_pages(&[(page, blocks)])?;
        Ok(ids.pop().unwrap_or_default())
    }

    /// [`Self::save_page`] for many pages in one transaction (the vault scan); each page as
    /// `(PageRecord, Vec<NewBlock>)` or borrowed, `(&PageRecord, &[NewBlock])`.
    pub fn save_pages<P, B>(&mut self, pages: &[(P, B)]) -> Result<Vec<Vec<String>>, StoreError>
    where
        P: std::borrow::Borrow<PageRecord>,
        B: AsRef<[NewBlock]>,
    {
        self.write_with(|tx, mut held| {
            pages
                .iter()
                .map(|(page, blocks)| {
                    write::save_page(tx, page.borrow(), blocks.as_ref(), held.as_deref_mut())
                })
                .collect()
        })
    }

    /// [`Self::save_pages`] for pages of which some moved: a page given with the path it had
    /// before (`Some(from)`) keeps the block ids of the page at `from` (by the rule of
    /// [`Self::save_page`]), and the page at `from` goes away, in the same transaction; so a
    /// `((uuid))` reference to a block of a moved note still finds it.
    pub fn save_moved_pages(
        &mut self,
        pages: &[(PageRecord, Vec<NewBlock>, Option<String>)],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        self.write(|tx| {
            pages
                .iter()
                .map(|(page, blocks, from)| {
                    write::save_page_from(tx, page, blocks, from.as_deref(), None)
                })
                .collect()
        })
    }

    /// Runs `f` with this writer in one write transaction: every write `f` makes joins it, and it
    /// is committed when `f` returns `Ok` and rolled back otherwise. For a large vault scan: a
    /// transaction per chunk would write every page of the block-id index (random UUIDs) to the
    /// WAL once per chunk.
    pub fn in_one_transaction<T, E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&mut StoreWriter) -> Result<T, E>,
    ) -> Result<T, E> {
        self.begin_transaction()?;
        match f(self) {
            Ok(out) => {
                self.commit_transaction()?;
                Ok(out)
            }
            Err(e) => {
                self.rollback_transaction()?;
                Err(e)
            }
        }
    }

    /// Opens one write transaction (taking the write lock up front) that every following write
    /// joins, each still all-or-nothing by itself, until [`StoreWriter::commit_transaction`] or
    /// [`StoreWriter::rollback_transaction`]; dropping the writer meanwhile rolls it back.
    /// [`StoreWriter::in_one_transaction`] for a transaction whose end is known up front.
    pub fn begin_transaction(&mut self) -> Result<(), StoreError> {
        if self.open {
            return Err(StoreError::InvalidInput(
                "a write transaction is already open".to_owned(),
            ));
        }
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        self.open = true;
        Ok(())
    }

    /// [`StoreWriter::begin_transaction`] for a bulk load (a rebuild, the first scan of a vault):
    /// the secondary indexes whose keys arrive in random order (above all the block ids, random
    /// UUID v4) are dropped, and built again, each by one sort, when the transaction commits. The
    /// uniqueness of block ids is checked in memory meanwhile. A rollback brings the indexes back
    /// with everything else; readers see the committed store, indexes included, throughout, but
    /// for a load into an empty store committed in pieces ([`StoreWriter::commit_piece`]).
    pub fn begin_bulk(&mut self) -> Result<(), StoreError> {
        // The index builds at the commit sort millions of keys (2.35M block ids at 100k notes).
        // With `temp_store = MEMORY` (every connection's setting, for the readers' small sorts)
        // SQLite's sorter keeps every key in the heap however small the cache: ~160 MB at 100k
        // notes at the very end of a cold index. With `FILE` it sorts runs the size of the cache
        // and merges them from a temporary file. SQLite refuses to change this inside a
        // transaction, so it is set here, before, and put back once the transaction ends.
        self.conn.pragma_update(None, "temp_store", "FILE")?;
        // And sorts them on every core: SQLite's sorter hands runs to helper threads. At 100k
        // notes `blocks_id` took 1.07 s instead of 1.63 s on two cores, while nothing else runs.
        self.conn.pragma_update(None, "threads", sort_threads())?;
        // Only this connection writes: a store without pages now is one when the load begins.
        let empty: bool =
            self.conn
                .query_row("SELECT NOT EXISTS (SELECT 1 FROM pages)", [], |r| r.get(0))?;
        if empty {
            // Its pieces are checkpointed by the `Checkpointer`, not by their commits.
            self.conn.pragma_update(None, "wal_autocheckpoint", 0)?;
            // Every row it inserts refers to a page it inserted just before, so SQLite's check of
            // each such reference is left out (2.4 % of a cold index's instructions at 1k notes).
            // A page it deletes loses its rows by hand instead of by the cascade
            // (`write::delete_page`).
            self.conn.pragma_update(None, "foreign_keys", false)?;
        }
        if let Err(e) = self.begin_transaction() {
            self.writer_settings();
            return Err(e);
        }
        let started = (|| {
            let mut indexes = Vec::new();
            {
                let mut st = self.conn.prepare(
                    "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1 AND sql IS NOT NULL",
                )?;
                for name in schema::BULK_INDEXES {
                    if let Some(sql) = st.query_row([name], |r| r.get::<_, String>(0)).optional()? {
                        write::set_meta(&self.conn, &format!("{DROPPED_INDEX}{name}"), &sql)?;
                        indexes.push(((*name).to_owned(), sql));
                    }
                }
            }
            let held = write::HeldIds::load(&self.conn)?;
            self.conn
                .pragma_update(None, "cache_size", BULK_CACHE_KIB)?;
            for name in schema::BULK_INDEXES {
                self.conn
                    .execute_batch(&format!("DROP INDEX IF EXISTS \"{name}\""))?;
            }
            Ok::<_, StoreError>(Bulk {
                indexes,
                held,
                broken: false,
                pieces: empty,
                committed: false,
                checkpointer: None,
            })
        })();
        match started {
            Ok(bulk) => {
                self.bulk = Some(bulk);
                Ok(())
            }
            Err(e) => {
                self.rollback_transaction()?;
                self.writer_settings();
                Err(e)
            }
        }
    }

    /// Whether the bulk load under way is committed in pieces ([`StoreWriter::commit_piece`]):
    /// it began on a store that held no page.
    pub fn commits_in_pieces(&self) -> bool {
        self.bulk.as_ref().is_some_and(|bulk| bulk.pieces)
    }

    /// Commits what a bulk load into an empty store has written so far, and goes on in a new
    /// transaction. The WAL those writes filled is copied into the database file on a thread of
    /// its own meanwhile (its syncs included), so the load's last commit copies only its own
    /// piece, instead of the whole store while nothing else runs.
    ///
    /// From here until the load ends, readers see the pages committed so far, and the store on
    /// disk lacks the dropped indexes: lookups by block id, link target or tag scan the tables.
    /// A crash leaves the pages committed and the indexes to build: the next
    /// [`BlockStore::open`] builds them. A load that is not committed in pieces
    /// ([`StoreWriter::commits_in_pieces`]) is refused, as is a write of the load that failed
    /// half-way (the load is then rolled back).
    pub fn commit_piece(&mut self) -> Result<(), StoreError> {
        match &self.bulk {
            Some(bulk) if bulk.pieces && !bulk.broken => {}
            Some(bulk) if bulk.pieces => return self.commit_transaction(),
            _ => {
                return Err(StoreError::InvalidInput(
                    "no bulk load into an empty store is open".to_owned(),
                ));
            }
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            self.rollback_transaction()?;
            return Err(e.into());
        }
        self.writes.fetch_add(1, Ordering::AcqRel);
        if let Some(bulk) = &mut self.bulk {
            bulk.committed = true;
            if bulk.checkpointer.is_none() {
                bulk.checkpointer = Checkpointer::start(&self.path);
            }
            if let Some(checkpointer) = &bulk.checkpointer {
                checkpointer.wake();
            }
        }
        if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE") {
            self.open = false;
            let restored = restore_dropped_indexes(&mut self.conn);
            self.end_bulk();
            restored?;
            return Err(e.into());
        }
        Ok(())
    }

    /// Commits the transaction [`StoreWriter::begin_transaction`] or [`StoreWriter::begin_bulk`]
    /// opened (the latter's indexes built again first).
    pub fn commit_transaction(&mut self) -> Result<(), StoreError> {
        if !self.open {
            return Err(StoreError::InvalidInput(
                "no write transaction is open".to_owned(),
            ));
        }
        if self.bulk.as_ref().is_some_and(|bulk| bulk.broken) {
            self.rollback_transaction()?;
            return Err(StoreError::InvalidInput(
                "a write of the bulk load failed half-way, so the load was rolled back".to_owned(),
            ));
        }
        if let Some(bulk) = &mut self.bulk {
            // The ids held for the uniqueness checks are done with: their memory goes first.
            bulk.held = write::HeldIds::default();
            let indexes = std::mem::take(&mut bulk.indexes);
            let pieces = bulk.pieces;
            for (at, (name, sql)) in indexes.iter().enumerate() {
                // Each build sorts its keys once, through a temporary file past the bulk load's
                // small cache (`begin_bulk`).
                let built = self
                    .conn
                    .execute_batch(sql)
                    .and_then(|()| forget_dropped_index(&self.conn, name));
                if let Err(e) = built {
                    self.rollback_transaction()?;
                    return Err(e.into());
                }
                // A load in pieces commits each index but the last as a piece of its own: the
                // checkpointer copies its pages and syncs them while the next one is built, and
                // the last commit copies only the last index's. At 10k notes that commit took
                // ~57 ms at the very end, now ~2 ms, and the builds ~20 ms more. Readers
                // meanwhile see the indexes built so far.
                if pieces && at + 1 < indexes.len() {
                    self.commit_piece()?;
                }
            }
            // The last commit checkpoints on this thread, after the checkpointer's last copy.
            if let Some(checkpointer) = self.bulk.as_mut().and_then(|b| b.checkpointer.take()) {
                checkpointer.stop();
            }
            let _ = self
                .conn
                .pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES);
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            // A failed COMMIT may leave the transaction open; it ends here either way.
            self.rollback_transaction()?;
            return Err(e.into());
        }
        self.open = false;
        self.end_bulk();
        self.writes.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Puts back the writer's own settings after a bulk load, once its transaction has ended.
    /// Best effort: a writer left with the small cache, sorting through files, or without its
    /// foreign keys checked, is slower, never wrong (`write::delete_page` cascades by hand).
    fn end_bulk(&mut self) {
        if let Some(bulk) = self.bulk.take() {
            if let Some(checkpointer) = bulk.checkpointer {
                checkpointer.stop();
            }
            self.writer_settings();
        }
    }

    /// The writer's cache, its sorts in memory on its own thread and its checkpoints, as
    /// [`BlockStore::open`] sets them.
    fn writer_settings(&mut self) {
        let _ = self
            .conn
            .pragma_update(None, "cache_size", WRITER_CACHE_KIB);
        let _ = self.conn.pragma_update(None, "temp_store", "MEMORY");
        let _ = self.conn.pragma_update(None, "threads", 0);
        let _ = self
            .conn
            .pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES);
        let _ = self.conn.pragma_update(None, "foreign_keys", true);
    }

    /// Drops every write since [`StoreWriter::begin_transaction`] (since the last piece of a bulk
    /// load committed in pieces, whose dropped indexes are then built); nothing when none is open.
    pub fn rollback_transaction(&mut self) -> Result<(), StoreError> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        // SQLite may have rolled it back already (after some errors).
        if !self.conn.is_autocommit() {
            self.conn.execute_batch("ROLLBACK")?;
        }
        let restored = if self.bulk.as_ref().is_some_and(|bulk| bulk.committed) {
            restore_dropped_indexes(&mut self.conn)
        } else {
            Ok(())
        };
        self.end_bulk();
        restored
    }

    /// Removes a page and everything attached to it; `true` if it existed.
    pub fn delete_page(&mut self, path: &VaultPath) -> Result<bool, StoreError> {
        self.write(|tx| write::delete_page(tx, path.as_str()))
    }

    /// Removes many pages (by stored path) in one transaction.
    pub fn delete_pages(&mut self, paths: &[String]) -> Result<(), StoreError> {
        self.write(|tx| {
            for p in paths {
                write::delete_page(tx, p)?;
            }
            Ok(())
        })
    }

    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.write(|tx| write::set_meta(tx, key, value))
    }

    /// Drops every page (and its blocks, links and tags) in one transaction; meta survives.
    pub fn clear(&mut self) -> Result<(), StoreError> {
        self.write(write::clear)?;
        if let Some(bulk) = &mut self.bulk {
            bulk.held.cleared();
        }
        Ok(())
    }

    /// Records that the index entries of `paths` may be behind (before a save or delete); returns
    /// those of `paths` that were not marked already.
    pub fn mark_index_lag(&mut self, paths: &[&str]) -> Result<Vec<String>, StoreError> {
        self.write(|tx| mark_lag(tx, paths))
    }

    /// Records that the index has caught up with `paths` in its commit `stamp`: their marks go,
    /// and the stamp is kept ([`BlockStore::index_commit`]), in one transaction.
    pub fn indexed(&mut self, paths: &[&str], stamp: u64) -> Result<(), StoreError> {
        self.write(|tx| {
            unmark_lag(tx, paths)?;
            write::set_meta(tx, INDEX_COMMIT, &stamp.to_string())
        })
    }

    /// Marks every note at `paths` as lagging a new, empty index, and forgets the old index's
    /// last commit, in one transaction.
    pub fn lag_new_index(&mut self, paths: &[&str]) -> Result<(), StoreError> {
        self.write(|tx| {
            mark_lag(tx, paths)?;
            tx.prepare_cached("DELETE FROM meta WHERE key = ?1")?
                .execute([INDEX_COMMIT])?;
            Ok(())
        })
    }

    /// Clears the marks of `paths` without an index commit (a change undone before it reached
    /// the index).
    pub fn clear_index_lag(&mut self, paths: &[&str]) -> Result<(), StoreError> {
        self.write(|tx| unmark_lag(tx, paths))
    }
}

/// Builds the indexes a bulk load dropped and did not build again (one committed in pieces and
/// cut short, [`StoreWriter::commit_piece`]), in one transaction; nothing when there are none.
fn restore_dropped_indexes(conn: &mut Connection) -> Result<(), StoreError> {
    // Read first: the write lock is taken only when there is something to build (this is the
    // only connection that writes, so nothing changes in between).
    let dropped: Vec<(String, String)> = conn
        .prepare("SELECT key, value FROM meta WHERE substr(key, 1, length(?1)) = ?1")?
        .query_map([DROPPED_INDEX], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if dropped.is_empty() {
        return Ok(());
    }
    // Sorted as a bulk load's commit sorts them (`StoreWriter::begin_bulk`), and the writer's own
    // settings after.
    conn.pragma_update(None, "temp_store", "FILE")?;
    conn.pragma_update(None, "threads", sort_threads())?;
    let built = build_dropped_indexes(conn, &dropped);
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "threads", 0)?;
    built
}

fn build_dropped_indexes(
    conn: &mut Connection,
    dropped: &[(String, String)],
) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (key, sql) in dropped {
        let name = key.strip_prefix(DROPPED_INDEX).unwrap_or(key);
        let exists: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1)",
            [name],
            |r| r.get(0),
        )?;
        if !exists {
            tx.execute_batch(sql)?;
        }
        forget_dropped_index(&tx, name)?;
    }
    tx.commit()?;
    Ok(())
}

/// Deletes the record of the bulk load's dropped index `name` (`DROPPED_INDEX`), once it is built.
fn forget_dropped_index(tx: &Connection, name: &str) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM meta WHERE key = ?1",
        [format!("{DROPPED_INDEX}{name}")],
    )?;
    Ok(())
}

/// Marks `paths` as lagging the index; returns those that were not marked already.
fn mark_lag(tx: &Connection, paths: &[&str]) -> Result<Vec<String>, StoreError> {
    let mut st = tx.prepare_cached("INSERT OR IGNORE INTO index_lag (path) VALUES (?1)")?;
    let mut new = Vec::new();
    for p in paths {
        if st.execute([p])? > 0 {
            new.push((*p).to_owned());
        }
    }
    Ok(new)
}

/// Clears the lag marks of `paths`.
fn unmark_lag(tx: &Connection, paths: &[&str]) -> Result<(), StoreError> {
    let mut st = tx.prepare_cached("DELETE FROM index_lag WHERE path = ?1")?;
    for p in paths {
        st.execute([p])?;
    }
    Ok(())
}

/// Helper threads for a bulk load's sorts: one per core (SQLite caps them at 8).
fn sort_threads() -> i64 {
    std::thread::available_parallelism()
        .map_or(1, |n| i64::try_from(n.get()).unwrap_or(1))
        .min(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(w: &StoreWriter) -> (i64, i64, i64, i64) {
        let temp: i64 = w
            .conn
            .pragma_query_value(None, "temp_store", |r| r.get(0))
            .unwrap();
        let cache: i64 = w
            .conn
            .pragma_query_value(None, "cache_size", |r| r.get(0))
            .unwrap();
        let threads: i64 = w
            .conn
            .pragma_query_value(None, "threads", |r| r.get(0))
            .unwrap();
        let checkpoint: i64 = w
            .conn
            .pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap();
        (temp, cache, threads, checkpoint)
    }

    /// SQLite refuses to change `temp_store` inside a transaction; a bulk load that asked for it
    /// there silently sorted its index builds in memory (~160 MB at 100k notes). Its sorts use
    /// helper threads, the writer's do not. A load into an empty store leaves its checkpoints to
    /// the checkpointer; the writer checkpoints its own commits again after.
    #[test]
    fn a_bulk_load_sorts_through_a_file_and_the_writer_is_itself_again_after() {
        let dir = tempfile::tempdir().unwrap();
        let (_store, mut w) = BlockStore::open(&dir.path().join("blocks.db")).unwrap();
        let (memory, file) = (2, 1);
        let writer = (memory, WRITER_CACHE_KIB, 0, AUTOCHECKPOINT_PAGES);
        assert_eq!(settings(&w), writer);
        w.begin_bulk().unwrap();
        assert_eq!(settings(&w), (file, BULK_CACHE_KIB, sort_threads(), 0));
        w.commit_piece().unwrap();
        w.commit_transaction().unwrap();
        assert_eq!(settings(&w), writer);
        w.begin_bulk().unwrap();
        w.rollback_transaction().unwrap();
        assert_eq!(settings(&w), writer);
        let page = PageRecord {
            path: VaultPath::lexical("a.md").unwrap(),
            title: "A".to_owned(),
            frontmatter_json: None,
            aliases: Vec::new(),
            tags: Vec::new(),
            mtime_ns: 1,
            size: 1,
            hash: "h".to_owned(),
            modified_at: "2026-01-01T00:00:00Z".to_owned(),
        };
        w.save_page(&page, &[]).unwrap();
        w.begin_bulk().unwrap();
        assert_eq!(
            settings(&w),
            (file, BULK_CACHE_KIB, sort_threads(), AUTOCHECKPOINT_PAGES)
        );
        w.commit_transaction().unwrap();
        assert_eq!(settings(&w), writer);
    }
}
