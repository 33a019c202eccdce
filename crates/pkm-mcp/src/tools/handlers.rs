//! Tool handlers: thin adapters that read validated arguments, call one command and return
//! its DTO as JSON. Defaults are the schemas' `default`s.

use pkm_core::{KbError, KbResult, PathError, VaultPath};
use serde::Serialize;
use serde_json::Value;
use stratum_app::App;
use stratum_app::commands::search::CompleteKind;
use stratum_app::commands::{graph, page, search, vault};
use stratum_app::scan::ScanMode;

use super::Args;

fn json(v: impl Serialize) -> KbResult<Value> {
    serde_json::to_value(v).map_err(|_| KbError::internal("serializing a response"))
}

fn str_arg<'a>(args: &'a Args, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn usize_arg(args: &Args, key: &str, default: usize) -> usize {
    args.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(default)
}

/// The vault path in argument `key`, checked: InvalidArgs naming the rule it breaks.
pub(crate) fn note_path(app: &App, args: &Args, key: &str) -> KbResult<VaultPath> {
    let raw = str_arg(args, key).unwrap_or_default();
    VaultPath::parse(app.vault(), raw).map_err(|e| path_error(key, raw, &e))
}

pub(crate) fn path_error(key: &str, raw: &str, e: &PathError) -> KbError {
    let mut err = KbError::invalid(format!("{key}: {e}")).with_hint(
        "Use a vault-relative path with '/' separators ending in .md, e.g. 'projects/example.md'.",
    );
    // Echo the caller's path only when it is a relative one: never an absolute location.
    if !matches!(e, PathError::Absolute | PathError::Nul | PathError::TooLong) {
        err = err.with_note(raw);
    }
    err
}

pub(super) fn get_page(app: &App, a: &Args) -> KbResult<Value> {
    json(page::open_page(app, &note_path(app, a, "path")?)?)
}

pub(super) fn list_pages(app: &App, a: &Args) -> KbResult<Value> {
    json(page::list_pages(
        app,
        usize_arg(a, "limit", 100),
        str_arg(a, "cursor"),
    )?)
}

pub(super) fn write_page(app: &App, a: &Args) -> KbResult<Value> {
    let path = note_path(app, a, "path")?;
    json(page::save_page(
        app,
        &path,
        str_arg(a, "content").unwrap_or_default(),
        str_arg(a, "expected_modified"),
    )?)
}

pub(super) fn delete_page(app: &App, a: &Args) -> KbResult<Value> {
    json(page::delete_page(
        app,
        &note_path(app, a, "path")?,
        str_arg(a, "expected_modified"),
    )?)
}

pub(super) fn reindex(app: &App, a: &Args) -> KbResult<Value> {
    let mode = match str_arg(a, "mode") {
        Some("rebuild") => ScanMode::Rebuild,
        _ => ScanMode::Incremental,
    };
    json(search::rebuild_search_index(app, mode)?)
}

pub(super) fn index_status(app: &App, _: &Args) -> KbResult<Value> {
    json(search::index_status(app)?)
}

pub(super) fn search(app: &App, a: &Args) -> KbResult<Value> {
    json(search::search_blocks(
        app,
        str_arg(a, "query").unwrap_or_default(),
        usize_arg(a, "limit", 20),
        usize_arg(a, "offset", 0),
    )?)
}

pub(super) fn search_by_tag(app: &App, a: &Args) -> KbResult<Value> {
    json(search::search_by_tag(
        app,
        str_arg(a, "tag").unwrap_or_default(),
        usize_arg(a, "limit", 50),
        usize_arg(a, "offset", 0),
    )?)
}

pub(super) fn autocomplete(app: &App, a: &Args) -> KbResult<Value> {
    let kind = match str_arg(a, "kind") {
        Some("tag") => CompleteKind::Tag,
        Some("backlink") => CompleteKind::Backlink,
        _ => CompleteKind::Page,
    };
    json(search::autocomplete(
        app,
        str_arg(a, "query").unwrap_or_default(),
        kind,
        usize_arg(a, "limit", 10),
    )?)
}

pub(super) fn backlinks(app: &App, a: &Args) -> KbResult<Value> {
    let include_unlinked = a
        .get("include_unlinked")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    json(search::get_page_backlinks(
        app,
        &note_path(app, a, "path")?,
        include_unlinked,
    )?)
}

pub(super) fn graph(app: &App, a: &Args) -> KbResult<Value> {
    let path = match str_arg(a, "path") {
        Some(_) => Some(note_path(app, a, "path")?),
        None => None,
    };
    json(graph::get_graph_data(
        app,
        path.as_ref(),
        usize_arg(a, "depth", 2),
    )?)
}

pub(super) fn resolve_link(app: &App, a: &Args) -> KbResult<Value> {
    json(graph::resolve_link_target(
        app,
        str_arg(a, "target").unwrap_or_default(),
    )?)
}

pub(super) fn add_tag(app: &App, a: &Args) -> KbResult<Value> {
    json(page::add_tag(
        app,
        &note_path(app, a, "path")?,
        str_arg(a, "tag").unwrap_or_default(),
    )?)
}

pub(super) fn remove_tag(app: &App, a: &Args) -> KbResult<Value> {
    json(page::remove_tag(
        app,
        &note_path(app, a, "path")?,
        str_arg(a, "tag").unwrap_or_default(),
    )?)
}

pub(super) fn vault_info(app: &App, _: &Args) -> KbResult<Value> {
    json(vault::get_vault_info(app)?)
}
