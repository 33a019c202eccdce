//! Note text → the records the store and the index keep. Parsing is pure and happens before any
//! lock is taken, so a save holds the write lock only for IO.

use std::time::SystemTime;

use pkm_block::{NewBlock, NewLink, PageRecord};
use pkm_core::{VaultPath, time};
use pkm_index::{BlockDoc, NoteDoc, NoteMeaning};
use pkm_markdown::Dialect;
use pkm_markdown::block_parser::{self, Block, ParsedPage};
use pkm_markdown::linker::{self, LinkKind};
use sha2::{Digest, Sha256};

use crate::resolver::page_key;

/// A parsed note, ready to be stored and indexed.
pub(crate) struct Prepared {
    pub record: PageRecord,
    pub blocks: Vec<NewBlock>,
    /// Every link of the note with the index of its block (None for links in frontmatter).
    pub links: Vec<(Option<usize>, linker::Link)>,
    /// The page's own tags (frontmatter `tags`, Logseq `tags::`), not its inline ones.
    pub page_tags: Vec<String>,
    pub frontmatter: serde_json::Value,
    pub frontmatter_error: Option<String>,
    /// The note's meaning vector for the index, worked out here, off the writer (`None` if the
    /// model cannot be read: the index then says why when the note is indexed).
    pub meaning: Option<NoteMeaning>,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn dedup_ci(v: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    v.retain(|t| seen.insert(t.to_lowercase()));
}

/// Resolves a relative markdown link (`[t](../x.md)`) against the folder of the note it is in.
fn join_relative(from: &VaultPath, target: &str) -> String {
    let mut parts: Vec<&str> = if from.parent().is_empty() {
        Vec::new()
    } else {
        from.parent().split('/').collect()
    };
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return target.to_owned();
                }
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Flattens the block tree in document order without recursion (trees may be 100k deep),
/// taking the blocks out of it: their text moves on to the store's rows, it is not copied.
fn flatten(roots: Vec<Block>) -> Vec<(Option<usize>, Block)> {
    let mut out = Vec::new();
    let mut stack: Vec<(Option<usize>, Block)> =
        roots.into_iter().rev().map(|b| (None, b)).collect();
    while let Some((parent, mut block)) = stack.pop() {
        let me = out.len();
        let children = std::mem::take(&mut block.children);
        out.push((parent, block));
        stack.extend(children.into_iter().rev().map(|c| (Some(me), c)));
    }
    out
}

/// Parses the note at `path` by the rules of the vault's `dialect`.
pub(crate) fn prepare(
    dialect: &Dialect,
    path: &VaultPath,
    text: &str,
    mtime: SystemTime,
    size: u64,
) -> Prepared {
    // The links and the inline tags from one pass over the note's regions (code, HTML), which
    // the page's tags take too: three pulldown-cmark passes per note were one.
    let (found_links, inline_tags) = linker::links_and_tags_as(text, dialect);
    let mut page = block_parser::parse_page_with_tags(
        text,
        &dialect.page_name(path.as_str()),
        dialect,
        &inline_tags,
    );
    let first_start = page.blocks.first().map(|b| b.range.start);
    let flat = flatten(std::mem::take(&mut page.blocks));
    let owners = Owners::of(&flat);
    let mut blocks: Vec<NewBlock> = flat.into_iter().map(|(p, b)| new_block(p, b)).collect();
    let mut links = place_links(path, found_links, &owners, &mut blocks);
    add_tag_links(
        dialect,
        first_start,
        &page.page_tags,
        &mut blocks,
        &mut links,
    );
    place_inline_tags(inline_tags, &owners, &mut blocks);
    let record = page_record(path, &page, text, mtime, size);
    let meaning = NoteMeaning::of(&record.title, blocks.iter().map(|b| b.content.as_str())).ok();
    Prepared {
        record,
        meaning,
        frontmatter: page
            .frontmatter
            .clone()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default())),
        frontmatter_error: page.frontmatter_error,
        page_tags: page.page_tags,
        blocks,
        links,
    }
}

/// Which block holds a byte position: the blocks' own ranges (children excluded), sorted by start.
struct Owners(Vec<(usize, usize, usize)>);

impl Owners {
    fn of(flat: &[(Option<usize>, Block)]) -> Owners {
        let mut by_start: Vec<(usize, usize, usize)> = flat
            .iter()
            .enumerate()
            .map(|(i, (_, b))| (b.range.start, b.range.end, i))
            .collect();
        by_start.sort_unstable();
        Owners(by_start)
    }

    /// The index (in document order) of the block whose own text holds `pos`.
    fn at(&self, pos: usize) -> Option<usize> {
        let i = self.0.partition_point(|&(start, _, _)| start <= pos);
        let (start, end, idx) = *self.0.get(i.checked_sub(1)?)?;
        (start <= pos && pos < end).then_some(idx)
    }
}

/// A parsed block as the store takes it, its links and tags still to be placed.
fn new_block(parent: Option<usize>, b: Block) -> NewBlock {
    NewBlock {
        parent,
        explicit_id: b.id,
        content: b.content,
        properties: b.properties,
        marker: b.marker.map(|m| m.as_str().to_owned()),
        priority: b.priority.map(|p| p.as_str().to_owned()),
        collapsed: b.collapsed,
        heading_level: b.heading_level,
        links: Vec::new(),
        tags: Vec::new(),
    }
}

fn new_link(link: &linker::Link) -> NewLink {
    NewLink {
        target: link.target.clone(),
        target_key: page_key(&link.target),
        alias: link.alias.clone(),
        position: link.position,
        embed: matches!(link.kind, LinkKind::Embed),
    }
}

/// The note's links, relative markdown links joined to the note's folder, each given to the
/// block that holds it; every link is returned with its block's index.
fn place_links(
    path: &VaultPath,
    found: Vec<linker::Link>,
    owners: &Owners,
    blocks: &mut [NewBlock],
) -> Vec<(Option<usize>, linker::Link)> {
    let mut links = Vec::with_capacity(found.len());
    for mut link in found {
        if matches!(link.kind, LinkKind::Markdown) {
            link.target = join_relative(path, &link.target);
        }
        let at = owners.at(link.position);
        if let Some(block) = at.and_then(|i| blocks.get_mut(i)) {
            block.links.push(new_link(&link));
        }
        links.push((at, link));
    }
    links
}

/// The links the page's own tags make by the dialect ([`Dialect::tag_pages`]), as wiki links at
/// the start of its first block (which starts at `first_start`), unless that block links the
/// page already.
fn add_tag_links(
    dialect: &Dialect,
    first_start: Option<usize>,
    page_tags: &[String],
    blocks: &mut [NewBlock],
    links: &mut Vec<(Option<usize>, linker::Link)>,
) {
    let (Some(at), Some(block)) = (first_start, blocks.first_mut()) else {
        return;
    };
    for tag in dialect.tag_pages(page_tags) {
        let key = page_key(tag);
        let known = links
            .iter()
            .any(|(b, l)| *b == Some(0) && page_key(&l.target) == key);
        if known {
            continue;
        }
        let link = linker::Link {
            target: tag.clone(),
            alias: None,
            heading: None,
            block_ref: None,
            kind: LinkKind::Wiki,
            position: at,
        };
        block.links.push(new_link(&link));
        links.push((Some(0), link));
    }
}

/// Gives each inline `#tag` (with where it stands) to the block that holds it; a block keeps a
/// tag once, whatever its case.
fn place_inline_tags(found: Vec<(String, usize)>, owners: &Owners, blocks: &mut [NewBlock]) {
    for (tag, pos) in found {
        if let Some(block) = owners.at(pos).and_then(|i| blocks.get_mut(i)) {
            block.tags.push(tag);
        }
    }
    for block in blocks {
        dedup_ci(&mut block.tags);
    }
}

/// The page's row in the store.
fn page_record(
    path: &VaultPath,
    page: &ParsedPage,
    text: &str,
    mtime: SystemTime,
    size: u64,
) -> PageRecord {
    PageRecord {
        path: path.clone(),
        title: page.title.clone(),
        frontmatter_json: page.frontmatter.as_ref().map(|v| v.to_string()),
        aliases: page.aliases.clone(),
        tags: page.tags.clone(),
        mtime_ns: time::to_nanos(mtime),
        size,
        hash: sha256_hex(text.as_bytes()),
        modified_at: time::to_rfc3339(mtime),
    }
}

impl Prepared {
    /// The note for the index: its names, and its blocks, each carrying its own inline tags; the first block also carries the page-level tags, so tag search finds a
    /// tagged page once (at its first block) and every other block only for a tag written in it.
    pub(crate) fn index_doc(&self, ids: &[String]) -> NoteDoc {
        let blocks = self
            .blocks
            .iter()
            .zip(ids)
            .enumerate()
            .map(|(i, (b, id))| {
                let mut tags = if i == 0 {
                    self.page_tags.clone()
                } else {
                    Vec::new()
                };
                tags.extend(b.tags.iter().cloned());
                BlockDoc {
                    block_id: id.clone(),
                    content: b.content.clone(),
                    tags,
                }
            })
            .collect();
        NoteDoc {
            title: self.record.title.clone(),
            aliases: self.record.aliases.clone(),
            blocks,
            meaning: self.meaning.clone(),
        }
    }

    /// [`Prepared::index_doc`] of a note that is not needed any more (a scan's, once stored): its
    /// text, tags and block ids move into the doc instead of being copied. With the note's path.
    pub(crate) fn into_index_doc(self, ids: Vec<String>) -> (VaultPath, NoteDoc) {
        let mut page_tags = Some(self.page_tags);
        let blocks = self
            .blocks
            .into_iter()
            .zip(ids)
            .map(|(b, block_id)| {
                let mut tags = page_tags.take().unwrap_or_default();
                tags.extend(b.tags);
                BlockDoc {
                    block_id,
                    content: b.content,
                    tags,
                }
            })
            .collect();
        let doc = NoteDoc {
            title: self.record.title,
            aliases: self.record.aliases,
            blocks,
            meaning: self.meaning,
        };
        (self.record.path, doc)
    }

    /// Whether the note names blocks (`id::`) or refers to them (`((uuid))`): the resolver's
    /// block references may then change with it.
    pub(crate) fn has_block_refs(&self) -> bool {
        self.blocks.iter().any(|b| b.explicit_id.is_some())
            || self
                .links
                .iter()
                .any(|(_, l)| matches!(l.kind, LinkKind::BlockRef))
    }

    /// Distinct page-naming targets of the note's links, for the onLink hook.
    pub(crate) fn link_targets(&self) -> Vec<String> {
        let mut t: Vec<String> = self.links.iter().map(|(_, l)| l.target.clone()).collect();
        t.sort();
        t.dedup();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links_join_the_note_folder() {
        let from = VaultPath::lexical("a/b/note.md").unwrap();
        assert_eq!(join_relative(&from, "../c/x.md"), "a/c/x.md");
        assert_eq!(join_relative(&from, "./y.md"), "a/b/y.md");
        assert_eq!(join_relative(&from, "../../../z.md"), "../../../z.md");
    }
}
