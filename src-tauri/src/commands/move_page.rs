//! `kb_move_page` (ADR-0019): move a note, or a folder and every note under it, and rewrite every
//! link of the vault that named a moved note, as the resolver decides it per linking note (the
//! rules `kb_backlinks` and `kb_resolve_link` use). Which links change and to what is decided
//! here, by resolving each link before and after the move; the bytes are pkm-markdown's
//! (`relink.rs`). The files change through the journaled apply (`App::mutate_files`): all or none.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use pkm_block::PageRow;
use pkm_core::{ErrorKind, KbError, KbResult, VaultPath, time};
use pkm_markdown::Dialect;
use pkm_markdown::linker::LinkKind;
use pkm_markdown::relink::{self, Form, Site};

use crate::app::App;
use crate::batch::FileChange;
use crate::commands::page::read_text;
use crate::convert::prepare;
use crate::dto::{MoveResult, MovedNote, RewrittenNote};
use crate::read_failure::ReadFailure;
use crate::resolver::Resolver;

/// What to move: one note, or every note under a folder (`a/b/`, with its trailing `/`).
#[derive(Debug, Clone)]
pub enum MoveSpec {
    Note { from: VaultPath, to: VaultPath },
    Folder { from: String, to: String },
}

impl MoveSpec {
    /// Reads `from` and `to` as two notes or two folders (ending in `/`). Refuses a mix, the same
    /// path, and a folder moved into itself.
    pub fn parse(from: &str, to: &str) -> KbResult<MoveSpec> {
        let folder = |s: &str| s.ends_with('/');
        match (folder(from), folder(to)) {
            (false, false) => {
                let (f, t) = (note(from, "from")?, note(to, "to")?);
                if f == t {
                    return Err(KbError::invalid(format!(
                        "from and to are the same note: {from}"
                    )));
                }
                Ok(MoveSpec::Note { from: f, to: t })
            }
            (true, true) => {
                let (f, t) = (folder_path(from, "from")?, folder_path(to, "to")?);
                if f == t {
                    return Err(KbError::invalid(format!(
                        "from and to are the same folder: {from}"
                    )));
                }
                if t.to_lowercase().starts_with(&f.to_lowercase()) {
                    return Err(KbError::invalid(format!(
                        "cannot move the folder {from} into itself ({to})"
                    )));
                }
                Ok(MoveSpec::Folder { from: f, to: t })
            }
            _ => Err(KbError::invalid(format!(
                "from and to must both be notes or both folders ending in '/': {from:?}, {to:?}"
            ))),
        }
    }
}

fn note(s: &str, key: &str) -> KbResult<VaultPath> {
    VaultPath::lexical(s).map_err(|e| KbError::invalid(format!("{key}: {e}: {s:?}")))
}

/// A folder (`a/b/`) checked as the notes under it would be, returned with its trailing `/`;
/// the vault's root is refused (a whole vault is no folder to move).
fn folder_path(s: &str, key: &str) -> KbResult<String> {
    let inner = s.trim_end_matches('/');
    if inner.is_empty() {
        return Err(KbError::invalid(format!(
            "{key}: the vault's root is no folder to move"
        )));
    }
    VaultPath::lexical(&format!("{inner}/note.md"))
        .map_err(|e| KbError::invalid(format!("{key}: {e}: {s:?}")))?;
    Ok(format!("{inner}/"))
}

/// One file the move changes: a moved note (its new path and text), or a linking note
/// rewritten in place (`to` = its path). `before` is what was read: the apply refuses the change
/// when the file no longer holds it.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub(crate) from: VaultPath,
    pub(crate) to: VaultPath,
    pub(crate) before: Vec<u8>,
    pub(crate) text: String,
}

/// The plan of a move: the files to change and the answer.
pub(crate) struct Plan {
    pub(crate) files: Vec<Planned>,
    pub(crate) answer: MoveResult,
}

/// Plans the move on the store and files as they are now. Reads only.
pub(crate) fn plan(
    app: &App,
    spec: &MoveSpec,
    update_links: bool,
    expected_modified: Option<&str>,
) -> KbResult<Plan> {
    let old = app.resolver()?;
    let moves = moves_of(&old, spec)?;
    if let (MoveSpec::Note { from, .. }, Some(expected)) = (spec, expected_modified) {
        check_modified(app, from, expected)?;
    } else if expected_modified.is_some() {
        return Err(KbError::invalid(
            "expected_modified applies to a note's move, not a folder's",
        ));
    }
    for to in moves.values() {
        target_free(app, to)?;
    }
    // The moved notes' texts, read once: their titles at the new paths, then their links.
    let mut texts: HashMap<String, String> = HashMap::new();
    let mut titles: HashMap<String, String> = HashMap::new();
    for (from, to) in &moves {
        let vp = VaultPath::lexical(from).map_err(|e| KbError::invalid(e.to_string()))?;
        let (text, meta) = read_text(app, &vp)?;
        let to_vp = VaultPath::lexical(to).map_err(|e| KbError::invalid(format!("to: {e}")))?;
        let mtime = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
        let p = prepare(&app.dialect, &to_vp, &text, mtime, text.len() as u64);
        titles.insert(from.clone(), p.record.title.clone());
        texts.insert(from.clone(), text);
    }
    let new = Arc::new(moved_resolver(app, &old, &moves, &titles)?);
    let map = |p: &str| -> String { moves.get(p).cloned().unwrap_or_else(|| p.to_owned()) };

    // The notes that may hold a link to change: the moved notes, every note with a link that
    // resolved to a moved note, and every note with a link the move would take elsewhere. Only a
    // link under one of the moved pages' names, old or new, can resolve differently from a note
    // that stays (the resolver matches names; a stored markdown target is a vault path), so the
    // store is asked for the links under those names alone.
    let mut candidates: HashSet<String> = moves.keys().cloned().collect();
    if update_links {
        let mut names: Vec<String> = Vec::new();
        for (from, to) in &moves {
            if let Some(p) = old.pages().iter().find(|p| &p.path == from) {
                names.extend(old.names_of(p));
            }
            if let Some(p) = new.pages().iter().find(|p| &p.path == to) {
                names.extend(new.names_of(p));
            }
        }
        names.sort();
        names.dedup();
        for (link, _) in app.store.links_to_keys(&names).map_err(KbError::from)? {
            let source = link.source_page.as_str();
            if candidates.contains(source) {
                continue;
            }
            let Some(before) = old.resolve_from(&link.target, Some(source)) else {
                continue;
            };
            let moved = moves.contains_key(before.path.as_str());
            let after = new
                .resolve_from(&link.target, Some(source))
                .map(|p| &p.path);
            if moved || after.map(String::as_str) != Some(map(&before.path).as_str()) {
                candidates.insert(source.to_owned());
            }
        }
    }
    let mut candidates: Vec<String> = candidates.into_iter().collect();
    candidates.sort();

    let mut files = Vec::new();
    let mut rewritten = Vec::new();
    for path in candidates {
        let vp = VaultPath::lexical(&path).map_err(|e| KbError::invalid(e.to_string()))?;
        let text = match texts.remove(&path) {
            Some(t) => t,
            None => read_text(app, &vp)?.0,
        };
        let new_path = map(&path);
        let (changes, count) = if update_links {
            relink_note(&app.dialect, &old, &new, &path, &new_path, &text, &map)
        } else {
            (Vec::new(), 0)
        };
        let out = if changes.is_empty() {
            text.clone()
        } else {
            relink::rewrite(&text, changes).map_err(|e| KbError::from(e).with_note(&path))?
        };
        if count > 0 {
            rewritten.push(RewrittenNote {
                path: new_path.clone(),
                links: count,
            });
        }
        if new_path != path || out != text {
            let to = VaultPath::lexical(&new_path).map_err(|e| KbError::invalid(e.to_string()))?;
            files.push(Planned {
                from: vp,
                to,
                before: text.into_bytes(),
                text: out,
            });
        }
    }
    rewritten.sort_by(|a, b| a.path.cmp(&b.path));
    let moved = moves
        .iter()
        .map(|(from, to)| MovedNote {
            from: from.clone(),
            to: to.clone(),
        })
        .collect();
    Ok(Plan {
        files,
        answer: MoveResult {
            moved,
            rewritten,
            dry_run: false,
        },
    })
}

/// Old path → new path of every note the move takes, in path order.
fn moves_of(old: &Resolver, spec: &MoveSpec) -> KbResult<BTreeMap<String, String>> {
    let mut moves = BTreeMap::new();
    match spec {
        MoveSpec::Note { from, to } => {
            if !old.pages().iter().any(|p| p.path == from.as_str()) {
                return Err(KbError::not_found(from.as_str()));
            }
            moves.insert(from.as_str().to_owned(), to.as_str().to_owned());
        }
        MoveSpec::Folder { from, to } => {
            for p in old.pages() {
                if let Some(rest) = p.path.strip_prefix(from.as_str()) {
                    moves.insert(p.path.clone(), format!("{to}{rest}"));
                }
            }
            if moves.is_empty() {
                let mut e = KbError::not_found(from.trim_end_matches('/'));
                e.message = format!("No note under the folder {from}");
                return Err(e);
            }
        }
    }
    Ok(moves)
}

fn check_modified(app: &App, path: &VaultPath, expected: &str) -> KbResult<()> {
    let exp = time::parse_rfc3339(expected).ok_or_else(|| {
        KbError::invalid(format!(
            "expected_modified is not an RFC 3339 timestamp: {expected:?}"
        ))
        .with_hint("Pass the modified_at string a previous {open_page} returned.")
    })?;
    let (_, meta) = read_text(app, path)?;
    let now = meta.modified().ok();
    if now != Some(exp) {
        let shown = now
            .map(time::to_rfc3339)
            .unwrap_or_else(|| "unknown".into());
        return Err(KbError::new(
            ErrorKind::Conflict,
            format!("Note changed since {expected}: now {shown}"),
        )
        .with_note(path.as_str())
        .with_hint("Read it again with {open_page} and move it with the new modified_at."));
    }
    Ok(())
}

/// Conflict when a file (a note or anything else) is at `to` already.
fn target_free(app: &App, to: &str) -> KbResult<()> {
    match app.root.read_regular(to) {
        Err(ReadFailure::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        _ => Err(KbError::new(
            ErrorKind::Conflict,
            format!("A file exists at the target already: {to}"),
        )
        .with_note(to)
        .with_hint("Pick another target, or move or delete that file first.")),
    }
}

/// The resolver of the vault as it will be after the move: each moved page at its new path,
/// with the title its text gives it there (`titles`, by old path: a title that was its file's
/// name follows the file; one the note names stays).
fn moved_resolver(
    app: &App,
    old: &Resolver,
    moves: &BTreeMap<String, String>,
    titles: &HashMap<String, String>,
) -> KbResult<Resolver> {
    let d = &app.dialect;
    let pages: Vec<PageRow> = old
        .pages()
        .iter()
        .map(|p| match moves.get(&p.path) {
            None => p.clone(),
            Some(to) => {
                let mut q = p.clone();
                if let Some(t) = titles.get(&p.path) {
                    q.title = t.clone();
                }
                q.path = to.clone();
                q
            }
        })
        .collect();
    let block_refs = app
        .store
        .block_ref_pages()
        .map_err(KbError::from)?
        .into_iter()
        .map(|(k, p)| {
            let p = moves.get(&p).cloned().unwrap_or(p);
            (k, p)
        })
        .collect();
    Ok(Resolver::new(pages, block_refs, d))
}

/// The link target a site is resolved by from the note at `note`: a markdown destination joined
/// to the note's folder (as `convert.rs` stores it), any other target as written.
fn resolved_target(site: &Site, note: &str) -> String {
    match site.link.kind {
        LinkKind::Markdown => relink::join_relative(note, &site.link.target)
            .unwrap_or_else(|| site.link.target.clone()),
        _ => site.link.target.clone(),
    }
}

/// The changes to the note at `path` (at `new_path` after the move) and how many links they
/// rewrite: each link that resolved to a page `P` and would not resolve to `P`'s path after the
/// move gets the shortest target, in its form, that does. A link that resolved to nothing is
/// left as it is.
fn relink_note(
    dialect: &Dialect,
    old: &Resolver,
    new: &Resolver,
    path: &str,
    new_path: &str,
    text: &str,
    map: &dyn Fn(&str) -> String,
) -> (Vec<(std::ops::Range<usize>, String)>, usize) {
    let sites = relink::sites(text, dialect);
    let mut changes = Vec::new();
    let mut count = 0;
    // Wiki targets rewritten in this note, by old text (lowercased): for Foam's definitions.
    let mut wiki_renamed: HashMap<String, String> = HashMap::new();
    for site in &sites {
        let Some(before) = old.resolve_from(&resolved_target(site, path), Some(path)) else {
            continue;
        };
        let want = map(&before.path);
        let after = new
            .resolve_from(&resolved_target(site, new_path), Some(new_path))
            .map(|p| p.path.as_str());
        if after == Some(want.as_str()) {
            continue;
        }
        let Some(written) = new_target(dialect, new, text, site, new_path, &want) else {
            continue;
        };
        let (range, replacement) = relink::replacement(text, site, &written);
        if text.get(range.clone()) == Some(replacement.as_str()) {
            continue;
        }
        if site.form == Form::Wiki
            && let Some(old_text) = text.get(site.target.clone())
        {
            wiki_renamed.insert(old_text.to_lowercase(), written.clone());
        }
        changes.push((range, replacement));
        count += 1;
    }
    // Foam's definition `[note]: note.md` of a rewritten `[[note]]` takes the new name as label,
    // unless a reference link (`[x][note]`) uses the label.
    for site in &sites {
        if let Form::Definition {
            label,
            referenced: false,
        } = &site.form
            && let Some(new_label) = text
                .get(label.clone())
                .and_then(|l| wiki_renamed.get(&l.trim().to_lowercase()))
        {
            changes.push((label.clone(), new_label.clone()));
        }
    }
    (changes, count)
}

/// What to write in `site` so that, from the note at `note` (after the move), it resolves to
/// the page at `want`: for a markdown link the relative path; for a wiki link or tag the page's
/// name while it resolves there, else its shortest partial path that does, else its whole path
/// (with `.md` when the old target had it).
fn new_target(
    dialect: &Dialect,
    new: &Resolver,
    text: &str,
    site: &Site,
    note: &str,
    want: &str,
) -> Option<String> {
    match &site.form {
        Form::Markdown | Form::Definition { .. } => {
            let mut dest = relink::relative_path(note, want);
            let old = relink::dest_as_written(text, site);
            if !old.to_lowercase().contains(".md")
                && let Some(stem) = dest.strip_suffix(".md")
            {
                dest = stem.to_owned();
            }
            if old.starts_with("./") && !dest.starts_with("../") {
                dest = format!("./{dest}");
            }
            Some(dest)
        }
        Form::Wiki | Form::Tag { .. } | Form::PropertyItem => {
            let page = new.pages().iter().find(|p| p.path == want)?;
            let slug = pkm_core::path::slug_of(&page.path);
            let mut names = vec![dialect.page_name(&page.path), page.title.clone()];
            let mut suffixes: Vec<&str> = slug
                .match_indices('/')
                .filter_map(|(i, _)| slug.get(i + 1..))
                .collect();
            suffixes.reverse();
            names.extend(suffixes.into_iter().map(str::to_owned));
            names.push(slug.to_owned());
            let with_md = site.link.target.to_lowercase().ends_with(".md");
            let found = names.into_iter().find(|n| {
                !n.trim().is_empty()
                    && new.resolve_from(n, Some(note)).map(|p| p.path.as_str()) == Some(want)
            });
            found.map(|n| if with_md { format!("{n}.md") } else { n })
        }
    }
}

/// `kb_move_page`: moves the note (or every note under the folder) and rewrites the links to
/// them, all files or none (`App::mutate_files`, journaled); with `dry_run`, answers the same and
/// changes nothing.
pub fn move_page(
    app: &App,
    from: &str,
    to: &str,
    update_links: bool,
    expected_modified: Option<&str>,
    dry_run: bool,
) -> KbResult<MoveResult> {
    let spec = MoveSpec::parse(from, to)?;
    app.wait_ready()?;
    if dry_run {
        let mut answer = plan(app, &spec, update_links, expected_modified)?.answer;
        answer.dry_run = true;
        return Ok(answer);
    }
    let expected = expected_modified.map(str::to_owned);
    app.mutate_files(move |app| {
        let p = plan(app, &spec, update_links, expected.as_deref())?;
        let changes = p
            .files
            .into_iter()
            .map(|f| {
                if f.from == f.to {
                    FileChange::Write {
                        path: f.from,
                        before: f.before,
                        text: f.text,
                    }
                } else {
                    FileChange::Move {
                        from: f.from,
                        to: f.to,
                        before: f.before,
                        text: f.text,
                    }
                }
            })
            .collect();
        Ok((changes, p.answer))
    })
}
