//! Every tag the vault uses, with how many notes use it.

use pkm_core::{KbError, KbResult};

use crate::app::App;
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
    let mut tags: Vec<(String, String, u64)> = app
        .store
        .all_tags()
        .map_err(KbError::from)?
        .into_iter()
        .map(|(tag, n)| (tag.to_lowercase(), tag, n))
        .filter(|(key, _, _)| key.starts_with(&prefix))
        .collect();
    tags.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let total = tags.len();
    let mut page: Vec<TagCount> = tags
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(_, tag, count)| TagCount { tag, count })
        .collect();
    page.truncate(dto::fit_to_budget(&page, app.config.list_budget));
    let end = offset + page.len();
    Ok(TagList {
        next_offset: (end < total).then_some(end),
        tags: page,
        total,
    })
}
