//! Every tag the vault uses, with how many notes use it.

use std::sync::Arc;

use pkm_core::{KbError, KbResult};

use crate::app::{App, TagCounts};
use crate::dto::{self, TagCount, TagList};

/// The vault's tags (frontmatter, inline and Logseq `tags::` alike: the store's page tags), each
/// with its number of notes, most used first, ties by name; only those starting with `prefix`
/// (case-insensitively, a leading `#` ignored) when given. `limit` from `offset`; `total` counts
/// them all and `next_offset` continues the list.
pub fn list_tags(
    app: &App,
    prefix: Option<&str>,
    limit: usize,
    offset: usize,
) -> KbResult<TagList> {
    app.wait_ready()?;
    let prefix = prefix
        .map(|p| pkm_markdown::tags::normalize(p).to_lowercase())
        .unwrap_or_default();
    let counts = tag_counts(app)?;
    let matching = counts.iter().filter(|(key, _, _)| key.starts_with(&prefix));
    let total = matching.clone().count();
    let mut page: Vec<TagCount> = matching
        .skip(offset)
        .take(limit)
        .map(|(_, tag, count)| TagCount {
            tag: tag.clone(),
            count: *count,
        })
        .collect();
    page.truncate(dto::fit_to_budget(&page, app.config.list_budget));
    let end = offset + page.len();
    Ok(TagList {
        next_offset: (end < total).then_some(end),
        tags: page,
        total,
    })
}

/// The sorted counts, counted again only after the store has changed: counting groups every
/// page tag row (tens of milliseconds at 10,000 notes), reading the cache takes none.
fn tag_counts(app: &App) -> KbResult<Arc<TagCounts>> {
    // Read before counting: a write during the count leaves a stale key, not stale counts.
    let key = app.store.write_count();
    let mut cached = app.tag_counts.lock();
    if let Some((k, counts)) = cached.as_ref()
        && *k == key
    {
        return Ok(Arc::clone(counts));
    }
    let mut counts: TagCounts = app
        .store
        .all_tags()
        .map_err(KbError::from)?
        .into_iter()
        .map(|(tag, n)| (tag.to_lowercase(), tag, n))
        .collect();
    counts.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let counts = Arc::new(counts);
    *cached = Some((key, Arc::clone(&counts)));
    Ok(counts)
}
