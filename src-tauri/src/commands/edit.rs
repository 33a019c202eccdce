//! Working inside a note: edit part of it through the one write path, read its outline, read one
//! section (ADR-0016). The text work is pkm-markdown's (`sections.rs`, `edit.rs`, `diff.rs`);
//! this file reads and writes the note and gives block ids.

use std::time::SystemTime;

use pkm_core::{KbError, KbResult, VaultPath, time};
use pkm_markdown::Flavor;
pub use pkm_markdown::edit::EditOp;
use pkm_markdown::edit::{self, BlockIds};
use pkm_markdown::sections::{self, LineIndex, Section, SectionKind};

use crate::app::App;
use crate::commands::page::{document, existing_text, read_text};
use crate::convert::prepare;
use crate::dto::{EditResult, NoteOutline, OutlineHeading, SectionText};
use crate::write_path::{Edit, Outcome};

/// Block ids as the store gives them to the blocks of a text of the note: the one rule for
/// keeping ids (an `id::` property, else a stored block with the same content).
struct StoreIds<'a> {
    app: &'a App,
    path: &'a VaultPath,
}

impl StoreIds<'_> {
    fn all(&self, text: &str) -> Vec<Option<String>> {
        let p = prepare(
            &self.app.dialect,
            self.path,
            text,
            SystemTime::UNIX_EPOCH,
            text.len() as u64,
        );
        self.app
            .store
            .kept_block_ids(self.path, &p.blocks)
            .unwrap_or_else(|e| {
                tracing::warn!(note = %self.path, error = %e, "reading block ids");
                Vec::new()
            })
    }
}

impl BlockIds for StoreIds<'_> {
    fn position(&self, text: &str, id: &str) -> Option<usize> {
        self.all(text).iter().position(|x| x.as_deref() == Some(id))
    }
}

/// A markdown error said of the note at `path`.
fn of_note(e: pkm_markdown::MarkdownError, path: &VaultPath) -> KbError {
    KbError::from(e).with_note(path.as_str())
}

/// What an edit call leaves to answer with: the texts before and after, the note's mtime before.
struct Edited {
    old: String,
    new: String,
    mtime: Option<SystemTime>,
}

/// Applies `edits` in order to the note, all or none, as one write through the one write path
/// (`expected_modified`, atomic, hooks, store and index current on return). With `dry_run`, or
/// when the edits change nothing, nothing is written; the answer shows the note as it would be.
pub fn edit_page(
    app: &App,
    path: &VaultPath,
    edits: Vec<EditOp>,
    expected_modified: Option<&str>,
    dry_run: bool,
) -> KbResult<EditResult> {
    let outline = app.dialect.flavor == Flavor::Logseq;
    let p = path.clone();
    let (outcome, ed) = app.mutate_seeing_app(path, expected_modified, move |app, current| {
        let old = existing_text(current, &p)?.to_owned();
        let ids = StoreIds { app, path: &p };
        let new = edit::apply(&old, &edits, outline, &ids).map_err(|e| of_note(e, &p))?;
        let change = if dry_run || new == old {
            Edit::Keep
        } else {
            Edit::Write(new.clone())
        };
        let mtime = current.mtime;
        Ok((change, Edited { old, new, mtime }))
    })?;
    let diff = pkm_markdown::diff::unified(&ed.old, &ed.new, path.as_str());
    let (note, written) = match outcome {
        Outcome::Written(p, ids) => {
            let ids: Vec<Option<String>> = ids.into_iter().map(Some).collect();
            (document(path, ed.new, &p, &ids), true)
        }
        _ => {
            let mtime = ed.mtime.unwrap_or(SystemTime::UNIX_EPOCH);
            let mut p = prepare(&app.dialect, path, &ed.new, mtime, ed.new.len() as u64);
            p.record.modified_at = time::to_rfc3339(mtime);
            let ids = StoreIds { app, path }.all(&ed.new);
            (document(path, ed.new, &p, &ids), false)
        }
    };
    Ok(EditResult {
        note,
        diff,
        written,
    })
}

/// The note's text and its `modified_at`.
fn read(app: &App, path: &VaultPath) -> KbResult<(String, String)> {
    let (text, meta) = read_text(app, path)?;
    let mtime = meta
        .modified()
        .map_err(|_| KbError::external("reading the note's mtime"))?;
    Ok((text, time::to_rfc3339(mtime)))
}

/// The note's headings in order, each with its section path, lines, block id and size.
pub fn get_outline(app: &App, path: &VaultPath) -> KbResult<NoteOutline> {
    let (text, modified_at) = read(app, path)?;
    let ids = StoreIds { app, path }.all(&text);
    let lines = LineIndex::new(&text);
    let headings = sections::sections(&text)
        .into_iter()
        .filter(|s| s.kind != SectionKind::Anchor)
        .map(|s| heading(&lines, &s, &ids))
        .collect();
    Ok(NoteOutline {
        path: path.as_str().to_owned(),
        headings,
        modified_at,
    })
}

fn heading(lines: &LineIndex, s: &Section, ids: &[Option<String>]) -> OutlineHeading {
    let (line_start, line_end) = lines.span(&s.range());
    OutlineHeading {
        text: s.title.clone(),
        level: s.level,
        section: s.path.clone(),
        line_start,
        line_end,
        block_id: ids.get(s.block).cloned().flatten(),
        size: s.range().len(),
    }
}

/// The section `address` names: its text, heading included, its lines, the note's `modified_at`.
pub fn get_section(app: &App, path: &VaultPath, address: &str) -> KbResult<SectionText> {
    let (text, modified_at) = read(app, path)?;
    let all = sections::sections(&text);
    let s = sections::find(&text, &all, address).map_err(|e| of_note(e, path))?;
    let (line_start, line_end) = sections::line_span(&text, &s.range());
    Ok(SectionText {
        path: path.as_str().to_owned(),
        section: s.path.clone(),
        text: text.get(s.range()).unwrap_or_default().to_owned(),
        line_start,
        line_end,
        modified_at,
    })
}
