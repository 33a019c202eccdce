//! The records the store takes in and hands back.

use pkm_core::VaultPath;

/// What the command layer knows about a note when it saves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRecord {
    pub path: VaultPath,
    pub title: String,
    /// The frontmatter as a serialized JSON object, or `None` when the note has none.
    pub frontmatter_json: Option<String>,
    /// Frontmatter `aliases`; link targets resolve against them.
    pub aliases: Vec<String>,
    /// Page tags (frontmatter and inline). Stored once per tag, compared case-insensitively; the
    /// first spelling wins.
    pub tags: Vec<String>,
    pub mtime_ns: i64,
    pub size: u64,
    /// Hex SHA-256 of the file's bytes, for incremental scans.
    pub hash: String,
    /// RFC 3339 form of the modification time.
    pub modified_at: String,
}

/// One block of a page, in a flattened pre-order list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewBlock {
    /// Index of the parent in the same slice; it must come before this block.
    pub parent: Option<usize>,
    /// The `id::` property, which fixes the block's id.
    pub explicit_id: Option<String>,
    pub content: String,
    pub properties: Vec<(String, String)>,
    pub marker: Option<String>,
    pub priority: Option<String>,
    pub collapsed: bool,
    pub heading_level: Option<u8>,
    pub links: Vec<NewLink>,
    /// Inline tags of this block. Stored once per tag, compared case-insensitively.
    pub tags: Vec<String>,
}

/// A link found in a block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewLink {
    /// The target as written (`Note#Heading`, `rel/path.md`).
    pub target: String,
    /// The lowercased page name the link points at; backlinks look links up by it.
    pub target_key: String,
    pub alias: Option<String>,
    /// Byte offset of the link in the block's content.
    pub position: usize,
    /// `![[...]]` rather than `[[...]]`.
    pub embed: bool,
}

/// A stored page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRow {
    pub path: String,
    pub title: String,
    pub frontmatter_json: Option<String>,
    pub aliases: Vec<String>,
    pub tags: Vec<String>,
    pub block_count: u64,
    pub mtime_ns: i64,
    pub size: u64,
    pub hash: String,
    pub modified_at: String,
}

/// A stored block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlock {
    pub id: String,
    pub page_path: String,
    pub parent_id: Option<String>,
    /// The previous sibling's id; `None` for a first child (or the first top-level block).
    pub left_id: Option<String>,
    /// Position among its siblings, from 0.
    pub ord: u32,
    pub content: String,
    pub properties: Vec<(String, String)>,
    pub marker: Option<String>,
    pub priority: Option<String>,
    pub collapsed: bool,
    pub heading_level: Option<u8>,
}

/// A stored link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLink {
    pub block_id: String,
    pub source_page: String,
    pub target: String,
    pub target_key: String,
    pub alias: Option<String>,
    pub position: usize,
    pub embed: bool,
}

/// A note as a list of recent changes shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageChange {
    pub path: String,
    pub title: String,
    pub modified_at: String,
}
