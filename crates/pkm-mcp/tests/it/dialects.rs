//! Real vaults as their apps show them, through the real binary: a Logseq graph (namespaces in
//! both file-name formats, journals, `title::`/`alias::`/`tags::`/`id::`, block references,
//! tab-indented outlines, org blocks, the `logseq/` folder) and an Obsidian vault with the same
//! file name in several folders (resolution per linking note, aliases after file names,
//! `%%comments%%`, titles from file names). The fixtures under `tests/fixtures/vaults/` are
//! written for these tests in each app's dialect.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common;
use common::stdio::Server;

fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vaults")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    common::copy_dir(&src, &vault);
    (dir, vault)
}

fn resolved(s: &mut Server, target: &str) -> Option<String> {
    s.ok("kb_resolve_link", json!({ "target": target }))["resolved"]["path"]
        .as_str()
        .map(str::to_owned)
}

fn linked_from(s: &mut Server, path: &str) -> Vec<String> {
    let r = s.ok(
        "kb_backlinks",
        json!({"path": path, "include_unlinked": false}),
    );
    let mut out: Vec<String> = r["backlinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["source_page"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn tagged(s: &mut Server, tag: &str) -> Vec<String> {
    let r = s.ok("kb_search_by_tag", json!({ "tag": tag }));
    let mut out: Vec<String> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["page_path"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn page(s: &mut Server, path: &str) -> Value {
    s.ok("kb_get_page", json!({ "path": path }))
}

fn titles(s: &mut Server) -> Vec<(String, String)> {
    let r = s.ok("kb_list_pages", json!({"limit": 1000}));
    let mut out: Vec<(String, String)> = r["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["title"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_logseq_graph_reads_as_logseq_shows_it() {
    let (_dir, vault) = fixture("logseq-graph");
    let mut s = Server::start(&vault);

    // Page names from file names (both namespace formats), journals named by date, no title
    // from a heading; Logseq's own folder (backups) holds no pages.
    let want = [
        ("journals/2026_12_03.md", "Dec 3rd, 2026"),
        ("pages/Gardening%2FPeppers.md", "Gardening/Peppers"),
        ("pages/Gardening.md", "Gardening"),
        ("pages/Gardening___Tomatoes.md", "Gardening/Tomatoes"),
        ("pages/Season Plan.md", "Season Plan"),
        ("pages/compost.md", "compost"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect();
    assert_eq!(titles(&mut s), want);

    // Links resolve by page name, alias and block reference, pasted as written or bare.
    let tomatoes = Some("pages/Gardening___Tomatoes.md".to_owned());
    for target in [
        "Gardening/Tomatoes",
        "[[gardening/tomatoes]]",
        "((6a1f0c2e-4b3d-4e5f-9a8b-7c6d5e4f3a21))",
        "Gardening___Tomatoes",
    ] {
        assert_eq!(resolved(&mut s, target), tomatoes, "{target}");
    }
    assert_eq!(
        resolved(&mut s, "Gardening/Peppers").as_deref(),
        Some("pages/Gardening%2FPeppers.md")
    );
    assert_eq!(
        resolved(&mut s, "[[Dec 3rd, 2026]]").as_deref(),
        Some("journals/2026_12_03.md")
    );
    for alias in ["Allotment", "#[[Veg Plot]]"] {
        assert_eq!(
            resolved(&mut s, alias).as_deref(),
            Some("pages/Gardening.md"),
            "{alias}"
        );
    }
    assert_eq!(resolved(&mut s, "Not A Link"), None);

    // Backlinks: links in tab-indented outlines under headings, block references, `#tag` and
    // `#[[tag]]` references, aliases, and `tags::` values; none from an org example block.
    assert_eq!(
        linked_from(&mut s, "pages/Gardening___Tomatoes.md"),
        strings(&["pages/Season Plan.md"])
    );
    assert_eq!(
        linked_from(&mut s, "pages/Gardening%2FPeppers.md"),
        strings(&["pages/Season Plan.md"])
    );
    assert_eq!(
        linked_from(&mut s, "pages/Gardening.md"),
        strings(&[
            "journals/2026_12_03.md",
            "pages/Gardening___Tomatoes.md",
            "pages/Season Plan.md"
        ])
    );
    assert_eq!(
        linked_from(&mut s, "pages/compost.md"),
        strings(&["pages/Season Plan.md"])
    );
    assert_eq!(
        linked_from(&mut s, "journals/2026_12_03.md"),
        strings(&["pages/compost.md"])
    );
    let plan = page(&mut s, "pages/Season Plan.md");
    let targets: Vec<&str> = plan["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["target"].as_str().unwrap())
        .collect();
    assert!(!targets.contains(&"Not A Link"), "{targets:?}");

    // `tags::` tags are found by tag search, like inline ones, and match kb_get_page.
    assert_eq!(tagged(&mut s, "hobby"), strings(&["pages/Gardening.md"]));
    assert_eq!(tagged(&mut s, "outdoors"), strings(&["pages/Gardening.md"]));
    assert_eq!(
        tagged(&mut s, "compost"),
        strings(&["pages/Season Plan.md", "pages/compost.md"])
    );
    let tags = page(&mut s, "pages/Gardening.md")["tags"].clone();
    assert_eq!(tags, json!(["hobby", "Outdoors"]));
}

#[test]
fn obsidian_duplicate_names_resolve_per_linking_note() {
    let (_dir, vault) = fixture("obsidian-duplicates");
    let mut s = Server::start(&vault);

    // Obsidian shows the file name, whatever the note's heading or frontmatter says.
    let t = titles(&mut s);
    assert!(
        t.contains(&("en/Plugins/Canvas.md".into(), "Canvas".into())),
        "{t:?}"
    );
    assert!(t.contains(&("fr/Toile.md".into(), "Toile".into())), "{t:?}");

    // `[[Canvas]]` names the Canvas nearest the linking note: same folder, then the most
    // folders shared, then the shortest path.
    assert_eq!(
        linked_from(&mut s, "en/Plugins/Canvas.md"),
        strings(&["en/Guides/Getting started.md", "en/Plugins/Core plugins.md"])
    );
    assert_eq!(
        linked_from(&mut s, "da/Plugin/Canvas.md"),
        strings(&["da/Plugin/Kerne.md", "fr/Toile.md"])
    );
    // An alias does not take a link from the file of that name.
    assert_eq!(linked_from(&mut s, "Board.md"), strings(&["fr/Toile.md"]));
    assert_eq!(resolved(&mut s, "Board").as_deref(), Some("Board.md"));

    // Links pasted as written, partial paths and percent-encoded targets.
    for target in [
        "[[Plugins/Canvas|plugin page]]",
        "![[en/Plugins/Canvas#Heading]]",
        "Plugins/Canvas",
        "[x](../Plugins/Canvas.md)",
        "../Plugins/Canvas.md",
        "en/Plugins/Canvas.md",
    ] {
        assert_eq!(
            resolved(&mut s, target).as_deref(),
            Some("en/Plugins/Canvas.md"),
            "{target}"
        );
    }
    assert_eq!(
        resolved(&mut s, "Core%20plugins").as_deref(),
        Some("en/Plugins/Core plugins.md")
    );

    // Nothing in a %%comment%% is a link.
    let guide = page(&mut s, "en/Guides/Getting started.md");
    let targets: Vec<&str> = guide["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, vec!["Canvas"]);
}
