//! Pathological input completes (no stack overflow, no quadratic blow-up) with sane output.
//! Speed is measured by `examples/parse_bench.rs`, not asserted here.

use pkm_markdown::block_parser::{Block, MAX_DEPTH, parse_page};
use pkm_markdown::linker::extract_links;
use pkm_markdown::serialize::serialize;
use pkm_markdown::tags::extract_inline_tags;

fn depth_and_count(blocks: &[Block]) -> (usize, usize) {
    let mut stack: Vec<(&Block, usize)> = blocks.iter().map(|b| (b, 1)).collect();
    let (mut max, mut n) = (0, 0);
    while let Some((b, d)) = stack.pop() {
        max = max.max(d);
        n += 1;
        stack.extend(b.children.iter().map(|c| (c, d + 1)));
    }
    (max, n)
}

fn all_of(text: &str) -> (Vec<Block>, usize, usize) {
    let page = parse_page(text, "big");
    let links = extract_links(text).len();
    let tags = extract_inline_tags(text).len();
    let _ = serialize(&page);
    (page.blocks, links, tags)
}

#[test]
fn list_nested_100k_deep_on_one_line() {
    let text = format!("{}[[deep]] #deep\n", "- ".repeat(100_000));
    let (blocks, links, tags) = all_of(&text);
    let (depth, count) = depth_and_count(&blocks);
    assert_eq!(depth, MAX_DEPTH);
    assert_eq!(count, MAX_DEPTH);
    assert_eq!((links, tags), (1, 1));
}

#[test]
fn list_nested_by_indentation_beyond_the_cap() {
    // 2,000 levels of 2-space indentation (4 MB would be 100k levels' first 2k lines).
    let text: String = (0..2_000)
        .map(|i| format!("{}- item {i}\n", "  ".repeat(i)))
        .collect();
    let (blocks, _, _) = all_of(&text);
    let (depth, count) = depth_and_count(&blocks);
    assert_eq!(depth, MAX_DEPTH);
    assert_eq!(
        count, 2_000,
        "items past the cap become siblings, none is lost"
    );
}

#[test]
fn list_nested_100k_deep_with_tabs() {
    // Each line one tab deeper than the last would be quadratic in size; instead 100k lines that
    // climb 100 levels and fall back, over and over.
    let text: String = (0..100_000)
        .map(|i| format!("{}- {i}\n", "\t".repeat(i % 100)))
        .collect();
    let (blocks, _, _) = all_of(&text);
    let (depth, count) = depth_and_count(&blocks);
    assert_eq!(depth, 100);
    assert_eq!(count, 100_000);
}

#[test]
fn blockquotes_nested_100k_deep() {
    let text = format!("{} [[q]] #q\n", ">".repeat(100_000));
    let (blocks, links, tags) = all_of(&text);
    assert_eq!(blocks.len(), 1);
    assert_eq!((links, tags), (1, 1));
}

#[test]
fn single_lines_of_5_mb() {
    let mb5 = 5 * 1024 * 1024;
    let words = "word [[link]] #tag `code` [md](x.md) ".repeat(mb5 / 38);
    let (blocks, links, tags) = all_of(&words);
    assert_eq!(blocks.len(), 1);
    assert_eq!(links, 2 * (mb5 / 38));
    assert_eq!(tags, mb5 / 38);
    // Pathological shapes, smaller: the point is that each is linear and shallow, which the
    // benchmark shows at full size; the debug build of this test would take a minute at 5 MB.
    let mb = 512 * 1024;
    for line in [
        "[".repeat(mb),
        "[[".repeat(mb / 2) + "x",
        "#".repeat(mb),
        "`".repeat(mb),
        "*".repeat(mb - 1) + "x",
        "- ".repeat(mb / 2) + "x",
        "[[a]".repeat(mb / 4),
        "<".repeat(mb),
        "https://".repeat(mb / 8),
        "![](".repeat(mb / 4),
    ] {
        let (blocks, _, _) = all_of(&line);
        assert_eq!(blocks.len(), 1, "{}", &line[..16]);
        assert!(depth_and_count(&blocks).0 <= MAX_DEPTH);
    }
}

#[test]
fn many_short_lines() {
    let text = "- TODO [#A] task [[link]] #tag\n  id:: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22\n"
        .repeat(50_000);
    let (blocks, links, tags) = all_of(&text);
    assert_eq!(blocks.len(), 50_000);
    assert_eq!((links, tags), (50_000, 50_000));
}
