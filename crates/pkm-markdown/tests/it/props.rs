//! Properties: parse → serialize is the identity on canonical outliner files, and link
//! extraction never reports a link inside code.

use std::ops::Range;

use pkm_markdown::block_parser::{Block, Marker, ParsedPage, Priority, parse_page};
use pkm_markdown::linker::extract_links;
use pkm_markdown::serialize::{outline, serialize};
use pkm_markdown::tags::extract_inline_tags;
use proptest::prelude::*;
use pulldown_cmark::{Event, Options, Parser, Tag};

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z]{1,8}",
        1 => "[A-Z][a-z]{0,5}",
        1 => Just("[[Some Page]]".to_owned()),
        1 => Just("#tag".to_owned()),
        1 => Just("`code`".to_owned()),
        1 => Just("(x-y)".to_owned()),
        1 => Just("über".to_owned()),
    ]
}

fn text_line() -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..6).prop_map(|w| w.join(" "))
}

/// Content: no lines, or a non-empty first line followed by lines that may be blank (never
/// trailing blanks: a canonical file has none).
fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        4 => (text_line(), prop::collection::vec(prop_oneof![4 => text_line(), 1 => Just(String::new())], 0..3), text_line())
            .prop_map(|(first, mid, last)| {
                let mut lines = vec![first];
                if !mid.is_empty() {
                    lines.extend(mid);
                    lines.push(last);
                }
                lines.join("\n")
            }),
    ]
}

fn uuid() -> impl Strategy<Value = String> {
    "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
}

fn property() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        3 => ("[a-z][a-z0-9_-]{0,6}", prop_oneof![3 => text_line(), 1 => Just(String::new())])
            .prop_filter("id and collapsed are generated on their own", |(k, _)| k != "id" && k != "collapsed"),
        1 => uuid().prop_map(|u| ("id".to_owned(), u)),
        1 => prop_oneof![Just("true"), Just("false")].prop_map(|v| ("collapsed".to_owned(), v.to_owned())),
    ]
}

fn marker() -> impl Strategy<Value = Option<Marker>> {
    prop_oneof![
        3 => Just(None),
        1 => prop_oneof![
            Just(Marker::Todo), Just(Marker::Doing), Just(Marker::Done), Just(Marker::Waiting), Just(Marker::Cancelled)
        ].prop_map(Some),
    ]
}

fn priority() -> impl Strategy<Value = Option<Priority>> {
    prop_oneof![3 => Just(None), 1 => prop_oneof![Just(Priority::A), Just(Priority::B), Just(Priority::C)].prop_map(Some)]
}

fn heading() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![5 => Just(None), 1 => (1u8..=6).prop_map(Some)]
}

/// A block as `parse_page` would produce it from canonical text (ranges aside).
fn block() -> impl Strategy<Value = Block> {
    let leaf = (
        content(),
        marker(),
        priority(),
        heading(),
        prop::collection::vec(property(), 0..3),
    )
        .prop_map(|(content, marker, priority, heading_level, properties)| {
            let id = properties
                .iter()
                .find(|(k, _)| k == "id")
                .map(|(_, v)| v.clone());
            let collapsed = properties
                .iter()
                .any(|(k, v)| k == "collapsed" && v == "true");
            Block {
                content,
                marker,
                priority,
                heading_level,
                properties,
                id,
                collapsed,
                ..Block::default()
            }
        });
    leaf.prop_recursive(4, 48, 4, |inner| {
        (inner.clone(), prop::collection::vec(inner, 0..4)).prop_map(|(mut b, children)| {
            b.children = children;
            b
        })
    })
}

fn page() -> impl Strategy<Value = ParsedPage> {
    (
        prop::collection::vec(block(), 0..5),
        prop_oneof![2 => Just(None), 1 => Just(Some("title: Generated\ntags: [a, b]\n".to_owned()))],
    )
        .prop_map(|(blocks, frontmatter_yaml)| ParsedPage { blocks, frontmatter_yaml, ..ParsedPage::default() })
}

/// The parts of `text` pulldown-cmark sees as code.
fn code_ranges(text: &str) -> Vec<Range<usize>> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
        .into_offset_iter()
        .filter(|(e, _)| matches!(e, Event::Code(_) | Event::Start(Tag::CodeBlock(_))))
        .map(|(_, r)| r)
        .collect()
}

#[derive(Debug, Clone)]
enum Piece {
    Words(String),
    Link(u8),
    CodeSpan(u8),
    Fence(u8),
    Indented(u8),
    Tag(u8),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => text_line().prop_map(Piece::Words),
        2 => any::<u8>().prop_map(Piece::Link),
        2 => any::<u8>().prop_map(Piece::CodeSpan),
        1 => any::<u8>().prop_map(Piece::Fence),
        1 => any::<u8>().prop_map(Piece::Indented),
        1 => any::<u8>().prop_map(Piece::Tag),
    ]
}

fn render(pieces: &[Piece]) -> String {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Words(w) => s.push_str(w),
            Piece::Link(n) => s.push_str(&format!("[[Out {n}]] ![[Out {n}.png]] [md](out{n}.md)")),
            Piece::CodeSpan(n) => s.push_str(&format!("`[[In {n}]] #incode [x](in{n}.md)`")),
            Piece::Fence(n) => s.push_str(&format!("\n\n```\n[[In {n}]] #incode\n```\n\n")),
            Piece::Indented(n) => s.push_str(&format!("\n\n    [[In {n}]] #incode\n\n")),
            Piece::Tag(n) => s.push_str(&format!("#out{n}")),
        }
        s.push(' ');
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn canonical_pages_round_trip(page in page()) {
        let text = serialize(&page);
        let parsed = parse_page(&text, "generated");
        prop_assert_eq!(serialize(&parsed), text.as_str());
        prop_assert_eq!(outline(&parsed.blocks), outline(&page.blocks));
    }

    #[test]
    fn no_link_or_tag_is_reported_from_code(pieces in prop::collection::vec(piece(), 0..24)) {
        let text = render(&pieces);
        let code = code_ranges(&text);
        let inside = |pos: usize| code.iter().any(|r| r.contains(&pos));
        let links = extract_links(&text);
        for l in &links {
            prop_assert!(!inside(l.position), "link {:?} inside code in {:?}", l, text);
            prop_assert!(!l.target.starts_with("In ") && !l.target.starts_with("in"), "{:?}", l);
        }
        let tags = extract_inline_tags(&text);
        for (t, pos) in &tags {
            prop_assert!(!inside(*pos) && t != "incode", "tag {} at {} in {:?}", t, pos, text);
        }
        // Everything outside code is found.
        let in_words = |needle: &str| -> usize {
            pieces.iter().map(|p| match p { Piece::Words(w) => w.matches(needle).count(), _ => 0 }).sum()
        };
        let outside = pieces.iter().filter(|p| matches!(p, Piece::Link(_))).count();
        prop_assert_eq!(links.len(), 3 * outside + in_words("[[Some Page]]"));
        let tagged = pieces.iter().filter(|p| matches!(p, Piece::Tag(_))).count();
        prop_assert_eq!(tags.len(), tagged + in_words("#tag"));
    }
}

/// Text made of the characters and fragments markdown, YAML and the outliner care about.
fn markdownish() -> impl Strategy<Value = String> {
    let frag = prop_oneof![
        Just("- "),
        Just("  "),
        Just("\t"),
        Just("\n"),
        Just("\r\n"),
        Just("---\n"),
        Just("#"),
        Just("# "),
        Just("[["),
        Just("]]"),
        Just("!["),
        Just("]("),
        Just(")"),
        Just("`"),
        Just("```\n"),
        Just("~~~"),
        Just(":: "),
        Just("id"),
        Just("TODO "),
        Just("[#A] "),
        Just("> "),
        Just("| "),
        Just("1. "),
        Just("<!--"),
        Just("-->"),
        Just("tags: "),
        Just("[a, "),
        Just("proj"),
        Just("é"),
        Just("🙂"),
        Just("\\"),
        Just("%2"),
        Just(".md"),
        Just("^"),
        Just("|"),
        Just("&"),
        Just("*"),
        Just("'"),
        Just("\""),
        Just("x"),
        Just(" "),
    ];
    prop::collection::vec(frag, 0..64).prop_map(|v| v.concat())
}

fn on_boundary(text: &str, r: &Range<usize>) -> bool {
    r.start <= r.end && text.is_char_boundary(r.start) && text.is_char_boundary(r.end)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn any_text_parses_within_bounds(text in markdownish()) {
        let page = parse_page(&text, "s");
        let mut stack: Vec<&Block> = page.blocks.iter().collect();
        while let Some(b) = stack.pop() {
            prop_assert!(on_boundary(&text, &b.range), "{:?} in {:?}", b.range, text);
            stack.extend(&b.children);
        }
        // Arbitrary text need not survive the outliner form (a paragraph line `2. x` becomes an
        // item there); writing and re-reading it must still work.
        let canonical = serialize(&page);
        let _ = parse_page(&canonical, "s");
        for l in extract_links(&text) {
            prop_assert!(text.is_char_boundary(l.position));
        }
        for (_, pos) in extract_inline_tags(&text) {
            prop_assert!(text.is_char_boundary(pos));
        }
    }

    /// A vault scan takes a note's links and inline tags in one pass, and its page from those
    /// tags: what it stores must be what the functions a tool calls on the note one by one give,
    /// in every dialect.
    #[test]
    fn one_pass_links_and_tags_are_the_separate_ones(text in markdownish()) {
        for dialect in [
            pkm_markdown::Dialect::default(),
            pkm_markdown::Dialect::of(pkm_markdown::Flavor::Obsidian),
            pkm_markdown::Dialect::logseq(""),
        ] {
            let (links, tags) = pkm_markdown::linker::links_and_tags_as(&text, &dialect);
            prop_assert_eq!(&links, &pkm_markdown::linker::extract_links_as(&text, &dialect));
            prop_assert_eq!(&tags, &pkm_markdown::tags::extract_inline_tags_as(&text, &dialect));
            prop_assert_eq!(
                pkm_markdown::block_parser::parse_page_with_tags(&text, "s", &dialect, &tags),
                pkm_markdown::block_parser::parse_page_as(&text, "s", &dialect)
            );
        }
    }

    #[test]
    fn tag_edits_do_what_they_say(text in markdownish()) {
        if let Ok(Some(out)) = pkm_markdown::tags::add_tag(&text, "proj") {
            prop_assert!(parse_page(&out, "s").tags.iter().any(|t| t == "proj"), "{:?} -> {:?}", text, out);
            prop_assert!(out.ends_with(text.get(text.len().saturating_sub(3)..).unwrap_or_default()));
        }
        if let Ok((out, n)) = pkm_markdown::tags::remove_tag(&text, "proj") {
            prop_assert!(!extract_inline_tags(&out).iter().any(|(t, _)| t.eq_ignore_ascii_case("proj")), "{:?} -> {:?}", text, out);
            if n == 0 {
                prop_assert_eq!(out, text);
            }
        }
    }
}

/// Shrunk failures of the properties above, kept as named cases.
mod regressions {
    use super::*;

    /// tag_edits_do_what_they_say: an ordered item whose text is a property holding a fence.
    #[test]
    fn tag_edits_on_an_ordered_item_holding_a_fence() {
        let text = "1. x:: ```\n^";
        if let Ok(Some(out)) = pkm_markdown::tags::add_tag(text, "proj") {
            assert!(
                parse_page(&out, "s").tags.iter().any(|t| t == "proj"),
                "{text:?} -> {out:?}"
            );
        }
        if let Ok((out, n)) = pkm_markdown::tags::remove_tag(text, "proj") {
            assert!(
                !extract_inline_tags(&out)
                    .iter()
                    .any(|(t, _)| t.eq_ignore_ascii_case("proj"))
            );
            if n == 0 {
                assert_eq!(out, text);
            }
        }
    }

    #[test]
    fn empty_bullet_with_only_children() {
        let text = "-\n  - child\n";
        assert_eq!(serialize(&parse_page(text, "s")), text);
    }

    /// Fuzz (markdown_roundtrip): a paragraph's lazy line indented like a deep bullet.
    #[test]
    fn paragraph_line_indented_four_past_content_stays_content() {
        let text = "| a\n|-b\n    - WAITING c\n- d\n";
        let first = parse_page(text, "s");
        assert_eq!(first.blocks[0].content, "| a\n|-b\n    - WAITING c");
        let again = parse_page(&serialize(&first), "s");
        assert_eq!(again.blocks[0].content, first.blocks[0].content);
        assert!(again.blocks[0].children.is_empty());
    }

    /// Fuzz (markdown_roundtrip): a lone `\r` is a line ending (CommonMark), not content that
    /// the serializer's `\r\n` would swallow.
    #[test]
    fn lone_carriage_returns_end_lines() {
        assert!(parse_page("\r\r", "s").blocks.is_empty());
        let page = parse_page("- a\r  - b\r- c", "s");
        assert_eq!(page.blocks.len(), 2);
        assert_eq!(page.blocks[0].children[0].content, "b");
        let again = parse_page(&serialize(&page), "s");
        assert_eq!(outline(&again.blocks), outline(&page.blocks));
    }
}
