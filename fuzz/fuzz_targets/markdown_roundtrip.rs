//! Markdown: parsing never panics, every block range and link position falls on a character
//! boundary of the input, and the outliner form is stable: `parse(serialize(parse(x)))` has the
//! same page model as `parse(x)`, byte ranges and source kinds aside (the outliner form writes
//! every block as a bullet).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pkm_markdown::block_parser::{Block, BlockKind, ParsedPage, parse_page, serialize};

/// The page model without the byte ranges.
fn model(page: &ParsedPage) -> ParsedPage {
    fn strip(blocks: &[Block]) -> Vec<Block> {
        blocks
            .iter()
            .map(|b| Block {
                range: 0..0,
                kind: BlockKind::default(),
                children: strip(&b.children),
                ..b.clone()
            })
            .collect()
    }
    ParsedPage {
        blocks: strip(&page.blocks),
        body_start: 0,
        ..page.clone()
    }
}

fn check_ranges(text: &str, blocks: &[Block]) {
    for b in blocks {
        assert!(
            b.range.start <= b.range.end
                && text.is_char_boundary(b.range.start)
                && text.is_char_boundary(b.range.end),
            "range {:?} in {text:?}",
            b.range
        );
        check_ranges(text, &b.children);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = parse_page(text, "note");
    check_ranges(text, &first.blocks);
    for link in pkm_markdown::linker::extract_links(text) {
        assert!(text.is_char_boundary(link.position), "{link:?} in {text:?}");
    }
    let canonical = serialize(&first);
    let second = parse_page(&canonical, "note");
    assert_eq!(model(&first), model(&second), "input {text:?}\ncanonical {canonical:?}");
});
