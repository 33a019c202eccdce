//! `App`: one opened vault with the read handles of its store and index, its writer's queue, and
//! its hooks. Every command takes `&App`; the writing handles live on the writer thread alone
//! (`writer.rs`), so no command can change the store or the index but through a writer job: the
//! read handles have no writing method (pkm-block's and pkm-index's `compile_fail` examples).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};
use pkm_block::BlockStore;
use pkm_core::{KbError, KbResult, Vault, VaultPath};
use pkm_index::{IndexEngine, IndexWriter, IndexingGuard, SearchLanguage};
use pkm_markdown::{Dialect, Flavor};

use crate::hooks::SaveHooks;
use crate::lock::VaultLock;
use crate::pending::{Pending, same_fingerprint};
use crate::resolver::{LinkGraph, Resolver};
use crate::writer::Writer;

/// Each tag's lowercased key, its most common spelling and its number of notes: most used
/// first, ties by key (`commands/tags.rs`).
pub(crate) type TagCounts = Vec<(String, String, u64)>;

/// Tunables of one `App`.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// How long a write waits for a running rebuild before answering VaultLocked.
    pub write_budget: Duration,
    /// How long an index-backed read waits for the first scan before answering VaultLocked.
    pub warm_wait: Duration,
    /// Bytes of JSON one list result may take (`list_pages`, searches, backlinks; half of it for
    /// the graph's nodes): a longer list is cut, with its continuation where it has one. No limit
    /// by default; a front end sets its own (the MCP server: its response cap).
    pub list_budget: usize,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            write_budget: Duration::from_secs(10),
            warm_wait: Duration::from_secs(3),
            list_budget: usize::MAX,
        }
    }
}

/// An opened vault.
pub struct App {
    pub(crate) vault: Vault,
    /// The vault's folder, held open: every note is opened, written, renamed, removed and listed
    /// relative to it, never by absolute path (`beneath.rs`).
    pub(crate) root: crate::beneath::Root,
    /// The app the vault is kept with, detected at open ([`detect_dialect`]).
    pub(crate) dialect: Dialect,
    /// The store's read handle; its writing half is the writer thread's.
    pub(crate) store: BlockStore,
    /// The index's read handle; its writing half is the writer thread's.
    pub(crate) index: IndexEngine,
    /// Exclusive for `kb_reindex rebuild`, shared for every other write (contract §10).
    pub(crate) guard: IndexingGuard,
    /// The writer thread's queue (`writer.rs`): every mutation of the store and the index runs
    /// there, one at a time, in the order asked.
    pub(crate) jobs: std::sync::mpsc::Sender<crate::writer::Job<App>>,
    /// The writer thread, joined when the app closes: it owns the store's and the index's writing
    /// halves and the vault's lead, all given up once it ends.
    writer_thread: OnceLock<JoinHandle<()>>,
    /// Content hashes of the server's own saves, by path, for the watcher: an event whose file
    /// hashes to what we wrote is our echo; anything else is another program's edit.
    pub(crate) own_saves: Mutex<HashMap<String, String>>,
    pub(crate) hooks: RwLock<Vec<Arc<dyn SaveHooks>>>,
    /// False until the first scan has brought the store and index up to date.
    ready: Mutex<bool>,
    ready_cv: Condvar,
    /// Changes seen by the watcher and not yet applied.
    pub(crate) pending: Pending,
    /// Bumped whenever the set of pages or their names may change; invalidates `resolver`.
    pub(crate) generation: AtomicU64,
    resolver: Mutex<Option<(u64, Arc<Resolver>)>>,
    /// The resolved link graph, for the resolver generation and store write count it was built at.
    link_graph: Mutex<Option<(GraphKey, Arc<LinkGraph>)>>,
    /// The vault's tags, most used first, for the store write count they were counted at
    /// (`commands/tags.rs`).
    pub(crate) tag_counts: Mutex<Option<(u64, Arc<TagCounts>)>>,
    pub(crate) config: AppConfig,
    /// Test seam (feature `test-support`): fails chosen steps of a save (see `write_path::Step`).
    #[cfg(feature = "test-support")]
    pub(crate) faults: RwLock<Option<crate::faults::FaultInjector>>,
}

impl Drop for App {
    /// Waits for the writer thread to close the store and the index and give up the vault's lead
    /// (`.pkm/write.lock`, held for the life of the app: one process writes a vault at a time), so
    /// the vault can be opened again as soon as this returns. On the writer thread itself (a job
    /// held the last handle) the thread ends right after.
    fn drop(&mut self) {
        let Some(thread) = self.writer_thread.take() else {
            return;
        };
        if thread.thread().id() == std::thread::current().id() {
            return;
        }
        // Wakes the thread, which finds the app gone and ends.
        let _ = self.jobs.send(Box::new(|_: &App, _: &mut Writer| None));
        if thread.join().is_err() {
            tracing::error!("the vault's writer thread panicked");
        }
    }
}

/// The vault's search index and whether it was made anew (empty), which it is when it is missing,
/// unreadable, of another schema, or older than the last commit the store relied on: commits are
/// not synced, so a machine crash can take the last ones (ADR-0024).
fn open_index(
    vault: &Vault,
    language: SearchLanguage,
    store: &BlockStore,
) -> KbResult<((IndexEngine, IndexWriter), bool)> {
    let unusable = match IndexEngine::open(&vault.search_dir(), language) {
        Ok((index, writer)) => match store.index_commit() {
            Ok(Some(relied_on)) if writer.last_commit() < relied_on => format!(
                "its last commit ({}) is older than the store's ({relied_on}), as after a \
                 machine crash",
                writer.last_commit()
            ),
            _ => return Ok(((index, writer), false)),
        },
        Err(e) => e.to_string(),
    };
    tracing::warn!(reason = %unusable, "search index unusable; recreating it");
    let handles = IndexEngine::recreate(&vault.search_dir(), language).map_err(|e| {
        tracing::error!(error = %e, "cannot create the search index");
        KbError::from(e)
    })?;
    Ok((handles, true))
}

/// What a cached link graph was built from: the resolver generation and the store's write count.
type GraphKey = (u64, u64);

impl App {
    /// Opens the store and the index of `vault`. The index is recreated when it is missing,
    /// corrupt or of another schema (it is a cache of the notes). Does not scan: call
    /// `App::warm_up` or `scan::scan`.
    ///
    /// Takes the vault's lead; fails with VaultLocked when another process leads it (a server
    /// that shares the vault uses [`App::open_leading`] once it holds the lock).
    pub fn open(vault: Vault, config: AppConfig) -> KbResult<Arc<App>> {
        match VaultLock::try_acquire(&vault)? {
            Some(lead) => Self::open_leading(vault, lead, config),
            None => {
                let mut e = KbError::locked(5);
                e.message = format!(
                    "another stratum-mcp process{} leads this vault",
                    VaultLock::holder(&vault)
                        .map(|pid| format!(" (pid {pid})"))
                        .unwrap_or_default()
                );
                Err(e)
            }
        }
    }

    /// [`App::open`] for the process that holds `lead`.
    pub fn open_leading(vault: Vault, lead: VaultLock, config: AppConfig) -> KbResult<Arc<App>> {
        let (store, store_writer) = BlockStore::open(&vault.db_path()).map_err(|e| {
            tracing::error!(error = %e, "cannot open the block store");
            KbError::from(e)
        })?;
        let language = search_language(&vault)?;
        let meaning = search_meaning(&vault, language)?;
        let ((index, index_writer), recreated) = open_index(&vault, language, &store)?;
        index.set_meaning(meaning);
        let root = crate::beneath::Root::open(vault.root()).map_err(|e| {
            tracing::error!(error = %e, "cannot open the vault folder");
            KbError::external("opening the vault folder")
        })?;
        let (jobs, queue) = std::sync::mpsc::channel();
        let dialect = dialect_of(&root);
        tracing::info!(dialect = dialect.flavor.as_str(), "vault dialect");
        let app = Arc::new(App {
            dialect,
            vault,
            root,
            store,
            index,
            guard: IndexingGuard::new(),
            jobs,
            writer_thread: OnceLock::new(),
            own_saves: Mutex::new(HashMap::new()),
            hooks: RwLock::new(Vec::new()),
            ready: Mutex::new(false),
            ready_cv: Condvar::new(),
            pending: Pending::default(),
            generation: AtomicU64::new(0),
            resolver: Mutex::new(None),
            link_graph: Mutex::new(None),
            tag_counts: Mutex::new(None),
            config,
            #[cfg(feature = "test-support")]
            faults: RwLock::new(None),
        });
        let writer = Writer::new(store_writer, index_writer, lead);
        let thread = crate::writer::spawn(Arc::downgrade(&app), queue, writer).map_err(|e| {
            tracing::error!(error = %e, "cannot start the writer thread");
            KbError::external("starting the vault's writer")
        })?;
        let _ = app.writer_thread.set(thread);
        if recreated {
            // The new index is empty: every note the store holds lags it until the next scan.
            // The writer's first job, so before any scan.
            app.queue(|app, writer| {
                if let Err(e) = writer.mark_all_lagging(&app.store) {
                    tracing::error!(error = %e, "cannot mark the notes as lagging the new index");
                }
            });
        }
        // A change of several notes cut short by a crash (`batch.rs`) is finished or undone on
        // the writer before this returns: before anything reads the vault or the first scan runs.
        app.recover_at_open()?;
        Ok(app)
    }

    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    pub fn dialect(&self) -> &Dialect {
        &self.dialect
    }

    /// The rebuild lock: exclusive during `kb_reindex rebuild`, shared by every write.
    pub fn indexing_guard(&self) -> &IndexingGuard {
        &self.guard
    }

    pub fn add_hooks(&self, hooks: Arc<dyn SaveHooks>) {
        self.hooks.write().push(hooks);
    }

    pub fn mark_ready(&self) {
        *self.ready.lock() = true;
        self.ready_cv.notify_all();
    }

    pub fn is_ready(&self) -> bool {
        *self.ready.lock()
    }

    /// Waits for the first scan, up to `warm_wait`; then a transient error.
    pub(crate) fn wait_ready(&self) -> KbResult<()> {
        let mut ready = self.ready.lock();
        if !*ready {
            let _ = self.ready_cv.wait_for(&mut ready, self.config.warm_wait);
        }
        if *ready {
            Ok(())
        } else {
            let mut e = KbError::locked(2);
            e.message = "The vault is still being indexed".into();
            e.hint = Some(
                "Retry in a few seconds; {open_page} and {index_status} answer meanwhile.".into(),
            );
            Err(e)
        }
    }

    /// The link resolver for the current set of pages, rebuilt when pages changed.
    pub(crate) fn resolver(&self) -> KbResult<Arc<Resolver>> {
        let generation = self.generation.load(Ordering::Acquire);
        let mut cached = self.resolver.lock();
        if let Some((g, r)) = cached.as_ref()
            && *g == generation
        {
            return Ok(Arc::clone(r));
        }
        let pages = self.store.all_pages().map_err(KbError::from)?;
        let block_refs = self.store.block_ref_pages().map_err(KbError::from)?;
        let resolver = Arc::new(Resolver::new(pages, block_refs, &self.dialect));
        *cached = Some((generation, Arc::clone(&resolver)));
        Ok(resolver)
    }

    /// Every resolved link of the vault, rebuilt when a page name or any stored link may have
    /// changed; `kb_graph` then walks it instead of loading and resolving every link per call.
    pub(crate) fn link_graph(&self) -> KbResult<Arc<LinkGraph>> {
        // Both read before the build: a write during the build leaves a stale key, not a stale graph.
        let key = (
            self.generation.load(Ordering::Acquire),
            self.store.write_count(),
        );
        let mut cached = self.link_graph.lock();
        if let Some((k, g)) = cached.as_ref()
            && *k == key
        {
            return Ok(Arc::clone(g));
        }
        let graph = Arc::new(
            LinkGraph::new(self.resolver()?, |add| self.store.for_each_link(add))
                .map_err(KbError::from)?,
        );
        *cached = Some((key, Arc::clone(&graph)));
        Ok(graph)
    }

    pub(crate) fn pages_changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the index reflects every note: the first scan is done, no rebuild runs, no note's
    /// index entries lag its store row, and every change the watcher saw and the writer has not
    /// applied yet is one the store already has (a `kb_reindex` applied it first).
    pub fn index_fresh(&self) -> bool {
        self.is_ready()
            && !self.guard.is_rebuilding()
            && self.store.index_lag_count().is_ok_and(|n| n == 0)
            && self.pending.settled(|note| self.store_has_file(note))
    }

    /// Whether the store holds the note's file as it is on disk: its row has the file's
    /// fingerprint, or the file is gone (or not a note file) and so is the row.
    fn store_has_file(&self, note: &VaultPath) -> bool {
        let Ok(row) = self.store.get_page(note) else {
            return false;
        };
        let file = self
            .root
            .facts(note.as_str())
            .ok()
            .filter(|f| f.kind == crate::beneath::Kind::File)
            .and_then(|f| Some((f.mtime?, f.size)));
        match (row, file) {
            (Some(row), Some((mtime, size))) => {
                same_fingerprint((row.mtime_ns, row.size), mtime, size)
            }
            (None, None) => true,
            _ => false,
        }
    }
}

/// The app a vault is kept with, from its own configuration (ADR-0008): a Logseq graph has
/// `logseq/config.edn` (read for its file-name and journal settings), an Obsidian vault a
/// `.obsidian/` folder; Logseq wins when both are there, since its files' names follow its rules.
/// The vault's search language: `search_language` in `.pkm/config.json` (a stemmer's name such
/// as `german`, or `none`), English when the file or the key is missing. A value that names no
/// stemmer, or a file that is not a JSON object, is an error: searching with the wrong stemmer
/// would be silently worse.
pub fn search_language(vault: &Vault) -> KbResult<SearchLanguage> {
    let Some(config) = vault_config(vault)? else {
        return Ok(SearchLanguage::default());
    };
    match config.get("search_language") {
        None | Some(serde_json::Value::Null) => Ok(SearchLanguage::default()),
        Some(serde_json::Value::String(name)) => SearchLanguage::from_name(name).ok_or_else(|| {
            KbError::invalid(format!(
                ".pkm/config.json: search_language {name:?} is not one of {}",
                SearchLanguage::names().collect::<Vec<_>>().join(", ")
            ))
        }),
        Some(other) => Err(KbError::invalid(format!(
            ".pkm/config.json: search_language must be a string, not {other}"
        ))),
    }
}

/// Whether search adds notes found by meaning (ADR-0015): `search_meaning` in
/// `.pkm/config.json` (`true` or `false`); when missing, on for English (the language of the
/// embedding model) and off for other search languages.
pub fn search_meaning(vault: &Vault, language: SearchLanguage) -> KbResult<bool> {
    let default = language == SearchLanguage::ENGLISH;
    let Some(config) = vault_config(vault)? else {
        return Ok(default);
    };
    match config.get("search_meaning") {
        None | Some(serde_json::Value::Null) => Ok(default),
        Some(serde_json::Value::Bool(on)) => Ok(*on),
        Some(other) => Err(KbError::invalid(format!(
            ".pkm/config.json: search_meaning must be true or false, not {other}"
        ))),
    }
}

/// `.pkm/config.json` as a JSON object, `None` when the file is missing.
fn vault_config(vault: &Vault) -> KbResult<Option<serde_json::Map<String, serde_json::Value>>> {
    let path = vault.config_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(KbError::invalid(format!(
                "cannot read .pkm/config.json: {e}"
            )));
        }
    };
    let config: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| KbError::invalid(format!(".pkm/config.json is not valid JSON: {e}")))?;
    match config {
        serde_json::Value::Object(config) => Ok(Some(config)),
        _ => Err(KbError::invalid(".pkm/config.json must hold a JSON object")),
    }
}

pub fn detect_dialect(root: &std::path::Path) -> Dialect {
    match crate::beneath::Root::open(root) {
        Ok(handle) => dialect_of(&handle),
        Err(_) => Dialect::default(),
    }
}

/// [`detect_dialect`], reading Logseq's config beneath the vault's handle.
fn dialect_of(handle: &crate::beneath::Root) -> Dialect {
    const CONFIG: &str = "logseq/config.edn";
    if handle
        .facts(CONFIG)
        .is_ok_and(|f| f.kind == crate::beneath::Kind::File)
    {
        // An unreadable config still marks a Logseq graph: its defaults apply.
        let text = handle
            .read_regular(CONFIG)
            .ok()
            .and_then(|(bytes, _)| String::from_utf8(bytes).ok())
            .unwrap_or_default();
        return Dialect::logseq(&text);
    }
    if handle
        .facts(".obsidian")
        .is_ok_and(|f| f.kind == crate::beneath::Kind::Dir)
    {
        return Dialect::of(Flavor::Obsidian);
    }
    Dialect::default()
}
