//! Hostile frontmatter is refused and the page still parses; nothing hangs or overflows.

use pkm_markdown::block_parser::parse_page;
use pkm_markdown::frontmatter::{self, FrontmatterError, MAX_DEPTH, MAX_NODES};

fn billion_laughs() -> String {
    let mut yaml = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    let names: Vec<String> = (b'a'..=b'z').map(|c| (c as char).to_string()).collect();
    for pair in names.windows(2) {
        let (p, n) = (&pair[0], &pair[1]);
        yaml.push_str(&format!(
            "{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        ));
    }
    yaml
}

#[test]
fn alias_bomb_is_refused_and_the_body_parses() {
    let text = format!("---\n{}---\n- body block\n", billion_laughs());
    assert_eq!(
        frontmatter::parse(&text),
        Err(FrontmatterError::TooManyNodes { max: MAX_NODES })
    );
    let page = parse_page(&text, "bomb");
    assert!(page.frontmatter.is_none());
    assert!(page.frontmatter_error.is_some());
    assert_eq!(page.blocks.len(), 1);
    assert_eq!(page.blocks[0].content, "body block");
}

#[test]
fn deep_flow_nesting_is_refused() {
    let text = format!(
        "---\na: {}{}\n---\n- body\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    assert!(frontmatter::parse(&text).is_err());
    let page = parse_page(&text, "deep");
    assert!(page.frontmatter_error.is_some());
    assert_eq!(page.blocks[0].content, "body");
}

#[test]
fn deep_block_nesting_is_refused() {
    let mut yaml = String::new();
    for i in 0..500 {
        yaml.push_str(&" ".repeat(i));
        yaml.push_str("- \n");
    }
    let text = format!("---\nk:\n{yaml}---\n");
    assert_eq!(
        frontmatter::parse(&text),
        Err(FrontmatterError::TooDeep { max: MAX_DEPTH })
    );
}

#[test]
fn wide_but_shallow_documents_within_limits_parse() {
    let yaml: String = (0..10_000)
        .map(|i| format!("key{i}: [a, b, {i}]\n"))
        .collect();
    let v = frontmatter::parse_yaml(&yaml).unwrap();
    assert_eq!(v.as_object().map(|o| o.len()), Some(10_000));
}

/// Fuzz (frontmatter): with `tags` given twice, removing a tag changed one list and left the other,
/// so the note still carried the tag. Duplicate keys are invalid YAML and are now refused.
#[test]
fn duplicate_keys_are_refused_so_no_edit_touches_only_one() {
    let text = "---\ntags: [a]\ntitle: T\ntags:\n  - fuzz-tag\n---\nbody\n";
    assert_eq!(
        frontmatter::parse(text),
        Err(FrontmatterError::DuplicateKey("tags".into()))
    );
    assert!(pkm_markdown::tags::remove_tag(text, "fuzz-tag").is_err());
    assert_eq!(
        frontmatter::parse("---\na:\nb: 1\na:\n---\n"),
        Err(FrontmatterError::DuplicateKey("a".into()))
    );
    assert!(frontmatter::parse("---\na: {x: 1}\nb: {x: 2}\n---\n").is_ok());
}
