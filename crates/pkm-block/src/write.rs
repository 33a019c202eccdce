//! The write side: saving a page (with stable block ids), deleting, clearing. Every function runs
//! inside a transaction its caller opened.

use std::collections::{HashMap, HashSet, VecDeque};

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::StoreError;
use crate::model::{NewBlock, PageRecord};

fn to_i64(n: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::InvalidInput(format!("{what} {n} is out of range")))
}

/// The block ids the store holds, kept in memory during a bulk load (`StoreWriter::begin_bulk`),
/// whose id index is dropped until it commits: how many blocks hold each id, by a hash of the id.
/// A hash seen means "maybe held", confirmed by a scan of the table (rare: a duplicate explicit
/// `id::`); a hash never seen means "not held". (A bulk load with a write that failed half-way,
/// whose counts may disagree with the rows, is never committed: `StoreWriter::write_with`.)
///
/// Only ids a block can be asked about are counted: those in the store when the load began and
/// those the load keeps (explicit `id::`s, ids kept by content). A fresh UUID v4 is never
/// checked against the store outside a bulk load either, so none is counted: at 100k notes the
/// counts of 2.35M fresh ids were ~100 MB of a cold index's peak memory.
#[derive(Debug, Default)]
pub(crate) struct HeldIds {
    counts: HashMap<u64, u32>,
}

fn id_hash(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

impl HeldIds {
    /// Every block id in the store now.
    pub(crate) fn load(c: &Connection) -> Result<HeldIds, StoreError> {
        let mut held = HeldIds::default();
        let mut st = c.prepare("SELECT id FROM blocks")?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            held.add(&row.get::<_, String>(0)?);
        }
        Ok(held)
    }

    fn add(&mut self, id: &str) {
        *self.counts.entry(id_hash(id)).or_insert(0) += 1;
    }

    fn remove(&mut self, id: &str) {
        if let Some(n) = self.counts.get_mut(&id_hash(id)) {
            *n = n.saturating_sub(1);
        }
    }

    /// After every block was deleted.
    pub(crate) fn cleared(&mut self) {
        self.counts.clear();
    }

    /// Whether any block holds `id` (the page being saved has had its rows deleted).
    fn held(&self, c: &Connection, id: &str) -> Result<bool, StoreError> {
        if self.counts.get(&id_hash(id)).is_none_or(|n| *n == 0) {
            return Ok(false);
        }
        Ok(
            c.prepare_cached("SELECT 1 FROM blocks WHERE id = ?1 LIMIT 1")?
                .query_row([id], |_| Ok(()))
                .optional()?
                .is_some(),
        )
    }
}

/// Replaces one page; returns the block ids in input order. `held` is given during a bulk load
/// (the id index is dropped then) and kept up to date.
pub(crate) fn save_page(
    tx: &Connection,
    page: &PageRecord,
    blocks: &[NewBlock],
    held: Option<&mut HeldIds>,
) -> Result<Vec<String>, StoreError> {
    save_page_from(tx, page, blocks, None, held)
}

/// [`save_page`] for a page that may have moved: with `from`, the page's old blocks (whose ids
/// it keeps by the one rule, [`kept_ids`]) are those of the page at `from`, which goes away.
pub(crate) fn save_page_from(
    tx: &Connection,
    page: &PageRecord,
    blocks: &[NewBlock],
    from: Option<&str>,
    held: Option<&mut HeldIds>,
) -> Result<Vec<String>, StoreError> {
    let path = page.path.as_str();
    for (i, b) in blocks.iter().enumerate() {
        if let Some(p) = b.parent
            && p >= i
        {
            return Err(StoreError::InvalidInput(format!(
                "block {i} of {path} names parent {p}, which does not precede it"
            )));
        }
    }
    let size = to_i64(page.size, "size")?;

    let old = old_blocks(tx, from.unwrap_or(path))?;
    if let Some(from) = from.filter(|f| *f != path) {
        delete_page(tx, from)?;
    }
    // The old blocks, links and tags go with the page; their ids are free again, and any id
    // still present in `blocks` afterwards belongs to another page.
    delete_page(tx, path)?;
    let ids = match held {
        None => assign_ids(kept_ids(tx, path, &old, blocks)?),
        Some(held) => {
            for (id, _) in &old {
                held.remove(id);
            }
            let kept = kept_ids_with(&old, blocks, |id| held.held(tx, id))?;
            for id in kept.iter().flatten() {
                held.add(id);
            }
            assign_ids(kept)
        }
    };

    tx.prepare_cached(
        "INSERT INTO pages (path, path_key, slug_key, stem_key, title, title_key, frontmatter_json,
                            mtime_ns, size, hash, modified_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        path,
        path.to_lowercase(),
        page.path.slug().to_lowercase(),
        page.path.stem().to_lowercase(),
        page.title,
        page.title.trim().to_lowercase(),
        page.frontmatter_json,
        page.mtime_ns,
        size,
        page.hash,
        page.modified_at,
    ])?;
    let page_id = tx.last_insert_rowid();

    {
        let mut st = tx.prepare_cached(
            "INSERT INTO page_aliases (page_id, ord, alias, alias_key) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (ord, alias) in page.aliases.iter().enumerate() {
            st.execute(params![
                page_id,
                to_i64(ord as u64, "alias index")?,
                alias,
                alias.trim().to_lowercase()
            ])?;
        }
    }
    {
        // OR IGNORE: a tag given twice (in any case) is stored once, first spelling first.
        let mut st = tx.prepare_cached(
            "INSERT OR IGNORE INTO page_tags (page_id, tag_key, tag, ord) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (ord, tag) in page.tags.iter().enumerate() {
            st.execute(params![
                page_id,
                tag.to_lowercase(),
                tag,
                to_i64(ord as u64, "tag index")?
            ])?;
        }
    }

    insert_blocks(tx, page_id, blocks, &ids)?;
    Ok(ids)
}

pub(crate) fn old_blocks(tx: &Connection, path: &str) -> Result<Vec<(String, String)>, StoreError> {
    let mut st = tx.prepare_cached("SELECT b.id, b.content FROM blocks b JOIN pages p ON p.id = b.page_id WHERE p.path = ?1 ORDER BY b.seq")?;
    let rows = st.query_map([path], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The one block-id rule: the ids a save of `blocks` to the page at `path` keeps, in input order,
/// `None` for a block that gets a new id. Explicit ids first (so that a content match cannot take
/// one), trimmed; then the id of an `old` block of the page (`(id, content)` in document order)
/// with identical content, first unused match first. A duplicate explicit id, or one held by a
/// block of another page, is ignored: ids are unique across the store, and the first holder keeps
/// its id.
pub(crate) fn kept_ids(
    c: &Connection,
    path: &str,
    old: &[(String, String)],
    blocks: &[NewBlock],
) -> Result<Vec<Option<String>>, StoreError> {
    let mut held_elsewhere = c.prepare_cached(
        "SELECT 1 FROM blocks b JOIN pages p ON p.id = b.page_id WHERE b.id = ?1 AND p.path <> ?2",
    )?;
    kept_ids_with(old, blocks, |explicit| {
        Ok(held_elsewhere
            .query_row([explicit, path], |_| Ok(()))
            .optional()?
            .is_some())
    })
}

/// [`kept_ids`], with `held_elsewhere(id)` saying whether a block of another page holds an id.
fn kept_ids_with(
    old: &[(String, String)],
    blocks: &[NewBlock],
    mut held_elsewhere: impl FnMut(&str) -> Result<bool, StoreError>,
) -> Result<Vec<Option<String>>, StoreError> {
    let mut ids: Vec<Option<String>> = vec![None; blocks.len()];
    let mut used: HashSet<String> = HashSet::new();
    for (slot, b) in ids.iter_mut().zip(blocks) {
        let Some(explicit) = b
            .explicit_id
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
        else {
            continue;
        };
        if used.contains(explicit) || held_elsewhere(explicit)? {
            continue;
        }
        used.insert(explicit.to_owned());
        *slot = Some(explicit.to_owned());
    }

    let mut by_content: HashMap<&str, VecDeque<&str>> = HashMap::new();
    for (id, content) in old {
        by_content
            .entry(content.as_str())
            .or_default()
            .push_back(id.as_str());
    }
    for (slot, b) in ids.iter_mut().zip(blocks) {
        if slot.is_some() {
            continue;
        }
        if let Some(queue) = by_content.get_mut(b.content.as_str()) {
            while let Some(candidate) = queue.pop_front() {
                if !used.contains(candidate) {
                    used.insert(candidate.to_owned());
                    *slot = Some(candidate.to_owned());
                    break;
                }
            }
        }
    }
    Ok(ids)
}

/// Kept ids, with a fresh id for every block that keeps none.
fn assign_ids(kept: Vec<Option<String>>) -> Vec<String> {
    kept.into_iter()
        // Version 4, as the contract (§4) fixes, although a time-ordered v7 id would insert in key
        // order and made a 10k-note scan ~1 s faster (docs/benchmarks.md explains).
        .map(|id| id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()))
        .collect()
}

fn insert_blocks(
    tx: &Connection,
    page_id: i64,
    blocks: &[NewBlock],
    ids: &[String],
) -> Result<(), StoreError> {
    let mut insert_block = tx.prepare_cached(
        "INSERT INTO blocks (id, page_id, seq, parent_seq, left_seq, ord, content, properties_json,
                             marker, priority, collapsed, heading_level)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    let mut insert_link = tx.prepare_cached(
        "INSERT INTO links (page_id, seq, n, target, target_key, alias, position, embed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut insert_tag = tx.prepare_cached(
        "INSERT OR IGNORE INTO block_tags (page_id, seq, tag_key, tag) VALUES (?1, ?2, ?3, ?4)",
    )?;

    // Per parent (index + 1; 0 is the page root): the last child seen and the number of children.
    let mut last_child: Vec<Option<usize>> = vec![None; blocks.len() + 1];
    let mut child_count: Vec<u32> = vec![0; blocks.len() + 1];

    for (i, (b, id)) in blocks.iter().zip(ids).enumerate() {
        // A block's `seq` is its index here, so its parent's (checked to come before it by
        // `save_page_from`) and its left sibling's are theirs.
        let slot = b.parent.map_or(0, |p| p + 1);
        let left = last_child.get(slot).copied().flatten();
        let ord = child_count.get(slot).copied().unwrap_or(0);
        if let Some(l) = last_child.get_mut(slot) {
            *l = Some(i);
        }
        if let Some(c) = child_count.get_mut(slot) {
            *c = c.saturating_add(1);
        }
        let properties = if b.properties.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&b.properties)
                    .map_err(|e| StoreError::InvalidInput(e.to_string()))?,
            )
        };
        let seq = to_i64(i as u64, "block index")?;
        let seq_of = |at: Option<usize>| at.map(|at| to_i64(at as u64, "block index")).transpose();
        insert_block.execute(params![
            id,
            page_id,
            seq,
            seq_of(b.parent)?,
            seq_of(left)?,
            ord,
            b.content,
            properties,
            b.marker,
            b.priority,
            b.collapsed,
            b.heading_level,
        ])?;
        for (n, link) in b.links.iter().enumerate() {
            insert_link.execute(params![
                page_id,
                seq,
                to_i64(n as u64, "link index")?,
                link.target,
                link.target_key,
                link.alias,
                to_i64(link.position as u64, "link position")?,
                link.embed,
            ])?;
        }
        for tag in &b.tags {
            insert_tag.execute(params![page_id, seq, tag.to_lowercase(), tag])?;
        }
    }
    Ok(())
}

/// The tables whose rows belong to a page (`page_id`, deleted with it by the cascade).
const PAGE_ROWS: [&str; 5] = ["blocks", "block_tags", "links", "page_tags", "page_aliases"];

/// Deletes one page by its stored path, and its rows in [`PAGE_ROWS`]: by the foreign keys'
/// cascade, or here while they are off (a load into an empty store, `StoreWriter::begin_bulk`).
/// `true` if it existed.
pub(crate) fn delete_page(tx: &Connection, path: &str) -> Result<bool, StoreError> {
    let Some(id) = tx
        .prepare_cached("DELETE FROM pages WHERE path = ?1 RETURNING id")?
        .query_row([path], |r| r.get::<_, i64>(0))
        .optional()?
    else {
        return Ok(false);
    };
    // Cached like the statements around it: every save of a note that exists comes here.
    let enforced: bool = tx
        .prepare_cached("PRAGMA foreign_keys")?
        .query_row([], |r| r.get(0))?;
    if !enforced {
        for table in PAGE_ROWS {
            tx.prepare_cached(&format!("DELETE FROM {table} WHERE page_id = ?1"))?
                .execute([id])?;
        }
    }
    Ok(true)
}

pub(crate) fn set_meta(tx: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    tx.prepare_cached("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value")?
        .execute([key, value])?;
    Ok(())
}

/// Children first, so the cascades find nothing left to do.
pub(crate) fn clear(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch(
        "DELETE FROM links; DELETE FROM block_tags; DELETE FROM blocks;
         DELETE FROM page_tags; DELETE FROM page_aliases; DELETE FROM pages;",
    )?;
    Ok(())
}
