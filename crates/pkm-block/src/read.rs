//! The read side: every query runs on a pooled read-only connection inside one read transaction.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::StoreError;
use crate::model::{PageChange, PageRow, StoredBlock, StoredLink};

/// The columns of a [`PageRow`], aliases and tags folded into JSON arrays so that a page is one row.
macro_rules! page_select {
    () => {
        "SELECT p.path, p.title, p.frontmatter_json,
                (SELECT json_group_array(a.alias ORDER BY a.ord) FROM page_aliases a WHERE a.page_id = p.id),
                (SELECT json_group_array(t.tag ORDER BY t.ord) FROM page_tags t WHERE t.page_id = p.id),
                (SELECT COUNT(*) FROM blocks b WHERE b.page_id = p.id),
                p.mtime_ns, p.size, p.hash, p.modified_at
         FROM pages p "
    };
}

/// The columns of a [`BlockRow`]: a block's parent and left sibling are their `seq` in the page.
macro_rules! block_select {
    () => {
        "SELECT b.id, p.path, b.seq, b.parent_seq, b.left_seq, b.ord, b.content, b.properties_json,
                b.marker, b.priority, b.collapsed, b.heading_level
         FROM blocks b JOIN pages p ON p.id = b.page_id "
    };
}

/// The columns of a [`StoredLink`]: the block's id comes from its row, by `(page_id, seq)`.
#[cfg(feature = "test-support")]
macro_rules! link_select {
    () => {
        "SELECT b.id, p.path, l.target, l.target_key, l.alias, l.position, l.embed
         FROM links l JOIN pages p ON p.id = l.page_id
         JOIN blocks b ON b.page_id = l.page_id AND b.seq = l.seq "
    };
}

/// Conversion failures inside a row mapper surface as rusqlite errors; they mean the stored data
/// is not what this build wrote.
fn bad_data(col: usize, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, msg.into())
}

fn json_list(row: &Row<'_>, col: usize) -> rusqlite::Result<Vec<String>> {
    let raw: Option<String> = row.get(col)?;
    match raw {
        None => Ok(Vec::new()),
        Some(s) => serde_json::from_str(&s).map_err(|e| bad_data(col, e.to_string())),
    }
}

fn unsigned(row: &Row<'_>, col: usize) -> rusqlite::Result<u64> {
    let n: i64 = row.get(col)?;
    u64::try_from(n).map_err(|_| bad_data(col, format!("negative count {n}")))
}

fn page_row(row: &Row<'_>) -> rusqlite::Result<PageRow> {
    Ok(PageRow {
        path: row.get(0)?,
        title: row.get(1)?,
        frontmatter_json: row.get(2)?,
        aliases: json_list(row, 3)?,
        tags: json_list(row, 4)?,
        block_count: unsigned(row, 5)?,
        mtime_ns: row.get(6)?,
        size: unsigned(row, 7)?,
        hash: row.get(8)?,
        modified_at: row.get(9)?,
    })
}

/// A stored block as its row holds it: the parent and the left sibling by their `seq`.
struct BlockRow {
    seq: i64,
    parent: Option<i64>,
    left: Option<i64>,
    /// Without `parent_id` and `left_id` until [`with_neighbours`] fills them in.
    block: StoredBlock,
}

fn block_row(row: &Row<'_>) -> rusqlite::Result<BlockRow> {
    let props: Option<String> = row.get(7)?;
    let properties = match props {
        None => Vec::new(),
        Some(s) => serde_json::from_str(&s).map_err(|e| bad_data(7, e.to_string()))?,
    };
    Ok(BlockRow {
        seq: row.get(2)?,
        parent: row.get(3)?,
        left: row.get(4)?,
        block: StoredBlock {
            id: row.get(0)?,
            page_path: row.get(1)?,
            parent_id: None,
            left_id: None,
            ord: row.get(5)?,
            content: row.get(6)?,
            properties,
            marker: row.get(8)?,
            priority: row.get(9)?,
            collapsed: row.get(10)?,
            heading_level: row.get(11)?,
        },
    })
}

/// The blocks of one page from all its rows in `seq` order, each with the ids of its parent and
/// left sibling, which come before it in the page.
fn with_neighbours(rows: Vec<BlockRow>) -> Result<Vec<StoredBlock>, StoreError> {
    let mut seqs: Vec<i64> = Vec::with_capacity(rows.len());
    let mut blocks: Vec<StoredBlock> = Vec::with_capacity(rows.len());
    for row in rows {
        let id_at = |seq: Option<i64>| {
            seq.map(|seq| {
                seqs.binary_search(&seq)
                    .ok()
                    .and_then(|i| blocks.get(i))
                    .map(|b| b.id.clone())
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!(
                            "block {} of a page names block {seq} of it, which does not come before it",
                            row.seq
                        ))
                    })
            })
            .transpose()
        };
        let mut block = row.block;
        block.parent_id = id_at(row.parent)?;
        block.left_id = id_at(row.left)?;
        seqs.push(row.seq);
        blocks.push(block);
    }
    Ok(blocks)
}

fn link_row(row: &Row<'_>) -> rusqlite::Result<StoredLink> {
    let position = unsigned(row, 5)?;
    Ok(StoredLink {
        block_id: row.get(0)?,
        source_page: row.get(1)?,
        target: row.get(2)?,
        target_key: row.get(3)?,
        alias: row.get(4)?,
        position: usize::try_from(position)
            .map_err(|_| bad_data(5, format!("position {position}")))?,
        embed: row.get(6)?,
    })
}

fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

pub(crate) fn page(c: &Connection, path: &str) -> Result<Option<PageRow>, StoreError> {
    let mut st = c.prepare_cached(concat!(page_select!(), "WHERE p.path = ?1"))?;
    Ok(st.query_row([path], page_row).optional()?)
}

pub(crate) fn blocks_of_page(c: &Connection, path: &str) -> Result<Vec<StoredBlock>, StoreError> {
    let mut st = c.prepare_cached(concat!(block_select!(), "WHERE p.path = ?1 ORDER BY b.seq"))?;
    let rows = st.query_map([path], block_row)?;
    with_neighbours(rows.collect::<Result<_, _>>()?)
}

/// The block `seq` of the page at `path`, read with its page (its parent and sibling are there).
#[cfg(feature = "test-support")]
fn block_at(c: &Connection, path: &str, seq: i64) -> Result<Option<StoredBlock>, StoreError> {
    let mut st = c.prepare_cached(concat!(
        block_select!(),
        "WHERE p.path = ?1 AND b.seq <= ?2 ORDER BY b.seq"
    ))?;
    let rows = st.query_map(params![path, seq], block_row)?;
    Ok(with_neighbours(rows.collect::<Result<_, _>>()?)?.pop())
}

#[cfg(feature = "test-support")]
pub(crate) fn block(c: &Connection, id: &str) -> Result<Option<StoredBlock>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT p.path, b.seq FROM blocks b JOIN pages p ON p.id = b.page_id WHERE b.id = ?1",
    )?;
    let found: Option<(String, i64)> = st
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    match found {
        Some((path, seq)) => block_at(c, &path, seq),
        None => Ok(None),
    }
}

#[cfg(feature = "test-support")]
pub(crate) fn links_of_page(c: &Connection, path: &str) -> Result<Vec<StoredLink>, StoreError> {
    let mut st = c.prepare_cached(concat!(
        link_select!(),
        "WHERE p.path = ?1 ORDER BY l.seq, l.n"
    ))?;
    let rows = st.query_map([path], link_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(feature = "test-support")]
pub(crate) fn all_links(c: &Connection) -> Result<Vec<StoredLink>, StoreError> {
    let mut st = c.prepare_cached(concat!(link_select!(), "ORDER BY p.path, l.seq, l.n"))?;
    let rows = st.query_map([], link_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Calls `f(source page path, target, alias)` for every link, page by page (in page-id order),
/// in document order within a page, without collecting them.
pub(crate) fn for_each_link(
    c: &Connection,
    f: &mut dyn FnMut(&str, &str, Option<&str>),
) -> Result<(), StoreError> {
    let mut st = c.prepare_cached(
        "SELECT p.path, l.target, l.alias FROM links l JOIN pages p ON p.id = l.page_id
         ORDER BY l.page_id, l.seq, l.n",
    )?;
    let mut rows = st.query([])?;
    while let Some(row) = rows.next()? {
        let text = |i: usize| -> rusqlite::Result<Option<&str>> {
            match row.get_ref(i)? {
                rusqlite::types::ValueRef::Null => Ok(None),
                v => v.as_str().map(Some).map_err(rusqlite::Error::from),
            }
        };
        let (Some(source), Some(target)) = (text(0)?, text(1)?) else {
            return Err(StoreError::Corrupt(
                "a link without a source or target".into(),
            ));
        };
        f(source, target, text(2)?);
    }
    Ok(())
}

/// Every `((uuid))` link key whose block exists, with the path of the page holding the block.
pub(crate) fn block_ref_pages(c: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT DISTINCT l.target_key, p.path
         FROM links l
         JOIN blocks b ON b.id = substr(l.target_key, 3, length(l.target_key) - 4)
         JOIN pages p ON p.id = b.page_id
         WHERE l.target_key LIKE '((%))'",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Keys per query: well under SQLite's limit on bound parameters.
const KEYS_PER_QUERY: usize = 200;

pub(crate) fn links_to_keys(
    c: &Connection,
    keys: &[String],
) -> Result<Vec<(StoredLink, String)>, StoreError> {
    let mut seen = HashSet::new();
    let keys: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .filter(|k| seen.insert(*k))
        .collect();
    let mut out: Vec<(String, i64, i64, StoredLink, String)> = Vec::new();
    for chunk in keys.chunks(KEYS_PER_QUERY) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let sql = format!(
            "SELECT b.id, p.path, l.target, l.target_key, l.alias, l.position, l.embed,
                    b.content, l.seq, l.n
             FROM links l
             JOIN pages p ON p.id = l.page_id
             JOIN blocks b ON b.page_id = l.page_id AND b.seq = l.seq
             WHERE l.target_key IN ({marks})"
        );
        // Cached too: callers pass a page's few candidate names, so only a few sizes occur.
        let mut st = c.prepare_cached(&sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(chunk.iter()), |r| {
            let link = link_row(r)?;
            let content: String = r.get(7)?;
            Ok((
                link.source_page.clone(),
                r.get(8)?,
                r.get(9)?,
                link,
                content,
            ))
        })?;
        for row in rows {
            out.push(row?);
        }
    }
    out.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    Ok(out
        .into_iter()
        .map(|(_, _, _, link, content)| (link, content))
        .collect())
}

pub(crate) fn list_pages(
    c: &Connection,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<PageRow>, StoreError> {
    let limit = sql_limit(limit);
    let rows = match after {
        Some(after) => {
            let mut st = c.prepare_cached(concat!(
                page_select!(),
                "WHERE p.path > ?1 ORDER BY p.path LIMIT ?2"
            ))?;
            st.query_map(params![after, limit], page_row)?
                .collect::<Result<_, _>>()?
        }
        None => {
            let mut st = c.prepare_cached(concat!(page_select!(), "ORDER BY p.path LIMIT ?1"))?;
            st.query_map([limit], page_row)?.collect::<Result<_, _>>()?
        }
    };
    Ok(rows)
}

/// Notes modified after `after_ns`, newest first (ties by path), `limit` from `offset`, and how
/// many there are.
pub(crate) fn changed_since(
    c: &Connection,
    after_ns: i64,
    limit: usize,
    offset: usize,
) -> Result<(Vec<PageChange>, u64), StoreError> {
    let mut st = c.prepare_cached(
        "SELECT path, title, modified_at FROM pages WHERE mtime_ns > ?1
         ORDER BY mtime_ns DESC, path LIMIT ?2 OFFSET ?3",
    )?;
    let rows = st.query_map(
        params![after_ns, sql_limit(limit), sql_limit(offset)],
        |r| {
            Ok(PageChange {
                path: r.get(0)?,
                title: r.get(1)?,
                modified_at: r.get(2)?,
            })
        },
    )?;
    let rows = rows.collect::<Result<_, _>>()?;
    let mut count = c.prepare_cached("SELECT COUNT(*) FROM pages WHERE mtime_ns > ?1")?;
    let n: i64 = count.query_row([after_ns], |r| r.get(0))?;
    let total = u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("negative count {n}")))?;
    Ok((rows, total))
}

pub(crate) fn fingerprints(
    c: &Connection,
) -> Result<HashMap<String, (i64, u64, String)>, StoreError> {
    let mut st = c.prepare_cached("SELECT path, mtime_ns, size, hash FROM pages")?;
    let rows = st.query_map([], |r| {
        Ok((r.get(0)?, (r.get(1)?, unsigned(r, 2)?, r.get(3)?)))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(crate) fn count(c: &Connection, sql: &str) -> Result<u64, StoreError> {
    let n: i64 = c.prepare_cached(sql)?.query_row([], |r| r.get(0))?;
    u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("negative count {n}")))
}

#[cfg(feature = "test-support")]
pub(crate) fn pages_with_tag(c: &Connection, tag: &str) -> Result<Vec<String>, StoreError> {
    let mut st = c.prepare_cached("SELECT p.path FROM page_tags t JOIN pages p ON p.id = t.page_id WHERE t.tag_key = ?1 ORDER BY p.path")?;
    let rows = st.query_map([tag.to_lowercase()], |r| r.get(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(feature = "test-support")]
pub(crate) fn blocks_with_tag(
    c: &Connection,
    tag: &str,
    limit: usize,
) -> Result<Vec<StoredBlock>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT p.path, b.seq FROM blocks b JOIN pages p ON p.id = b.page_id
         JOIN block_tags t ON t.page_id = b.page_id AND t.seq = b.seq WHERE t.tag_key = ?1
         ORDER BY p.path, b.seq LIMIT ?2",
    )?;
    let found = st
        .query_map(params![tag.to_lowercase(), sql_limit(limit)], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut blocks = Vec::with_capacity(found.len());
    for (path, seq) in found {
        blocks.extend(block_at(c, &path, seq)?);
    }
    Ok(blocks)
}

pub(crate) fn all_tags(c: &Connection) -> Result<Vec<(String, u64)>, StoreError> {
    // One row per tag key, shown in its most common spelling (ties: the smallest).
    let mut st = c.prepare_cached(
        "SELECT tag, total FROM (
             SELECT tag_key, tag,
                    SUM(COUNT(*)) OVER (PARTITION BY tag_key) AS total,
                    ROW_NUMBER() OVER (PARTITION BY tag_key ORDER BY COUNT(*) DESC, tag) AS rank
             FROM page_tags GROUP BY tag_key, tag)
         WHERE rank = 1 ORDER BY tag_key",
    )?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, unsigned(r, 1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(crate) fn meta(c: &Connection, key: &str) -> Result<Option<String>, StoreError> {
    let mut st = c.prepare_cached("SELECT value FROM meta WHERE key = ?1")?;
    Ok(st.query_row([key], |r| r.get(0)).optional()?)
}

#[cfg(feature = "test-support")]
pub(crate) fn integrity_check(c: &Connection) -> Result<bool, StoreError> {
    let mut st = c.prepare("PRAGMA integrity_check")?;
    let first: Option<String> = st.query_row([], |r| r.get(0)).optional()?;
    Ok(first.as_deref() == Some("ok"))
}
