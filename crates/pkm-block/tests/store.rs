//! Integration tests of `BlockStore` on temporary databases.

// clippy.toml allows unwrap in `#[test]` functions only; the helpers below are test code too.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pkm_block::{BlockStore, NewBlock, NewLink, PageRecord, PageRow, StoreError, StoreWriter};
use pkm_core::{ErrorKind, KbError, VaultPath};
use tempfile::TempDir;

fn vp(s: &str) -> VaultPath {
    VaultPath::lexical(s).unwrap()
}

fn open() -> (TempDir, BlockStore, StoreWriter) {
    let dir = tempfile::tempdir().unwrap();
    let (store, writer) = BlockStore::open(&dir.path().join("blocks.db")).unwrap();
    (dir, store, writer)
}

fn page(path: &str, title: &str) -> PageRecord {
    PageRecord {
        path: vp(path),
        title: title.to_owned(),
        frontmatter_json: None,
        aliases: Vec::new(),
        tags: Vec::new(),
        mtime_ns: 1,
        size: 10,
        hash: "h".into(),
        modified_at: "2026-01-01T00:00:00Z".into(),
    }
}

fn block(content: &str) -> NewBlock {
    NewBlock {
        content: content.to_owned(),
        ..NewBlock::default()
    }
}

fn child(parent: usize, content: &str) -> NewBlock {
    NewBlock {
        parent: Some(parent),
        ..block(content)
    }
}

fn link(target: &str, position: usize) -> NewLink {
    NewLink {
        target: target.to_owned(),
        target_key: target.to_lowercase(),
        alias: None,
        position,
        embed: false,
    }
}

fn contents(store: &BlockStore, path: &str) -> Vec<String> {
    store
        .get_blocks_by_page(&vp(path))
        .unwrap()
        .into_iter()
        .map(|b| b.content)
        .collect()
}

#[test]
fn store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<BlockStore>();
    check::<Arc<BlockStore>>();
}

#[test]
fn save_and_get_round_trip() {
    let (_dir, store, mut writer) = open();
    let rec = PageRecord {
        frontmatter_json: Some(r#"{"title":"Example note","tags":["project"]}"#.into()),
        aliases: vec!["Ex".into(), "Sample".into()],
        tags: vec!["project".into(), "research".into()],
        mtime_ns: 1_758_000_000_000_000_000,
        size: 1234,
        hash: "abc123".into(),
        modified_at: "2026-09-19T08:00:00Z".into(),
        ..page("projects/example.md", "Example note")
    };
    let blocks = vec![
        NewBlock {
            heading_level: Some(1),
            ..block("Example note")
        },
        NewBlock {
            parent: Some(0),
            marker: Some("TODO".into()),
            priority: Some("A".into()),
            collapsed: true,
            properties: vec![
                ("owner".into(), "ana".into()),
                ("due".into(), "friday".into()),
            ],
            links: vec![
                link("Other Note", 5),
                NewLink {
                    alias: Some("shown".into()),
                    embed: true,
                    ..link("pic", 30)
                },
            ],
            tags: vec!["urgent".into()],
            ..block("call [[Other Note]] about ![[pic|shown]]")
        },
    ];
    let ids = writer.save_page(&rec, &blocks).unwrap();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert!(ids.iter().all(|id| uuid_like(id)), "{ids:?}");

    let row = store.get_page(&vp("projects/example.md")).unwrap().unwrap();
    assert_eq!(
        row,
        PageRow {
            path: "projects/example.md".into(),
            title: "Example note".into(),
            frontmatter_json: rec.frontmatter_json.clone(),
            aliases: vec!["Ex".into(), "Sample".into()],
            tags: vec!["project".into(), "research".into()],
            block_count: 2,
            mtime_ns: 1_758_000_000_000_000_000,
            size: 1234,
            hash: "abc123".into(),
            modified_at: "2026-09-19T08:00:00Z".into(),
        }
    );

    let stored = store
        .get_blocks_by_page(&vp("projects/example.md"))
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].id, ids[0]);
    assert_eq!(stored[0].heading_level, Some(1));
    assert_eq!(stored[0].parent_id, None);
    let b = &stored[1];
    assert_eq!(b.id, ids[1]);
    assert_eq!(b.page_path, "projects/example.md");
    assert_eq!(b.parent_id.as_deref(), Some(ids[0].as_str()));
    assert_eq!(b.marker.as_deref(), Some("TODO"));
    assert_eq!(b.priority.as_deref(), Some("A"));
    assert!(b.collapsed);
    assert_eq!(b.heading_level, None);
    assert_eq!(b.properties, blocks[1].properties);
    assert_eq!(store.get_block(&ids[1]).unwrap().as_ref(), Some(b));
    assert_eq!(store.get_block("no-such-id").unwrap(), None);

    let links = store.links_of_page(&vp("projects/example.md")).unwrap();
    assert_eq!(links.len(), 2);
    assert_eq!(
        (links[0].target.as_str(), links[0].target_key.as_str()),
        ("Other Note", "other note")
    );
    assert_eq!(
        (links[0].position, links[0].embed, links[0].alias.as_deref()),
        (5, false, None)
    );
    assert_eq!(
        (links[1].position, links[1].embed, links[1].alias.as_deref()),
        (30, true, Some("shown"))
    );
    assert!(
        links
            .iter()
            .all(|l| l.block_id == ids[1] && l.source_page == "projects/example.md")
    );

    assert_eq!(store.page_count().unwrap(), 1);
    assert_eq!(store.block_count().unwrap(), 2);
    let fp = store.fingerprints().unwrap();
    assert_eq!(
        fp.get("projects/example.md"),
        Some(&(1_758_000_000_000_000_000, 1234, "abc123".to_owned()))
    );
    assert_eq!(store.get_page(&vp("missing.md")).unwrap(), None);
    assert!(
        store
            .get_blocks_by_page(&vp("missing.md"))
            .unwrap()
            .is_empty()
    );
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[test]
fn ids_stay_stable_across_resaves_and_insertions() {
    let (_dir, store, mut writer) = open();
    let p = page("a.md", "A");
    let first = writer
        .save_page(
            &p,
            &[block("one"), block("two"), block("two"), block("three")],
        )
        .unwrap();
    assert_eq!(
        first.iter().collect::<HashSet<_>>().len(),
        4,
        "ids are distinct: {first:?}"
    );

    let again = writer
        .save_page(
            &p,
            &[block("one"), block("two"), block("two"), block("three")],
        )
        .unwrap();
    assert_eq!(again, first, "unchanged blocks keep their ids");

    // An unrelated block inserted before the others: they keep their ids, it gets a new one.
    let inserted = writer
        .save_page(
            &p,
            &[
                block("new"),
                block("one"),
                block("two"),
                block("two"),
                block("three"),
            ],
        )
        .unwrap();
    assert_eq!(&inserted[1..], &first[..]);
    assert!(!first.contains(&inserted[0]));

    // An edited block gets a new id; identical duplicates are matched in order.
    let edited = writer
        .save_page(
            &p,
            &[
                block("one"),
                block("two edited"),
                block("two"),
                block("three"),
            ],
        )
        .unwrap();
    assert_eq!(edited[0], first[0]);
    assert!(!first.contains(&edited[1]) && edited[1] != inserted[0]);
    assert_eq!(edited[2], first[1], "the first unused old 'two' is reused");
    assert_eq!(edited[3], first[3]);
    assert_eq!(
        contents(&store, "a.md"),
        ["one", "two edited", "two", "three"]
    );

    // Ids are per page: the same content on another page does not steal them.
    let other = writer
        .save_page(&page("b.md", "B"), &[block("one")])
        .unwrap();
    assert_ne!(other[0], first[0]);
    assert_eq!(
        store.get_block(&first[0]).unwrap().unwrap().page_path,
        "a.md"
    );
}

#[test]
fn a_moved_page_keeps_its_block_ids_and_its_old_path_goes() {
    let (_dir, store, mut writer) = open();
    let ids = writer
        .save_page(&page("a.md", "A"), &[block("one"), block("two")])
        .unwrap();
    writer
        .save_page(&page("other.md", "O"), &[block("three")])
        .unwrap();
    let moved = writer
        .save_moved_pages(&[
            (
                page("sub/b.md", "B"),
                vec![block("one"), block("two"), block("new")],
                Some("a.md".to_owned()),
            ),
            (page("other.md", "O"), vec![block("three")], None),
        ])
        .unwrap();
    assert_eq!(&moved[0][..2], &ids[..], "the moved page keeps its ids");
    assert!(!ids.contains(&moved[0][2]));
    assert!(store.get_page(&vp("a.md")).unwrap().is_none());
    assert_eq!(
        store.get_block(&ids[0]).unwrap().unwrap().page_path,
        "sub/b.md"
    );
    assert_eq!(contents(&store, "other.md"), ["three"]);
}

#[test]
fn explicit_id_wins() {
    let (_dir, store, mut writer) = open();
    let p = page("a.md", "A");
    let old = writer.save_page(&p, &[block("same")]).unwrap();

    let with_id = NewBlock {
        explicit_id: Some("6a1f0000-0000-4000-8000-000000000001".into()),
        ..block("same")
    };
    let ids = writer
        .save_page(&p, &[with_id.clone(), block("same")])
        .unwrap();
    assert_eq!(ids[0], "6a1f0000-0000-4000-8000-000000000001");
    assert_eq!(
        ids[1], old[0],
        "the content match goes to the block without an explicit id"
    );

    // The explicit id also wins over an old id that content would give.
    let ids = writer
        .save_page(
            &p,
            &[
                NewBlock {
                    explicit_id: Some(old[0].clone()),
                    ..block("changed")
                },
                block("x"),
            ],
        )
        .unwrap();
    assert_eq!(ids[0], old[0]);
    assert_eq!(
        store.get_block(&old[0]).unwrap().unwrap().content,
        "changed"
    );

    // An id held by another page's block, or repeated within the page, is not taken twice.
    let b_ids = writer
        .save_page(
            &page("b.md", "B"),
            &[NewBlock {
                explicit_id: Some(old[0].clone()),
                ..block("copy")
            }],
        )
        .unwrap();
    assert_ne!(b_ids[0], old[0]);
    assert_eq!(store.get_block(&old[0]).unwrap().unwrap().page_path, "a.md");
    let dup = NewBlock {
        explicit_id: Some("dup-id".into()),
        ..block("d")
    };
    let ids = writer
        .save_page(&page("c.md", "C"), &[dup.clone(), dup])
        .unwrap();
    assert_eq!(ids[0], "dup-id");
    assert_ne!(ids[1], "dup-id");
}

#[test]
fn kept_block_ids_are_the_ids_the_next_save_keeps() {
    let (_dir, store, mut writer) = open();
    let old = writer
        .save_page(&page("a.md", "A"), &[block("same"), block("other")])
        .unwrap();
    let elsewhere = writer.save_page(&page("b.md", "B"), &[block("b")]).unwrap();
    let next = [
        // A trimmed explicit id, an id another page holds, identical content, and a new block.
        NewBlock {
            explicit_id: Some("  kept-id  ".into()),
            ..block("x")
        },
        NewBlock {
            explicit_id: Some(elsewhere[0].clone()),
            ..block("y")
        },
        block("other"),
        block("new"),
    ];
    let kept = store.kept_block_ids(&vp("a.md"), &next).unwrap();
    assert_eq!(
        kept,
        [Some("kept-id".to_owned()), None, Some(old[1].clone()), None]
    );
    let saved = writer.save_page(&page("a.md", "A"), &next).unwrap();
    for (k, s) in kept.iter().zip(&saved) {
        if let Some(k) = k {
            assert_eq!(k, s);
        } else {
            assert!(!old.contains(s) && !elsewhere.contains(s), "{s} is new");
        }
    }
}

#[test]
fn an_open_transaction_commits_or_rolls_back_as_a_whole_and_each_write_in_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    writer.begin_transaction().unwrap();
    writer
        .save_page(&page("gone.md", "Gone"), &[block("g")])
        .unwrap();
    writer.rollback_transaction().unwrap();
    assert_eq!(store.get_page(&vp("gone.md")).unwrap(), None);

    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER fail_block BEFORE INSERT ON blocks WHEN NEW.content = 'FAIL'
             BEGIN SELECT RAISE(ABORT, 'forced failure'); END;",
        )
        .unwrap();
    let writes = store.write_count();
    writer.begin_transaction().unwrap();
    writer
        .save_page(&page("kept.md", "Kept"), &[block("k")])
        .unwrap();
    assert!(
        writer
            .save_page(&page("half.md", "Half"), &[block("ok"), block("FAIL")])
            .is_err()
    );
    assert_eq!(
        store.get_page(&vp("kept.md")).unwrap(),
        None,
        "not before the commit"
    );
    writer.commit_transaction().unwrap();
    assert_eq!(store.write_count(), writes + 1);
    assert!(store.get_page(&vp("kept.md")).unwrap().is_some());
    assert_eq!(store.get_page(&vp("half.md")).unwrap(), None);
    assert!(store.integrity_check().unwrap());
}

#[test]
fn nested_tree_has_parent_left_and_order() {
    let (_dir, store, mut writer) = open();
    // - r0
    //   - c0
    //     - g0
    //   - c1
    // - r1
    //   - c2
    let blocks = [
        block("r0"),
        child(0, "c0"),
        child(1, "g0"),
        child(0, "c1"),
        block("r1"),
        child(4, "c2"),
    ];
    let ids = writer.save_page(&page("tree.md", "Tree"), &blocks).unwrap();
    let stored = store.get_blocks_by_page(&vp("tree.md")).unwrap();
    let got: Vec<(&str, Option<&str>, Option<&str>, u32)> = stored
        .iter()
        .map(|b| {
            (
                b.content.as_str(),
                b.parent_id.as_deref(),
                b.left_id.as_deref(),
                b.ord,
            )
        })
        .collect();
    let id = |i: usize| Some(ids[i].as_str());
    assert_eq!(
        got,
        vec![
            ("r0", None, None, 0),
            ("c0", id(0), None, 0),
            ("g0", id(1), None, 0),
            ("c1", id(0), id(1), 1),
            ("r1", None, id(0), 1),
            ("c2", id(4), None, 0),
        ]
    );
    assert_eq!(stored.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), ids);
}

#[test]
fn a_parent_after_its_child_is_refused_and_nothing_changes() {
    let (_dir, store, mut writer) = open();
    writer
        .save_page(&page("a.md", "A"), &[block("kept")])
        .unwrap();
    let err = writer
        .save_page(&page("a.md", "A"), &[child(1, "bad"), block("x")])
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err:?}");
    assert_eq!(contents(&store, "a.md"), ["kept"]);
}

#[test]
fn delete_removes_page_blocks_links_and_tags() {
    let (_dir, store, mut writer) = open();
    let rec = PageRecord {
        tags: vec!["t".into()],
        ..page("gone.md", "Gone")
    };
    let ids = writer
        .save_page(
            &rec,
            &[NewBlock {
                links: vec![link("x", 0)],
                tags: vec!["bt".into()],
                ..block("[[x]] #bt")
            }],
        )
        .unwrap();
    writer
        .save_page(&page("stay.md", "Stay"), &[block("s")])
        .unwrap();

    assert!(writer.delete_page(&vp("gone.md")).unwrap());
    assert!(
        !writer.delete_page(&vp("gone.md")).unwrap(),
        "second delete finds nothing"
    );
    assert_eq!(store.get_page(&vp("gone.md")).unwrap(), None);
    assert_eq!(store.get_block(&ids[0]).unwrap(), None);
    assert!(store.all_links().unwrap().is_empty());
    assert!(store.pages_with_tag("t").unwrap().is_empty());
    assert!(store.blocks_with_tag("bt", 10).unwrap().is_empty());
    assert_eq!(store.block_count().unwrap(), 1);

    writer.save_page(&page("x.md", "X"), &[]).unwrap();
    writer
        .delete_pages(&["stay.md".into(), "x.md".into(), "never.md".into()])
        .unwrap();
    assert_eq!(store.page_count().unwrap(), 0);
    assert_eq!(store.block_count().unwrap(), 0);
}

#[test]
fn list_pages_keyset_paging_returns_every_page_once() {
    let (_dir, store, mut writer) = open();
    let mut batch = Vec::new();
    for i in 0..25 {
        batch.push((
            page(&format!("n/{:02}-{}.md", (i * 7) % 25, i), "t"),
            vec![block("b")],
        ));
    }
    let ids = writer.save_pages(&batch).unwrap();
    assert_eq!(ids.len(), 25);

    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let rows = store.list_pages(after.as_deref(), 7).unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 7);
        after = rows.last().map(|r| r.path.clone());
        seen.extend(rows.into_iter().map(|r| r.path));
    }
    let mut expected: Vec<String> = batch
        .iter()
        .map(|(p, _)| p.path.as_str().to_owned())
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
    assert_eq!(
        store
            .all_pages()
            .unwrap()
            .into_iter()
            .map(|r| r.path)
            .collect::<Vec<_>>(),
        expected
    );
    assert!(
        store
            .all_pages()
            .unwrap()
            .iter()
            .all(|r| r.block_count == 1)
    );
}

#[test]
fn links_to_keys_finds_backlinks_with_context() {
    let (_dir, store, mut writer) = open();
    writer
        .save_page(
            &PageRecord {
                aliases: vec!["T".into()],
                ..page("target.md", "Target")
            },
            &[],
        )
        .unwrap();
    writer
        .save_page(
            &page("b.md", "B"),
            &[
                NewBlock {
                    links: vec![link("Target", 4)],
                    ..block("see [[Target]]")
                },
                NewBlock {
                    links: vec![link("unrelated", 0)],
                    ..block("[[unrelated]]")
                },
                NewBlock {
                    links: vec![link("t", 0), link("target", 10)],
                    ..block("[[T]] and [[target]]")
                },
            ],
        )
        .unwrap();
    writer
        .save_page(
            &page("a.md", "A"),
            &[NewBlock {
                links: vec![link("target.md", 0)],
                ..block("[[target.md]]")
            }],
        )
        .unwrap();

    let keys: Vec<String> = ["target.md", "target", "t", "target"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let hits = store.links_to_keys(&keys).unwrap();
    let got: Vec<(&str, &str, usize, &str)> = hits
        .iter()
        .map(|(l, content)| {
            (
                l.source_page.as_str(),
                l.target.as_str(),
                l.position,
                content.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("a.md", "target.md", 0, "[[target.md]]"),
            ("b.md", "Target", 4, "see [[Target]]"),
            ("b.md", "t", 0, "[[T]] and [[target]]"),
            ("b.md", "target", 10, "[[T]] and [[target]]"),
        ]
    );
    assert!(store.links_to_keys(&["nobody".into()]).unwrap().is_empty());
    assert!(store.links_to_keys(&[]).unwrap().is_empty());
    assert_eq!(store.all_links().unwrap().len(), 5);
}

#[test]
fn tags_are_case_insensitive() {
    let (_dir, store, mut writer) = open();
    writer
        .save_page(
            &PageRecord {
                tags: vec!["Rust".into(), "rust".into(), "db".into()],
                ..page("a.md", "A")
            },
            &[
                NewBlock {
                    tags: vec!["Idea".into()],
                    ..block("an #Idea")
                },
                block("plain"),
            ],
        )
        .unwrap();
    writer
        .save_page(
            &PageRecord {
                tags: vec!["RUST".into(), "Éte".into()],
                ..page("b.md", "B")
            },
            &[NewBlock {
                tags: vec!["idea".into(), "IDEA".into()],
                ..block("#idea #IDEA")
            }],
        )
        .unwrap();

    assert_eq!(
        store.get_page(&vp("a.md")).unwrap().unwrap().tags,
        ["Rust", "db"],
        "duplicates stored once"
    );
    assert_eq!(store.pages_with_tag("rust").unwrap(), ["a.md", "b.md"]);
    assert_eq!(store.pages_with_tag("RuSt").unwrap(), ["a.md", "b.md"]);
    assert_eq!(store.pages_with_tag("éTE").unwrap(), ["b.md"]);
    assert!(
        store.pages_with_tag("idea").unwrap().is_empty(),
        "block tags are not page tags"
    );
    // One entry per tag whatever its case; ties in spelling go to the smallest.
    assert_eq!(
        store.all_tags().unwrap(),
        vec![
            ("db".to_owned(), 1),
            ("RUST".to_owned(), 2),
            ("Éte".to_owned(), 1)
        ]
    );
    // The most common spelling is shown.
    writer
        .save_page(
            &PageRecord {
                tags: vec!["Rust".into()],
                ..page("c.md", "C")
            },
            &[],
        )
        .unwrap();
    assert_eq!(store.all_tags().unwrap()[1], ("Rust".to_owned(), 3));

    let blocks = store.blocks_with_tag("IDEA", 10).unwrap();
    assert_eq!(
        blocks
            .iter()
            .map(|b| b.content.as_str())
            .collect::<Vec<_>>(),
        ["an #Idea", "#idea #IDEA"]
    );
    assert_eq!(store.blocks_with_tag("idea", 1).unwrap().len(), 1);
    assert!(store.blocks_with_tag("rust", 10).unwrap().is_empty());
}

#[test]
fn a_failing_transaction_leaves_the_previous_page_intact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    let p = PageRecord {
        tags: vec!["old".into()],
        ..page("p.md", "Old title")
    };
    let ids = writer
        .save_page(&p, &[block("first"), block("second")])
        .unwrap();

    let other = rusqlite::Connection::open(&db).unwrap();
    other
        .execute_batch(
            "CREATE TRIGGER fail_block BEFORE INSERT ON blocks WHEN NEW.content = 'FAIL'
             BEGIN SELECT RAISE(ABORT, 'forced failure'); END;",
        )
        .unwrap();

    let new = PageRecord {
        tags: vec!["new".into()],
        hash: "new".into(),
        ..page("p.md", "New title")
    };
    let err = writer
        .save_page(&new, &[block("first"), block("FAIL")])
        .unwrap_err();
    assert!(matches!(err, StoreError::Sqlite(_)), "{err:?}");

    let row = store.get_page(&vp("p.md")).unwrap().unwrap();
    assert_eq!((row.title.as_str(), row.hash.as_str()), ("Old title", "h"));
    assert_eq!(row.tags, ["old"]);
    let blocks = store.get_blocks_by_page(&vp("p.md")).unwrap();
    assert_eq!(blocks.iter().map(|b| b.id.clone()).collect::<Vec<_>>(), ids);

    // A batch fails as a whole too.
    let err = writer.save_pages(&[
        (page("q.md", "Q"), vec![block("ok")]),
        (new.clone(), vec![block("FAIL")]),
    ]);
    assert!(err.is_err());
    assert_eq!(store.get_page(&vp("q.md")).unwrap(), None);

    // The store keeps working afterwards.
    writer.save_page(&new, &[block("first")]).unwrap();
    assert_eq!(
        store.get_page(&vp("p.md")).unwrap().unwrap().title,
        "New title"
    );
    assert_eq!(store.get_blocks_by_page(&vp("p.md")).unwrap()[0].id, ids[0]);
}

#[test]
fn readers_run_while_a_writer_saves() {
    let (_dir, store, mut writer) = open();
    let store = Arc::new(store);
    let done = Arc::new(AtomicBool::new(false));

    let readers: Vec<_> = (0..8)
        .map(|t| {
            let store = Arc::clone(&store);
            let done = Arc::clone(&done);
            std::thread::spawn(move || -> Result<usize, StoreError> {
                let mut reads = 0;
                while !done.load(Ordering::Acquire) || reads == 0 {
                    let n = store.page_count()?;
                    let rows = store.list_pages(None, 50)?;
                    assert!(rows.len() as u64 <= n.max(50));
                    if let Some(r) = rows.first() {
                        let p = vp(&r.path);
                        store.get_page(&p)?;
                        store.get_blocks_by_page(&p)?;
                    }
                    store.pages_with_tag(&format!("tag{t}"))?;
                    reads += 1;
                }
                Ok(reads)
            })
        })
        .collect();

    let writing = {
        std::thread::spawn(move || -> Result<(), StoreError> {
            for i in 0..200 {
                let blocks = vec![
                    block("root"),
                    child(0, &format!("child {i}")),
                    NewBlock {
                        links: vec![link("x", 0)],
                        ..block("[[x]]")
                    },
                ];
                writer.save_page(
                    &page(&format!("w/{i:03}.md"), &format!("page {i}")),
                    &blocks,
                )?;
            }
            Ok(())
        })
    };
    writing.join().unwrap().unwrap();
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap().unwrap() > 0);
    }
    assert_eq!(store.page_count().unwrap(), 200);
    assert_eq!(store.block_count().unwrap(), 600);
    assert_eq!(store.all_pages().unwrap().len(), 200);
    assert_eq!(
        store
            .get_page(&vp("w/199.md"))
            .unwrap()
            .map(|p| p.title)
            .as_deref(),
        Some("page 199")
    );
}

#[test]
fn reopening_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let ids = {
        let (_store, mut writer) = BlockStore::open(&db).unwrap();
        writer.set_meta("scan", "done").unwrap();
        writer
            .save_page(&page("keep.md", "Keep"), &[block("a"), child(0, "b")])
            .unwrap()
    };
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    assert_eq!(
        store.get_page(&vp("keep.md")).unwrap().unwrap().block_count,
        2
    );
    assert_eq!(
        store
            .get_blocks_by_page(&vp("keep.md"))
            .unwrap()
            .iter()
            .map(|b| b.id.clone())
            .collect::<Vec<_>>(),
        ids
    );
    assert_eq!(store.get_meta("scan").unwrap().as_deref(), Some("done"));
    // Re-saving after a reopen still reuses the ids.
    assert_eq!(
        writer
            .save_page(&page("keep.md", "Keep"), &[block("a"), child(0, "b")])
            .unwrap(),
        ids
    );
    assert!(store.integrity_check().unwrap());
}

#[test]
fn a_database_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    drop(BlockStore::open(&db).unwrap());
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();

    let err = BlockStore::open(&db).err().unwrap();
    match &err {
        StoreError::NewerSchema { found, supported } => {
            assert_eq!(*found, 99);
            assert_eq!(*supported, pkm_block::SCHEMA_VERSION);
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert!(err.to_string().contains("newer"), "{err}");
    // The file is left as it was.
    let v: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, 99);

    let kb: KbError = err.into();
    assert_eq!(kb.kind, ErrorKind::External);
    assert!(!kb.message.contains(dir.path().to_str().unwrap()));
}

#[test]
fn a_file_that_is_not_a_database_is_reported_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    std::fs::write(&db, vec![0x5a_u8; 8192]).unwrap();
    let err = BlockStore::open(&db).err().unwrap();
    assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
    let kb: KbError = err.into();
    assert_eq!(kb.kind, ErrorKind::External);
    assert!(!kb.message.contains("blocks.db"));
}

#[test]
fn meta_and_clear() {
    let (_dir, store, mut writer) = open();
    assert_eq!(store.get_meta("k").unwrap(), None);
    writer.set_meta("k", "1").unwrap();
    writer.set_meta("k", "2").unwrap();
    assert_eq!(store.get_meta("k").unwrap().as_deref(), Some("2"));

    let batch: Vec<_> = (0..5)
        .map(|i| {
            let rec = PageRecord {
                tags: vec!["t".into()],
                aliases: vec!["al".into()],
                ..page(&format!("{i}.md"), "t")
            };
            (
                rec,
                vec![NewBlock {
                    links: vec![link("x", 0)],
                    tags: vec!["b".into()],
                    ..block("x")
                }],
            )
        })
        .collect();
    let ids = writer.save_pages(&batch).unwrap();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids.iter().flatten().collect::<HashSet<_>>().len(), 5);
    writer.clear().unwrap();
    assert_eq!(store.page_count().unwrap(), 0);
    assert_eq!(store.block_count().unwrap(), 0);
    assert!(store.all_links().unwrap().is_empty());
    assert!(store.all_tags().unwrap().is_empty());
    assert!(store.all_pages().unwrap().is_empty());
    assert_eq!(
        store.get_meta("k").unwrap().as_deref(),
        Some("2"),
        "meta survives a clear"
    );
    assert!(store.integrity_check().unwrap());
}

#[test]
fn reads_do_not_wait_for_an_open_write_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    writer
        .save_page(&page("p.md", "Before"), &[block("a")])
        .unwrap();

    // Another writer holds the write lock with an uncommitted change.
    let mut other = rusqlite::Connection::open(&db).unwrap();
    let tx = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("UPDATE pages SET title = 'Uncommitted'", [])
        .unwrap();

    // Readers see the last committed state, without waiting.
    assert_eq!(
        store.get_page(&vp("p.md")).unwrap().unwrap().title,
        "Before"
    );
    assert_eq!(contents(&store, "p.md"), ["a"]);
    assert_eq!(store.page_count().unwrap(), 1);
    tx.commit().unwrap();
    assert_eq!(
        store.get_page(&vp("p.md")).unwrap().unwrap().title,
        "Uncommitted"
    );
}

#[test]
fn index_lag_is_durable_until_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    {
        let (store, mut writer) = BlockStore::open(&db).unwrap();
        writer.mark_index_lag(&["b.md", "a.md", "a.md"]).unwrap();
        assert_eq!(store.index_lag().unwrap(), vec!["a.md", "b.md"]);
    }
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    assert_eq!(
        store.index_lag_count().unwrap(),
        2,
        "survives a reopen (a crash)"
    );
    writer.clear_index_lag(&["a.md", "zzz.md"]).unwrap();
    assert_eq!(store.index_lag().unwrap(), vec!["b.md"]);
}

#[test]
fn for_each_link_streams_every_link_in_document_order() {
    let (_dir, store, mut writer) = open();
    for (path, targets) in [("b.md", ["x", "y|shown"]), ("a.md", ["z", "x"])] {
        let blocks: Vec<NewBlock> = targets
            .iter()
            .map(|t| {
                let (target, alias) = t.split_once('|').unwrap_or((t, ""));
                NewBlock {
                    links: vec![NewLink {
                        alias: (!alias.is_empty()).then(|| alias.to_owned()),
                        ..link(target, 0)
                    }],
                    ..block(&format!("[[{t}]]"))
                }
            })
            .collect();
        writer.save_page(&page(path, path), &blocks).unwrap();
    }
    let mut seen = Vec::new();
    store
        .for_each_link(|source, target, alias| {
            seen.push(format!(
                "{source}->{target}{}",
                alias.map(|a| format!("|{a}")).unwrap_or_default()
            ));
        })
        .unwrap();
    // Pages in the order they were stored, links in document order.
    assert_eq!(seen, ["b.md->x", "b.md->y|shown", "a.md->z", "a.md->x"]);
    assert_eq!(seen.len(), store.all_links().unwrap().len());
}

/// The names and definitions of the store's indexes, read from the file.
fn index_definitions(db: &std::path::Path) -> Vec<(String, Option<String>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_bulk_load_keeps_the_id_rules_and_builds_the_indexes_again_at_its_end() {
    let (dir, store, mut writer) = open();
    let db = dir.path().join("blocks.db");
    let before = index_definitions(&db);
    assert!(
        before.iter().any(|(name, _)| name == "blocks_id"),
        "block ids have a unique index: {before:?}"
    );
    let explicit = |id: &str, content: &str| NewBlock {
        explicit_id: Some(id.into()),
        ..block(content)
    };
    let a = writer
        .save_page(&page("a.md", "A"), &[explicit("held", "x"), block("same")])
        .unwrap();

    writer.begin_bulk().unwrap();
    // Held by a block of another page: not taken.
    let b = writer
        .save_page(&page("b.md", "B"), &[explicit("held", "copy")])
        .unwrap();
    assert_ne!(b[0], "held");
    // Its own page's id stays, and so does the id of unchanged content.
    let again = writer
        .save_page(&page("a.md", "A"), &[explicit("held", "x2"), block("same")])
        .unwrap();
    assert_eq!(again, a);
    // Repeated within a page, then on another page saved in the same load: taken once.
    let c = writer
        .save_page(
            &page("c.md", "C"),
            &[explicit("new", "1"), explicit("new", "2")],
        )
        .unwrap();
    assert_eq!(c[0], "new");
    assert_ne!(c[1], "new");
    let d = writer
        .save_page(&page("d.md", "D"), &[explicit("new", "3")])
        .unwrap();
    assert_ne!(d[0], "new");
    // Readers see the store as it was, id lookups included.
    assert_eq!(store.page_count().unwrap(), 1);
    assert_eq!(store.get_block("held").unwrap().unwrap().content, "x");
    writer.commit_transaction().unwrap();

    assert_eq!(index_definitions(&db), before);
    assert_eq!(store.page_count().unwrap(), 4);
    assert_eq!(store.get_block("held").unwrap().unwrap().page_path, "a.md");
    assert_eq!(store.get_block("new").unwrap().unwrap().page_path, "c.md");
    assert_eq!(store.get_block(&d[0]).unwrap().unwrap().content, "3");

    // A load rolled back leaves the store, its indexes included, as it was.
    writer.begin_bulk().unwrap();
    writer
        .save_page(&page("e.md", "E"), &[block("gone")])
        .unwrap();
    writer.rollback_transaction().unwrap();
    assert_eq!(index_definitions(&db), before);
    assert_eq!(store.page_count().unwrap(), 4);
    // And the next load starts from the store's ids again.
    writer.begin_bulk().unwrap();
    let e = writer
        .save_page(&page("e.md", "E"), &[explicit("new", "4")])
        .unwrap();
    assert_ne!(e[0], "new");
    writer.clear().unwrap();
    let f = writer
        .save_page(&page("f.md", "F"), &[explicit("new", "5")])
        .unwrap();
    assert_eq!(f[0], "new", "after a clear no block holds the id any more");
    writer.commit_transaction().unwrap();
    assert_eq!(index_definitions(&db), before);
}

/// Rewrites a store as schema version 5 made it: a block's parent and left sibling, and a link's
/// block, kept as copies of their ids.
fn as_version_5(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "CREATE TABLE blocks_v5 (
            id TEXT NOT NULL, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL, parent_id TEXT, left_id TEXT, ord INTEGER NOT NULL,
            content TEXT NOT NULL, properties_json TEXT, marker TEXT, priority TEXT,
            collapsed INTEGER NOT NULL DEFAULT 0, heading_level INTEGER);
         INSERT INTO blocks_v5 SELECT b.id, b.page_id, b.seq,
             (SELECT p.id FROM blocks p WHERE p.page_id = b.page_id AND p.seq = b.parent_seq),
             (SELECT l.id FROM blocks l WHERE l.page_id = b.page_id AND l.seq = b.left_seq),
             b.ord, b.content, b.properties_json, b.marker, b.priority, b.collapsed, b.heading_level
             FROM blocks b ORDER BY b.page_id, b.seq;
         CREATE TABLE links_v5 (
            page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
            n INTEGER NOT NULL, block_id TEXT NOT NULL, target TEXT NOT NULL,
            target_key TEXT NOT NULL, alias TEXT, position INTEGER NOT NULL,
            embed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (page_id, seq, n)) WITHOUT ROWID;
         INSERT INTO links_v5 SELECT l.page_id, l.seq, l.n, b.id, l.target, l.target_key, l.alias,
             l.position, l.embed
             FROM links l JOIN blocks b ON b.page_id = l.page_id AND b.seq = l.seq;
         DROP TABLE blocks;
         ALTER TABLE blocks_v5 RENAME TO blocks;
         CREATE UNIQUE INDEX blocks_page ON blocks(page_id, seq);
         CREATE UNIQUE INDEX blocks_id ON blocks(id);
         DROP TABLE links;
         ALTER TABLE links_v5 RENAME TO links;
         CREATE INDEX links_target ON links(target_key);
         PRAGMA user_version = 5;",
    )
    .unwrap();
}

/// A page of nested blocks with links, saved, and its blocks and links as read back.
fn saved_tree(
    writer: &mut StoreWriter,
    store: &BlockStore,
) -> (Vec<pkm_block::StoredBlock>, Vec<pkm_block::StoredLink>) {
    let mut linked = child(0, "two [[B]]");
    linked.links = vec![link("B", 4)];
    let blocks = [
        block("one"),
        linked,
        child(1, "three"),
        child(0, "four"),
        block("five"),
    ];
    writer.save_page(&page("a.md", "A"), &blocks).unwrap();
    (
        store.get_blocks_by_page(&vp("a.md")).unwrap(),
        store.links_of_page(&vp("a.md")).unwrap(),
    )
}

#[test]
fn a_store_whose_blocks_named_their_neighbours_by_id_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    let (blocks, links) = saved_tree(&mut writer, &store);
    assert_eq!(blocks[3].parent_id.as_deref(), Some(blocks[0].id.as_str()));
    assert_eq!(blocks[3].left_id.as_deref(), Some(blocks[1].id.as_str()));
    assert_eq!(links[0].block_id, blocks[1].id);
    let fresh = index_definitions(&db);
    drop((store, writer));
    as_version_5(&rusqlite::Connection::open(&db).unwrap());

    let (store, _writer) = BlockStore::open(&db).unwrap();
    assert_eq!(index_definitions(&db), fresh);
    assert_eq!(store.get_blocks_by_page(&vp("a.md")).unwrap(), blocks);
    assert_eq!(store.links_of_page(&vp("a.md")).unwrap(), links);
    assert_eq!(
        store.get_block(&blocks[2].id).unwrap().as_ref(),
        Some(&blocks[2])
    );
}

#[test]
fn a_store_whose_block_ids_were_the_primary_key_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("blocks.db");
    let (store, mut writer) = BlockStore::open(&db).unwrap();
    let (blocks, _) = saved_tree(&mut writer, &store);
    let fresh = index_definitions(&db);
    drop((store, writer));
    // The table as schema version 4 made it: the id its primary key.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        as_version_5(&conn);
        conn.execute_batch(
            "CREATE TABLE blocks_v4 (
                id TEXT PRIMARY KEY NOT NULL, page_id INTEGER NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
                seq INTEGER NOT NULL, parent_id TEXT, left_id TEXT, ord INTEGER NOT NULL,
                content TEXT NOT NULL, properties_json TEXT, marker TEXT, priority TEXT,
                collapsed INTEGER NOT NULL DEFAULT 0, heading_level INTEGER);
             INSERT INTO blocks_v4 SELECT * FROM blocks;
             DROP TABLE blocks;
             ALTER TABLE blocks_v4 RENAME TO blocks;
             CREATE UNIQUE INDEX blocks_page ON blocks(page_id, seq);
             PRAGMA user_version = 4;",
        )
        .unwrap();
    }
    let (store, _writer) = BlockStore::open(&db).unwrap();
    assert_eq!(index_definitions(&db), fresh);
    assert_eq!(store.get_blocks_by_page(&vp("a.md")).unwrap(), blocks);
    assert_eq!(
        store.get_block(&blocks[1].id).unwrap().unwrap().content,
        "two [[B]]"
    );
}

#[test]
fn a_block_whose_parent_does_not_come_before_it_is_refused_and_nothing_is_saved() {
    let (_dir, store, mut writer) = open();
    let err = writer
        .save_page(&page("a.md", "A"), &[child(1, "one"), block("two")])
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err:?}");
    assert!(store.get_page(&vp("a.md")).unwrap().is_none());
}

/// Saves the page at `path` with a link the store cannot hold in its second block: the page row
/// and its first block are written, then the write stops half-way with an error.
fn save_failing_half_way(writer: &mut StoreWriter, path: &str) {
    let mut far = block("far");
    far.links = vec![link("B", usize::MAX)];
    let err = writer.save_page(&page(path, "Half"), &[block("first"), far]);
    assert!(err.is_err(), "{err:?}");
}

#[test]
fn a_bulk_load_with_a_write_that_failed_half_way_is_rolled_back_whole() {
    let (dir, store, mut writer) = open();
    let db = dir.path().join("blocks.db");
    let before = index_definitions(&db);
    writer
        .save_page(&page("kept.md", "Kept"), &[block("kept")])
        .unwrap();
    writer.begin_bulk().unwrap();
    writer.save_page(&page("a.md", "A"), &[block("a")]).unwrap();
    // Saved again: the old rows are deleted, then the write stops half-way.
    save_failing_half_way(&mut writer, "a.md");
    let err = writer.commit_transaction().unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    assert_eq!(store.page_count().unwrap(), 1);
    assert_eq!(contents(&store, "kept.md"), ["kept"]);
    assert!(store.get_page(&vp("a.md")).unwrap().is_none());
    assert_eq!(
        index_definitions(&db),
        before,
        "the dropped indexes are back"
    );
    // The writer is itself again: the next write commits.
    writer.save_page(&page("c.md", "C"), &[block("c")]).unwrap();
    assert_eq!(contents(&store, "c.md"), ["c"]);
}

/// The indexes a bulk load drops, by name.
fn has_index(db: &std::path::Path, name: &str) -> bool {
    index_definitions(db).iter().any(|(n, _)| n == name)
}

#[test]
fn a_bulk_load_into_an_empty_store_commits_in_pieces_and_builds_its_indexes_at_its_end() {
    let (dir, store, mut writer) = open();
    let db = dir.path().join("blocks.db");
    let before = index_definitions(&db);
    let explicit = |id: &str, content: &str| NewBlock {
        explicit_id: Some(id.into()),
        ..block(content)
    };

    writer.begin_bulk().unwrap();
    assert!(writer.commits_in_pieces());
    writer
        .save_page(&page("a.md", "A"), &[explicit("held", "x")])
        .unwrap();
    writer.commit_piece().unwrap();
    // Readers see the piece, found without the dropped indexes; the store records them.
    assert_eq!(store.page_count().unwrap(), 1);
    assert_eq!(store.get_block("held").unwrap().unwrap().page_path, "a.md");
    assert!(!has_index(&db, "blocks_id"));
    assert!(store.get_meta("dropped_index:blocks_id").unwrap().is_some());
    // The ids of the pieces committed are still held.
    let b = writer
        .save_page(&page("b.md", "B"), &[explicit("held", "copy")])
        .unwrap();
    assert_ne!(b[0], "held");
    writer.commit_transaction().unwrap();
    assert_eq!(index_definitions(&db), before);
    // Each index is built, and its record gone, as its own piece but the last.
    for name in [
        "blocks_id",
        "links_target",
        "block_tags_key",
        "page_tags_key",
        "pages_mtime",
    ] {
        let key = format!("dropped_index:{name}");
        assert!(store.get_meta(&key).unwrap().is_none(), "{key}");
    }
    assert_eq!(store.page_count().unwrap(), 2);
    assert_eq!(store.get_block(&b[0]).unwrap().unwrap().content, "copy");

    // A store that holds pages is loaded in one transaction: readers see it whole throughout.
    writer.begin_bulk().unwrap();
    assert!(!writer.commits_in_pieces());
    writer.save_page(&page("c.md", "C"), &[block("c")]).unwrap();
    let err = writer.commit_piece().unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput(_)), "{err:?}");
    assert_eq!(store.page_count().unwrap(), 2);
    writer.commit_transaction().unwrap();
    assert_eq!(store.page_count().unwrap(), 3);
    assert_eq!(index_definitions(&db), before);
}

#[test]
fn a_page_written_again_or_deleted_in_a_load_into_an_empty_store_leaves_no_rows_behind() {
    // Such a load does not check the rows' references to their pages, so the rows of a page it
    // replaces or deletes go by hand, not by the cascade.
    let (_dir, store, mut writer) = open();
    let tagged = |path: &str| PageRecord {
        tags: vec!["t".into()],
        aliases: vec![format!("alias of {path}")],
        ..page(path, "Tagged")
    };
    let linked = |content: &str| NewBlock {
        links: vec![link("x", 0)],
        tags: vec!["bt".into()],
        ..block(content)
    };
    writer.begin_bulk().unwrap();
    assert!(writer.commits_in_pieces());
    writer
        .save_page(&tagged("again.md"), &[linked("one"), linked("two")])
        .unwrap();
    writer
        .save_page(&tagged("gone.md"), &[linked("gone")])
        .unwrap();
    writer.commit_piece().unwrap();
    writer
        .save_page(&page("again.md", "Again"), &[block("three")])
        .unwrap();
    writer.delete_pages(&["gone.md".into()]).unwrap();
    writer.commit_transaction().unwrap();

    assert_eq!(store.page_count().unwrap(), 1);
    assert_eq!(store.block_count().unwrap(), 1);
    assert_eq!(contents(&store, "again.md"), ["three"]);
    assert!(store.all_links().unwrap().is_empty());
    assert!(store.pages_with_tag("t").unwrap().is_empty());
    assert!(store.blocks_with_tag("bt", 10).unwrap().is_empty());

    // After the load, a delete still takes the rows with the page.
    writer.delete_pages(&["again.md".into()]).unwrap();
    assert_eq!(store.block_count().unwrap(), 0);
}

#[test]
fn a_bulk_load_cut_short_after_a_piece_keeps_the_piece_and_the_next_open_builds_its_indexes() {
    let (dir, store, mut writer) = open();
    let db = dir.path().join("blocks.db");
    let before = index_definitions(&db);
    writer.begin_bulk().unwrap();
    let a = writer
        .save_page(&page("a.md", "A"), &[block("one"), block("two")])
        .unwrap();
    writer.commit_piece().unwrap();
    writer.save_page(&page("b.md", "B"), &[block("b")]).unwrap();
    // The process dies: its connection goes without a rollback of its own.
    drop((store, writer));
    assert!(!has_index(&db, "blocks_id"));

    let (store, _writer) = BlockStore::open(&db).unwrap();
    assert_eq!(index_definitions(&db), before);
    assert!(store.get_meta("dropped_index:blocks_id").unwrap().is_none());
    assert_eq!(contents(&store, "a.md"), ["one", "two"]);
    assert!(store.get_page(&vp("b.md")).unwrap().is_none());
    assert_eq!(store.get_block(&a[1]).unwrap().unwrap().content, "two");
}

#[test]
fn a_bulk_load_rolled_back_after_a_piece_keeps_the_piece_and_builds_its_indexes() {
    let (dir, store, mut writer) = open();
    let db = dir.path().join("blocks.db");
    let before = index_definitions(&db);
    writer.begin_bulk().unwrap();
    writer.save_page(&page("a.md", "A"), &[block("a")]).unwrap();
    writer.commit_piece().unwrap();
    writer.save_page(&page("b.md", "B"), &[block("b")]).unwrap();
    writer.rollback_transaction().unwrap();
    assert_eq!(index_definitions(&db), before);
    assert_eq!(contents(&store, "a.md"), ["a"]);
    assert!(store.get_page(&vp("b.md")).unwrap().is_none());

    // A write that failed half-way after a piece: the next piece is refused and rolled back.
    writer.clear().unwrap();
    writer.begin_bulk().unwrap();
    writer.save_page(&page("c.md", "C"), &[block("c")]).unwrap();
    writer.commit_piece().unwrap();
    save_failing_half_way(&mut writer, "d.md");
    let err = writer.commit_piece().unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    assert_eq!(index_definitions(&db), before);
    assert_eq!(contents(&store, "c.md"), ["c"]);
    assert!(store.get_page(&vp("d.md")).unwrap().is_none());
    // The writer is itself again.
    writer.save_page(&page("e.md", "E"), &[block("e")]).unwrap();
    assert_eq!(contents(&store, "e.md"), ["e"]);
}
