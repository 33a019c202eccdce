//! The schema and its migrations. `PRAGMA user_version` holds the number of migrations applied;
//! a database whose version is above what this build knows is refused rather than guessed at.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::StoreError;

/// Migration `n` (1-based) takes the schema from version `n - 1` to `n`. Append only: a released
/// migration is never edited.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

// Pages get an integer id, and every row that belongs to a page is keyed by it first: the keys
// stay short, and during a vault scan (ids ascending) those indexes grow at their right edge
// instead of taking random inserts. The page's path is stored once, as TEXT, in `pages`.
// Rows that belong to a page reference it with ON DELETE CASCADE, so a page save is "delete the
// page, insert it again" and nothing is left behind.
// Keys (`*_key`, `tag_key`) are lowercased in Rust: SQLite's NOCASE folds ASCII only, and a tag or
// a title is often not ASCII.
const V1: &str = "
CREATE TABLE pages (
    id               INTEGER PRIMARY KEY,
    path             TEXT NOT NULL UNIQUE,
    path_key         TEXT NOT NULL,
    slug_key         TEXT NOT NULL,
    stem_key         TEXT NOT NULL,
    title            TEXT NOT NULL,
    title_key        TEXT NOT NULL,
    frontmatter_json TEXT,
    mtime_ns         INTEGER NOT NULL,
    size             INTEGER NOT NULL,
    hash             TEXT NOT NULL,
    modified_at      TEXT NOT NULL
);
CREATE INDEX pages_path_key  ON pages(path_key);
CREATE INDEX pages_slug_key  ON pages(slug_key);
CREATE INDEX pages_stem_key  ON pages(stem_key);
CREATE INDEX pages_title_key ON pages(title_key);

CREATE TABLE page_aliases (
    page_id   INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    alias     TEXT NOT NULL,
    alias_key TEXT NOT NULL,
    PRIMARY KEY (page_id, ord)
) WITHOUT ROWID;
CREATE INDEX page_aliases_key ON page_aliases(alias_key);

CREATE TABLE page_tags (
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    tag_key TEXT NOT NULL,
    tag     TEXT NOT NULL,
    ord     INTEGER NOT NULL,
    PRIMARY KEY (page_id, tag_key)
) WITHOUT ROWID;
CREATE INDEX page_tags_key ON page_tags(tag_key);

-- `seq` is the block's position in the page's pre-order.
CREATE TABLE blocks (
    id              TEXT PRIMARY KEY NOT NULL,
    page_id         INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    parent_id       TEXT,
    left_id         TEXT,
    ord             INTEGER NOT NULL,
    content         TEXT NOT NULL,
    properties_json TEXT,
    marker          TEXT,
    priority        TEXT,
    collapsed       INTEGER NOT NULL DEFAULT 0,
    heading_level   INTEGER
);
CREATE UNIQUE INDEX blocks_page ON blocks(page_id, seq);

-- Inline tags of a block, addressed by (page_id, seq) like the block itself.
CREATE TABLE block_tags (
    page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    tag_key TEXT NOT NULL,
    tag     TEXT NOT NULL,
    PRIMARY KEY (page_id, seq, tag_key)
) WITHOUT ROWID;
CREATE INDEX block_tags_key ON block_tags(tag_key);

-- Links out of a block: `n` numbers them within the block. The primary key serves the lookups
-- by source page.
CREATE TABLE links (
    page_id    INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    block_id   TEXT NOT NULL,
    target     TEXT NOT NULL,
    target_key TEXT NOT NULL,
    alias      TEXT,
    position   INTEGER NOT NULL,
    embed      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (page_id, seq, n)
) WITHOUT ROWID;
CREATE INDEX links_target ON links(target_key);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
";

// Notes whose search-index entries may be behind their store rows. A path is added before its
// store transaction and removed after the index commit, so a crash in between leaves it here
// and the next scan re-indexes it: the index can lag, never silently disagree.
const V2: &str = "
CREATE TABLE index_lag (
    path TEXT PRIMARY KEY NOT NULL
) WITHOUT ROWID;
";

// Link targets are resolved in memory (`stratum_app::resolver`), so the lookup indexes on the
// page keys only cost time on every page write.
const V3: &str = "
DROP INDEX pages_path_key;
DROP INDEX pages_slug_key;
DROP INDEX pages_stem_key;
DROP INDEX pages_title_key;
DROP INDEX page_aliases_key;
";

// The notes changed since a time, newest first (`kb_recent_changes`), read without sorting
// every page.
const V4: &str = "
CREATE INDEX pages_mtime ON pages(mtime_ns);
";

// Block ids get a unique index of their own instead of being the table's primary key, so that a
// bulk load (`StoreWriter::begin_bulk`) can drop it and build it once at the end: ids are random
// UUID v4 (the contract's), and inserting ~235k of them one by one into a B-tree was a quarter of
// a 10k-note cold index. The rows are the same.
const V5: &str = "
CREATE TABLE blocks_v5 (
    id              TEXT NOT NULL,
    page_id         INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    parent_id       TEXT,
    left_id         TEXT,
    ord             INTEGER NOT NULL,
    content         TEXT NOT NULL,
    properties_json TEXT,
    marker          TEXT,
    priority        TEXT,
    collapsed       INTEGER NOT NULL DEFAULT 0,
    heading_level   INTEGER
);
INSERT INTO blocks_v5 (id, page_id, seq, parent_id, left_id, ord, content, properties_json,
                       marker, priority, collapsed, heading_level)
    SELECT id, page_id, seq, parent_id, left_id, ord, content, properties_json,
           marker, priority, collapsed, heading_level FROM blocks ORDER BY page_id, seq;
DROP TABLE blocks;
ALTER TABLE blocks_v5 RENAME TO blocks;
CREATE UNIQUE INDEX blocks_page ON blocks(page_id, seq);
CREATE UNIQUE INDEX blocks_id ON blocks(id);
";

// A block's parent and left sibling are in the same page: they are kept as their `seq` there, not
// as copies of their 36-byte ids, and a link's block is found by its `(page_id, seq)`, not by a
// copy of the block's id. Those three copies were 15.6 MB of a 10k-note store's 76 MB, and every
// byte a bulk load stores is written twice (the WAL, then the checkpoint). A block's id is now in
// one row and one index. The rows are otherwise the same.
const V6: &str = "
CREATE TABLE blocks_v6 (
    id              TEXT NOT NULL,
    page_id         INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    parent_seq      INTEGER,
    left_seq        INTEGER,
    ord             INTEGER NOT NULL,
    content         TEXT NOT NULL,
    properties_json TEXT,
    marker          TEXT,
    priority        TEXT,
    collapsed       INTEGER NOT NULL DEFAULT 0,
    heading_level   INTEGER
);
INSERT INTO blocks_v6 (id, page_id, seq, parent_seq, left_seq, ord, content, properties_json,
                       marker, priority, collapsed, heading_level)
    SELECT b.id, b.page_id, b.seq,
           (SELECT p.seq FROM blocks p WHERE p.id = b.parent_id),
           (SELECT l.seq FROM blocks l WHERE l.id = b.left_id),
           b.ord, b.content, b.properties_json, b.marker, b.priority, b.collapsed, b.heading_level
    FROM blocks b ORDER BY b.page_id, b.seq;
DROP TABLE blocks;
ALTER TABLE blocks_v6 RENAME TO blocks;
CREATE UNIQUE INDEX blocks_page ON blocks(page_id, seq);
CREATE UNIQUE INDEX blocks_id ON blocks(id);

CREATE TABLE links_v6 (
    page_id    INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    target     TEXT NOT NULL,
    target_key TEXT NOT NULL,
    alias      TEXT,
    position   INTEGER NOT NULL,
    embed      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (page_id, seq, n)
) WITHOUT ROWID;
INSERT INTO links_v6 (page_id, seq, n, target, target_key, alias, position, embed)
    SELECT page_id, seq, n, target, target_key, alias, position, embed FROM links;
DROP TABLE links;
ALTER TABLE links_v6 RENAME TO links;
CREATE INDEX links_target ON links(target_key);
";

/// The secondary indexes a bulk load drops and creates again when it commits: those whose keys
/// arrive in random order (block ids, link targets, tags, mtimes). The indexes keyed by page id
/// first grow at their right edge during a scan and stay.
pub(crate) const BULK_INDEXES: &[&str] = &[
    "blocks_id",
    "links_target",
    "block_tags_key",
    "page_tags_key",
    "pages_mtime",
];

/// Brings the schema up to [`SCHEMA_VERSION`], each migration in its own transaction together
/// with the `user_version` bump, so a crash leaves a consistent version.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let start = usize::try_from(found)
        .map_err(|_| StoreError::Corrupt(format!("negative schema version {found}")))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(start) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the write lock.
        let now: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if now > i as i64 {
            if now > SCHEMA_VERSION {
                return Err(StoreError::NewerSchema {
                    found: now,
                    supported: SCHEMA_VERSION,
                });
            }
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}
