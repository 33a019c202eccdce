//! The notes changed lately, from the store's modification times.

use pkm_core::{KbError, KbResult, time};

use crate::app::App;
use crate::dto::{self, RecentChange, RecentChanges};

/// Notes modified after `since` (RFC 3339; every note without it), newest first, `limit` from
/// `offset`; `total` counts them all and `next_offset` continues the list.
pub fn recent_changes(
    app: &App,
    since: Option<&str>,
    limit: usize,
    offset: usize,
) -> KbResult<RecentChanges> {
    app.wait_ready()?;
    let after_ns = match since {
        None => -1,
        Some(s) => time::parse_rfc3339(s).map(time::to_nanos).ok_or_else(|| {
            KbError::invalid(format!("since is not an RFC 3339 timestamp: {s:?}")).with_hint(
                "Pass a time such as 2026-01-31T09:00:00Z, or a modified_at this server returned.",
            )
        })?,
    };
    let (rows, total) = app
        .store
        .changed_since(after_ns, limit, offset)
        .map_err(KbError::from)?;
    let mut changes: Vec<RecentChange> = rows
        .into_iter()
        .map(|r| RecentChange {
            path: r.path,
            title: r.title,
            modified_at: r.modified_at,
        })
        .collect();
    changes.truncate(dto::fit_to_budget(&changes, app.config.list_budget));
    let total = usize::try_from(total).unwrap_or(usize::MAX);
    let end = offset + changes.len();
    Ok(RecentChanges {
        next_offset: (end < total).then_some(end),
        changes,
        total,
    })
}
