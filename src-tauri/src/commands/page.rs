//! Reading, listing, writing, deleting and tagging notes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pkm_core::{KbError, KbResult, VaultPath};

use crate::app::App;
use crate::convert::{Prepared, prepare};
use crate::dto::{self, Empty, LinkDto, NoteDocument, PageList, PageSummary, TagOperationResult};
use crate::read_failure::ReadFailure;
use crate::write_path::{Edit, Outcome, escapes, not_regular};

pub(crate) fn document(
    path: &VaultPath,
    text: String,
    p: &Prepared,
    ids: &[Option<String>],
) -> NoteDocument {
    NoteDocument {
        path: path.as_str().to_owned(),
        slug: path.slug().to_owned(),
        title: p.record.title.clone(),
        frontmatter: p.frontmatter.clone(),
        links: p
            .links
            .iter()
            .map(|(block, l)| LinkDto {
                target: l.target.clone(),
                block_id: block.and_then(|i| ids.get(i)).cloned().flatten(),
                position: l.position,
            })
            .collect(),
        tags: p.record.tags.clone(),
        block_count: p.blocks.len() as u64,
        modified_at: p.record.modified_at.clone(),
        content: text,
    }
}

pub(crate) fn read_text(app: &App, path: &VaultPath) -> KbResult<(String, std::fs::Metadata)> {
    let (bytes, meta) = app.root.read_regular(path.as_str()).map_err(|e| match e {
        ReadFailure::NotRegular => not_regular(path),
        ReadFailure::Escapes => escapes(path),
        ReadFailure::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
            KbError::not_found(path.as_str())
        }
        ReadFailure::Io(e) => {
            tracing::error!(note = %path, error = %e, "cannot read note");
            KbError::external("reading the note").with_note(path.as_str())
        }
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        KbError::invalid(format!("Note is not valid UTF-8 text: {path}"))
            .with_note(path.as_str())
            .with_hint("Only UTF-8 markdown notes can be read through the tools.")
    })?;
    Ok((text, meta))
}

/// How long a read of a note the store is behind on waits for the writer to catch up.
const STALE_READ_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Reads a note from disk (the source of truth) with the block ids the store gave it. A note the
/// store is behind on (an external edit the watcher has not applied yet) gets a sync queued on the
/// writer; the read waits a moment for it, so the ids returned are the ones search hits will
/// carry, but never behind a rebuild: then it answers from the file, with the ids of the blocks
/// the store already knows (by id property or identical content) and none for new ones.
pub fn open_page(app: &App, path: &VaultPath) -> KbResult<NoteDocument> {
    let (text, meta) = read_text(app, path)?;
    let mtime = meta
        .modified()
        .map_err(|_| KbError::external("reading the note's mtime"))?;
    let prepared = prepare(&app.dialect, path, &text, mtime, meta.len());
    let row = app.store.get_page(path).map_err(KbError::from)?;
    let fresh = row.as_ref().is_some_and(|r| r.hash == prepared.record.hash);
    let synced = fresh || {
        let owned = path.clone();
        app.on_writer_within(STALE_READ_WAIT, move |app, writer| {
            crate::scan::sync_paths(app, writer, std::slice::from_ref(&owned))
        })
        .is_some_and(|r| r.is_ok())
    };
    let ids: Vec<Option<String>> = if synced {
        let stored = app.store.get_blocks_by_page(path).map_err(KbError::from)?;
        stored.into_iter().map(|b| Some(b.id)).collect()
    } else {
        // The ids the sync will give: the store's one rule for keeping block ids.
        app.store
            .kept_block_ids(path, &prepared.blocks)
            .map_err(KbError::from)?
    };
    Ok(document(path, text, &prepared, &ids))
}

/// Raw markdown of a note, for `note://` resources.
pub fn read_raw(app: &App, path: &VaultPath) -> KbResult<String> {
    read_text(app, path).map(|(text, _)| text)
}

fn encode_cursor(path: &str) -> String {
    URL_SAFE_NO_PAD.encode(path.as_bytes())
}

fn decode_cursor(cursor: &str) -> KbResult<String> {
    URL_SAFE_NO_PAD
        .decode(cursor.as_bytes())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            KbError::invalid("cursor is not a value this server returned").with_hint(
                "Pass next_cursor from a previous {list_pages} response, or omit it to start over.",
            )
        })
}

/// Notes in path order, `limit` at a time; `next_cursor` continues after the last one. A page
/// of results that would pass the response cap is cut short and continues likewise.
pub fn list_pages(app: &App, limit: usize, cursor: Option<&str>) -> KbResult<PageList> {
    app.wait_ready()?;
    let after = cursor.map(decode_cursor).transpose()?;
    let mut rows = app
        .store
        .list_pages(after.as_deref(), limit + 1)
        .map_err(KbError::from)?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let mut pages: Vec<PageSummary> = rows
        .into_iter()
        .map(|r| PageSummary {
            slug: pkm_core::path::slug_of(&r.path).to_owned(),
            path: r.path,
            title: r.title,
            block_count: r.block_count,
            modified_at: r.modified_at,
        })
        .collect();
    let fit = dto::fit_to_budget(&pages, app.config.list_budget);
    let cut = fit < pages.len();
    pages.truncate(fit);
    let next_cursor = if more || cut {
        pages.last().map(|p| encode_cursor(&p.path))
    } else {
        None
    };
    Ok(PageList { pages, next_cursor })
}

/// Creates or overwrites a note with exactly `content`, through the one write path.
pub fn save_page(
    app: &App,
    path: &VaultPath,
    content: &str,
    expected_modified: Option<&str>,
) -> KbResult<NoteDocument> {
    let text = content.to_owned();
    let (outcome, ()) = app.mutate(path, expected_modified, move |_| {
        Ok((Edit::Write(text), ()))
    })?;
    match outcome {
        Outcome::Written(p, ids) => {
            let ids: Vec<Option<String>> = ids.into_iter().map(Some).collect();
            Ok(document(path, content.to_owned(), &p, &ids))
        }
        _ => Err(KbError::internal("save produced no write")),
    }
}

/// Deletes a note and its store and index entries.
pub fn delete_page(
    app: &App,
    path: &VaultPath,
    expected_modified: Option<&str>,
) -> KbResult<Empty> {
    app.mutate(path, expected_modified, |_| Ok((Edit::Delete, ())))?;
    Ok(Empty {})
}

fn tag_of(tag: &str) -> KbResult<String> {
    let t = pkm_markdown::tags::normalize(tag);
    if t.is_empty() {
        return Err(KbError::invalid(
            "tag is empty once its leading '#' is removed",
        ));
    }
    Ok(t)
}

pub(crate) fn existing_text<'a>(
    current: &'a crate::write_path::Current,
    path: &VaultPath,
) -> KbResult<&'a str> {
    if current.bytes.is_none() {
        return Err(KbError::not_found(path.as_str()));
    }
    current.text().ok_or_else(|| {
        KbError::invalid(format!("Note is not valid UTF-8 text: {path}")).with_note(path.as_str())
    })
}

/// A tag edit the note's text refuses: the markdown crate's error and hint (a bad tag, a `tags`
/// value that is not a list, broken YAML), said of this note.
fn edit_error(e: pkm_markdown::TagEditError, path: &VaultPath) -> KbError {
    let mut err = KbError::from(e);
    err.message = format!("cannot edit the tags of {path}: {}", err.message);
    err.with_note(path.as_str())
}

/// Adds a tag to the note's frontmatter `tags` with the smallest text edit; a note that already
/// has it (in frontmatter or as an inline `#tag`) is left untouched (`applied: 0`).
pub fn add_tag(app: &App, path: &VaultPath, tag: &str) -> KbResult<TagOperationResult> {
    let tag = tag_of(tag)?;
    let (p, t) = (path.clone(), tag.clone());
    let (_, applied) = app.mutate(path, None, move |current| {
        let text = existing_text(current, &p)?;
        match pkm_markdown::tags::add_tag(text, &t).map_err(|e| edit_error(e, &p))? {
            Some(new) => Ok((Edit::Write(new), 1)),
            None => Ok((Edit::Keep, 0)),
        }
    })?;
    Ok(TagOperationResult {
        path: path.as_str().to_owned(),
        success: true,
        tag,
        action: "add",
        applied,
    })
}

/// Removes a tag from frontmatter and every inline `#tag`; `applied` counts the removals.
pub fn remove_tag(app: &App, path: &VaultPath, tag: &str) -> KbResult<TagOperationResult> {
    let tag = tag_of(tag)?;
    let (p, t) = (path.clone(), tag.clone());
    let (_, applied) = app.mutate(path, None, move |current| {
        let text = existing_text(current, &p)?;
        let (new, applied) =
            pkm_markdown::tags::remove_tag(text, &t).map_err(|e| edit_error(e, &p))?;
        Ok((
            if applied == 0 {
                Edit::Keep
            } else {
                Edit::Write(new)
            },
            applied,
        ))
    })?;
    Ok(TagOperationResult {
        path: path.as_str().to_owned(),
        success: true,
        tag,
        action: "remove",
        applied,
    })
}
