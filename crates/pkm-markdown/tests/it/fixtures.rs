//! Real-world-shaped notes (Obsidian, Logseq, Foam, plain CommonMark) and their expected page
//! model, kept next to them as `tests/fixtures/<name>.expected`. Refresh with `UPDATE_EXPECT=1`.

use expect_test::{ExpectFile, expect_file};
use pkm_markdown::block_parser::parse_page;
use pkm_markdown::linker::{LinkKind, extract_links};
use pkm_markdown::serialize::{outline, serialize};

fn check(name: &str, expect: ExpectFile) {
    let path = format!("{}/tests/fixtures/{name}.md", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let page = parse_page(&text, name);
    let mut out = format!(
        "title: {}\naliases: {:?}\ntags: {:?}\n",
        page.title, page.aliases, page.tags
    );
    match (&page.frontmatter, &page.frontmatter_error) {
        (Some(fm), _) => out.push_str(&format!("frontmatter: {fm}\n")),
        (None, Some(e)) => out.push_str(&format!("frontmatter error: {e}\n")),
        (None, None) => {}
    }
    out.push_str("links:\n");
    for l in extract_links(&text) {
        let kind = match l.kind {
            LinkKind::Wiki => "wiki",
            LinkKind::Embed => "embed",
            LinkKind::Markdown => "md",
            LinkKind::BlockRef => "blockref",
        };
        out.push_str(&format!(
            "  {kind} {:?} alias={:?} heading={:?} block={:?}\n",
            l.target, l.alias, l.heading, l.block_ref
        ));
    }
    out.push_str("blocks:\n");
    out.push_str(&outline(&page.blocks));
    // Every block's range starts a line of the original text or a bullet in it.
    let mut stack: Vec<_> = page.blocks.iter().collect();
    while let Some(b) = stack.pop() {
        assert!(
            b.range.start <= b.range.end && b.range.end <= text.len(),
            "{name}: bad range {:?}",
            b.range
        );
        stack.extend(&b.children);
    }
    // The canonical form is a fixed point: writing it out and reading it back changes nothing.
    let canonical = serialize(&page);
    assert_eq!(
        serialize(&parse_page(&canonical, name)),
        canonical,
        "{name}: canonical form is not stable"
    );
    expect.assert_eq(&out);
}

#[test]
fn obsidian_project() {
    check(
        "obsidian-project",
        expect_file!["../fixtures/obsidian-project.expected"],
    );
}

#[test]
fn obsidian_daily() {
    check(
        "obsidian-daily",
        expect_file!["../fixtures/obsidian-daily.expected"],
    );
}

#[test]
fn logseq_page() {
    check(
        "logseq-page",
        expect_file!["../fixtures/logseq-page.expected"],
    );
}

#[test]
fn logseq_journal() {
    check(
        "logseq-journal",
        expect_file!["../fixtures/logseq-journal.expected"],
    );
}

#[test]
fn foam_note() {
    check("foam-note", expect_file!["../fixtures/foam-note.expected"]);
}

#[test]
fn zettel() {
    check("zettel", expect_file!["../fixtures/zettel.expected"]);
}
