//! Setting and removing a note's properties through the one write path.

use pkm_core::{KbError, KbResult, VaultPath, time};
use pkm_markdown::properties::{PropertyEdit, set_properties as edit_properties};
use serde_json::Value;

use crate::app::App;
use crate::commands::page::existing_text;
use crate::dto::{PropertiesResult, PropertyChangeDto};
use crate::write_path::{Edit, Outcome};

/// What a call asks: keys to set (in order) and keys to remove.
pub struct PropertyRequest {
    pub set: Vec<(String, Value)>,
    pub remove: Vec<String>,
    pub expected_modified: Option<String>,
    pub dry_run: bool,
}

/// Sets and removes properties in the note's own form ([`pkm_markdown::properties`]), as one
/// write (or none: with `dry_run`, or when nothing changes); the note is re-read into the store
/// and the index like any write, so `tags`, `aliases` and `title` count at once.
pub fn set_properties(
    app: &App,
    path: &VaultPath,
    req: PropertyRequest,
) -> KbResult<PropertiesResult> {
    if req.set.is_empty() && req.remove.is_empty() {
        return Err(KbError::invalid("name at least one key in set or remove")
            .with_hint("Pass set: {\"key\": value} or remove: [\"key\"]."));
    }
    let (p, dialect, dry_run) = (path.clone(), app.dialect.clone(), req.dry_run);
    let (set, remove) = (req.set, req.remove);
    let (outcome, (edit, changed, mtime)) =
        app.mutate(path, req.expected_modified.as_deref(), move |current| {
            let text = existing_text(current, &p)?;
            let edit =
                edit_properties(text, &dialect, &set, &remove).map_err(|e| edit_error(e, &p))?;
            let changed = edit.text != text;
            let change = match changed && !dry_run {
                true => Edit::Write(edit.text.clone()),
                false => Edit::Keep,
            };
            Ok((change, (edit, changed, current.mtime)))
        })?;
    let modified_at = match outcome {
        Outcome::Written(prepared, _) => prepared.record.modified_at.clone(),
        _ => mtime.map(time::to_rfc3339).unwrap_or_default(),
    };
    Ok(result(path, edit, changed, dry_run, modified_at))
}

fn result(
    path: &VaultPath,
    edit: PropertyEdit,
    changed: bool,
    dry_run: bool,
    modified_at: String,
) -> PropertiesResult {
    PropertiesResult {
        path: path.as_str().to_owned(),
        form: edit.form.as_str(),
        changed,
        dry_run,
        modified_at,
        changes: edit
            .changes
            .into_iter()
            .map(|c| PropertyChangeDto {
                key: c.key,
                before: c.before,
                after: c.after,
            })
            .collect(),
    }
}

/// A property edit the note's text refuses, said of this note.
fn edit_error(e: pkm_markdown::MarkdownError, path: &VaultPath) -> KbError {
    let mut err = KbError::from(e);
    err.message = format!("cannot set the properties of {path}: {}", err.message);
    err.with_note(path.as_str())
}
