//! Search, tag search, autocomplete, backlinks and the index commands.

use std::collections::HashSet;

use pkm_core::{KbError, KbResult, VaultPath};
use pkm_index::MAX_SCORE_MATCHES;

use crate::app::App;
use crate::dto::{
    self, AutocompleteItem, AutocompleteResult, Backlink, BacklinkList, IndexStatus, SearchHit,
    SearchResults,
};

use crate::scan::{self, ScanMode};

fn to_results(app: &App, hits: Vec<pkm_index::Hit>, total: usize, offset: usize) -> SearchResults {
    let mut results: Vec<SearchHit> = hits
        .into_iter()
        .map(|h| SearchHit {
            block_id: h.block_id,
            content: h.content,
            page_path: h.page_path,
            snippet: h.snippet,
            score: h.score,
        })
        .collect();
    let fit = dto::fit_to_budget(&results, app.config.list_budget);
    results.truncate(fit);
    let end = offset + results.len();
    let next_offset = (end < total.min(MAX_SCORE_MATCHES)).then_some(end);
    SearchResults {
        results,
        total,
        next_offset,
    }
}

/// Full-text search over blocks (BM25), `limit` hits from `offset`.
pub fn search_blocks(
    app: &App,
    query: &str,
    limit: usize,
    offset: usize,
) -> KbResult<SearchResults> {
    app.wait_ready()?;
    check_offset(offset)?;
    let page = app
        .index
        .search(query, limit, offset)
        .map_err(KbError::from)?;
    Ok(to_results(app, page.hits, page.total, offset))
}

fn check_offset(offset: usize) -> KbResult<()> {
    if offset >= MAX_SCORE_MATCHES {
        return Err(KbError::invalid(format!(
            "offset must be below {MAX_SCORE_MATCHES}, the deepest a search pages"
        ))
        .with_hint("Refine the query instead of paging further."));
    }
    Ok(())
}

/// Blocks tagged `tag`, `limit` from `offset`, in page-path and block order: for a note with the
/// tag at page level (frontmatter), its first block; and every block that holds `#tag` itself.
/// `total` counts them all (capped like [`search_blocks`]); `next_offset` continues the list.
pub fn search_by_tag(app: &App, tag: &str, limit: usize, offset: usize) -> KbResult<SearchResults> {
    app.wait_ready()?;
    check_offset(offset)?;
    let tag = pkm_markdown::tags::normalize(tag);
    let page = app
        .index
        .search_by_tag(&tag, limit, offset)
        .map_err(KbError::from)?;
    Ok(to_results(app, page.hits, page.total, offset))
}

/// What `kb_autocomplete` completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompleteKind {
    Page,
    Tag,
    Backlink,
}

/// Suggestions best first: pages by title and path, tags by name, or link targets (page names,
/// aliases and targets that do not resolve yet).
pub fn autocomplete(
    app: &App,
    query: &str,
    kind: CompleteKind,
    limit: usize,
) -> KbResult<AutocompleteResult> {
    app.wait_ready()?;
    let items = match kind {
        CompleteKind::Page => {
            let resolver = app.resolver()?;
            let pages = resolver.pages();
            // Match on title and on path; keep each page once, at its better rank.
            let cands: Vec<(&str, usize)> = pages
                .iter()
                .enumerate()
                .flat_map(|(i, p)| [(p.title.as_str(), i), (p.path.as_str(), i)])
                .collect();
            let ranked =
                pkm_index::autocomplete::rank(query, cands.iter().map(|(s, _)| *s), limit * 2);
            let mut seen = HashSet::new();
            ranked
                .into_iter()
                .filter_map(|(ci, _)| cands.get(ci).map(|&(_, pi)| pi))
                .filter(|pi| seen.insert(*pi))
                .filter_map(|pi| pages.get(pi))
                .take(limit)
                .map(|p| AutocompleteItem {
                    text: p.title.clone(),
                    kind: "page",
                    detail: p.path.clone(),
                })
                .collect()
        }
        CompleteKind::Tag => {
            let tags = app.store.all_tags().map_err(KbError::from)?;
            pkm_index::autocomplete::rank(query, tags.iter().map(|(t, _)| t.as_str()), limit)
                .into_iter()
                .filter_map(|(i, _)| tags.get(i))
                .map(|(t, n)| AutocompleteItem {
                    text: t.clone(),
                    kind: "tag",
                    detail: format!("{n} note{}", if *n == 1 { "" } else { "s" }),
                })
                .collect()
        }
        CompleteKind::Backlink => {
            let graph = app.link_graph()?;
            let mut cands: Vec<(String, String)> = Vec::new();
            for p in graph.resolver.pages() {
                cands.push((p.title.clone(), p.path.clone()));
                cands.extend(p.aliases.iter().map(|a| (a.clone(), p.path.clone())));
            }
            cands.extend(
                graph
                    .unresolved
                    .iter()
                    .map(|t| (t.clone(), "unresolved".to_owned())),
            );
            let mut seen = HashSet::new();
            pkm_index::autocomplete::rank(query, cands.iter().map(|(t, _)| t.as_str()), limit * 2)
                .into_iter()
                .filter_map(|(i, _)| cands.get(i))
                .filter(|(t, _)| seen.insert(t.to_lowercase()))
                .take(limit)
                .map(|(t, d)| AutocompleteItem {
                    text: t.clone(),
                    kind: "backlink",
                    detail: d.clone(),
                })
                .collect()
        }
    };
    Ok(AutocompleteResult { items })
}

/// Blocks that link to the note (`is_linked`), and, when asked, blocks that mention its title
/// or an alias without linking (`is_linked: false`). Links from the note itself are left out.
pub fn get_page_backlinks(
    app: &App,
    path: &VaultPath,
    include_unlinked: bool,
) -> KbResult<BacklinkList> {
    app.wait_ready()?;
    let resolver = app.resolver()?;
    let page = app
        .store
        .get_page(path)
        .map_err(KbError::from)?
        .ok_or_else(|| KbError::not_found(path.as_str()))?;
    let names = resolver.names_of(&page);
    let mut seen = HashSet::new();
    let mut backlinks = Vec::new();
    for (link, content) in app.store.links_to_keys(&names).map_err(KbError::from)? {
        if link.source_page == page.path
            || resolver
                .resolve_from(&link.target, Some(&link.source_page))
                .map(|p| p.path.as_str())
                != Some(page.path.as_str())
        {
            continue;
        }
        if seen.insert(link.block_id.clone()) {
            backlinks.push(Backlink {
                source_id: link.block_id,
                source_page: link.source_page,
                context: content,
                is_linked: true,
            });
        }
    }
    if include_unlinked {
        let mut mention_names: Vec<&str> = vec![page.title.as_str()];
        mention_names.extend(page.aliases.iter().map(String::as_str));
        for name in mention_names {
            if name.trim().chars().count() < 3 {
                continue; // two-letter titles would mention-match half the vault
            }
            for hit in app.index.search_phrase(name, 500).map_err(KbError::from)? {
                if hit.page_path == page.path || !seen.insert(hit.block_id.clone()) {
                    continue;
                }
                backlinks.push(Backlink {
                    source_id: hit.block_id,
                    source_page: hit.page_path,
                    context: hit.content,
                    is_linked: false,
                });
            }
        }
    }
    let fit = dto::fit_to_budget(&backlinks, app.config.list_budget);
    backlinks.truncate(fit);
    Ok(BacklinkList { backlinks })
}

/// `kb_reindex`: refresh changed notes, or rebuild everything exclusively.
pub fn rebuild_search_index(app: &App, mode: ScanMode) -> KbResult<IndexStatus> {
    let report = scan::scan(app, mode)?;
    tracing::info!(
        ?mode,
        scanned = report.scanned,
        updated = report.updated,
        removed = report.removed,
        "reindex done"
    );
    index_status(app)
}

/// Freshness and coverage of the index.
pub fn index_status(app: &App) -> KbResult<IndexStatus> {
    // A note counts as indexed when its index entries are current with its store row (a note
    // with no blocks has no documents, yet is indexed).
    let total_pages = app.store.page_count().map_err(KbError::from)?;
    let lagging = app.store.index_lag_count().map_err(KbError::from)?;
    Ok(IndexStatus {
        index_fresh: app.index_fresh(),
        indexed_pages: total_pages.saturating_sub(lagging),
        total_pages,
        indexed_blocks: app.index.doc_count().map_err(KbError::from)?,
        last_indexed_at: app
            .store
            .get_meta("last_indexed_at")
            .map_err(KbError::from)?,
    })
}
