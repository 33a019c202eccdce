//! The one table of tools. `tools/list`, argument validation, scope checks, rate-limit tiers,
//! annotations and the docs table all read `TOOLS`; neither door knows a tool by name.

mod handlers;

pub(crate) use handlers::path_error;

use pkm_core::KbResult;
use serde_json::{Map, Value};
use stratum_app::App;

use crate::scope::Scope;

/// `tools/call` arguments, checked against the tool's schema, its defaults filled in
/// ([`crate::schema::checked`]); each handler reads them as its own struct.
pub type Args = Map<String, Value>;

/// One MCP tool.
pub struct Tool {
    pub name: &'static str,
    /// A short name for people (the `title` of `tools/list` from 2025-11-25 on).
    pub title: &'static str,
    pub description: &'static str,
    /// The scope a token needs (contract §6); also the rate-limit tier.
    pub scope: Scope,
    /// The contract's §5 schema, verbatim (`schemas/<name>.json`).
    pub input_schema: &'static str,
    /// The shape of `structuredContent` (`schemas/output/<name>.json`).
    pub output_schema: &'static str,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub handler: fn(&App, Args) -> KbResult<Value>,
}

macro_rules! schema {
    ($name:literal) => {
        (
            include_str!(concat!("../../schemas/", $name, ".json")),
            include_str!(concat!("../../schemas/output/", $name, ".json")),
        )
    };
}

const fn tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    scope: Scope,
    schemas: (&'static str, &'static str),
    (read_only, destructive, idempotent): (bool, bool, bool),
    handler: fn(&App, Args) -> KbResult<Value>,
) -> Tool {
    Tool {
        name,
        title,
        description,
        scope,
        input_schema: schemas.0,
        output_schema: schemas.1,
        read_only,
        destructive,
        idempotent,
        handler,
    }
}

/// (readOnly, destructive, idempotent)
const READ: (bool, bool, bool) = (true, false, true);

pub static TOOLS: &[Tool] = &[
    tool(
        "kb_get_page",
        "Read a note",
        "Read one note by its vault-relative path: full markdown (frontmatter included), parsed frontmatter, title, links, tags and modified_at (pass it back as expected_modified when writing).",
        Scope::Read,
        schema!("kb_get_page"),
        READ,
        handlers::get_page,
    ),
    tool(
        "kb_list_pages",
        "List notes",
        "List notes in path order, with pagination: pass next_cursor back as cursor to continue.",
        Scope::Read,
        schema!("kb_list_pages"),
        READ,
        handlers::list_pages,
    ),
    tool(
        "kb_write_page",
        "Write a note",
        "Create or overwrite a note atomically with exactly the given markdown. Link notes by writing [[wiki-links]]. Pass expected_modified (from kb_get_page) to fail with Conflict instead of overwriting a newer edit.",
        Scope::Write,
        schema!("kb_write_page"),
        (false, true, true),
        handlers::write_page,
    ),
    tool(
        "kb_delete_page",
        "Delete a note",
        "Delete a note, its index entries and the folders it leaves empty. Optional expected_modified guard.",
        Scope::Write,
        schema!("kb_delete_page"),
        (false, true, false),
        handlers::delete_page,
    ),
    tool(
        "kb_reindex",
        "Reindex the vault",
        "Refresh the index from the files: 'incremental' re-reads changed notes, 'rebuild' re-indexes the whole vault exclusively.",
        Scope::Index,
        schema!("kb_reindex"),
        (false, false, true),
        handlers::reindex,
    ),
    tool(
        "kb_index_status",
        "Index status",
        "Index freshness and coverage: indexed pages and blocks, last indexing time.",
        Scope::Read,
        schema!("kb_index_status"),
        READ,
        handlers::index_status,
    ),
    tool(
        "kb_search",
        "Search notes",
        "Search over notes, by words and by meaning; a question in a sentence works. Words (BM25): every word in the note's text or names (title, aliases, file name), which rank first; stemmed; function words (how, do, I, the) ignored; when nothing matches, with a typo, then ranked by how much of the query a note holds. Meaning: notes that say the same in other words are added. One result per note, at its best block, with a highlighted snippet; the total count of notes and next_offset for paging.",
        Scope::Search,
        schema!("kb_search"),
        READ,
        handlers::search,
    ),
    tool(
        "kb_search_by_tag",
        "Find by tag",
        "Notes and blocks tagged with a tag: a note tagged in its frontmatter once (its first block), and each block holding the inline #tag. Returns the total count and next_offset for paging.",
        Scope::Search,
        schema!("kb_search_by_tag"),
        READ,
        handlers::search_by_tag,
    ),
    tool(
        "kb_autocomplete",
        "Autocomplete titles, tags and links",
        "Suggest page titles, tags, or [[link]] targets matching a prefix or fuzzy query, best first.",
        Scope::Search,
        schema!("kb_autocomplete"),
        READ,
        handlers::autocomplete,
    ),
    tool(
        "kb_backlinks",
        "Backlinks of a note",
        "Blocks linking to a note, and (unless include_unlinked is false) blocks mentioning its title or aliases without linking.",
        Scope::Read,
        schema!("kb_backlinks"),
        READ,
        handlers::backlinks,
    ),
    tool(
        "kb_graph",
        "Link graph",
        "The link graph: the whole vault, or the notes within 'depth' links of 'path'.",
        Scope::Read,
        schema!("kb_graph"),
        READ,
        handlers::graph,
    ),
    tool(
        "kb_resolve_link",
        "Resolve a link",
        "Resolve a link to a note: a bare target or a link as written in a note ([[T#H|alias]], ![[T]], [text](T.md)); by path, title, alias or file name/partial path, case-insensitive.",
        Scope::Read,
        schema!("kb_resolve_link"),
        READ,
        handlers::resolve_link,
    ),
    tool(
        "kb_add_tag",
        "Add a tag",
        "Add a tag to a note's own tags: its frontmatter list, or its Logseq tags:: line (idempotent; every other byte is kept).",
        Scope::Organize,
        schema!("kb_add_tag"),
        (false, false, true),
        handlers::add_tag,
    ),
    tool(
        "kb_remove_tag",
        "Remove a tag",
        "Remove a tag from a note's frontmatter or tags:: line and every inline #tag (idempotent).",
        Scope::Organize,
        schema!("kb_remove_tag"),
        (false, true, true),
        handlers::remove_tag,
    ),
    tool(
        "kb_vault_info",
        "Vault info",
        "Vault metadata and health: page and block counts, index freshness.",
        Scope::Read,
        schema!("kb_vault_info"),
        READ,
        handlers::vault_info,
    ),
    // Extensions beyond the contract's fifteen (docs/advanced/mcp.md, "Extensions"; ADR-0016, ADR-0017, ADR-0019).
    tool(
        "kb_edit_page",
        "Edit part of a note",
        "Change part of a note without resending it: append or prepend (to the note or under a heading), replace a section's body, replace exact text (with the count expected), or replace one block's text. Sections are heading paths ('Projects#Q3#Risks'). Edits apply in order, all or none, as one atomic write; every other byte stays. Answers the written note and a unified diff; dry_run writes nothing. Optional expected_modified guard.",
        Scope::Write,
        schema!("kb_edit_page"),
        (false, true, false),
        handlers::edit_page,
    ),
    tool(
        "kb_get_outline",
        "Outline of a note",
        "A note's headings in order (Markdown ATX and setext headings, Logseq heading blocks): text, level, the section path that addresses it in kb_get_section and kb_edit_page, line range, block id and size; and the note's modified_at.",
        Scope::Read,
        schema!("kb_get_outline"),
        READ,
        handlers::get_outline,
    ),
    tool(
        "kb_get_section",
        "Read a section",
        "One section of a note by heading or heading path ('Projects#Q3#Risks', case-insensitive when not exact): its text with the heading, its line range, and the note's modified_at to pass as expected_modified.",
        Scope::Read,
        schema!("kb_get_section"),
        READ,
        handlers::get_section,
    ),
    tool(
        "kb_set_properties",
        "Set note properties",
        "Set or remove a note's properties (status, due, tags, aliases, title...) in the note's own form: YAML frontmatter or Logseq key:: value lines. Only the named keys change; every other byte is kept. Answers each key's value before and after; dry_run writes nothing. Optional expected_modified guard.",
        Scope::Write,
        schema!("kb_set_properties"),
        // Destructive: a set replaces a value and a remove deletes one.
        (false, true, true),
        handlers::set_properties,
    ),
    tool(
        "kb_recent_changes",
        "Recent changes",
        "Notes changed since a time (RFC 3339, optional), newest first: path, title, modified_at; total and next_offset for paging.",
        Scope::Read,
        schema!("kb_recent_changes"),
        READ,
        handlers::recent_changes,
    ),
    tool(
        "kb_list_tags",
        "List tags",
        "Every tag the vault uses (frontmatter, inline #tags, Logseq tags::) with its number of notes, most used first; optional prefix; total and next_offset for paging.",
        Scope::Search,
        schema!("kb_list_tags"),
        READ,
        handlers::list_tags,
    ),
    tool(
        "kb_move_page",
        "Move a note or folder",
        "Move or rename a note, or a folder ('a/' to 'b/') with every note under it, and rewrite every link in the vault that named a moved note as the vault resolves it, each in its own form (alias, heading, block, embed; bare name while unambiguous, else the shortest path; markdown links relative, with their encoding; Logseq tags and namespaces). Links in code stay. All files change or none. Answers what moved and each rewritten note with its count of links; dry_run changes nothing. An existing target is Conflict. Optional expected_modified guard on the note.",
        Scope::Link,
        schema!("kb_move_page"),
        (false, true, false),
        handlers::move_page,
    ),
];

/// The tool called `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The markdown table of tools for `docs/advanced/mcp.md`, rendered from `TOOLS`.
pub fn docs_table() -> String {
    let mut s = String::from(
        "| Tool | Scope (rate tier) | Read-only | Destructive | Idempotent | What it does |\n|---|---|---|---|---|---|\n",
    );
    let yes = |b: bool| if b { "yes" } else { "no" };
    for t in TOOLS {
        s.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} |\n",
            t.name,
            t.scope,
            yes(t.read_only),
            yes(t.destructive),
            yes(t.idempotent),
            t.description
        ));
    }
    s
}
