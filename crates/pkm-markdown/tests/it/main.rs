//! The crate's one integration-test binary (one link step instead of one per file).

// `cfg(test)` lets clippy's allow-unwrap-in-tests cover the helpers, not only `#[test]` fns.
#[cfg(test)]
mod blocks;
#[cfg(test)]
mod edit_list_check;
#[cfg(test)]
mod edits;
#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod frontmatter_limits;
#[cfg(test)]
mod links_spec;
#[cfg(test)]
mod property_edits;
#[cfg(test)]
mod props;
#[cfg(test)]
mod relink;
#[cfg(test)]
mod robustness;
#[cfg(test)]
mod sections;
#[cfg(test)]
mod tag_edits;

use expect_test::Expect;
use pkm_markdown::block_parser::parse_page;
use pkm_markdown::serialize::outline;

/// Parses `markdown` and compares its block tree, printed by `outline`, with `expect`.
pub fn check_blocks(markdown: &str, expect: Expect) {
    let page = parse_page(markdown, "stem");
    expect.assert_eq(&outline(&page.blocks));
}
