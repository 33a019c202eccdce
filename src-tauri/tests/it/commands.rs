//! The command surface on real temp vaults: the example vault for hand-checked answers, and
//! small vaults for the write path's guarantees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::Path;
use std::sync::Arc;

use pkm_core::{ErrorKind, Vault, VaultPath};
use stratum_app::commands::{graph, page, search, vault};
use stratum_app::scan::{self, ScanMode};
use stratum_app::{App, AppConfig};

use crate::copy_dir::copy_dir;

fn example_vault() -> (tempfile::TempDir, Arc<App>) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/vault"),
        dir.path(),
    );
    let app = open(dir.path());
    (dir, app)
}

fn open(root: &Path) -> Arc<App> {
    let app = App::open(Vault::open(root).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    app
}

fn empty_vault() -> (tempfile::TempDir, Arc<App>) {
    let dir = tempfile::tempdir().unwrap();
    let app = open(dir.path());
    (dir, app)
}

fn vp(app: &App, s: &str) -> VaultPath {
    VaultPath::parse(app.vault(), s).unwrap()
}

#[test]
fn write_then_read_returns_the_exact_bytes() {
    let (dir, app) = empty_vault();
    let text = "---\ntitle: Round trip\ntags: [a]\n---\n# Heading\n\n- one [[Other]]\n  - two #tag\n\ttabbed\r\nno newline at end";
    let p = vp(&app, "deep/er/round.md");
    let written = page::save_page(&app, &p, text, None).unwrap();
    assert_eq!(written.content, text);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/round.md")).unwrap(),
        text
    );
    let read = page::open_page(&app, &p).unwrap();
    assert_eq!(read.content, text);
    assert_eq!(read.title, "Round trip");
    assert_eq!(read.frontmatter["tags"][0], "a");
    assert_eq!(read.modified_at, written.modified_at);
    assert!(
        read.links
            .iter()
            .any(|l| l.target == "Other" && l.block_id.is_some())
    );
    // Writing back what was read changes nothing but modified_at.
    let again = page::save_page(&app, &p, &read.content, Some(&read.modified_at)).unwrap();
    assert_eq!(again.content, text);
    assert_ne!(
        again.modified_at, read.modified_at,
        "modified_at changes on every write"
    );
}

#[test]
fn modified_at_is_distinct_on_every_write() {
    let (_dir, app) = empty_vault();
    let p = vp(&app, "fast.md");
    let mut seen = std::collections::HashSet::new();
    for i in 0..50 {
        let doc = page::save_page(&app, &p, &format!("v{i}"), None).unwrap();
        assert!(
            seen.insert(doc.modified_at.clone()),
            "repeated modified_at {}",
            doc.modified_at
        );
    }
}

#[test]
fn conflict_leaves_file_store_and_index_untouched() {
    let (dir, app) = empty_vault();
    let p = vp(&app, "c.md");
    let first = page::save_page(&app, &p, "original zebra", None).unwrap();
    page::save_page(&app, &p, "second giraffe", Some(&first.modified_at)).unwrap();
    let err = page::save_page(&app, &p, "third walrus", Some(&first.modified_at)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict);
    assert_eq!(err.note_path.as_deref(), Some("c.md"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("c.md")).unwrap(),
        "second giraffe"
    );
    assert_eq!(
        search::search_blocks(&app, "walrus", 10, 0).unwrap().total,
        0
    );
    assert_eq!(
        search::search_blocks(&app, "giraffe", 10, 0).unwrap().total,
        1
    );
    let err = page::delete_page(&app, &p, Some(&first.modified_at)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict);
    assert!(dir.path().join("c.md").exists());
    // A guard on a note that does not exist is a conflict too: it changed (it is gone).
    let err =
        page::save_page(&app, &vp(&app, "never.md"), "x", Some(&first.modified_at)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict);
    assert!(!dir.path().join("never.md").exists());
    let err = page::save_page(&app, &p, "x", Some("not a time")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgs);
}

#[test]
fn a_failing_store_transaction_restores_the_previous_note() {
    let (dir, app) = empty_vault();
    let p = vp(&app, "keep.md");
    let before = page::save_page(&app, &p, "- safe content", None).unwrap();
    // Make SQLite refuse any block whose content is FAIL, from a second connection.
    let conn = rusqlite::Connection::open(dir.path().join(".pkm/blocks.db")).unwrap();
    conn.execute_batch(
        "CREATE TRIGGER fail_block BEFORE INSERT ON blocks WHEN NEW.content = 'FAIL' BEGIN SELECT RAISE(ABORT, 'injected'); END;",
    )
    .unwrap();
    let err = page::save_page(&app, &p, "- FAIL", None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::External);
    assert!(
        !err.message.contains('/'),
        "no paths in messages: {}",
        err.message
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.md")).unwrap(),
        "- safe content"
    );
    let now = page::open_page(&app, &p).unwrap();
    assert_eq!(
        now.modified_at, before.modified_at,
        "the old mtime comes back too"
    );
    // A new note whose transaction fails does not stay behind either.
    assert!(page::save_page(&app, &vp(&app, "new.md"), "- FAIL", None).is_err());
    assert!(!dir.path().join("new.md").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn list_pages_covers_every_note_exactly_once() {
    let (_dir, app) = example_vault();
    let total = vault::get_vault_info(&app).unwrap().page_count as usize;
    assert_eq!(total, 40);
    for limit in [1, 7, 40, 1000] {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let list = page::list_pages(&app, limit, cursor.as_deref()).unwrap();
            assert!(list.pages.len() <= limit);
            seen.extend(list.pages.into_iter().map(|p| p.path));
            match list.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let mut dedup = seen.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!((seen.len(), dedup.len()), (total, total), "limit {limit}");
    }
    assert!(page::list_pages(&app, 10, Some("!!garbage")).is_err());
}

#[test]
fn resolution_follows_path_title_alias_stem_case_insensitively() {
    let (_dir, app) = example_vault();
    let check = |target: &str, expect: Option<&str>| {
        let r = graph::resolve_link_target(&app, target).unwrap();
        assert_eq!(
            r.resolved.as_ref().map(|p| p.path.as_str()),
            expect,
            "{target}"
        );
        assert_eq!(r.unresolved, expect.is_none());
    };
    check(
        "DDIA",
        Some("reading/Designing Data-Intensive Applications.md"),
    );
    check(
        "Compaction Design Doc",
        Some("projects/Stratum/Compaction Design.md"),
    );
    check("beacon", Some("projects/Beacon.md"));
    check("Beacon Dashboard", Some("projects/Beacon.md"));
    check("Stratum#Architecture", Some("projects/Stratum.md"));
    check("projects/Stratum|Stratum", Some("projects/Stratum.md"));
    check("projects/Stratum.md", Some("projects/Stratum.md"));
    check("Red Lentil Dal", Some("recipes/Weeknight Dal.md"));
    check(
        "Engineering Handbook",
        Some("areas/Engineering Practices.md"),
    );
    check("Kubernetes Migration", None);
    check("Key", None); // only inside a code block
}

#[test]
fn backlinks_on_the_example_vault() {
    let (_dir, app) = example_vault();
    let bl = search::get_page_backlinks(&app, &vp(&app, "projects/Stratum.md"), false).unwrap();
    let sources: std::collections::HashSet<&str> = bl
        .backlinks
        .iter()
        .map(|b| b.source_page.as_str())
        .collect();
    for s in [
        "Home.md",
        "people/Ada Lovelace.md",
        "journal/2026-11-30.md",
        "projects/Beacon.md",
        "Reading List.md",
        "people/Team.md",
    ] {
        assert!(sources.contains(s), "{s} links to Stratum; got {sources:?}");
    }
    assert!(!sources.contains("projects/Stratum.md"));
    assert!(
        bl.backlinks
            .iter()
            .all(|b| b.is_linked && !b.source_id.is_empty() && !b.context.is_empty())
    );
    let home = search::get_page_backlinks(&app, &vp(&app, "Home.md"), false).unwrap();
    assert!(home.backlinks.is_empty(), "{:?}", home.backlinks);
    let with_mentions =
        search::get_page_backlinks(&app, &vp(&app, "projects/Stratum.md"), true).unwrap();
    assert!(with_mentions.backlinks.len() >= bl.backlinks.len());
    let missing = search::get_page_backlinks(&app, &vp(&app, "nope.md"), true).unwrap_err();
    assert_eq!(missing.kind, ErrorKind::NotFound);
}

#[test]
fn search_tags_autocomplete_graph_on_the_example_vault() {
    let (_dir, app) = example_vault();
    let r = search::search_blocks(&app, "compaction", 50, 0).unwrap();
    assert!(r.total > 0);
    assert!(
        r.results
            .iter()
            .any(|h| h.page_path == "projects/Stratum/Compaction Design.md")
    );
    // Paging: every hit once.
    let all = search::search_blocks(&app, "stratum", 1000, 0).unwrap();
    let mut paged = Vec::new();
    let mut offset = 0;
    loop {
        let p = search::search_blocks(&app, "stratum", 3, offset).unwrap();
        paged.extend(p.results.iter().map(|h| h.block_id.clone()));
        match p.next_offset {
            Some(o) => offset = o,
            None => break,
        }
    }
    assert_eq!(paged.len(), all.total);
    // Query syntax is searched as words, never executed.
    for q in ["title:x", "*", "\"unbalanced", "a AND (b", "content:*"] {
        search::search_blocks(&app, q, 10, 0).unwrap();
    }

    let tagged = search::search_by_tag(&app, "#person", 100, 0).unwrap();
    let pages: std::collections::HashSet<&str> = tagged
        .results
        .iter()
        .map(|h| h.page_path.as_str())
        .collect();
    assert!(
        pages.contains("people/Ada Lovelace.md") && pages.contains("people/Sam Okafor.md"),
        "{pages:?}"
    );
    assert!(!pages.contains("projects/Stratum.md"));
    let notatag = search::search_by_tag(&app, "notatag", 100, 0).unwrap();
    assert_eq!(notatag.total, 0, "tags inside code blocks do not count");

    let ac = search::autocomplete(&app, "ada", search::CompleteKind::Page, 5).unwrap();
    assert_eq!(
        ac.items.first().map(|i| i.text.as_str()),
        Some("Ada Lovelace")
    );
    let ac = search::autocomplete(&app, "pers", search::CompleteKind::Tag, 5).unwrap();
    assert_eq!(ac.items.first().map(|i| i.text.as_str()), Some("person"));
    let ac = search::autocomplete(&app, "kubern", search::CompleteKind::Backlink, 5).unwrap();
    assert_eq!(
        ac.items
            .first()
            .map(|i| (i.text.as_str(), i.detail.as_str())),
        Some(("Kubernetes Migration", "unresolved"))
    );

    let whole = graph::get_graph_data(&app, None, 2).unwrap();
    assert_eq!(whole.node_count, 40);
    assert_eq!(whole.edge_count, whole.edges.len());
    let near = graph::get_graph_data(&app, Some(&vp(&app, "recipes/Crème brûlée.md")), 1).unwrap();
    let ids: std::collections::HashSet<&str> = near.nodes.iter().map(|n| n.id.as_str()).collect();
    assert!(
        ids.contains("recipes/Crème brûlée.md")
            && ids.contains("people/Ada Lovelace.md")
            && ids.contains("recipes/Pantry Staples.md"),
        "{ids:?}"
    );
    assert!(near.node_count < whole.node_count);
    assert!(
        near.edges
            .iter()
            .all(|e| ids.contains(e.source.as_str()) && ids.contains(e.target.as_str()))
    );
}

#[test]
fn a_recreated_index_is_filled_again_by_the_next_scan() {
    let (dir, app) = example_vault();
    let before = search::search_blocks(&app, "compaction", 50, 0)
        .unwrap()
        .total;
    assert!(before > 0);
    drop(app);
    // An index of another schema version (an older binary) is recreated empty on open.
    std::fs::write(
        dir.path().join(".pkm/search/pkm-schema-version"),
        "pkm-index/0\n",
    )
    .unwrap();
    let app = open(dir.path());
    assert_eq!(
        search::search_blocks(&app, "compaction", 50, 0)
            .unwrap()
            .total,
        before
    );
    assert!(app.index_fresh());
}

#[test]
fn the_graph_follows_every_write() {
    let (_dir, app) = empty_vault();
    let edges = |app: &App, from: Option<&str>| {
        let from = from.map(|f| vp(app, f));
        let g = graph::get_graph_data(app, from.as_ref(), 1).unwrap();
        let mut e: Vec<(String, String)> =
            g.edges.into_iter().map(|e| (e.source, e.target)).collect();
        e.sort();
        e
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    page::save_page(
        &app,
        &vp(&app, "a.md"),
        "- to [[b]] and [[B|again]]\n",
        None,
    )
    .unwrap();
    for p in ["b.md", "c.md", "d.md"] {
        page::save_page(&app, &vp(&app, p), "- nothing yet\n", None).unwrap();
    }
    assert_eq!(edges(&app, None), [pair("a.md", "b.md")]);
    // New links, no page created or renamed: the cached graph must not answer.
    page::save_page(&app, &vp(&app, "b.md"), "- now [[c]]\n", None).unwrap();
    assert_eq!(
        edges(&app, None),
        [pair("a.md", "b.md"), pair("b.md", "c.md")]
    );
    page::save_page(&app, &vp(&app, "c.md"), "- back to [[a]]\n", None).unwrap();
    page::save_page(&app, &vp(&app, "d.md"), "- far from [[a]]\n", None).unwrap();
    // One hop from b: a and c, and only the edges between kept pages.
    assert_eq!(
        edges(&app, Some("b.md")),
        [
            pair("a.md", "b.md"),
            pair("b.md", "c.md"),
            pair("c.md", "a.md")
        ]
    );
    page::delete_page(&app, &vp(&app, "c.md"), None).unwrap();
    assert_eq!(
        edges(&app, None),
        [pair("a.md", "b.md"), pair("d.md", "a.md")]
    );
}

#[test]
fn tags_are_added_and_removed_with_minimal_edits() {
    let (dir, app) = empty_vault();
    let p = vp(&app, "t.md");
    let text = "---\ntitle: T\ntags: [a]\n---\nBody #b and `#code`\n";
    page::save_page(&app, &p, text, None).unwrap();
    let r = page::add_tag(&app, &p, "new").unwrap();
    assert_eq!((r.applied, r.action, r.success), (1, "add", true));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.md")).unwrap(),
        "---\ntitle: T\ntags: [a, new]\n---\nBody #b and `#code`\n"
    );
    assert_eq!(
        page::add_tag(&app, &p, "b").unwrap().applied,
        0,
        "an inline #b already tags the note"
    );
    let r = page::remove_tag(&app, &p, "b").unwrap();
    assert_eq!(r.applied, 1);
    assert_eq!(page::remove_tag(&app, &p, "absent").unwrap().applied, 0);
    assert_eq!(search::search_by_tag(&app, "new", 10, 0).unwrap().total, 1);
    assert_eq!(
        page::add_tag(&app, &vp(&app, "missing.md"), "x")
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );
}

#[test]
fn delete_removes_file_store_and_index() {
    let (dir, app) = empty_vault();
    let p = vp(&app, "gone.md");
    page::save_page(&app, &p, "ephemeral marmot", None).unwrap();
    page::delete_page(&app, &p, None).unwrap();
    assert!(!dir.path().join("gone.md").exists());
    assert_eq!(
        search::search_blocks(&app, "marmot", 10, 0).unwrap().total,
        0
    );
    assert_eq!(
        page::open_page(&app, &p).unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        page::delete_page(&app, &p, None).unwrap_err().kind,
        ErrorKind::NotFound
    );
}

#[test]
fn deleting_the_last_note_of_a_folder_removes_the_emptied_folders_only() {
    let (dir, app) = empty_vault();
    for (path, text) in [
        ("a/b/c/last.md", "- deep"),
        ("a/keep.md", "- stays"),
        ("x/y/note.md", "- beside a hidden file"),
        ("top.md", "- at the root"),
        ("img/only.md", "- beside an image"),
    ] {
        page::save_page(&app, &vp(&app, path), text, None).unwrap();
    }
    std::fs::write(dir.path().join("x/y/.hidden"), "").unwrap();
    std::fs::write(dir.path().join("img/pic.png"), [0u8; 4]).unwrap();

    page::delete_page(&app, &vp(&app, "a/b/c/last.md"), None).unwrap();
    assert!(
        !dir.path().join("a/b").exists(),
        "a/b/c and a/b were emptied"
    );
    assert!(dir.path().join("a/keep.md").exists());
    page::delete_page(&app, &vp(&app, "a/keep.md"), None).unwrap();
    assert!(!dir.path().join("a").exists());

    page::delete_page(&app, &vp(&app, "x/y/note.md"), None).unwrap();
    assert!(
        dir.path().join("x/y/.hidden").exists(),
        "a hidden file keeps its folder"
    );
    page::delete_page(&app, &vp(&app, "img/only.md"), None).unwrap();
    assert!(dir.path().join("img/pic.png").exists());
    page::delete_page(&app, &vp(&app, "top.md"), None).unwrap();
    assert!(
        dir.path().join(".pkm").is_dir(),
        "the vault root and .pkm stay"
    );
    assert_eq!(vault::get_vault_info(&app).unwrap().page_count, 0);
}

#[test]
fn tag_search_finds_a_tagged_note_once_and_pages_honestly() {
    let (_dir, app) = empty_vault();
    let text =
        "---\ntags: [topic]\n---\n- first block\n- second block\n- third #topic again\n- fourth\n";
    page::save_page(&app, &vp(&app, "tagged.md"), text, None).unwrap();
    page::save_page(
        &app,
        &vp(&app, "inline.md"),
        "- plain\n- has #topic\n",
        None,
    )
    .unwrap();
    let found = search::search_by_tag(&app, "topic", 50, 0).unwrap();
    let got: Vec<(&str, &str)> = found
        .results
        .iter()
        .map(|h| (h.page_path.as_str(), h.content.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("inline.md", "has #topic"),
            ("tagged.md", "first block"),
            ("tagged.md", "third #topic again")
        ]
    );
    assert_eq!((found.total, found.next_offset), (3, None));

    for i in 0..51 {
        let text = format!("---\ntags: many\n---\n- note {i}\n- more\n");
        page::save_page(&app, &vp(&app, &format!("many/n{i:02}.md")), &text, None).unwrap();
    }
    let first = search::search_by_tag(&app, "many", 50, 0).unwrap();
    assert_eq!(
        (first.results.len(), first.total, first.next_offset),
        (50, 51, Some(50))
    );
    let rest = search::search_by_tag(&app, "many", 50, 50).unwrap();
    assert_eq!(
        (rest.results.len(), rest.total, rest.next_offset),
        (1, 51, None)
    );
    assert_eq!(rest.results[0].page_path, "many/n50.md");
}

#[test]
fn snippets_are_plain_text_as_in_the_note() {
    let (_dir, app) = empty_vault();
    let text = "- it's \"quoted\" a > b & c #quip\n";
    page::save_page(&app, &vp(&app, "q.md"), text, None).unwrap();
    let found = search::search_blocks(&app, "quoted", 10, 0).unwrap();
    assert_eq!(
        found.results[0].snippet,
        "it's \"<b>quoted</b>\" a > b & c #quip"
    );
    let tagged = search::search_by_tag(&app, "quip", 10, 0).unwrap();
    assert_eq!(tagged.results[0].snippet, "it's \"quoted\" a > b & c #quip");
}

#[test]
fn note_like_files_in_other_formats_are_counted_as_skipped() {
    let (dir, app) = empty_vault();
    std::fs::create_dir(dir.path().join("pages")).unwrap();
    std::fs::write(dir.path().join("pages/journal.org"), "* TODO x").unwrap();
    std::fs::write(dir.path().join("Readme.markdown"), "# R").unwrap();
    std::fs::write(dir.path().join("pages/pic.png"), [0u8; 4]).unwrap();
    std::fs::write(dir.path().join("ok.md"), "- fine").unwrap();
    std::fs::write(dir.path().join(".hidden.org"), "* hidden").unwrap();
    let report = scan::scan(&app, ScanMode::Incremental).unwrap();
    let mut skipped = report.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            (
                "Readme.markdown".to_owned(),
                "only markdown files ending in .md are read as notes".to_owned()
            ),
            (
                "pages/journal.org".to_owned(),
                "org-mode files are not supported".to_owned()
            ),
        ]
    );
    assert_eq!((report.scanned, report.updated), (1, 1));
    // Counted on every scan, not only the first.
    let again = scan::scan(&app, ScanMode::Incremental).unwrap();
    assert_eq!(again.skipped.len(), 2, "{:?}", again.skipped);
}

#[test]
fn incremental_scan_picks_up_external_edits_and_deletions() {
    let (dir, app) = empty_vault();
    std::fs::write(dir.path().join("ext.md"), "external aardvark").unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/hidden.md"), "hidden aardvark").unwrap();
    std::fs::write(dir.path().join("bad.md"), [0xff, 0xfe, 0x00]).unwrap();
    let report = scan::scan(&app, ScanMode::Incremental).unwrap();
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert_eq!(
        search::search_blocks(&app, "aardvark", 10, 0)
            .unwrap()
            .total,
        1
    );
    std::fs::remove_file(dir.path().join("ext.md")).unwrap();
    let report = scan::scan(&app, ScanMode::Incremental).unwrap();
    assert_eq!(report.removed, 1);
    assert_eq!(
        search::search_blocks(&app, "aardvark", 10, 0)
            .unwrap()
            .total,
        0
    );
    let status = search::index_status(&app).unwrap();
    assert!(status.index_fresh);
    assert_eq!(status.total_pages, status.indexed_pages);
}

#[test]
fn block_ids_survive_unrelated_edits() {
    let (_dir, app) = empty_vault();
    let p = vp(&app, "ids.md");
    page::save_page(&app, &p, "- alpha unicorn\n- beta\n", None).unwrap();
    let id = search::search_blocks(&app, "unicorn", 1, 0)
        .unwrap()
        .results[0]
        .block_id
        .clone();
    page::save_page(
        &app,
        &p,
        "- new first\n- alpha unicorn\n- beta changed\n",
        None,
    )
    .unwrap();
    assert_eq!(
        search::search_blocks(&app, "unicorn", 1, 0)
            .unwrap()
            .results[0]
            .block_id,
        id
    );
    scan::scan(&app, ScanMode::Rebuild).unwrap();
    assert_eq!(
        search::search_blocks(&app, "unicorn", 1, 0)
            .unwrap()
            .results[0]
            .block_id,
        id,
        "a rebuild keeps ids"
    );
}

#[test]
fn sixteen_writers_and_sixteen_readers() {
    let (_dir, app) = empty_vault();
    std::thread::scope(|s| {
        for w in 0..16 {
            let app = &app;
            s.spawn(move || {
                for i in 0..10 {
                    let p = VaultPath::parse(app.vault(), &format!("w{w}/n{i}.md")).unwrap();
                    page::save_page(app, &p, &format!("- writer{w} note{i} quokka"), None).unwrap();
                }
            });
        }
        for _ in 0..16 {
            let app = &app;
            s.spawn(move || {
                for _ in 0..20 {
                    search::search_blocks(app, "quokka", 20, 0).unwrap();
                    page::list_pages(app, 50, None).unwrap();
                    vault::get_vault_info(app).unwrap();
                }
            });
        }
    });
    assert_eq!(
        search::search_blocks(&app, "quokka", 10, 0).unwrap().total,
        160
    );
    assert_eq!(vault::get_vault_info(&app).unwrap().page_count, 160);
    for w in 0..16 {
        // Every note of the writer is found by its word (notes of other writers, close in
        // meaning, may follow them: ADR-0015).
        let word = format!("writer{w} ");
        let found = search::search_blocks(&app, word.trim(), 200, 0).unwrap();
        let holding: Vec<_> = found
            .results
            .iter()
            .filter(|h| h.content.contains(&word))
            .collect();
        assert_eq!(holding.len(), 10);
        assert!(
            found.results[..10]
                .iter()
                .all(|h| h.content.contains(&word)),
            "the notes holding the word come first"
        );
    }
}
