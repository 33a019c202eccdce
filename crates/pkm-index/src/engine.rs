//! `IndexEngine`: one Tantivy index of notes under `<vault>/.pkm/search`.
//!
//! One document per note, holding its blocks (ADR-0027). [`IndexEngine::open`] gives two handles:
//! the [`IndexEngine`] searches, for everyone; the [`IndexWriter`] holds Tantivy's one writer and
//! is the only way to change the index (not `Clone`: whoever holds it, the vault's writer thread,
//! writes alone). Writes become visible only at [`IndexWriter::commit`], which also reloads the
//! searcher, so the next search sees every prior write (read-your-writes). Searches never wait for
//! the writer.

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io::ErrorKind as IoErrorKind;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use parking_lot::Mutex;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::index::SegmentId;
use tantivy::indexer::{IndexWriterOptions, UserOperation};
use tantivy::postings::Postings;
use tantivy::query::{EnableScoring, Query};
use tantivy::schema::document::{DeserializeError, DocumentDeserialize, DocumentDeserializer};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, OwnedValue, STORED, STRING, Schema, TantivyDocument,
    TextFieldIndexing, TextOptions,
};
use tantivy::snippet::{Snippet, SnippetGenerator};
use tantivy::tokenizer::{TextAnalyzer, TokenizerManager};
use tantivy::{
    DocAddress, DocId, DocSet, Executor, Index, IndexReader, ReloadPolicy, Score, Searcher,
    SegmentOrdinal, SegmentReader, TERMINATED, Term,
};

use crate::directory::IndexDirectory;
use crate::embed::{self, Embedder, Model, NOTE_TOKENS, QueryVector, WordPieces};
use crate::error::IndexError;
use crate::query::{
    BlockScorer, BlockWords, Clause, MATCHINGS, Matching, SearchFields, Typos, clauses,
    coverage_weight, exact_key, field_query, note_query, words_in_text,
};
use crate::tokenizer::{ANALYZER_NAME, SearchLanguage, Stopwords, analyze, analyzer, value_starts};

/// Search pagination never reaches past this many matches (contract §11,
/// `MCP_TOKEN_MAX_SCORE_MATCHES`): `total` is capped here and `offset + limit` is clipped to it.
pub const MAX_SCORE_MATCHES: usize = 5000;

/// Version of everything that decides what the index holds: the schema *and* the analyzer. Bump it
/// whenever either changes, so that an index built by an older binary is reported as
/// [`IndexError::SchemaMismatch`] and rebuilt, instead of silently answering with stale tokens.
pub const SCHEMA_VERSION: &str = "pkm-index/9";

/// File in the index directory holding [`SCHEMA_VERSION`] and the search language. Tantivy's garbage collector only
/// deletes files it created itself, so it leaves this one alone.
const VERSION_FILE: &str = "pkm-schema-version";

/// The size under which segments are all in one layer of the merge policy ([`merge_policy`]):
/// about forty notes. ADR-0022 set it at 1,000 documents when a note was a document per block and
/// one more (~25 on the bench vaults); one document per note since ADR-0027.
const MERGE_MIN_LAYER_DOCS: u32 = 40;

/// Writer memory budget. Measured on a 10k-note rebuild (2 cores): 30 MB flushes 4 segments while
/// the store is still being written, 2.9 s; 120 MB leaves one large flush for the end, 3.4 s.
const WRITER_MEMORY_BYTES: usize = 30_000_000;

/// Analyzers kept warm between searches (see `IndexEngine::warm`): searches at once beyond this
/// many start from a cold stemming cache. Each cache holds up to 65,536 words.
const WARM_ANALYZERS: usize = 8;

/// Tokens of a query read for its vector.
const QUERY_TOKENS: usize = 128;
/// Tokens of a block read for its vector, when a hit found by meaning picks its block.
const BLOCK_TOKENS: usize = 256;
/// A note joins the results by meaning alone only from this cosine similarity with the query:
/// below it, a query of unrelated words would list the whole vault.
const MEANING_FLOOR: f32 = 0.3;
/// The floor for notes found by meaning alone when every word of the query matched some note.
const MEANING_FLOOR_WORDS_FOUND: f32 = 0.5;
/// At most this many threads collect one search's segments (see `search_threads`).
const MAX_SEARCH_THREADS: usize = 4;
/// A search runs on the pool from this many documents (blocks and notes): about 500 notes. Below
/// it, a search is a millisecond or less, and handing work to threads and back costs more than
/// it saves.
const PARALLEL_MIN_DOCS: u64 = 10_000;
/// Under meaning, how deep each ranking is read before fusing (at least the page asked for).
const FUSION_DEPTH: usize = 50;
/// Weights of the fused score (see `fuse`): the word ranking's, by how its notes matched, and
/// the meaning's.
const FUSE_EVERY: f32 = 1.0;
const FUSE_FUZZY: f32 = 0.7;
const FUSE_COVERAGE: f32 = 0.5;
const FUSE_MEANING: f32 = 2.0;

/// Approximate length of a snippet, in bytes of the block's text.
const SNIPPET_MAX_BYTES: usize = 160;

/// One note, as the command layer hands it to the index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoteDoc {
    /// The note's title; with its aliases and its file name, the names that rank it first.
    pub title: String,
    pub aliases: Vec<String>,
    /// Its blocks in page order. A note without blocks is not searchable (a hit points at a block).
    pub blocks: Vec<BlockDoc>,
    /// Its meaning vector, worked out ahead ([`NoteMeaning::of`] the title and the blocks' text
    /// above); `None`: worked out when the note is indexed.
    pub meaning: Option<NoteMeaning>,
}

/// A note's meaning vector as the index stores it (quantised; none when no token of the note is
/// known). Worked out on the one thread that writes the index, it was ~0.9 s of that thread's
/// time in a 10k-note cold index (docs/benchmarks.md), so a scan works it out while it reads and
/// parses the notes, on every core.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NoteMeaning(Option<Vec<u8>>);

impl NoteMeaning {
    /// The meaning of a note of `title` whose blocks hold `texts`, in page order.
    pub fn of<'a>(
        title: &str,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Result<NoteMeaning, IndexError> {
        Ok(note_meaning(embed::model()?, title, texts))
    }
}

thread_local! {
    /// The word pieces this thread's note vectors have cut so far, and the address of the model
    /// they are of: a scan works out its notes' vectors on a few threads that live on.
    static KNOWN_PIECES: RefCell<(usize, WordPieces)> = RefCell::default();
}

/// The vector of the title and the text, from the first `NOTE_TOKENS` tokens.
fn note_meaning<'a>(
    model: &Model<'_>,
    title: &str,
    texts: impl IntoIterator<Item = &'a str>,
) -> NoteMeaning {
    let mut ids = Vec::new();
    KNOWN_PIECES.with_borrow_mut(|(of, known)| {
        let this = std::ptr::from_ref(model).addr();
        if *of != this {
            *known = WordPieces::default();
            *of = this;
        }
        model.tokenize_known(title, NOTE_TOKENS, &mut ids, known);
        for text in texts {
            model.tokenize_known(text, NOTE_TOKENS, &mut ids, known);
        }
    });
    NoteMeaning(model.mean(&ids).map(|v| embed::quantize(&v)))
}

/// One block, as the command layer hands it to the index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockDoc {
    pub block_id: String,
    pub content: String,
    /// The tags tag search finds this block by, matched case-insensitively, a leading `#`
    /// ignored: the block's own inline tags and, on the first block of a page only, the page's
    /// tags (so a tagged page is one hit, not one per block).
    pub tags: Vec<String>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub block_id: String,
    pub page_path: String,
    /// The block's full text, as stored.
    pub content: String,
    /// The content around the best match, as plain text exactly as in the note (no HTML
    /// escaping), with matched words wrapped in `<b>..</b>` and `…` marking text cut at either
    /// end. When nothing in the content matched (a title-only match, a tag search) it is the start
    /// of the content. Not safe to render as HTML as is: the note's own `<`, `&` stay.
    pub snippet: String,
    pub score: f32,
}

/// One page of results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchPage {
    pub hits: Vec<Hit>,
    /// How many documents match in all; for [`IndexEngine::search`], capped at
    /// [`MAX_SCORE_MATCHES`].
    pub total: usize,
}

/// The fields of the schema: one document per note (see [`SearchFields`]), which also holds its
/// blocks, one value each of `block_id` and `body` in block order.
#[derive(Debug, Clone, Copy)]
struct Fields {
    block_id: Field,
    search: SearchFields,
    /// The tags of the note's blocks: each block's distinct tags, one value each (so a tag's
    /// term frequency in a note is how many of its blocks carry it), stored beside `tagged`.
    tags: Field,
    /// For each value of `tags`, the position of its block in the note.
    tagged: Field,
    /// Where each block's text starts among the positions of `body` (see `value_starts`): where a
    /// phrase found in the body stands tells which block holds it. Stored, one per block.
    start: Field,
    /// How many blocks the note has.
    blocks: Field,
    meaning: Field,
}

const BLOCK_ID: &str = "block_id";
const PAGE_PATH: &str = "page_path";
const TAGS: &str = "tags";
const TAGGED: &str = "tagged";
const START: &str = "start";
const BLOCKS: &str = "blocks";
const MEANING: &str = "meaning";

/// The schema of every index this binary opens, and its fields: built once, and the one place
/// the engine, the writer and `StoredNote` take fields from. An index on the disk whose schema
/// differs is rebuilt ([`IndexError::SchemaMismatch`]), so these fields are its.
static SCHEMA: LazyLock<(Schema, Fields)> = LazyLock::new(build_schema);

fn build_schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    // One document per note (ADR-0027): a document per block as well was 235k of the 245k
    // documents of the 10k-note bench vault, each with its own stored text, page-path term and
    // fast values, while no search ever matched one by its words.
    //
    // Block ids are stored only: never looked up as terms (a term dictionary of ~25 random UUIDs
    // per note was a quarter of the indexing thread's time) nor sorted on.
    let block_id = builder.add_text_field(BLOCK_ID, STORED);
    // FAST: the page order of hits and of tag search sorts on it without the document store.
    let page_path = builder.add_text_field(PAGE_PATH, STRING | STORED | FAST);
    let tag_options = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_fieldnorms(false)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let tags = builder.add_text_field(TAGS, tag_options);
    let tagged = builder.add_u64_field(TAGGED, STORED);
    let start = builder.add_u64_field(START, STORED);
    let blocks = builder.add_u64_field(BLOCKS, FAST);
    // The names (title, aliases, file name) and the text of every block (one value each), with
    // positions (phrases in titles and within a block). The text is stored: a hit shows a block.
    let name = builder.add_text_field("name", text.clone());
    let name_exact = builder.add_text_field("name_exact", STRING);
    let body = builder.add_text_field("body", text.set_stored());
    // The note's meaning: its vector (see `embed::quantize`), read by searches from the fast field
    // into a cache per segment.
    let meaning = builder.add_bytes_field(MEANING, FAST);
    let fields = Fields {
        block_id,
        search: SearchFields {
            name,
            name_exact,
            body,
            page_path,
        },
        tags,
        tagged,
        start,
        blocks,
        meaning,
    };
    (builder.build(), fields)
}

fn tokenizers(language: SearchLanguage) -> TokenizerManager {
    let manager = TokenizerManager::default();
    manager.register(ANALYZER_NAME, analyzer(language));
    manager
}

/// What [`VERSION_FILE`] holds for an index of `language`.
fn version_line(language: SearchLanguage) -> String {
    format!("{SCHEMA_VERSION} {}", language.name())
}

/// Normalizes a tag for indexing and lookup: trimmed, leading `#`s removed, lowercased.
pub fn normalize_tag(tag: &str) -> String {
    tag.trim().trim_start_matches('#').trim().to_lowercase()
}

/// The read handle of one vault's search index: every search, never a change. `Send + Sync`:
/// share it behind an `Arc`. Its writing half is the [`IndexWriter`] that [`IndexEngine::open`]
/// hands out with it.
///
/// A read handle cannot change the index:
///
/// ```compile_fail,E0599
/// # fn f(index: &pkm_index::IndexEngine) {
/// index.delete_page("note.md");
/// # }
/// ```
pub struct IndexEngine {
    /// Reloaded by `commit` only (`ReloadPolicy::Manual`), which is what makes read-your-writes
    /// deterministic instead of "after the next file-watch tick".
    reader: IndexReader,
    analyzer: TextAnalyzer,
    /// Copies of `analyzer` whose stemming caches searches keep warm: a search takes one (or a new
    /// copy) and gives it back, up to [`WARM_ANALYZERS`] kept. Analyzing the blocks of a page of
    /// hits with a cold cache was most of a search's time.
    warm: Mutex<Vec<TextAnalyzer>>,
    language: SearchLanguage,
    /// The function words a query of `language` drops.
    stopwords: Stopwords,
    /// The embedding model (compiled in), for note vectors and the meaning of queries.
    model: &'static Model<'static>,
    /// Whether searches add notes found by meaning (see [`IndexEngine::set_meaning`]).
    meaning: AtomicBool,
    /// The note vectors of each segment, read once from its fast field.
    vectors: Mutex<HashMap<SegmentId, Arc<SegmentVectors>>>,
    /// The threads a large search runs on (ADR-0023), started by the first one.
    pool: OnceLock<Executor>,
}

/// The writing half of one vault's search index. Not `Clone`; whoever holds it (the vault's writer
/// thread) is the only code that can change the index.
///
/// ```compile_fail,E0599
/// # fn f(writer: pkm_index::IndexWriter) {
/// let second = writer.clone();
/// # }
/// ```
pub struct IndexWriter {
    /// The only writer of the directory (Tantivy also locks it on disk against other processes);
    /// taken only by the close ([`IndexWriter`]'s `Drop`), which waits for its merges.
    writer: Option<tantivy::IndexWriter>,
    /// The searchers' reader, reloaded at each commit.
    reader: IndexReader,
    /// Analyses the names of each note (its exact keys), its stemming cache kept warm from one
    /// note to the next: a fresh copy per note stemmed every word of every name.
    analyzer: TextAnalyzer,
    /// The embedding model, for each note's vector.
    model: &'static Model<'static>,
    /// The stamp of the last commit ([`IndexWriter::last_commit`]).
    last_commit: u64,
    /// Makes the index durable once `writer` is dropped (fields drop in order, so no commit can
    /// follow): a clean close leaves no check for the next open (`directory.rs`).
    durable_on_close: DurableOnClose,
}

impl Drop for IndexWriter {
    /// A clean close lets the merges under way finish, instead of cutting them at the process's
    /// exit: a cut merge leaves its files on the disk until the next open, and the index
    /// unmerged. A cold index of 100k notes ends with one (the merge of its ~8 segments), cut in
    /// 1 of 7 runs once the index's files were synced before the close (`make_durable`). Then
    /// `durable_on_close` syncs what the merges committed.
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            // A merge that failed changed nothing: the index still names the segments it read.
            let _ = writer.wait_merging_threads();
        }
    }
}

/// Makes its index durable when dropped ([`IndexDirectory::make_durable`]). Should that fail,
/// the index keeps its mark, and the next open checks its files.
struct DurableOnClose {
    index: Index,
    directory: IndexDirectory,
}

impl DurableOnClose {
    /// Must not run beside a commit: it reads which files the last commit holds.
    fn make_durable(&self) -> std::io::Result<()> {
        self.directory.make_durable(|| {
            files_of_last_commit(&self.index).map_err(|e| std::io::Error::other(e.to_string()))
        })
    }
}

impl Drop for DurableOnClose {
    fn drop(&mut self) {
        let _ = self.make_durable();
    }
}

/// Every file the last commit of `index` reads: each segment's components and its deletes.
fn files_of_last_commit(index: &Index) -> tantivy::Result<Vec<std::path::PathBuf>> {
    use tantivy::index::SegmentComponent::{
        Delete, FastFields, FieldNorms, Positions, Postings, Store, Terms,
    };
    let mut files = Vec::new();
    for segment in index.searchable_segment_metas()? {
        for component in [Postings, Positions, Terms, FieldNorms, FastFields, Store] {
            files.push(segment.relative_path(component));
        }
        if segment.has_deletes() {
            files.push(segment.relative_path(Delete));
        }
    }
    Ok(files)
}

/// An index that may hold writes not yet on the disk is used only if every file of its last
/// commit is whole: a machine crash can cut a file the commit point names (`directory.rs`).
/// Not Tantivy's `Index::validate_checksum`: that checks only the files its managed list names,
/// and the list is itself written unsynced (ADR-0022), so a crash can leave a file off it.
fn check_last_commit(index: &Index) -> Result<(), IndexError> {
    for file in files_of_last_commit(index).map_err(unreadable)? {
        match index.directory().validate_checksum(&file) {
            Ok(true) => {}
            Ok(false) => {
                return Err(IndexError::Corrupt(format!(
                    "{} does not match its checksum (cut by a crash?)",
                    file.display()
                )));
            }
            Err(e) => return Err(IndexError::Corrupt(e.to_string())),
        }
    }
    Ok(())
}

impl std::fmt::Debug for IndexWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexWriter").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for IndexEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexEngine")
            .field("docs", &self.doc_count())
            .finish_non_exhaustive()
    }
}

impl IndexEngine {
    /// Opens the index in `dir` (normally `<vault>/.pkm/search`) whose words are stemmed in
    /// `language`, creating it when `dir` is missing or empty. An index built with another
    /// [`SCHEMA_VERSION`], language or schema gives
    /// [`IndexError::SchemaMismatch`]; one that cannot be read gives [`IndexError::Corrupt`]; in
    /// both cases call [`IndexEngine::recreate`] and reindex. Another process holding the index
    /// gives [`IndexError::Tantivy`] (a lock failure), which a recreate would not fix.
    ///
    /// Gives the read handle, for everyone, and the writing handle, for the one thread that writes:
    ///
    /// ```no_run
    /// # fn f() -> Result<(), pkm_index::IndexError> {
    /// let dir = std::path::Path::new("search");
    /// let (index, mut writer) = pkm_index::IndexEngine::open(dir, Default::default())?;
    /// writer.delete_page("note.md")?;
    /// writer.commit()?;
    /// assert_eq!(index.doc_count()?, 0);
    /// # Ok(()) }
    /// ```
    pub fn open(
        dir: &Path,
        language: SearchLanguage,
    ) -> Result<(IndexEngine, IndexWriter), IndexError> {
        fs::create_dir_all(dir)?;
        if !dir.join("meta.json").exists() {
            if has_foreign_entries(dir)? {
                return Err(IndexError::Corrupt("index metadata is missing".to_owned()));
            }
            return Self::create_in(dir, language);
        }
        match fs::read_to_string(dir.join(VERSION_FILE)) {
            Ok(version) if version.trim() == version_line(language) => {}
            Ok(_) => return Err(IndexError::SchemaMismatch),
            Err(err) if err.kind() == IoErrorKind::NotFound => {
                return Err(IndexError::SchemaMismatch);
            }
            Err(err) => return Err(IndexError::Io(err)),
        }
        let directory = IndexDirectory::open(dir).map_err(unreadable)?;
        let unsynced = directory.is_marked();
        let index = Index::open(directory.clone()).map_err(unreadable)?;
        if index.schema() != SCHEMA.0 {
            return Err(IndexError::SchemaMismatch);
        }
        if unsynced {
            check_last_commit(&index)?;
        }
        Self::from_index(index, directory, language)
    }

    /// Deletes `dir` with everything in it and creates an empty index of `language` there.
    /// Drop any engine open on `dir` first.
    pub fn recreate(
        dir: &Path,
        language: SearchLanguage,
    ) -> Result<(IndexEngine, IndexWriter), IndexError> {
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(err) if err.kind() == IoErrorKind::NotFound => {}
            Err(err) => return Err(IndexError::Io(err)),
        }
        fs::create_dir_all(dir)?;
        Self::create_in(dir, language)
    }

    fn create_in(
        dir: &Path,
        language: SearchLanguage,
    ) -> Result<(IndexEngine, IndexWriter), IndexError> {
        let directory = IndexDirectory::open(dir)?;
        let index = Index::builder()
            .schema(SCHEMA.0.clone())
            .tokenizers(tokenizers(language))
            .open_or_create(directory.clone())?;
        // Written after the index: a crash in between leaves an index without a version, which
        // the next open reports as a mismatch and the caller rebuilds.
        fs::write(
            dir.join(VERSION_FILE),
            format!("{}\n", version_line(language)),
        )?;
        Self::from_index(index, directory, language)
    }

    fn from_index(
        mut index: Index,
        directory: IndexDirectory,
        language: SearchLanguage,
    ) -> Result<(IndexEngine, IndexWriter), IndexError> {
        index.set_tokenizers(tokenizers(language));
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY_BYTES)
            // One indexing thread: the machine has two cores, and all docs of a commit land in one
            // segment. One merge thread so that merging never takes both cores.
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index.writer_with_options(options).map_err(unreadable)?;
        writer.set_merge_policy(Box::new(merge_policy()));
        let last_commit = writer.commit_opstamp();
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(unreadable)?;
        let analyzer = index.tokenizer_for_field(SCHEMA.1.search.body)?;
        let model = embed::model()?;
        let engine = IndexEngine {
            reader: reader.clone(),
            analyzer: analyzer.clone(),
            warm: Mutex::new(Vec::new()),
            language,
            stopwords: Stopwords::of(language),
            model,
            meaning: AtomicBool::new(true),
            vectors: Mutex::new(HashMap::new()),
            pool: OnceLock::new(),
        };
        let writer = IndexWriter {
            writer: Some(writer),
            reader,
            analyzer,
            model,
            last_commit,
            durable_on_close: DurableOnClose { index, directory },
        };
        Ok((engine, writer))
    }
}

impl IndexWriter {
    /// Replaces the document of `page_path` with `note`'s. Not visible until
    /// [`IndexWriter::commit`].
    pub fn replace_page(&mut self, page_path: &str, note: &NoteDoc) -> Result<(), IndexError> {
        let mut ops = vec![UserOperation::Delete(Term::from_field_text(
            SCHEMA.1.search.page_path,
            page_path,
        ))];
        ops.extend(self.document(page_path, note).map(UserOperation::Add));
        // `run` applies the delete and the add as one group: no commit can fall between them.
        self.tantivy()?.run(ops)?;
        Ok(())
    }

    /// Adds the document of a page the index does not hold (a rebuild after
    /// [`IndexWriter::clear`], or a page never indexed): [`IndexWriter::replace_page`] without the
    /// delete, which every commit would otherwise apply to every segment.
    pub fn add_page(&mut self, page_path: &str, note: &NoteDoc) -> Result<(), IndexError> {
        if let Some(doc) = self.document(page_path, note) {
            self.tantivy()?.add_document(doc)?;
        }
        Ok(())
    }

    /// The note's document: its names, its blocks (id, text, tags) and its meaning. None for a
    /// note without blocks (a hit points at a block).
    fn document(&mut self, page_path: &str, note: &NoteDoc) -> Option<TantivyDocument> {
        if note.blocks.is_empty() {
            return None;
        }
        let fields = &SCHEMA.1;
        let f = &fields.search;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.page_path, page_path);
        let file_name = Path::new(page_path)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let mut keys: Vec<String> = Vec::new();
        let names = std::iter::once(note.title.as_str())
            .chain(note.aliases.iter().map(String::as_str))
            .chain(std::iter::once(file_name));
        for name in names {
            let key = exact_key(&mut self.analyzer, name);
            if !key.is_empty() && !keys.contains(&key) {
                doc.add_text(f.name, name);
                keys.push(key);
            }
        }
        for key in keys {
            doc.add_text(f.name_exact, key);
        }
        let mut tags: Vec<String> = Vec::new();
        let starts = value_starts(note.blocks.iter().map(|b| b.content.as_str()));
        for ((position, block), start) in (0u64..).zip(&note.blocks).zip(starts) {
            doc.add_text(fields.block_id, &block.block_id);
            doc.add_text(f.body, &block.content);
            doc.add_u64(fields.start, start);
            tags.clear();
            tags.extend(
                block
                    .tags
                    .iter()
                    .map(|t| normalize_tag(t))
                    .filter(|t| !t.is_empty()),
            );
            tags.sort_unstable();
            tags.dedup();
            for tag in &tags {
                doc.add_text(fields.tags, tag);
                doc.add_u64(fields.tagged, position);
            }
        }
        doc.add_u64(
            fields.blocks,
            u64::try_from(note.blocks.len()).unwrap_or(u64::MAX),
        );
        let worked_out;
        let meaning = match &note.meaning {
            Some(meaning) => meaning,
            None => {
                worked_out = note_meaning(
                    self.model,
                    &note.title,
                    note.blocks.iter().map(|b| b.content.as_str()),
                );
                &worked_out
            }
        };
        if let Some(bytes) = &meaning.0 {
            doc.add_bytes(fields.meaning, bytes);
        }
        Some(doc)
    }

    /// Removes every doc of `page_path`. Not visible until [`IndexWriter::commit`].
    pub fn delete_page(&mut self, page_path: &str) -> Result<(), IndexError> {
        self.tantivy()?
            .delete_term(Term::from_field_text(SCHEMA.1.search.page_path, page_path));
        Ok(())
    }

    /// Removes every doc. Not visible until [`IndexWriter::commit`].
    pub fn clear(&mut self) -> Result<(), IndexError> {
        self.tantivy()?.delete_all_documents()?;
        Ok(())
    }

    /// Drops every write since the last commit (a scan that failed half-way: its clear and its
    /// adds must not reach the next commit).
    pub fn rollback(&mut self) -> Result<(), IndexError> {
        let writer = self.tantivy()?;
        let last_commit = writer.rollback()?;
        // Tantivy's rollback starts a new writer of its own, with the default merge policy.
        writer.set_merge_policy(Box::new(merge_policy()));
        self.last_commit = last_commit;
        Ok(())
    }

    /// Commits every prior write and shows it to the next search. Returns the commit's stamp,
    /// which grows with each commit of this index ([`IndexWriter::last_commit`]).
    ///
    /// A commit is not synced to the disk (ADR-0024): a process that dies loses nothing, but a
    /// machine crash may lose the last commits, or cut their files. An index with a cut file
    /// fails to open ([`IndexError::Corrupt`]); one that lost whole commits opens with an older
    /// [`IndexWriter::last_commit`] than the stamps its caller saw, which the caller recorded.
    pub fn commit(&mut self) -> Result<u64, IndexError> {
        let stamp = self.commit_unpublished()?;
        self.publish()?;
        Ok(stamp)
    }

    /// [`IndexWriter::commit`] in two steps: the writes committed here, shown to searches by
    /// [`IndexWriter::publish`]. For a commit that runs beside the store's (a bulk load), so that
    /// searches see the new index only once the store's rows are committed too.
    pub fn commit_unpublished(&mut self) -> Result<u64, IndexError> {
        self.last_commit = self.tantivy()?.commit()?;
        Ok(self.last_commit)
    }

    /// Tantivy's writer, there until the close.
    fn tantivy(&mut self) -> Result<&mut tantivy::IndexWriter, IndexError> {
        self.writer
            .as_mut()
            .ok_or_else(|| IndexError::Io(std::io::Error::other("the index writer is closed")))
    }

    /// Syncs the files of the last commit now, as a clean close does (`directory.rs`): after the
    /// commit of a whole vault, while the caller's other work goes on, rather than at the close
    /// after everything else. A later commit marks the index again.
    pub fn make_durable(&mut self) -> Result<(), IndexError> {
        self.durable_on_close.make_durable()?;
        Ok(())
    }

    /// The stamp of the index's last commit: at open, the one on the disk.
    pub fn last_commit(&self) -> u64 {
        self.last_commit
    }

    /// Shows the last commit to the next search.
    pub fn publish(&mut self) -> Result<(), IndexError> {
        // The one writer reloads: commit + reload cannot interleave with another commit, so the
        // searchers never go back to an older generation.
        self.reader.reload()?;
        Ok(())
    }
}

impl IndexEngine {
    /// Full-text search: notes ranked, each shown by its best block.
    ///
    /// `query` is analyzed with the index's own analyzer and never parsed as query syntax:
    /// characters such as `:`, `*`, `(`, `-` only separate words. Unquoted function words of the
    /// vault's language ("how do I", "in my") are dropped, unless nothing else is left. A note
    /// matches when every word is in its text (in any of its blocks) or its names (title,
    /// aliases, file name), and every `"quoted phrase"` (and every run of Han or kana) is in one
    /// of its blocks or a name. When no note matches, words of five or more characters may match
    /// with a typo; when still none, notes holding any of the words match, ranked by how much of
    /// the query they hold (each word weighted by its rarity, a name counting more). A query
    /// without any word gives zero hits.
    ///
    /// Notes rank by BM25 over their text, a match in a name weighted up, the query's words as a
    /// phrase in a name more, the query being a name most. With meaning on (the default, see
    /// [`IndexEngine::set_meaning`]), notes whose vector is close to the query's are added and
    /// the two rankings fused (see `fuse`): a note can be found by what it means without sharing
    /// a word with the query. Each hit is the note's block where the words score best (when no
    /// block holds a word, the block closest in meaning, or the first), with a snippet of it.
    /// Order: score descending, then page path ascending, so paging is stable. `total` is the
    /// number of matching notes (under the matching that found them, plus those found by meaning
    /// alone), capped at [`MAX_SCORE_MATCHES`]; results past that cap are never returned.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        offset: usize,
    ) -> Result<SearchPage, IndexError> {
        let mut analyzer = self.take_analyzer();
        let clauses = clauses(&mut analyzer, &mut self.stopwords.clone(), query);
        if clauses.is_empty() {
            self.give_back(analyzer);
            return Ok(SearchPage::default());
        }
        let meaning = if self.meaning.load(Ordering::Relaxed) {
            self.model.embed(query, QUERY_TOKENS).map(QueryVector::new)
        } else {
            None
        };
        let exact = exact_key(&mut analyzer, query);
        let searcher = self.reader.searcher();
        let fields = &SCHEMA.1.search;
        let end = offset.saturating_add(limit).min(MAX_SCORE_MATCHES);
        // Fused, a page is cut from the first `depth` of each ranking.
        let range = match meaning {
            Some(_) => 0..end.max(FUSION_DEPTH),
            None => offset..end,
        };
        let note_count = searcher.num_docs() as f32;
        let rarity = |term: &str| {
            let with = searcher
                .doc_freq(&Term::from_field_text(fields.body, term))
                .unwrap_or(0) as f32;
            (1.0 + (note_count - with + 0.5) / (with + 0.5)).ln()
        };
        // Under Coverage, each clause weighs its rarity and, with the meaning model (English),
        // how specific its word is (`coverage_weight`).
        let weights: Vec<f32> = clauses
            .iter()
            .map(|c| {
                let specificity = meaning
                    .as_ref()
                    .and_then(|_| self.model.specificity(&c.typed));
                coverage_weight(c.terms.iter().map(|t| rarity(t)).sum(), specificity)
            })
            .collect();
        let mut automata = Typos::default();
        let executor = self.executor_for(&searcher);
        // The words' search and the meaning scan read the same searcher and nothing of each
        // other: beside each other, on two cores where there are.
        let (words, similar) = alongside(
            executor,
            || -> Result<_, IndexError> {
                let mut last = (Matched::default(), Vec::new(), MATCHINGS[0]);
                for matching in MATCHINGS {
                    let notes =
                        note_query(fields, &clauses, &weights, &exact, matching, &mut automata);
                    let (matched, found) = if range.start < range.end && offset < end {
                        let top = TopNotes { depth: range.end };
                        search_on(executor, &searcher, &*notes, &(MatchedCollector, top))?
                    } else {
                        let matched = search_on(executor, &searcher, &*notes, &MatchedCollector)?;
                        (matched, Vec::new())
                    };
                    let any = matched.count > 0;
                    last = (matched, found, matching);
                    if any {
                        break;
                    }
                }
                Ok(last)
            },
            || {
                meaning
                    .as_ref()
                    .map(|query| self.similar_notes(&searcher, query))
                    .transpose()
            },
        );
        let (matched, found, matching) = words?;
        let mut total = matched.count;
        // Fused, the word ranking only needs the right notes (fusion orders them); alone, it is
        // the page, in order.
        let found = top_notes(&searcher, found, range.clone(), meaning.is_none())?;
        let ranked = match similar? {
            Some(mut similar) => {
                if matching == Matching::Every {
                    // The words answered: a note they did not find joins only when close.
                    similar.retain(|(a, sim)| *sim >= MEANING_FLOOR_WORDS_FOUND || matched.has(*a));
                }
                total += similar.iter().filter(|(a, _)| !matched.has(*a)).count();
                let depth = range.end;
                if similar.len() > depth {
                    similar.select_nth_unstable_by(depth, |a, b| b.1.total_cmp(&a.1));
                    similar.truncate(depth);
                }
                fuse(&found, &similar, matching)
            }
            None => found,
        };
        let mut ranked = ranked;
        if meaning.is_some() {
            // Fused, the page is cut from the notes in score order: only those down to the
            // `end`-th score (ties included, which the page path orders) need their page path.
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        }
        let mut notes: Vec<(f32, String, DocAddress)> = Vec::with_capacity(ranked.len().min(end));
        let mut columns: HashMap<SegmentOrdinal, Option<StrColumn>> = HashMap::new();
        for (score, note) in ranked {
            if meaning.is_some()
                && notes.len() >= end
                && notes
                    .last()
                    .is_none_or(|(last, _, _)| score.total_cmp(last).is_lt())
            {
                break;
            }
            let column = match columns.entry(note.segment_ord) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(new) => new.insert(
                    searcher
                        .segment_reader(note.segment_ord)
                        .fast_fields()
                        .str(PAGE_PATH)?,
                ),
            };
            notes.extend(
                page_path_of(column.as_ref(), note.doc_id)?.map(|path| (score, path, note)),
            );
        }
        if meaning.is_some() {
            notes.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            notes = notes
                .into_iter()
                .skip(offset)
                .take(end.saturating_sub(offset))
                .collect();
        }
        self.give_back(analyzer);
        let highlight = words_in_text(fields.body, &clauses, matching, &mut automata);
        let scored = ScoredBlocks {
            searcher: &searcher,
            scorer: BlockScorer::new(&clauses, matching, rarity, &mut automata),
            meaning: meaning.as_ref(),
            snippets: self.snippet_generator(&searcher, &*highlight)?,
        };
        // Each hit's blocks are read and scored by themselves: half the page on each of two
        // threads where there are.
        let hits = match executor {
            Executor::ThreadPool(_) if notes.len() > 1 => {
                let (first, second) = notes.split_at(notes.len().div_ceil(2));
                let (first, second) = alongside(
                    executor,
                    || self.hits_of(&scored, first),
                    || self.hits_of(&scored, second),
                );
                let mut hits = first?;
                hits.extend(second?);
                hits
            }
            _ => self.hits_of(&scored, &notes)?,
        };
        Ok(SearchPage {
            hits,
            total: total.min(MAX_SCORE_MATCHES),
        })
    }

    /// The hits of `notes` (score, page path, address), in their order: each note's best block.
    fn hits_of(
        &self,
        scored: &ScoredBlocks<'_>,
        notes: &[(f32, String, DocAddress)],
    ) -> Result<Vec<Hit>, IndexError> {
        let mut analyzer = self.take_analyzer();
        let mut embedder = Embedder::new(self.model);
        let mut hits = Vec::with_capacity(notes.len());
        for (score, _, address) in notes {
            let blocks = self.stored_note(scored.searcher, *address)?.into_blocks();
            let closest = scored.meaning.map(|q| (&mut embedder, q));
            hits.extend(
                best_block(&mut analyzer, &scored.scorer, closest, blocks)
                    .map(|block| block.into_hit(*score, Some(&scored.snippets))),
            );
        }
        self.give_back(analyzer);
        Ok(hits)
    }

    /// Turns the meaning signal of [`IndexEngine::search`] on or off (on when opened). Off, a
    /// search ranks by the words alone; note vectors are still computed and stored.
    pub fn set_meaning(&self, on: bool) {
        self.meaning.store(on, Ordering::Relaxed);
    }

    /// Every live note whose vector's cosine similarity with `query` is at least
    /// [`MEANING_FLOOR`], with that similarity: a brute-force scan of the note vectors of each
    /// segment, read once per segment and kept while the segment lives.
    fn similar_notes(
        &self,
        searcher: &Searcher,
        query: &QueryVector,
    ) -> Result<Vec<(DocAddress, f32)>, IndexError> {
        let mut out = Vec::new();
        let mut live = HashSet::new();
        for (ordinal, segment) in searcher.segment_readers().iter().enumerate() {
            live.insert(segment.segment_id());
            let vectors = self.segment_vectors(segment)?;
            let alive = segment.alive_bitset();
            let ordinal = SegmentOrdinal::try_from(ordinal).unwrap_or(SegmentOrdinal::MAX);
            let rows = vectors.values.chunks_exact(self.model.dims());
            for ((doc, values), scale) in vectors.docs.iter().zip(rows).zip(&vectors.scales) {
                if alive.is_some_and(|alive| alive.is_deleted(*doc)) {
                    continue;
                }
                let sim = query.similarity(values, *scale);
                if sim >= MEANING_FLOOR {
                    out.push((DocAddress::new(ordinal, *doc), sim));
                }
            }
        }
        self.vectors.lock().retain(|id, _| live.contains(id));
        Ok(out)
    }

    /// The note vectors of `segment`, from the cache or read from its fast field.
    fn segment_vectors(&self, segment: &SegmentReader) -> Result<Arc<SegmentVectors>, IndexError> {
        let id = segment.segment_id();
        if let Some(vectors) = self.vectors.lock().get(&id) {
            return Ok(Arc::clone(vectors));
        }
        let vectors = Arc::new(SegmentVectors::read(segment, self.model.dims())?);
        self.vectors.lock().insert(id, Arc::clone(&vectors));
        Ok(vectors)
    }

    /// Where `searcher`'s search runs: on the pool when its index is large enough for two
    /// threads to pay ([`PARALLEL_MIN_DOCS`]) and the machine has more than one core, else on the
    /// calling thread (a hand-off costs more than a small index's whole search).
    fn executor_for(&self, searcher: &Searcher) -> &Executor {
        const ONE_THREAD: &Executor = &Executor::SingleThread;
        if searcher.num_docs() < PARALLEL_MIN_DOCS {
            return ONE_THREAD;
        }
        self.pool.get_or_init(|| match search_threads() {
            threads if threads > 1 => {
                Executor::multi_thread(threads, "stratum-search-").unwrap_or(Executor::SingleThread)
            }
            _ => Executor::SingleThread,
        })
    }

    fn take_analyzer(&self) -> TextAnalyzer {
        self.warm
            .lock()
            .pop()
            .unwrap_or_else(|| self.analyzer.clone())
    }

    fn give_back(&self, analyzer: TextAnalyzer) {
        let mut warm = self.warm.lock();
        if warm.len() < WARM_ANALYZERS {
            warm.push(analyzer);
        }
    }

    /// Blocks tagged `tag` (case-insensitive, leading `#` ignored), in page-path order and within
    /// a page in block order, `limit` from `offset`; every score is 1.0. `total` counts every
    /// tagged block, capped at [`MAX_SCORE_MATCHES`] like [`IndexEngine::search`]: paging with
    /// `offset` reaches exactly `total` hits.
    pub fn search_by_tag(
        &self,
        tag: &str,
        limit: usize,
        offset: usize,
    ) -> Result<SearchPage, IndexError> {
        let tag = normalize_tag(tag);
        if tag.is_empty() {
            return Ok(SearchPage::default());
        }
        let searcher = self.reader.searcher();
        // Every note holding the tag, with how many of its blocks do (the term's frequency).
        let term = Term::from_field_text(SCHEMA.1.tags, &tag);
        let mut notes: Vec<(String, DocAddress, usize)> = Vec::new();
        for (ordinal, segment) in (0..).zip(searcher.segment_readers()) {
            let inverted = segment.inverted_index(SCHEMA.1.tags)?;
            let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::WithFreqs)?
            else {
                continue;
            };
            let paths = segment.fast_fields().str(PAGE_PATH)?;
            let alive = segment.alive_bitset();
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|alive| alive.is_alive(doc))
                    && let Some(path) = page_path_of(paths.as_ref(), doc)?
                {
                    let count = usize::try_from(postings.term_freq()).unwrap_or(usize::MAX);
                    notes.push((path, DocAddress::new(ordinal, doc), count));
                }
                doc = postings.advance();
            }
        }
        notes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let total = notes.iter().map(|(_, _, count)| *count).sum::<usize>();
        let end = offset.saturating_add(limit).min(MAX_SCORE_MATCHES);
        let mut hits = Vec::new();
        let mut before = 0;
        for (_, address, count) in notes {
            // `end` is below `offset` for an offset past `MAX_SCORE_MATCHES`: no hits then.
            if before >= end || offset >= end {
                break;
            }
            if before + count > offset {
                let note = self.stored_note(&searcher, address)?;
                let tagged = note.tagged(&tag);
                let from = offset.saturating_sub(before);
                let take = end.saturating_sub(before.max(offset));
                hits.extend(
                    note.into_blocks_at(tagged.into_iter().skip(from).take(take))
                        .map(|block| block.into_hit(1.0, None)),
                );
            }
            before += count;
        }
        Ok(SearchPage {
            hits,
            total: total.min(MAX_SCORE_MATCHES),
        })
    }

    /// Blocks whose content contains `phrase` as consecutive words (case-insensitive, accents
    /// folded), in page-path and block order, at most `limit`; every score is 1.0. Used to find
    /// unlinked mentions of a page's title or aliases. A phrase without words finds nothing.
    pub fn search_phrase(&self, phrase: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        let mut analyzer = self.take_analyzer();
        let phrase = Clause::phrase(analyze(&mut analyzer, phrase));
        self.give_back(analyzer);
        if phrase.terms.is_empty() {
            return Ok(Vec::new());
        }
        let body = SCHEMA.1.search.body;
        let query = field_query(body, &phrase);
        let searcher = self.reader.searcher();
        let snippets = self.snippet_generator(&searcher, &*query)?;
        let limit = limit.min(MAX_SCORE_MATCHES);
        let notes: BTreeMap<String, DocAddress> = searcher.search(&*query, &NoteDocs)?;
        let mut hits = Vec::new();
        // The notes whose body holds the phrase; in each, the blocks where it stands (from its
        // positions in the body, against where each block's text starts there).
        for address in notes.into_values() {
            if hits.len() >= limit {
                break;
            }
            let starts = phrase_starts(&searcher, body, &phrase, address)?;
            let Some(last) = starts.iter().max().map(|s| u64::from(*s)) else {
                continue;
            };
            let note = self.stored_note(&searcher, address)?;
            let mut holding = Vec::new();
            for (block, from) in note.starts.iter().enumerate() {
                if *from > last || hits.len() + holding.len() >= limit {
                    break;
                }
                let to = note.starts.get(block + 1).copied().unwrap_or(u64::MAX);
                if starts.iter().any(|s| (*from..to).contains(&u64::from(*s))) {
                    holding.push(block);
                }
            }
            hits.extend(
                note.into_blocks_at(holding)
                    .map(|block| block.into_hit(1.0, Some(&snippets))),
            );
        }
        Ok(hits)
    }

    fn snippet_generator(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
    ) -> Result<SnippetGenerator, IndexError> {
        let mut generator = SnippetGenerator::create(searcher, query, SCHEMA.1.search.body)?;
        generator.set_max_num_chars(SNIPPET_MAX_BYTES);
        Ok(generator)
    }

    /// The note document at `address`, as stored.
    fn stored_note(
        &self,
        searcher: &Searcher,
        address: DocAddress,
    ) -> Result<StoredNote, IndexError> {
        Ok(searcher.doc(address)?)
    }

    /// Number of searchable blocks as of the last commit.
    pub fn doc_count(&self) -> Result<u64, IndexError> {
        let searcher = self.reader.searcher();
        let mut blocks = 0u64;
        for segment in searcher.segment_readers() {
            let counts = segment.fast_fields().u64(BLOCKS)?;
            for doc in segment.doc_ids_alive() {
                blocks = blocks.saturating_add(counts.first(doc).unwrap_or(0));
            }
        }
        Ok(blocks)
    }

    /// The language this index stems in.
    pub fn language(&self) -> SearchLanguage {
        self.language
    }

    /// Number of searchable notes (those with at least one block), as of the last commit.
    pub fn page_count(&self) -> Result<u64, IndexError> {
        Ok(self.reader.searcher().num_docs())
    }
}

/// The page path a document is indexed under, from its segment's page-path column (opened once
/// per segment by a search: opening it is not free, and a fused page reads up to a hundred).
fn page_path_of(column: Option<&StrColumn>, doc: DocId) -> Result<Option<String>, IndexError> {
    let Some(column) = column else {
        return Ok(None);
    };
    let mut out = String::new();
    for ord in column.term_ords(doc) {
        if column.ord_to_str(ord, &mut out)? {
            return Ok(Some(out));
        }
    }
    Ok(None)
}

/// Where `phrase` starts in `field` of the document at `doc`: the positions of its first word
/// from which each of its words stands at its offset. None when a word is not in the document.
fn phrase_starts(
    searcher: &Searcher,
    field: Field,
    phrase: &Clause,
    doc: DocAddress,
) -> Result<Vec<u32>, IndexError> {
    let inverted = searcher
        .segment_reader(doc.segment_ord)
        .inverted_index(field)?;
    let mut starts: Option<Vec<u32>> = None;
    let mut positions = Vec::new();
    for (term, offset) in phrase.terms.iter().zip(&phrase.offsets) {
        let term = Term::from_field_text(field, term);
        let Some(mut postings) =
            inverted.read_postings(&term, IndexRecordOption::WithFreqsAndPositions)?
        else {
            return Ok(Vec::new());
        };
        if postings.seek(doc.doc_id) != doc.doc_id {
            return Ok(Vec::new());
        }
        positions.clear();
        postings.positions(&mut positions);
        let offset = u32::try_from(*offset).unwrap_or(u32::MAX);
        let these: Vec<u32> = positions
            .iter()
            .filter_map(|p| p.checked_sub(offset))
            .collect();
        starts = Some(match starts {
            None => these,
            Some(before) => before
                .into_iter()
                .filter(|s| these.binary_search(s).is_ok())
                .collect(),
        });
    }
    Ok(starts.unwrap_or_default())
}

/// Collects the page path and address of every matching document (one per note), by page
/// path.
struct NoteDocs;

struct SegmentNoteDocs {
    segment: SegmentOrdinal,
    column: Option<StrColumn>,
    docs: Vec<(u64, tantivy::DocId)>,
}

impl Collector for NoteDocs {
    type Fruit = BTreeMap<String, DocAddress>;
    type Child = SegmentNoteDocs;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &tantivy::SegmentReader,
    ) -> tantivy::Result<SegmentNoteDocs> {
        Ok(SegmentNoteDocs {
            segment,
            column: reader.fast_fields().str(PAGE_PATH)?,
            docs: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<BTreeMap<String, DocAddress>>,
    ) -> tantivy::Result<BTreeMap<String, DocAddress>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for SegmentNoteDocs {
    type Fruit = BTreeMap<String, DocAddress>;

    fn collect(&mut self, doc: tantivy::DocId, _score: tantivy::Score) {
        if let Some(ord) = self.column.as_ref().and_then(|c| c.term_ords(doc).next()) {
            self.docs.push((ord, doc));
        }
    }

    fn harvest(self) -> BTreeMap<String, DocAddress> {
        let segment = self.segment;
        by_page_path(
            self.column.as_ref(),
            self.docs
                .into_iter()
                .map(|(ord, doc)| (ord, DocAddress::new(segment, doc))),
        )
    }
}

/// A note as stored: its page path and its blocks, in block order.
#[derive(Default)]
struct StoredNote {
    page_path: String,
    block_ids: Vec<String>,
    texts: Vec<String>,
    /// Where each block's text starts in `body` (see `Fields::start`).
    starts: Vec<u64>,
    /// The block position and the tag of each tag its blocks carry (see `Fields::tags`).
    tags: Vec<(u64, String)>,
}

/// Read straight from the document store's bytes into the note's lists (a `TantivyDocument`
/// first, then copied out, was twice the work for every hit).
impl DocumentDeserialize for StoredNote {
    fn deserialize<'de, D>(mut doc: D) -> Result<StoredNote, DeserializeError>
    where
        D: DocumentDeserializer<'de>,
    {
        let f = &SCHEMA.1;
        let mut note = StoredNote::default();
        let (mut tags, mut tagged) = (Vec::new(), Vec::new());
        while let Some((field, value)) = doc.next_field::<OwnedValue>()? {
            match value {
                OwnedValue::Str(text) if field == f.search.body => note.texts.push(text),
                OwnedValue::Str(id) if field == f.block_id => note.block_ids.push(id),
                OwnedValue::Str(path) if field == f.search.page_path => note.page_path = path,
                OwnedValue::Str(tag) if field == f.tags => tags.push(tag),
                OwnedValue::U64(position) if field == f.tagged => tagged.push(position),
                OwnedValue::U64(start) if field == f.start => note.starts.push(start),
                _ => {}
            }
        }
        note.tags = tagged.into_iter().zip(tags).collect();
        Ok(note)
    }
}

impl StoredNote {
    /// The positions of the blocks carrying `tag` (normalized), in block order.
    fn tagged(&self, tag: &str) -> Vec<usize> {
        let mut positions: Vec<usize> = self
            .tags
            .iter()
            .filter(|(_, t)| t == tag)
            .filter_map(|(position, _)| usize::try_from(*position).ok())
            .collect();
        positions.sort_unstable();
        positions.dedup();
        positions
    }

    /// Every block, in block order.
    fn into_blocks(self) -> Vec<StoredBlock> {
        let all = 0..self.texts.len();
        self.into_blocks_at(all).collect()
    }

    /// The blocks at `positions`, in that order (a position past the last block is skipped).
    fn into_blocks_at(
        self,
        positions: impl IntoIterator<Item = usize>,
    ) -> impl Iterator<Item = StoredBlock> {
        let StoredNote {
            page_path,
            block_ids,
            texts,
            ..
        } = self;
        let mut blocks: Vec<Option<(String, String)>> =
            block_ids.into_iter().zip(texts).map(Some).collect();
        positions.into_iter().filter_map(move |i| {
            let (block_id, content) = blocks.get_mut(i)?.take()?;
            Some(StoredBlock {
                block_id,
                page_path: page_path.clone(),
                content,
            })
        })
    }
}

/// A block as stored: what a hit shows.
struct StoredBlock {
    block_id: String,
    page_path: String,
    content: String,
}

impl StoredBlock {
    fn into_hit(self, score: f32, snippets: Option<&SnippetGenerator>) -> Hit {
        let snippet = match snippets {
            Some(generator) => render_snippet(&generator.snippet(&self.content), &self.content),
            None => lead(&self.content),
        };
        Hit {
            block_id: self.block_id,
            page_path: self.page_path,
            content: self.content,
            snippet,
            score,
        }
    }
}

/// The block a hit points at: the best-scoring, the first among equals; an empty block (a
/// properties-only first block) only when no block says anything. When only the note's name
/// matched, every block scores zero: that is the first block that says something.
///
/// When no block holds a word of the query and `meaning` is given (a note found by meaning), the
/// block closest in meaning to the query wins instead.
fn best_block(
    analyzer: &mut TextAnalyzer,
    scorer: &BlockScorer<'_>,
    meaning: Option<(&mut Embedder<'_>, &QueryVector)>,
    blocks: Vec<StoredBlock>,
) -> Option<StoredBlock> {
    let words: Vec<BlockWords> = blocks
        .iter()
        .map(|b| scorer.words(analyzer, &b.content))
        .collect();
    let average =
        words.iter().map(BlockWords::len).sum::<usize>() as f32 / words.len().max(1) as f32;
    let mut ranked: Vec<(Score, usize)> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (scorer.score(w, average), i))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let said = |i: &usize| blocks.get(*i).is_some_and(|b| !b.content.trim().is_empty());
    if let Some((embedder, query)) = meaning
        && ranked.first().is_none_or(|(score, _)| *score <= 0.0)
    {
        let closest = blocks
            .iter()
            .enumerate()
            .filter(|(i, _)| said(i))
            .filter_map(|(i, b)| {
                let vector = embedder.embed(&b.content, BLOCK_TOKENS)?;
                Some((embed::cosine(vector, &query.exact), i))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        if let Some((_, i)) = closest {
            return blocks.into_iter().nth(i);
        }
    }
    let chosen = ranked
        .iter()
        .map(|(_, i)| *i)
        .find(said)
        .or_else(|| ranked.first().map(|(_, i)| *i))?;
    blocks.into_iter().nth(chosen)
}

/// The two rankings of a search as one: each note's word score relative to the best (weighted
/// by how strictly the words matched: all of them, with typos, or some) plus how far its meaning
/// is above [`MEANING_FLOOR`] (0 to 1, weighted [`FUSE_MEANING`]; the weights were tuned on the
/// judged question and keyword sets of `scripts/bench/relevance/`). A score mix rather than
/// reciprocal rank fusion: a keyword query whose first note stands far ahead (its title) keeps
/// it first, while notes that share no word still rise by meaning.
fn fuse(
    words: &[(f32, DocAddress)],
    meaning: &[(DocAddress, f32)],
    matching: Matching,
) -> Vec<(f32, DocAddress)> {
    let weight = match matching {
        Matching::Every => FUSE_EVERY,
        Matching::EveryFuzzy => FUSE_FUZZY,
        Matching::Coverage => FUSE_COVERAGE,
    };
    // A note holding every word of the query ranks before every note found by meaning alone,
    // whose score is at most FUSE_MEANING: a search for a word lists the notes that hold it
    // first, however long they are (a long note's BM25 is low) and however close in meaning
    // others are. Meaning orders the notes among themselves, and decides where only some of the
    // words matched (Coverage).
    let lift = match matching {
        Matching::Every | Matching::EveryFuzzy => FUSE_MEANING,
        Matching::Coverage => 0.0,
    };
    let best = words
        .iter()
        .map(|(score, _)| *score)
        .fold(0.0f32, f32::max)
        .max(f32::MIN_POSITIVE);
    let mut fused: HashMap<DocAddress, f32> = HashMap::new();
    for (score, address) in words {
        *fused.entry(*address).or_default() += lift + weight * score / best;
    }
    for (address, similarity) in meaning {
        let above = ((similarity - MEANING_FLOOR) / (1.0 - MEANING_FLOOR)).clamp(0.0, 1.0);
        *fused.entry(*address).or_default() += FUSE_MEANING * above;
    }
    fused.into_iter().map(|(a, s)| (s, a)).collect()
}

/// The note vectors of one segment, in document order, one row per note document: `docs[i]`'s
/// vector is row `i` of `values` (`dims` values) with scale `scales[i]`. One contiguous run that
/// a search reads front to back.
#[derive(Default)]
struct SegmentVectors {
    values: Vec<i8>,
    scales: Vec<f32>,
    docs: Vec<DocId>,
}

impl SegmentVectors {
    fn read(segment: &SegmentReader, dims: usize) -> Result<SegmentVectors, IndexError> {
        let Some(column) = segment.fast_fields().bytes(MEANING)? else {
            return Ok(SegmentVectors::default());
        };
        // Each buffer is allocated once at its final size: they live as long as the segment.
        let with_vector = |doc: DocId| column.term_ords(doc).next();
        let count = (0..segment.max_doc())
            .filter(|doc| with_vector(*doc).is_some())
            .count();
        let mut docs = Vec::with_capacity(count);
        let mut ords = Vec::with_capacity(count);
        for doc in 0..segment.max_doc() {
            if let Some(ord) = with_vector(doc) {
                docs.push(doc);
                ords.push(ord);
            }
        }
        let mut values = vec![0i8; count.saturating_mul(dims)];
        let mut scales = vec![0.0f32; count];
        // The dictionary lists each distinct vector once, by ordinal: each goes to the rows of
        // the documents that hold it.
        let mut by_ord: Vec<usize> = (0..count).collect();
        by_ord.sort_unstable_by_key(|row| ords.get(*row).copied());
        let mut rows = by_ord.into_iter().peekable();
        let mut ord = 0u64;
        let mut stream = column.dictionary().stream()?;
        while stream.advance() {
            let (vector, scale) = embed::dequantize_parts(stream.key(), dims).unwrap_or((&[], 0.0));
            while let Some(row) = rows.next_if(|row| ords.get(*row) == Some(&ord)) {
                if let Some(to) = values.get_mut(row * dims..(row + 1) * dims)
                    && vector.len() == dims
                {
                    for (to, from) in to.iter_mut().zip(vector) {
                        *to = *from as i8;
                    }
                }
                if let Some(to) = scales.get_mut(row) {
                    *to = scale;
                }
            }
            ord += 1;
        }
        Ok(SegmentVectors {
            values,
            scales,
            docs,
        })
    }
}

/// The first `depth` notes of a search by score, then page path (what `TopDocs` ordered by
/// score and page path gives), collected without the page paths: within a segment the page
/// path's ordinal orders as the path does, and only notes whose score ties across segments at
/// the cut need their path (see [`top_notes`]). `TopDocs` looked up the path of its first
/// `depth` notes in every segment, each lookup decoding a block of the path dictionary.
struct TopNotes {
    depth: usize,
}

/// One segment's candidates for [`TopNotes`].
struct SegmentTopNotes {
    segment: SegmentOrdinal,
    paths: Option<Column<u64>>,
    depth: usize,
    found: Vec<NoteCandidate>,
    /// The last note kept at the latest cut: a note after it cannot be among the first `depth`.
    worst: Option<NoteCandidate>,
}

/// A note a search found: its score, its page path's ordinal in its segment, its address.
#[derive(Debug, Clone, Copy)]
struct NoteCandidate {
    score: Score,
    path_ord: Option<u64>,
    address: DocAddress,
}

impl Collector for TopNotes {
    type Fruit = Vec<NoteCandidate>;
    type Child = SegmentTopNotes;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTopNotes> {
        Ok(SegmentTopNotes {
            segment,
            paths: reader
                .fast_fields()
                .str(PAGE_PATH)?
                .map(|column| column.ords().clone()),
            depth: self.depth,
            found: Vec::new(),
            worst: None,
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<NoteCandidate>>) -> tantivy::Result<Vec<NoteCandidate>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for SegmentTopNotes {
    type Fruit = Vec<NoteCandidate>;

    fn collect(&mut self, doc: DocId, score: Score) {
        // A note scoring below the last kept cannot be kept: no need of its page path (a
        // question's fallback matches most notes of a large vault).
        if self
            .worst
            .is_some_and(|worst| score.total_cmp(&worst.score).is_lt())
        {
            return;
        }
        let candidate = NoteCandidate {
            score,
            path_ord: self.paths.as_ref().and_then(|paths| paths.first(doc)),
            address: DocAddress::new(self.segment, doc),
        };
        if self
            .worst
            .is_some_and(|worst| segment_order(&candidate, &worst).is_gt())
        {
            return;
        }
        self.found.push(candidate);
        // Kept between `depth` and twice that: a bounded buffer, cut down now and then.
        if self.found.len() >= self.depth.saturating_mul(2).max(64) {
            self.keep_best();
        }
    }

    fn harvest(mut self) -> Vec<NoteCandidate> {
        self.keep_best();
        self.found
    }
}

impl SegmentTopNotes {
    /// Keeps the first `depth` of `found` in [`segment_order`].
    fn keep_best(&mut self) {
        if self.found.len() <= self.depth {
            return;
        }
        let Some(nth) = self.depth.checked_sub(1) else {
            self.found.clear();
            return;
        };
        let (_, worst, _) = self.found.select_nth_unstable_by(nth, segment_order);
        self.worst = Some(*worst);
        self.found.truncate(self.depth);
    }
}

/// Score descending, then page path ascending (a segment's path ordinals order as its paths),
/// then document.
fn segment_order(a: &NoteCandidate, b: &NoteCandidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then(a.path_ord.cmp(&b.path_ord))
        .then(a.address.doc_id.cmp(&b.address.doc_id))
}

/// The notes at `range` of `found` ordered by score descending, then page path ascending (then
/// address). With `ordered` false, the notes of `0..range.end` in any order: only notes tied
/// with the last one's score need their page path then.
fn top_notes(
    searcher: &Searcher,
    mut found: Vec<NoteCandidate>,
    range: std::ops::Range<usize>,
    ordered: bool,
) -> Result<Vec<(f32, DocAddress)>, IndexError> {
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.address.cmp(&b.address)));
    let end = range.end.min(found.len());
    let Some(last) = end
        .checked_sub(1)
        .and_then(|i| found.get(i))
        .map(|c| c.score)
    else {
        return Ok(Vec::new());
    };
    // `found[..first_tied]` scores above the cut; `found[first_tied..after_tied]` at it.
    let first_tied = found.partition_point(|c| c.score.total_cmp(&last).is_gt());
    let after_tied = found.partition_point(|c| c.score.total_cmp(&last).is_ge());
    let from = if ordered { 0 } else { first_tied };
    let mut columns: HashMap<SegmentOrdinal, Option<StrColumn>> = HashMap::new();
    let mut named = Vec::with_capacity(after_tied - from);
    for candidate in found.get(from..after_tied).unwrap_or_default() {
        let segment = candidate.address.segment_ord;
        let column = match columns.entry(segment) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(new) => new.insert(
                searcher
                    .segment_reader(segment)
                    .fast_fields()
                    .str(PAGE_PATH)?,
            ),
        };
        let mut path = None;
        if let (Some(column), Some(ord)) = (column.as_ref(), candidate.path_ord) {
            let mut text = String::new();
            if column.ord_to_str(ord, &mut text)? {
                path = Some(text);
            }
        }
        named.push((path, *candidate));
    }
    named.sort_by(|(a_path, a), (b_path, b)| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a_path.cmp(b_path))
            .then(a.address.cmp(&b.address))
    });
    let named = named.into_iter().map(|(_, c)| (c.score, c.address));
    if ordered {
        return Ok(named
            .skip(range.start)
            .take(end.saturating_sub(range.start))
            .collect());
    }
    let above = found.get(..first_tied).unwrap_or_default().iter();
    Ok(above
        .map(|c| (c.score, c.address))
        .chain(named.take(end - first_tied))
        .collect())
}

/// Counts the notes a query matches and remembers which (a bit per document of each segment):
/// a note found by meaning that the words matched too is not counted twice.
struct MatchedCollector;

#[derive(Default)]
struct Matched {
    count: usize,
    bits: HashMap<SegmentOrdinal, Vec<u64>>,
}

impl Matched {
    fn has(&self, address: DocAddress) -> bool {
        let doc = address.doc_id as usize;
        self.bits
            .get(&address.segment_ord)
            .and_then(|bits| bits.get(doc / 64))
            .is_some_and(|word| word & (1 << (doc % 64)) != 0)
    }
}

struct SegmentMatched {
    segment: SegmentOrdinal,
    count: usize,
    bits: Vec<u64>,
}

impl Collector for MatchedCollector {
    type Fruit = Matched;
    type Child = SegmentMatched;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentMatched> {
        Ok(SegmentMatched {
            segment,
            count: 0,
            bits: vec![0; (reader.max_doc() as usize).div_ceil(64)],
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<(SegmentOrdinal, usize, Vec<u64>)>,
    ) -> tantivy::Result<Matched> {
        let mut out = Matched::default();
        for (segment, count, bits) in fruits {
            out.count += count;
            out.bits.insert(segment, bits);
        }
        Ok(out)
    }
}

impl SegmentCollector for SegmentMatched {
    type Fruit = (SegmentOrdinal, usize, Vec<u64>);

    fn collect(&mut self, doc: DocId, _score: Score) {
        let doc = doc as usize;
        if let Some(word) = self.bits.get_mut(doc / 64) {
            *word |= 1 << (doc % 64);
        }
        self.count += 1;
    }

    fn harvest(self) -> (SegmentOrdinal, usize, Vec<u64>) {
        (self.segment, self.count, self.bits)
    }
}

/// `items` keyed by a segment's page-path ordinal, keyed by the page path instead (an ordinal
/// without a path is dropped): what the collectors hand back.
fn by_page_path<T, C: FromIterator<(String, T)>>(
    column: Option<&StrColumn>,
    items: impl IntoIterator<Item = (u64, T)>,
) -> C {
    let Some(column) = column else {
        return std::iter::empty().collect();
    };
    items
        .into_iter()
        .filter_map(|(ord, item)| {
            let mut path = String::new();
            matches!(column.ord_to_str(ord, &mut path), Ok(true)).then_some((path, item))
        })
        .collect()
}

/// What picks and renders the block of each hit of one search (see `IndexEngine::hits_of`).
struct ScoredBlocks<'s> {
    searcher: &'s Searcher,
    scorer: BlockScorer<'s>,
    meaning: Option<&'s QueryVector>,
    snippets: SnippetGenerator,
}

/// [`Searcher::search`], its segments collected on `executor`.
fn search_on<C: Collector>(
    executor: &Executor,
    searcher: &Searcher,
    query: &dyn Query,
    collector: &C,
) -> tantivy::Result<C::Fruit> {
    let scoring = if collector.requires_scoring() {
        EnableScoring::enabled_from_searcher(searcher)
    } else {
        EnableScoring::disabled_from_searcher(searcher)
    };
    searcher.search_with_executor(query, collector, executor, scoring)
}

/// `a` and `b`, on two threads of `executor` when it has a pool, else one after the other.
fn alongside<A, B>(
    executor: &Executor,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B)
where
    A: Send,
    B: Send,
{
    match executor {
        Executor::ThreadPool(pool) => pool.join(a, b),
        Executor::SingleThread => (a(), b()),
    }
}

/// Threads a search collects its segments on: the machine's cores, up to [`MAX_SEARCH_THREADS`].
/// One agent's search then uses the cores a laptop has (a 100k-note vault holds a dozen
/// segments); many at once share them as before.
fn search_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_SEARCH_THREADS)
}

/// Tantivy's log merge policy, with every segment under [`MERGE_MIN_LAYER_DOCS`] in the lowest
/// layer instead of every one under 10,000 docs. Each write commits a segment of one note (one
/// document); with Tantivy's default, a segment merged from them stays in
/// the lowest layer until it holds 10,000 docs, so it is merged again with every eight commits
/// and a long session's writes cost more and more merging (quadratic). With a small lowest
/// layer, merged segments climb a layer each time they grow, so a doc is merged about once per
/// layer (ADR-0022).
fn merge_policy() -> tantivy::indexer::LogMergePolicy {
    let mut policy = tantivy::indexer::LogMergePolicy::default();
    policy.set_min_layer_size(MERGE_MIN_LAYER_DOCS);
    policy
}

/// Whether `dir` holds anything besides our version file, i.e. something that is not an index we
/// can simply create.
fn has_foreign_entries(dir: &Path) -> Result<bool, IndexError> {
    for entry in fs::read_dir(dir)? {
        if entry?.file_name() != VERSION_FILE {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Errors while opening mean the directory is unreadable, except a held lock: that is another
/// live writer, and recreating the directory under it would be wrong.
fn unreadable(err: tantivy::TantivyError) -> IndexError {
    match err {
        tantivy::TantivyError::LockFailure(..) => IndexError::Tantivy(err),
        other => IndexError::Corrupt(other.to_string()),
    }
}

/// Renders a snippet as described on [`Hit::snippet`].
fn render_snippet(snippet: &Snippet, text: &str) -> String {
    if snippet.highlighted().is_empty() {
        return lead(text);
    }
    let fragment = snippet.fragment();
    let range = snippet.fragment_range();
    let mut out = String::with_capacity(fragment.len() + 32);
    if range.start > 0 {
        out.push('…');
    }
    let mut at = 0;
    for mark in tantivy::snippet::collapse_overlapped_ranges(snippet.highlighted()) {
        let (Some(before), Some(word)) = (fragment.get(at..mark.start), fragment.get(mark.clone()))
        else {
            continue;
        };
        out.push_str(before);
        out.push_str("<b>");
        out.push_str(word);
        out.push_str("</b>");
        at = mark.end;
    }
    out.push_str(fragment.get(at..).unwrap_or_default());
    if range.end < text.len() {
        out.push('…');
    }
    out
}

/// The start of `text`, cut at a char boundary near [`SNIPPET_MAX_BYTES`].
fn lead(text: &str) -> String {
    let cut = text
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .take_while(|end| *end <= SNIPPET_MAX_BYTES)
        .last()
        .unwrap_or(0);
    let mut out = text.get(..cut).unwrap_or_default().to_owned();
    if cut < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_cuts_on_a_char_boundary_and_keeps_the_text() {
        let text = "é".repeat(200);
        let out = lead(&text);
        assert!(out.ends_with('…'));
        assert_eq!(
            out.chars().filter(|c| *c == 'é').count(),
            SNIPPET_MAX_BYTES / 2
        );
        assert_eq!(lead("it's \"a<b\" & c>"), "it's \"a<b\" & c>");
    }

    #[test]
    fn alongside_gives_both_answers_in_order_on_a_pool_and_on_one_thread() {
        let pool = Executor::multi_thread(2, "alongside-test-").unwrap();
        for executor in [Executor::single_thread(), pool] {
            let words: Vec<u32> = (0..1000).collect();
            let (sum, text) = alongside(&executor, || words.iter().sum::<u32>(), || "meaning");
            assert_eq!((sum, text), (499_500, "meaning"));
        }
    }

    #[test]
    fn tags_are_normalized() {
        assert_eq!(normalize_tag("  #Project "), "project");
        assert_eq!(normalize_tag("##ÉTÉ"), "été");
        assert_eq!(normalize_tag("#"), "");
    }
}
