//! Sections as people write them: which headings a note has, their paths, and what each section
//! covers.

use pkm_markdown::MarkdownError;
use pkm_markdown::sections::{Section, SectionKind, find, line_span, sections};

fn paths(text: &str) -> Vec<String> {
    sections(text).into_iter().map(|s| s.path).collect()
}

fn get<'a>(text: &'a str, address: &str) -> &'a str {
    let all = sections(text);
    let s: &Section = find(text, &all, address).unwrap();
    &text[s.range()]
}

#[test]
fn atx_and_setext_headings_nest_by_level() {
    let text = "# Top\nintro\n\n## A\na\n\n### Deep\nd\n\n## B\nb\n\nSetext\n======\nunder\n\nTwo\n---\nx\n";
    assert_eq!(
        paths(text),
        [
            "Top",
            "Top#A",
            "Top#A#Deep",
            "Top#B",
            "Setext",
            "Setext#Two"
        ]
    );
    // A section ends at the next heading of its level or higher; blank lines before it are
    // not the section's.
    assert_eq!(get(text, "A"), "## A\na\n\n### Deep\nd\n");
    assert_eq!(get(text, "Deep"), "### Deep\nd\n");
    assert_eq!(
        get(text, "Setext"),
        "Setext\n======\nunder\n\nTwo\n---\nx\n"
    );
    let levels: Vec<u8> = sections(text).iter().map(|s| s.level).collect();
    assert_eq!(levels, [1, 2, 3, 2, 1, 2]);
}

#[test]
fn headings_in_code_and_frontmatter_are_not_headings() {
    let text = "---\ntitle: x\n# not: a heading\n---\n# Real\n```\n# in code\n```\n~~~\n## also code\n~~~\n    # indented code\n";
    assert_eq!(paths(text), ["Real"]);
    assert_eq!(get(text, "Real"), &text[text.find("# Real").unwrap()..]);
}

#[test]
fn repeated_headings_are_told_apart_by_their_path() {
    let text = "# Q3\n## Risks\nr3\n# Q4\n## Risks\nr4\n";
    assert_eq!(get(text, "Q4#Risks"), "## Risks\nr4\n");
    let all = sections(text);
    let err = find(text, &all, "Risks").unwrap_err();
    assert_eq!(
        err,
        MarkdownError::AmbiguousSection {
            address: "Risks".into(),
            choices: vec!["Q3#Risks (line 2)".into(), "Q4#Risks (line 5)".into()]
        }
    );
    assert!(
        err.to_string()
            .contains("Q3#Risks (line 2), Q4#Risks (line 5)")
    );
}

#[test]
fn headings_repeated_under_one_heading_are_numbered() {
    let text = "# Log\n## Notes\na\n## Notes\nb\n### Detail\nd\n# Notes\nc\n# Notes\ne\n";
    assert_eq!(
        paths(text),
        [
            "Log",
            "Log#Notes[1]",
            "Log#Notes[2]",
            "Log#Notes[2]#Detail",
            "Notes[1]",
            "Notes[2]"
        ]
    );
    let plain: Vec<String> = sections(text).into_iter().map(|s| s.plain_path).collect();
    assert_eq!(plain[3], "Log#Notes#Detail");
    assert_eq!(get(text, "Log#Notes[2]"), "## Notes\nb\n### Detail\nd\n");
    assert_eq!(get(text, "log # notes[1]"), "## Notes\na\n");
    assert_eq!(get(text, "Notes[2]#Detail"), "### Detail\nd\n");
    assert_eq!(get(text, "Detail"), "### Detail\nd\n");
    assert_eq!(get(text, "Notes[2]"), "# Notes\ne\n");
    // The path a heading link writes names several: refused with the numbered choices.
    let all = sections(text);
    assert_eq!(
        find(text, &all, "Log#Notes").unwrap_err(),
        MarkdownError::AmbiguousSection {
            address: "Log#Notes".into(),
            choices: vec![
                "Log#Notes[1] (line 2)".into(),
                "Log#Notes[2] (line 4)".into()
            ]
        }
    );
    assert!(matches!(
        find(text, &all, "Notes"),
        Err(MarkdownError::AmbiguousSection { choices, .. }) if choices.len() == 2
    ));
    // A heading that is written with brackets is found as written.
    let literal = "# Steps [2]\nx\n# Steps\ny\n";
    assert_eq!(paths(literal), ["Steps [2]", "Steps"]);
    assert_eq!(get(literal, "Steps [2]"), "# Steps [2]\nx\n");
    assert_eq!(get(literal, "Steps"), "# Steps\ny\n");
    // Logseq: two heading blocks of one text under one heading block.
    let outline = "- # Week\n\t- ## Done\n\t\t- a\n\t- ## Done\n\t\t- b\n";
    assert_eq!(paths(outline), ["Week", "Week#Done[1]", "Week#Done[2]"]);
    assert_eq!(get(outline, "Week#Done[2]"), "\t- ## Done\n\t\t- b\n");
}

#[test]
fn an_exact_match_wins_then_case_and_spaces_are_ignored() {
    let text = "# Projects\n## Q3\n### Risks\nx\n# Risks\ny\n";
    // "Risks" is a whole path (the top-level one) before it is the end of another.
    assert_eq!(get(text, "Risks"), "# Risks\ny\n");
    assert_eq!(get(text, "projects # q3 # RISKS "), "### Risks\nx\n");
    assert_eq!(get(text, "Q3#Risks"), "### Risks\nx\n");
    let all = sections(text);
    let err = find(text, &all, "Nothing").unwrap_err();
    assert!(
        err.to_string()
            .contains("its headings: Projects, Projects#Q3, Projects#Q3#Risks, Risks"),
        "{err}"
    );
    let none = find("text\n", &sections("text\n"), "X").unwrap_err();
    assert!(none.to_string().contains("it has no headings"), "{none}");
}

#[test]
fn a_heading_holding_a_hash_is_found_whole() {
    let text = "# Languages\n## C#\nsharp\n## C\nplain\n";
    assert_eq!(get(text, "Languages#C#"), "## C#\nsharp\n");
    assert_eq!(get(text, "C"), "## C\nplain\n");
}

#[test]
fn logseq_heading_blocks_own_their_children() {
    let text = "title:: P\n\n- # Plans\n\t- one\n\t\t- one.a\n\t- ## Later\n\t  heading:: true\n\t\t- two\n- other\n- Props\n  heading:: true\n\t- p1\n";
    assert_eq!(paths(text), ["Plans", "Plans#Later", "Props"]);
    assert_eq!(
        get(text, "Plans"),
        "- # Plans\n\t- one\n\t\t- one.a\n\t- ## Later\n\t  heading:: true\n\t\t- two\n"
    );
    assert_eq!(
        get(text, "Later"),
        "\t- ## Later\n\t  heading:: true\n\t\t- two\n"
    );
    let all = sections(text);
    let props = find(text, &all, "props").unwrap();
    assert_eq!(props.kind, SectionKind::Outline);
    assert_eq!(&text[props.body.clone()], "\t- p1\n");
    // Space indentation reads the same.
    let spaces = "- ## A\n  - a1\n    - a2\n- ## B\n  - b1\n";
    assert_eq!(get(spaces, "A"), "- ## A\n  - a1\n    - a2\n");
}

#[test]
fn obsidian_block_ids_are_addresses() {
    let text = "# H\npara one ^p1\n\n- item ^i-2\n  - child\n- next\n";
    assert_eq!(get(text, "^p1"), "para one ^p1\n");
    assert_eq!(get(text, "^i-2"), "- item ^i-2\n  - child\n");
    // Anchors keep the headings' paths as they are and are not listed as headings.
    assert_eq!(paths(text), ["H", "^p1", "^i-2"]);
    let all = sections(text);
    let err = find(text, &all, "nope").unwrap_err().to_string();
    assert!(err.ends_with("its headings: H"), "{err}");
}

#[test]
fn crlf_and_byte_order_mark() {
    let text = "\u{feff}# A\r\nline\r\n\r\n## B\r\nb\r\n";
    assert_eq!(paths(text), ["A", "A#B"]);
    assert_eq!(get(text, "B"), "## B\r\nb\r\n");
    assert_eq!(get(text, "A"), "# A\r\nline\r\n\r\n## B\r\nb\r\n");
    let all = sections(text);
    assert_eq!(line_span(text, &all[1].range()), (4, 5));
    assert_eq!(line_span(text, &all[0].range()), (1, 5));
}

#[test]
fn a_last_line_without_a_line_break_ends_the_section() {
    let text = "# A\nx\n# B";
    assert_eq!(get(text, "B"), "# B");
    let all = sections(text);
    assert!(all[1].body.is_empty());
    assert_eq!(line_span(text, &all[1].range()), (3, 3));
}
