//! `IndexEngine`: one Tantivy index of blocks under `<vault>/.pkm/search`.
//!
//! One document per block. Writes go through a single `IndexWriter` behind a mutex and become
//! visible only at [`IndexEngine::commit`], which also reloads the reader, so the next search sees
//! every prior write (read-your-writes). Searches never take the writer's mutex.

use std::collections::HashSet;
use std::fs;
use std::io::ErrorKind as IoErrorKind;
use std::path::Path;

use parking_lot::Mutex;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue, SortByString};
use tantivy::collector::{Count, TopDocs};
use tantivy::indexer::{IndexWriterOptions, UserOperation};
use tantivy::query::{Query, TermQuery};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TantivyDocument, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::snippet::{Snippet, SnippetGenerator};
use tantivy::tokenizer::{TextAnalyzer, TokenizerManager};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, Order, ReloadPolicy, Searcher, TERMINATED,
    Term,
};

use crate::error::IndexError;
use crate::query::{Clause, clauses, field_query, search_query};
use crate::tokenizer::{ANALYZER_NAME, analyze, analyzer};

/// Search pagination never reaches past this many matches (contract §11,
/// `MCP_TOKEN_MAX_SCORE_MATCHES`): `total` is capped here and `offset + limit` is clipped to it.
pub const MAX_SCORE_MATCHES: usize = 5000;

/// Version of everything that decides what the index holds: the schema *and* the analyzer. Bump it
/// whenever either changes, so that an index built by an older binary is reported as
/// [`IndexError::SchemaMismatch`] and rebuilt, instead of silently answering with stale tokens.
pub const SCHEMA_VERSION: &str = "pkm-index/3";

/// File in the index directory holding [`SCHEMA_VERSION`]. Tantivy's garbage collector only
/// deletes files it created itself, so it leaves this one alone.
const VERSION_FILE: &str = "pkm-schema-version";

/// Writer memory budget. Measured on a 10k-note rebuild (2 cores): 30 MB flushes 4 segments while
/// the store is still being written, 2.9 s; 120 MB leaves one large flush for the end, 3.4 s.
const WRITER_MEMORY_BYTES: usize = 30_000_000;

/// Approximate length of a snippet, in bytes of the block's text.
const SNIPPET_MAX_BYTES: usize = 160;

/// One block, as the command layer hands it to the index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockDoc {
    pub block_id: String,
    /// Vault-relative path of the block's page. [`IndexEngine::replace_page`] indexes its own
    /// `page_path` argument instead, so a later replace or delete always finds the doc.
    pub page_path: String,
    /// The page's title, searched with a lower weight than the content.
    pub title: String,
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
    /// The block's full text, as indexed.
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

/// The fields of the schema.
#[derive(Debug, Clone, Copy)]
struct Fields {
    block_id: Field,
    page_path: Field,
    title: Field,
    content: Field,
    tags: Field,
    /// The block's index within its page, for stable page order.
    position: Field,
}

const BLOCK_ID: &str = "block_id";
const PAGE_PATH: &str = "page_path";
const POSITION: &str = "position";

fn build_schema() -> Schema {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    // FAST on the two ids: the tie-break of the search order and the page order of tag
    // search sort on them without touching the document store. Block ids are never looked up as
    // terms, so they are not indexed: a term dictionary of ~25 random UUIDs per note was a
    // quarter of the indexing thread's time (FST building).
    builder.add_text_field(BLOCK_ID, STORED | FAST);
    builder.add_text_field(PAGE_PATH, STRING | STORED | FAST);
    builder.add_text_field("title", text.clone());
    builder.add_text_field("content", text);
    builder.add_text_field("tags", STRING);
    builder.add_u64_field(POSITION, FAST);
    builder.build()
}

impl Fields {
    fn resolve(schema: &Schema) -> Result<Fields, IndexError> {
        let field = |name: &str| {
            schema
                .get_field(name)
                .map_err(|_| IndexError::SchemaMismatch)
        };
        Ok(Fields {
            block_id: field(BLOCK_ID)?,
            page_path: field(PAGE_PATH)?,
            title: field("title")?,
            content: field("content")?,
            tags: field("tags")?,
            position: field(POSITION)?,
        })
    }
}

fn tokenizers() -> TokenizerManager {
    let manager = TokenizerManager::default();
    manager.register(ANALYZER_NAME, analyzer());
    manager
}

/// Normalizes a tag for indexing and lookup: trimmed, leading `#`s removed, lowercased.
pub fn normalize_tag(tag: &str) -> String {
    tag.trim().trim_start_matches('#').trim().to_lowercase()
}

/// The search index of one vault. `Send + Sync`: share it behind an `Arc`.
pub struct IndexEngine {
    /// The only writer of the directory (Tantivy also locks it on disk against other processes).
    writer: Mutex<IndexWriter>,
    /// Reloaded by `commit` only (`ReloadPolicy::Manual`), which is what makes read-your-writes
    /// deterministic instead of "after the next file-watch tick".
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
}

impl std::fmt::Debug for IndexEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexEngine")
            .field("docs", &self.doc_count())
            .finish_non_exhaustive()
    }
}

impl IndexEngine {
    /// Opens the index in `dir` (normally `<vault>/.pkm/search`), creating it when `dir` is
    /// missing or empty. An index built with another [`SCHEMA_VERSION`] or schema gives
    /// [`IndexError::SchemaMismatch`]; one that cannot be read gives [`IndexError::Corrupt`]; in
    /// both cases call [`IndexEngine::recreate`] and reindex. Another process holding the index
    /// gives [`IndexError::Tantivy`] (a lock failure), which a recreate would not fix.
    pub fn open(dir: &Path) -> Result<IndexEngine, IndexError> {
        fs::create_dir_all(dir)?;
        if !dir.join("meta.json").exists() {
            if has_foreign_entries(dir)? {
                return Err(IndexError::Corrupt("index metadata is missing".to_owned()));
            }
            return Self::create_in(dir);
        }
        match fs::read_to_string(dir.join(VERSION_FILE)) {
            Ok(version) if version.trim() == SCHEMA_VERSION => {}
            Ok(_) => return Err(IndexError::SchemaMismatch),
            Err(err) if err.kind() == IoErrorKind::NotFound => {
                return Err(IndexError::SchemaMismatch);
            }
            Err(err) => return Err(IndexError::Io(err)),
        }
        let index = Index::open_in_dir(dir).map_err(unreadable)?;
        if index.schema() != build_schema() {
            return Err(IndexError::SchemaMismatch);
        }
        Self::from_index(index)
    }

    /// Deletes `dir` with everything in it and creates an empty index there. Drop any engine
    /// open on `dir` first.
    pub fn recreate(dir: &Path) -> Result<IndexEngine, IndexError> {
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(err) if err.kind() == IoErrorKind::NotFound => {}
            Err(err) => return Err(IndexError::Io(err)),
        }
        fs::create_dir_all(dir)?;
        Self::create_in(dir)
    }

    fn create_in(dir: &Path) -> Result<IndexEngine, IndexError> {
        let index = Index::builder()
            .schema(build_schema())
            .tokenizers(tokenizers())
            .create_in_dir(dir)?;
        // Written after the index: a crash in between leaves an index without a version, which
        // the next open reports as a mismatch and the caller rebuilds.
        fs::write(dir.join(VERSION_FILE), format!("{SCHEMA_VERSION}\n"))?;
        Self::from_index(index)
    }

    fn from_index(mut index: Index) -> Result<IndexEngine, IndexError> {
        index.set_tokenizers(tokenizers());
        let fields = Fields::resolve(&index.schema())?;
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY_BYTES)
            // One indexing thread: the machine has two cores, and all docs of a commit land in one
            // segment. One merge thread so that merging never takes both cores.
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index.writer_with_options(options).map_err(unreadable)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(unreadable)?;
        let analyzer = index.tokenizer_for_field(fields.content)?;
        Ok(IndexEngine {
            writer: Mutex::new(writer),
            reader,
            fields,
            analyzer,
        })
    }

    /// Replaces every doc of `page_path` with `docs` (in page order). Not visible until
    /// [`IndexEngine::commit`]. Each doc is indexed under the `page_path` argument.
    pub fn replace_page(&self, page_path: &str, docs: &[BlockDoc]) -> Result<(), IndexError> {
        let mut ops = Vec::with_capacity(docs.len() + 1);
        ops.push(UserOperation::Delete(Term::from_field_text(
            self.fields.page_path,
            page_path,
        )));
        for (position, doc) in docs.iter().enumerate() {
            ops.push(UserOperation::Add(self.document(page_path, position, doc)));
        }
        // `run` applies the delete and the adds as one group: no commit can fall between them.
        self.writer.lock().run(ops)?;
        Ok(())
    }

    /// Adds the docs of a page the index does not hold (a rebuild after [`IndexEngine::clear`],
    /// or a page never indexed): [`IndexEngine::replace_page`] without the delete, which every
    /// commit would otherwise apply to every segment.
    pub fn add_page(&self, page_path: &str, docs: &[BlockDoc]) -> Result<(), IndexError> {
        let ops: Vec<_> = docs
            .iter()
            .enumerate()
            .map(|(position, doc)| UserOperation::Add(self.document(page_path, position, doc)))
            .collect();
        self.writer.lock().run(ops)?;
        Ok(())
    }

    fn document(&self, page_path: &str, position: usize, block: &BlockDoc) -> TantivyDocument {
        let f = &self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.block_id, &block.block_id);
        doc.add_text(f.page_path, page_path);
        doc.add_text(f.title, &block.title);
        doc.add_text(f.content, &block.content);
        let mut tags: Vec<String> = block
            .tags
            .iter()
            .map(|t| normalize_tag(t))
            .filter(|t| !t.is_empty())
            .collect();
        tags.sort_unstable();
        tags.dedup();
        for tag in tags {
            doc.add_text(f.tags, tag);
        }
        doc.add_u64(f.position, u64::try_from(position).unwrap_or(u64::MAX));
        doc
    }

    /// Removes every doc of `page_path`. Not visible until [`IndexEngine::commit`].
    pub fn delete_page(&self, page_path: &str) -> Result<(), IndexError> {
        self.writer
            .lock()
            .delete_term(Term::from_field_text(self.fields.page_path, page_path));
        Ok(())
    }

    /// Removes every doc. Not visible until [`IndexEngine::commit`].
    pub fn clear(&self) -> Result<(), IndexError> {
        self.writer.lock().delete_all_documents()?;
        Ok(())
    }

    /// Drops every write since the last commit (a scan that failed half-way: its clear and its
    /// adds must not reach the next commit).
    pub fn rollback(&self) -> Result<(), IndexError> {
        self.writer.lock().rollback()?;
        Ok(())
    }

    /// Makes every prior write durable and visible to the next search.
    pub fn commit(&self) -> Result<(), IndexError> {
        let mut writer = self.writer.lock();
        writer.commit()?;
        // Reloading under the writer lock keeps commit + reload atomic with respect to another
        // commit, so the reader never goes back to an older generation.
        self.reader.reload()?;
        Ok(())
    }

    /// Full-text search over block content (and, weighted lower, page titles).
    ///
    /// `query` is analyzed with the index's own analyzer and never parsed as query syntax: every
    /// word must match (in the content or the title), `"quoted words"` must match as a phrase, and
    /// characters such as `:`, `*`, `(`, `-` only separate words. A query without any word gives
    /// zero hits. Order: score descending, then `block_id` ascending, so paging is stable.
    /// `total` is the number of matching blocks, capped at [`MAX_SCORE_MATCHES`]; results past
    /// that cap are never returned.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        offset: usize,
    ) -> Result<SearchPage, IndexError> {
        let mut analyzer = self.analyzer.clone();
        let clauses = clauses(&mut analyzer, query);
        let Some(query) = search_query(self.fields.content, self.fields.title, &clauses) else {
            return Ok(SearchPage::default());
        };
        let searcher = self.reader.searcher();
        let end = offset.saturating_add(limit).min(MAX_SCORE_MATCHES);
        if offset >= end {
            let total = searcher.search(&query, &Count)?;
            return Ok(SearchPage {
                hits: Vec::new(),
                total: total.min(MAX_SCORE_MATCHES),
            });
        }
        let order = (
            (SortBySimilarityScore, Order::Desc),
            (SortByString::for_field(BLOCK_ID), Order::Asc),
        );
        let top = TopDocs::for_doc_range(offset..end).order_by(order);
        let (total, found) = searcher.search(&query, &(Count, top))?;
        let snippets = self.snippet_generator(&searcher, &*query)?;
        let hits = found
            .into_iter()
            .map(|((score, _), address)| self.hit(&searcher, address, score, Some(&snippets)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SearchPage {
            hits,
            total: total.min(MAX_SCORE_MATCHES),
        })
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
        let query = TermQuery::new(
            Term::from_field_text(self.fields.tags, &tag),
            IndexRecordOption::Basic,
        );
        let mut page = self.in_page_order(&query, limit, offset, None)?;
        page.total = page.total.min(MAX_SCORE_MATCHES);
        Ok(page)
    }

    /// Blocks whose content contains `phrase` as consecutive words (case-insensitive, accents
    /// folded), in page-path and block order, at most `limit`; every score is 1.0. Used to find
    /// unlinked mentions of a page's title or aliases. A phrase without words finds nothing.
    pub fn search_phrase(&self, phrase: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        let mut analyzer = self.analyzer.clone();
        let phrase = Clause::phrase(analyze(&mut analyzer, phrase));
        if phrase.terms.is_empty() {
            return Ok(Vec::new());
        }
        let query = field_query(self.fields.content, &phrase);
        let searcher = self.reader.searcher();
        let snippets = self.snippet_generator(&searcher, &*query)?;
        Ok(self.in_page_order(&*query, limit, 0, Some(&snippets))?.hits)
    }

    fn in_page_order(
        &self,
        query: &dyn Query,
        limit: usize,
        offset: usize,
        snippets: Option<&SnippetGenerator>,
    ) -> Result<SearchPage, IndexError> {
        let searcher = self.reader.searcher();
        let end = offset.saturating_add(limit).min(MAX_SCORE_MATCHES);
        if offset >= end {
            return Ok(SearchPage {
                hits: Vec::new(),
                total: searcher.search(query, &Count)?,
            });
        }
        let order = (
            (SortByString::for_field(PAGE_PATH), Order::Asc),
            (
                SortByStaticFastValue::<u64>::for_field(POSITION),
                Order::Asc,
            ),
        );
        let top = TopDocs::for_doc_range(offset..end).order_by(order);
        let (total, found) = searcher.search(query, &(Count, top))?;
        let hits = found
            .into_iter()
            .map(|(_, address)| self.hit(&searcher, address, 1.0, snippets))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SearchPage { hits, total })
    }

    fn snippet_generator(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
    ) -> Result<SnippetGenerator, IndexError> {
        let mut generator = SnippetGenerator::create(searcher, query, self.fields.content)?;
        generator.set_max_num_chars(SNIPPET_MAX_BYTES);
        Ok(generator)
    }

    fn hit(
        &self,
        searcher: &Searcher,
        address: DocAddress,
        score: f32,
        snippets: Option<&SnippetGenerator>,
    ) -> Result<Hit, IndexError> {
        let doc: TantivyDocument = searcher.doc(address)?;
        let text = |field: Field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let content = text(self.fields.content);
        let snippet = match snippets {
            Some(generator) => render_snippet(&generator.snippet(&content), &content),
            None => lead(&content),
        };
        Ok(Hit {
            block_id: text(self.fields.block_id),
            page_path: text(self.fields.page_path),
            content,
            snippet,
            score,
        })
    }

    /// Number of searchable block docs as of the last commit.
    pub fn doc_count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Number of distinct page paths with at least one searchable doc, as of the last commit.
    pub fn page_count(&self) -> Result<u64, IndexError> {
        let searcher = self.reader.searcher();
        let mut pages: HashSet<Vec<u8>> = HashSet::new();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.page_path)?;
            let mut terms = inverted.terms().stream()?;
            while terms.advance() {
                if pages.contains(terms.key()) {
                    continue;
                }
                // The term dictionary still lists deleted docs' pages until a merge drops them.
                let live = match segment.alive_bitset() {
                    None => true,
                    Some(alive) => {
                        let mut postings = inverted
                            .read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
                        let mut doc = postings.doc();
                        while doc != TERMINATED && !alive.is_alive(doc) {
                            doc = postings.advance();
                        }
                        doc != TERMINATED
                    }
                };
                if live {
                    pages.insert(terms.key().to_vec());
                }
            }
        }
        Ok(u64::try_from(pages.len()).unwrap_or(u64::MAX))
    }
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
    fn tags_are_normalized() {
        assert_eq!(normalize_tag("  #Project "), "project");
        assert_eq!(normalize_tag("##ÉTÉ"), "été");
        assert_eq!(normalize_tag("#"), "");
    }
}
