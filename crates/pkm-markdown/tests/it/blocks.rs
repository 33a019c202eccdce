//! The outliner model, one `check_blocks` per rule.

use expect_test::expect;
use pkm_markdown::block_parser::{BlockKind, Marker, ParsedPage, Priority, parse_page};
use pkm_markdown::serialize::serialize;

use crate::check_blocks;

#[test]
fn list_items_nest_by_indentation() {
    check_blocks(
        "- a\n  - b\n    - c\n  - d\n- e\n",
        expect![[r#"
            - a
              - b
                - c
              - d
            - e
        "#]],
    );
}

#[test]
fn logseq_tabs_nest() {
    check_blocks(
        "- a\n\t- b\n\t  continued\n\t\t- c\n\t- d\n",
        expect![[r#"
            - a
              - b⏎continued
                - c
              - d
        "#]],
    );
}

#[test]
fn all_bullet_styles_are_items() {
    check_blocks(
        "* star\n+ plus\n1. one\n2) two\n   - under two\n",
        expect![[r#"
        - star
        - plus
        - one
        - two
          - under two
    "#]],
    );
}

#[test]
fn markers_and_priorities() {
    check_blocks(
        "- TODO [#A] write\n- DOING b\n- DONE c\n- WAITING d\n- CANCELLED e\n- LATER f\n- NOW g\n- [#C] no marker\n- TODOS are not markers\n- TODO\n- todo lowercase\n",
        expect![[r#"
            - [TODO] [#A] write
            - [DOING] b
            - [DONE] c
            - [WAITING] d
            - [CANCELLED] e
            - [TODO] f
            - [DOING] g
            - [#C] no marker
            - TODOS are not markers
            - [TODO]
            - todo lowercase
        "#]],
    );
}

#[test]
fn properties_id_and_collapsed() {
    let text = "- block\n  id:: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22\n  collapsed:: true\n  type:: book\n  - child\n- other\n  id:: not-a-uuid\n";
    check_blocks(
        text,
        expect![[r#"
        - block  {id: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22, collapsed: true, type: book}
          - child
        - other  {id: not-a-uuid}
    "#]],
    );
    let page = parse_page(text, "p");
    assert_eq!(
        page.blocks[0].id.as_deref(),
        Some("9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22")
    );
    assert!(page.blocks[0].collapsed);
    assert_eq!(page.blocks[1].id, None);
    assert!(!page.blocks[1].collapsed);
}

#[test]
fn property_lines_only_directly_under_the_bullet() {
    check_blocks(
        "- text\n  more\n  key:: value\n- a\n\n  k:: v\n",
        expect![[r#"
        - text⏎more⏎key:: value
        - a⏎⏎k:: v
    "#]],
    );
}

#[test]
fn headings_own_their_sections() {
    check_blocks(
        "# One\nintro\n## Two\n- item\n  - sub\n### Three\npara\n## Four\n# Five\n- x\n",
        expect![[r#"
            # [H1] One
              ¶ intro
              # [H2] Two
                - item
                  - sub
                # [H3] Three
                  ¶ para
              # [H2] Four
            # [H1] Five
              - x
        "#]],
    );
}

#[test]
fn heading_text_drops_hashes_and_closing_sequence() {
    check_blocks(
        "## Title ##\n#### C# #\n#tag is not a heading\n",
        expect![[r#"
        # [H2] Title
          # [H4] C#
            ¶ #tag is not a heading
    "#]],
    );
}

#[test]
fn setext_headings() {
    check_blocks(
        "Title\n=====\ntext\n\nSub\n---\n- a\n",
        expect![[r#"
        # [H1] Title
          ¶ text
          # [H2] Sub
            - a
    "#]],
    );
}

#[test]
fn leaf_blocks_outside_lists() {
    check_blocks(
        "para one\nstill one\n\n> quote\n> more\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n\n- not an item\n```\n\n    indented code\n\n    more code\n\n---\n\nlast\n",
        expect![[r#"
            ¶ para one⏎still one
            > > quote⏎> more
            | | a | b |⏎|---|---|⏎| 1 | 2 |
            ``` ```rust⏎fn main() {}⏎⏎- not an item⏎```
            ```     indented code⏎⏎    more code
            ¶ last
        "#]],
    );
}

#[test]
fn code_fence_inside_an_item() {
    check_blocks(
        "- ```js\n  - not a child\n  # not a heading\n  ```\n- before\n  ```\n  code\n\n  more\n  ```\n  after\n",
        expect![[r#"
            - ```js⏎- not a child⏎# not a heading⏎```
            - before⏎```⏎code⏎⏎more⏎```⏎after
        "#]],
    );
}

#[test]
fn continuation_lazy_lines_and_blank_lines() {
    check_blocks(
        "- first\n  second\nlazy third\n\n  new paragraph\n- next\n\nafter list\n",
        expect![[r#"
            - first⏎second⏎lazy third⏎⏎new paragraph
            - next
            ¶ after list
        "#]],
    );
}

#[test]
fn list_item_headings_logseq_style() {
    check_blocks(
        "- ## Heading block\n  - child\n- # TODO [#B] both\n",
        expect![[r#"
        - [H2] Heading block
          - child
        - [H1] [TODO] [#B] both
    "#]],
    );
}

#[test]
fn nested_bullets_on_one_line() {
    check_blocks(
        "- - - deep\n",
        expect![[r#"
        -
          -
            - deep
    "#]],
    );
}

#[test]
fn paragraph_properties_are_page_properties() {
    let text = "title:: Real Title\nalias:: One, [[Two Words]]\ntags:: alpha, [[beta gamma]]\n\n- first #inline\n";
    check_blocks(
        text,
        expect![[r#"
        ¶  {title: Real Title, alias: One, [[Two Words]], tags: alpha, [[beta gamma]]}
        - first #inline
    "#]],
    );
    let page = parse_page(text, "stem");
    assert_eq!(page.title, "Real Title");
    assert_eq!(page.aliases, vec!["One", "Two Words"]);
    assert_eq!(page.tags, vec!["alpha", "beta gamma", "inline"]);
}

#[test]
fn ranges_cover_own_lines_only() {
    let text = "# H\n- a\n  more a\n  k:: v\n  - child\n- b\n\npara\nline 2\n";
    let page = parse_page(text, "p");
    let h = &page.blocks[0];
    assert_eq!(&text[h.range.clone()], "# H");
    let a = &h.children[0];
    assert_eq!(&text[a.range.clone()], "- a\n  more a\n  k:: v");
    assert_eq!(&text[a.children[0].range.clone()], "  - child");
    assert_eq!(&text[h.children[1].range.clone()], "- b");
    assert_eq!(&text[h.children[2].range.clone()], "para\nline 2");
    assert_eq!(h.children[2].kind, BlockKind::Paragraph);
}

#[test]
fn ranges_are_offsets_into_the_original_text_with_frontmatter() {
    let text = "---\ntitle: T\n---\n- a\r\n- b\r\n";
    let page = parse_page(text, "p");
    assert_eq!(page.body_start, 17);
    assert_eq!(&text[page.blocks[0].range.clone()], "- a");
    assert_eq!(&text[page.blocks[1].range.clone()], "- b");
    assert_eq!(page.blocks[1].content, "b");
}

#[test]
fn title_sources_in_order() {
    assert_eq!(
        parse_page("---\ntitle: From FM\n---\n# H1\n", "s").title,
        "From FM"
    );
    assert_eq!(
        parse_page("title:: From prop\n\n# H1\n", "s").title,
        "From prop"
    );
    assert_eq!(
        parse_page("## H2\n# First H1\n# Second\n", "s").title,
        "First H1"
    );
    assert_eq!(parse_page("just text\n", "file-stem").title, "file-stem");
    assert_eq!(parse_page("---\ntitle: 42\n---\n", "s").title, "s");
}

#[test]
fn frontmatter_aliases_and_tags() {
    let page = parse_page(
        "---\naliases: [A1, \"A 2\"]\nalias: a1\ntags: [\"#Proj\", research]\ntag: extra, more\n---\nText #proj #New and #[[Multi Word]].\n",
        "s",
    );
    assert_eq!(page.aliases, vec!["A1", "A 2"]);
    assert_eq!(
        page.tags,
        vec!["Proj", "research", "extra", "more", "New", "Multi Word"]
    );
    let page = parse_page("---\ntags: one two,three\n---\n", "s");
    assert_eq!(page.tags, vec!["one", "two", "three"]);
}

#[test]
fn refused_frontmatter_keeps_the_body() {
    let page = parse_page("---\na: [unclosed\n---\n- still parsed\n", "s");
    assert!(page.frontmatter.is_none());
    assert!(
        page.frontmatter_error
            .as_deref()
            .is_some_and(|e| e.contains("invalid YAML"))
    );
    assert_eq!(page.blocks.len(), 1);
    assert_eq!(page.blocks[0].content, "still parsed");
    assert_eq!(page.frontmatter_yaml.as_deref(), Some("a: [unclosed\n"));
}

#[test]
fn marker_and_priority_values() {
    let page = parse_page("- DOING [#B] x\n", "s");
    assert_eq!(page.blocks[0].marker, Some(Marker::Doing));
    assert_eq!(page.blocks[0].priority, Some(Priority::B));
    assert_eq!(Marker::Cancelled.as_str(), "CANCELLED");
    assert_eq!(Priority::C.as_str(), "C");
}

#[test]
fn serialize_writes_canonical_outliner_form() {
    let text = "---\ntitle: T\n---\n# Head\npara line\nsecond line\n\n- TODO [#A] task\n  note:: x\n  * child\n";
    let page = parse_page(text, "s");
    expect![[r#"
        ---
        title: T
        ---
        - # Head
          - para line
            second line
          - TODO [#A] task
            note:: x
            - child
    "#]]
    .assert_eq(&serialize(&page));
}

#[test]
fn serialize_adds_id_and_collapsed_fields_not_in_properties() {
    let mut page = parse_page("- a\n", "s");
    page.blocks[0].id = Some("9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22".into());
    page.blocks[0].collapsed = true;
    assert_eq!(
        serialize(&page),
        "- a\n  id:: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22\n  collapsed:: true\n"
    );
    assert_eq!(serialize(&ParsedPage::default()), "");
}

#[test]
fn canonical_round_trips() {
    for text in [
        "- a\n  - b\n    - c\n- d\n",
        "---\ntitle: x\n---\n- a\n",
        "---\n---\n- a\n",
        "---\r\nk: v\r\n---\r\n- a\n",
        "- TODO [#A] a\n  id:: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22\n  second line\n\n  after blank\n  - child\n",
        "- ## H\n  - x\n-\n- DONE\n  k::\n",
        "- ```\n  - code\n  ```\n",
    ] {
        assert_eq!(serialize(&parse_page(text, "s")), text);
    }
}
