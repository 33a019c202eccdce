//! Note text → the records the store and the index keep. Parsing is pure and happens before any
//! lock is taken, so a save holds the write lock only for IO.

use std::time::SystemTime;

use pkm_block::{NewBlock, NewLink, PageRecord};
use pkm_core::{VaultPath, time};
use pkm_index::BlockDoc;
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
    /// Frontmatter tags only: they apply to every block of the page in tag search.
    pub frontmatter_tags: Vec<String>,
    pub frontmatter: serde_json::Value,
    pub frontmatter_error: Option<String>,
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Tags named in frontmatter `tags` / `tag`: a list, or a string split on commas and spaces.
pub(crate) fn frontmatter_tags(fm: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for key in ["tags", "tag"] {
        match fm.get(key) {
            Some(serde_json::Value::Array(items)) => out.extend(
                items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(pkm_markdown::tags::normalize),
            ),
            Some(serde_json::Value::String(s)) => out.extend(
                s.split([',', ' '])
                    .map(pkm_markdown::tags::normalize)
                    .filter(|t| !t.is_empty()),
            ),
            _ => {}
        }
    }
    out.retain(|t| !t.is_empty());
    dedup_ci(&mut out);
    out
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

/// Flattens the block tree in document order without recursion (trees may be 100k deep).
fn flatten(page: &ParsedPage) -> Vec<(Option<usize>, &Block)> {
    let mut out = Vec::new();
    let mut stack: Vec<(Option<usize>, &Block)> =
        page.blocks.iter().rev().map(|b| (None, b)).collect();
    while let Some((parent, block)) = stack.pop() {
        let me = out.len();
        out.push((parent, block));
        stack.extend(block.children.iter().rev().map(|c| (Some(me), c)));
    }
    out
}

pub(crate) fn prepare(path: &VaultPath, text: &str, mtime: SystemTime, size: u64) -> Prepared {
    let page = block_parser::parse_page(text, path.stem());
    let flat = flatten(&page);

    // Blocks' own ranges (children excluded) sorted by start, to place links and tags.
    let mut by_start: Vec<(usize, usize, usize)> = flat
        .iter()
        .enumerate()
        .map(|(i, (_, b))| (b.range.start, b.range.end, i))
        .collect();
    by_start.sort_unstable();
    let owner = |pos: usize| -> Option<usize> {
        let i = by_start.partition_point(|&(start, _, _)| start <= pos);
        let (start, end, idx) = *by_start.get(i.checked_sub(1)?)?;
        (start <= pos && pos < end).then_some(idx)
    };

    let mut blocks: Vec<NewBlock> = flat
        .iter()
        .map(|(parent, b)| NewBlock {
            parent: *parent,
            explicit_id: b.id.clone(),
            content: b.content.clone(),
            properties: b.properties.clone(),
            marker: b.marker.map(|m| m.as_str().to_owned()),
            priority: b.priority.map(|p| p.as_str().to_owned()),
            collapsed: b.collapsed,
            heading_level: b.heading_level,
            links: Vec::new(),
            tags: Vec::new(),
        })
        .collect();

    let mut links = Vec::new();
    for mut link in linker::extract_links(text) {
        if matches!(link.kind, LinkKind::Markdown) {
            link.target = join_relative(path, &link.target);
        }
        let at = owner(link.position);
        if let Some(block) = at.and_then(|i| blocks.get_mut(i)) {
            block.links.push(NewLink {
                target: link.target.clone(),
                target_key: page_key(&link.target),
                alias: link.alias.clone(),
                position: link.position,
                embed: matches!(link.kind, LinkKind::Embed),
            });
        }
        links.push((at, link));
    }
    for (tag, pos) in pkm_markdown::tags::extract_inline_tags(text) {
        if let Some(block) = owner(pos).and_then(|i| blocks.get_mut(i)) {
            block.tags.push(tag);
        }
    }
    for block in &mut blocks {
        dedup_ci(&mut block.tags);
    }

    let frontmatter = page
        .frontmatter
        .clone()
        .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
    let record = PageRecord {
        path: path.clone(),
        title: page.title.clone(),
        frontmatter_json: page.frontmatter.as_ref().map(|v| v.to_string()),
        aliases: page.aliases.clone(),
        tags: page.tags.clone(),
        mtime_ns: time::to_nanos(mtime),
        size,
        hash: sha256_hex(text.as_bytes()),
        modified_at: time::to_rfc3339(mtime),
    };
    Prepared {
        frontmatter_tags: frontmatter_tags(&frontmatter),
        frontmatter,
        frontmatter_error: page.frontmatter_error.clone(),
        record,
        blocks,
        links,
    }
}

impl Prepared {
    /// One search document per block, carrying the page's frontmatter tags and its own.
    pub(crate) fn index_docs(&self, ids: &[String]) -> Vec<BlockDoc> {
        self.blocks
            .iter()
            .zip(ids)
            .map(|(b, id)| {
                let mut tags = self.frontmatter_tags.clone();
                tags.extend(b.tags.iter().cloned());
                BlockDoc {
                    block_id: id.clone(),
                    page_path: self.record.path.as_str().to_owned(),
                    title: self.record.title.clone(),
                    content: b.content.clone(),
                    tags,
                }
            })
            .collect()
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

    #[test]
    fn frontmatter_tags_from_list_and_string() {
        let fm = serde_json::json!({"tags": ["#a", "B", "a"], "tag": "c, d e"});
        assert_eq!(frontmatter_tags(&fm), vec!["a", "B", "c", "d", "e"]);
    }
}
