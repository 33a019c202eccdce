//! Tool handlers: thin adapters that take their tool's typed arguments, call one command and
//! return its DTO as JSON. Each tool's arguments are a struct here; the arguments arrive checked
//! against the tool's schema, with the schema's `default`s filled in ([`crate::schema::validate`]),
//! so no default is written twice.

use pkm_core::{KbError, KbResult, PathError, VaultPath};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stratum_app::App;
use stratum_app::commands::properties::PropertyRequest;
use stratum_app::commands::search::CompleteKind;
use stratum_app::commands::{
    edit, graph, move_page, page, properties, recent, search, tags, vault,
};
use stratum_app::scan::ScanMode;

use super::Args;

fn json(v: impl Serialize) -> KbResult<Value> {
    serde_json::to_value(v).map_err(|_| KbError::internal("serializing a response"))
}

/// The arguments as the tool's struct. The schema was checked first, so a mismatch here is a
/// schema and struct that disagree: InvalidArgs all the same, naming what serde saw.
fn typed<T: DeserializeOwned>(args: Args) -> KbResult<T> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| KbError::invalid(format!("invalid arguments: {e}")))
}

/// `raw`, the vault path in argument `key`, checked: InvalidArgs naming the rule it breaks.
pub(crate) fn note_path(app: &App, raw: &str, key: &str) -> KbResult<VaultPath> {
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

#[derive(Deserialize)]
struct PathArg {
    path: String,
}

pub(super) fn get_page(app: &App, a: Args) -> KbResult<Value> {
    let a: PathArg = typed(a)?;
    json(page::open_page(app, &note_path(app, &a.path, "path")?)?)
}

#[derive(Deserialize)]
struct ListPages {
    limit: usize,
    cursor: Option<String>,
}

pub(super) fn list_pages(app: &App, a: Args) -> KbResult<Value> {
    let a: ListPages = typed(a)?;
    json(page::list_pages(app, a.limit, a.cursor.as_deref())?)
}

#[derive(Deserialize)]
struct WritePage {
    path: String,
    content: String,
    expected_modified: Option<String>,
}

pub(super) fn write_page(app: &App, a: Args) -> KbResult<Value> {
    let a: WritePage = typed(a)?;
    let path = note_path(app, &a.path, "path")?;
    json(page::save_page(
        app,
        &path,
        &a.content,
        a.expected_modified.as_deref(),
    )?)
}

#[derive(Deserialize)]
struct DeletePage {
    path: String,
    expected_modified: Option<String>,
}

pub(super) fn delete_page(app: &App, a: Args) -> KbResult<Value> {
    let a: DeletePage = typed(a)?;
    json(page::delete_page(
        app,
        &note_path(app, &a.path, "path")?,
        a.expected_modified.as_deref(),
    )?)
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Incremental,
    Rebuild,
}

#[derive(Deserialize)]
struct Reindex {
    mode: Mode,
}

pub(super) fn reindex(app: &App, a: Args) -> KbResult<Value> {
    let a: Reindex = typed(a)?;
    let mode = match a.mode {
        Mode::Incremental => ScanMode::Incremental,
        Mode::Rebuild => ScanMode::Rebuild,
    };
    json(search::rebuild_search_index(app, mode)?)
}

pub(super) fn index_status(app: &App, _: Args) -> KbResult<Value> {
    json(search::index_status(app)?)
}

#[derive(Deserialize)]
struct Search {
    query: String,
    limit: usize,
    offset: usize,
}

pub(super) fn search(app: &App, a: Args) -> KbResult<Value> {
    let a: Search = typed(a)?;
    json(search::search_blocks(app, &a.query, a.limit, a.offset)?)
}

#[derive(Deserialize)]
struct SearchByTag {
    tag: String,
    limit: usize,
    offset: usize,
}

pub(super) fn search_by_tag(app: &App, a: Args) -> KbResult<Value> {
    let a: SearchByTag = typed(a)?;
    json(search::search_by_tag(app, &a.tag, a.limit, a.offset)?)
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Page,
    Tag,
    Backlink,
}

#[derive(Deserialize)]
struct Autocomplete {
    query: String,
    kind: Kind,
    limit: usize,
}

pub(super) fn autocomplete(app: &App, a: Args) -> KbResult<Value> {
    let a: Autocomplete = typed(a)?;
    let kind = match a.kind {
        Kind::Page => CompleteKind::Page,
        Kind::Tag => CompleteKind::Tag,
        Kind::Backlink => CompleteKind::Backlink,
    };
    json(search::autocomplete(app, &a.query, kind, a.limit)?)
}

#[derive(Deserialize)]
struct Backlinks {
    path: String,
    include_unlinked: bool,
}

pub(super) fn backlinks(app: &App, a: Args) -> KbResult<Value> {
    let a: Backlinks = typed(a)?;
    json(search::get_page_backlinks(
        app,
        &note_path(app, &a.path, "path")?,
        a.include_unlinked,
    )?)
}

#[derive(Deserialize)]
struct Graph {
    path: Option<String>,
    depth: usize,
}

pub(super) fn graph(app: &App, a: Args) -> KbResult<Value> {
    let a: Graph = typed(a)?;
    let path = a.path.map(|p| note_path(app, &p, "path")).transpose()?;
    json(graph::get_graph_data(app, path.as_ref(), a.depth)?)
}

#[derive(Deserialize)]
struct ResolveLink {
    target: String,
}

pub(super) fn resolve_link(app: &App, a: Args) -> KbResult<Value> {
    let a: ResolveLink = typed(a)?;
    json(graph::resolve_link_target(app, &a.target)?)
}

#[derive(Deserialize)]
struct TagEdit {
    path: String,
    tag: String,
}

pub(super) fn add_tag(app: &App, a: Args) -> KbResult<Value> {
    let a: TagEdit = typed(a)?;
    json(page::add_tag(
        app,
        &note_path(app, &a.path, "path")?,
        &a.tag,
    )?)
}

pub(super) fn remove_tag(app: &App, a: Args) -> KbResult<Value> {
    let a: TagEdit = typed(a)?;
    json(page::remove_tag(
        app,
        &note_path(app, &a.path, "path")?,
        &a.tag,
    )?)
}

pub(super) fn vault_info(app: &App, _: Args) -> KbResult<Value> {
    json(vault::get_vault_info(app)?)
}

#[derive(Deserialize)]
struct SetProperties {
    path: String,
    #[serde(default)]
    set: serde_json::Map<String, Value>,
    #[serde(default)]
    remove: Vec<String>,
    expected_modified: Option<String>,
    dry_run: bool,
}

pub(super) fn set_properties(app: &App, a: Args) -> KbResult<Value> {
    let a: SetProperties = typed(a)?;
    let path = note_path(app, &a.path, "path")?;
    let req = PropertyRequest {
        set: a.set.into_iter().collect(),
        remove: a.remove,
        expected_modified: a.expected_modified,
        dry_run: a.dry_run,
    };
    json(properties::set_properties(app, &path, req)?)
}

#[derive(Deserialize)]
struct RecentChanges {
    since: Option<String>,
    limit: usize,
    offset: usize,
}

pub(super) fn recent_changes(app: &App, a: Args) -> KbResult<Value> {
    let a: RecentChanges = typed(a)?;
    json(recent::recent_changes(
        app,
        a.since.as_deref(),
        a.limit,
        a.offset,
    )?)
}

#[derive(Deserialize)]
struct ListTags {
    prefix: Option<String>,
    limit: usize,
    offset: usize,
}

pub(super) fn list_tags(app: &App, a: Args) -> KbResult<Value> {
    let a: ListTags = typed(a)?;
    json(tags::list_tags(
        app,
        a.prefix.as_deref(),
        a.limit,
        a.offset,
    )?)
}

#[derive(Deserialize)]
struct EditPage {
    path: String,
    edits: Vec<edit::EditOp>,
    expected_modified: Option<String>,
    dry_run: bool,
}

pub(super) fn edit_page(app: &App, a: Args) -> KbResult<Value> {
    let a: EditPage = typed(a)?;
    let path = note_path(app, &a.path, "path")?;
    json(edit::edit_page(
        app,
        &path,
        a.edits,
        a.expected_modified.as_deref(),
        a.dry_run,
    )?)
}

pub(super) fn get_outline(app: &App, a: Args) -> KbResult<Value> {
    let a: PathArg = typed(a)?;
    json(edit::get_outline(app, &note_path(app, &a.path, "path")?)?)
}

#[derive(Deserialize)]
struct GetSection {
    path: String,
    section: String,
}

pub(super) fn get_section(app: &App, a: Args) -> KbResult<Value> {
    let a: GetSection = typed(a)?;
    json(edit::get_section(
        app,
        &note_path(app, &a.path, "path")?,
        &a.section,
    )?)
}

#[derive(Deserialize)]
struct MovePage {
    from: String,
    to: String,
    update_links: bool,
    expected_modified: Option<String>,
    dry_run: bool,
}

pub(super) fn move_page(app: &App, a: Args) -> KbResult<Value> {
    let a: MovePage = typed(a)?;
    // A note is checked against the vault (a link out of it is refused) as every tool's path;
    // a folder by its text (`move_page::MoveSpec::parse`), its notes read beneath the vault.
    for (key, raw) in [("from", &a.from), ("to", &a.to)] {
        if !raw.ends_with('/') {
            note_path(app, raw, key)?;
        }
    }
    json(move_page::move_page(
        app,
        &a.from,
        &a.to,
        a.update_links,
        a.expected_modified.as_deref(),
        a.dry_run,
    )?)
}
