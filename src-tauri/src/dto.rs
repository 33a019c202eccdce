//! The DTOs of contract §4 and §5: what the desktop frontend and the MCP server both receive.
//! Field names are the contract's; `serde` derives live here and nowhere below this crate.

use serde::Serialize;
use serde_json::Value;

/// Contract §4.1: the full content model of a note.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoteDocument {
    pub path: String,
    pub slug: String,
    pub title: String,
    /// The note's full text exactly as on disk, frontmatter included.
    pub content: String,
    /// The frontmatter parsed as YAML; `{}` when the note has none.
    pub frontmatter: Value,
    pub links: Vec<LinkDto>,
    pub tags: Vec<String>,
    pub block_count: u64,
    pub modified_at: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkDto {
    pub target: String,
    pub block_id: Option<String>,
    /// Byte offset of the link in `content`.
    pub position: usize,
}

/// One row of `kb_list_pages`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageSummary {
    pub path: String,
    pub slug: String,
    pub title: String,
    pub block_count: u64,
    pub modified_at: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageList {
    pub pages: Vec<PageSummary>,
    pub next_cursor: Option<String>,
}

/// Contract §4.3.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchHit {
    pub block_id: String,
    pub content: String,
    pub page_path: String,
    pub snippet: String,
    pub score: f32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResults {
    pub results: Vec<SearchHit>,
    pub total: usize,
    pub next_offset: Option<usize>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AutocompleteItem {
    pub text: String,
    pub kind: &'static str,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AutocompleteResult {
    pub items: Vec<AutocompleteItem>,
}

/// Contract §4.4.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Backlink {
    pub source_id: String,
    pub source_page: String,
    pub context: String,
    pub is_linked: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BacklinkList {
    pub backlinks: Vec<Backlink>,
}

/// Contract §4.5.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GraphNode {
    pub id: String,
    pub title: String,
    pub path: String,
    pub tags: Vec<String>,
    pub degree: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GraphEdge {
    pub source: String,
    pub target: String,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GraphData {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    pub node_count: usize,
    pub edge_count: usize,
    pub vault_path: String,
    /// True when the response was cut to fit `MCP_RESPONSE_MAX`; ask for a smaller `depth` or a
    /// `path` neighbourhood to see the rest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ResolvedPage {
    pub path: String,
    pub slug: String,
    pub title: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ResolveResult {
    pub resolved: Option<ResolvedPage>,
    pub unresolved: bool,
}

/// Contract §4.6.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VaultInfo {
    pub vault_path: String,
    pub page_count: u64,
    pub block_count: u64,
    pub index_fresh: bool,
    pub last_indexed_at: Option<String>,
}

/// Contract §4.7.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TagOperationResult {
    pub path: String,
    pub success: bool,
    pub tag: String,
    pub action: &'static str,
    pub applied: usize,
}

/// One key a `kb_set_properties` call named: its value before and after (absent: `None`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PropertyChangeDto {
    pub key: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

/// `kb_set_properties`: what changed, in which form, and the note's `modified_at` afterwards.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PropertiesResult {
    pub path: String,
    /// `frontmatter` or `logseq`.
    pub form: &'static str,
    /// Whether the note's text changed (or, with `dry_run`, would change).
    pub changed: bool,
    pub dry_run: bool,
    pub modified_at: String,
    pub changes: Vec<PropertyChangeDto>,
}

/// A note in `kb_recent_changes`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RecentChange {
    pub path: String,
    pub title: String,
    pub modified_at: String,
}

/// `kb_recent_changes`: newest first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RecentChanges {
    pub changes: Vec<RecentChange>,
    pub total: usize,
    pub next_offset: Option<usize>,
}

/// A tag in `kb_list_tags`, with the number of notes using it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TagCount {
    pub tag: String,
    pub count: u64,
}

/// `kb_list_tags`: most used first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TagList {
    pub tags: Vec<TagCount>,
    pub total: usize,
    pub next_offset: Option<usize>,
}

/// Contract §4.8.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IndexStatus {
    pub index_fresh: bool,
    pub indexed_pages: u64,
    pub total_pages: u64,
    pub indexed_blocks: u64,
    pub last_indexed_at: Option<String>,
}

/// `kb_delete_page` answers `{}`.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Empty {}

/// How many leading `items` fit in `budget` bytes of JSON (with one byte of separator each),
/// always at least one when there is one, so that a continuation makes progress.
pub fn fit_to_budget<T: Serialize>(items: &[T], budget: usize) -> usize {
    let mut used = 0usize;
    for (i, item) in items.iter().enumerate() {
        used += serde_json::to_vec(item)
            .map(|v| v.len())
            .unwrap_or(usize::MAX / 2)
            + 1;
        if used > budget && i > 0 {
            return i;
        }
    }
    items.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_cuts_lists_but_keeps_one() {
        let items = vec!["x".repeat(100); 10];
        assert_eq!(fit_to_budget(&items, 10_000), 10);
        assert_eq!(fit_to_budget(&items, 350), 3);
        assert_eq!(fit_to_budget(&items, 5), 1);
        assert_eq!(fit_to_budget::<String>(&[], 5), 0);
    }
}

/// What `kb_edit_page` answers: the note as written (as `kb_write_page` answers it; with
/// `dry_run`, as it would be written), and the unified diff of the change.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EditResult {
    #[serde(flatten)]
    pub note: NoteDocument,
    /// `--- a/<path>` / `+++ b/<path>` and its hunks; empty when the edits change nothing.
    pub diff: String,
    /// Whether the note on disk changed (false for a dry run and for edits that change nothing).
    pub written: bool,
}

/// One heading of `kb_get_outline`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutlineHeading {
    /// The heading's text as written.
    pub text: String,
    pub level: u8,
    /// The section path that addresses it (`A#B`; `A#B[2]` for the second `B` under `A`).
    pub section: String,
    /// 1-based lines of the section, heading included.
    pub line_start: usize,
    pub line_end: usize,
    /// The id `kb_get_page` gives the heading's block.
    pub block_id: Option<String>,
    /// Bytes of the section, heading included.
    pub size: usize,
}

/// `kb_get_outline`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoteOutline {
    pub path: String,
    pub headings: Vec<OutlineHeading>,
    pub modified_at: String,
}

/// `kb_get_section`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SectionText {
    pub path: String,
    /// The section's full path (`A#B`).
    pub section: String,
    /// The section's text, heading included, as the note holds it.
    pub text: String,
    pub line_start: usize,
    pub line_end: usize,
    pub modified_at: String,
}

/// One note `kb_move_page` moved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MovedNote {
    pub from: String,
    pub to: String,
}

/// One note whose links `kb_move_page` rewrote (at its path after the move), with how many.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RewrittenNote {
    pub path: String,
    pub links: usize,
}

/// What `kb_move_page` answers: the notes moved, the notes rewritten, and whether it was a dry
/// run (nothing changed).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MoveResult {
    pub moved: Vec<MovedNote>,
    pub rewritten: Vec<RewrittenNote>,
    pub dry_run: bool,
}
