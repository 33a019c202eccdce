//! `add_tag` / `remove_tag`: each case states the exact text that results, so every byte the edit
//! leaves alone is checked too.

use pkm_markdown::MarkdownError;
use pkm_markdown::tags::{add_tag, remove_tag};

#[track_caller]
fn added(text: &str, tag: &str, expected: &str) {
    assert_eq!(
        add_tag(text, tag).unwrap().as_deref(),
        Some(expected),
        "adding {tag:?} to {text:?}"
    );
}

#[track_caller]
fn removed(text: &str, tag: &str, expected: &str, count: usize) {
    assert_eq!(
        remove_tag(text, tag).unwrap(),
        (expected.to_owned(), count),
        "removing {tag:?} from {text:?}"
    );
}

#[test]
fn add_creates_frontmatter_when_absent() {
    added(
        "Body #other\n",
        "proj",
        "---\ntags: [proj]\n---\nBody #other\n",
    );
    added("", "proj", "---\ntags: [proj]\n---\n");
    added(
        "\u{feff}Body",
        "proj",
        "\u{feff}---\ntags: [proj]\n---\nBody",
    );
}

#[test]
fn add_appends_to_a_flow_list() {
    added(
        "---\ntitle: T\ntags: [a, b]\n---\nBody\n",
        "proj",
        "---\ntitle: T\ntags: [a, b, proj]\n---\nBody\n",
    );
    added(
        "---\ntags: [ a,b ]  # mine\n---\n",
        "#proj",
        "---\ntags: [ a,b, proj ]  # mine\n---\n",
    );
    added("---\ntags: []\n---\n", "proj", "---\ntags: [proj]\n---\n");
    added(
        "---\ntags: [a,\n  b]\n---\n",
        "proj",
        "---\ntags: [a,\n  b, proj]\n---\n",
    );
    added(
        "---\ntags: [\"a, b\", 'c']\n---\n",
        "proj",
        "---\ntags: [\"a, b\", 'c', proj]\n---\n",
    );
}

#[test]
fn add_appends_to_a_block_list_keeping_its_indentation() {
    added(
        "---\ntags:\n  - a\n  - b\nstatus: x\n---\n",
        "proj",
        "---\ntags:\n  - a\n  - b\n  - proj\nstatus: x\n---\n",
    );
    added(
        "---\ntags:\n- a\n---\n",
        "proj",
        "---\ntags:\n- a\n- proj\n---\n",
    );
    added(
        "---\ntags:\n    - a  # first\n\n    - b\n---\n",
        "proj",
        "---\ntags:\n    - a  # first\n\n    - b\n    - proj\n---\n",
    );
}

#[test]
fn add_turns_a_scalar_into_a_list() {
    added("---\ntags: a\n---\n", "proj", "---\ntags: [a, proj]\n---\n");
    added(
        "---\ntags: a, b # c\n---\n",
        "proj",
        "---\ntags: [a, b, proj] # c\n---\n",
    );
    added(
        "---\ntags: \"a b\"\n---\n",
        "proj",
        "---\ntags: [a, b, proj]\n---\n",
    );
    added("---\ntag: a\n---\n", "proj", "---\ntag: [a, proj]\n---\n");
}

#[test]
fn add_fills_an_empty_key_or_adds_one() {
    added(
        "---\ntags:\ntitle: T\n---\n",
        "proj",
        "---\ntags: [proj]\ntitle: T\n---\n",
    );
    added(
        "---\ntags: # none yet\n---\n",
        "proj",
        "---\ntags: [proj] # none yet\n---\n",
    );
    added(
        "---\ntitle: T\n---\nBody\n",
        "proj",
        "---\ntitle: T\ntags: [proj]\n---\nBody\n",
    );
    added("---\n---\nBody\n", "proj", "---\ntags: [proj]\n---\nBody\n");
    added(
        "---\r\ntitle: T\r\n---\r\nBody\r\n",
        "proj",
        "---\r\ntitle: T\r\ntags: [proj]\r\n---\r\nBody\r\n",
    );
}

#[test]
fn add_quotes_tags_yaml_would_read_otherwise() {
    added(
        "---\ntags: [a]\n---\n",
        "2024",
        "---\ntags: [a, \"2024\"]\n---\n",
    );
    added(
        "---\ntags: [a]\n---\n",
        "true",
        "---\ntags: [a, \"true\"]\n---\n",
    );
    added(
        "---\ntags: [a]\n---\n",
        "-x",
        "---\ntags: [a, \"-x\"]\n---\n",
    );
    added(
        "---\ntags: [a]\n---\n",
        "area/sub.topic_1",
        "---\ntags: [a, area/sub.topic_1]\n---\n",
    );
    added(
        "---\ntags: [a]\n---\n",
        "café",
        "---\ntags: [a, café]\n---\n",
    );
}

#[test]
fn add_is_idempotent_and_sees_inline_tags() {
    assert_eq!(add_tag("---\ntags: [Proj]\n---\n", "proj").unwrap(), None);
    assert_eq!(add_tag("---\ntags: proj, x\n---\n", "#PROJ").unwrap(), None);
    assert_eq!(add_tag("Text with #Proj inline\n", "proj").unwrap(), None);
    assert_eq!(
        add_tag("Only #project here\n", "proj").unwrap().as_deref(),
        Some("---\ntags: [proj]\n---\nOnly #project here\n")
    );
    // A tag inside code does not count.
    assert_eq!(
        add_tag("`#proj`\n", "proj").unwrap().as_deref(),
        Some("---\ntags: [proj]\n---\n`#proj`\n")
    );
}

#[test]
fn add_refuses_what_it_cannot_edit_safely() {
    assert!(matches!(
        add_tag("x", ""),
        Err(MarkdownError::InvalidTag(_))
    ));
    assert!(matches!(
        add_tag("x", "two words"),
        Err(MarkdownError::InvalidTag(_))
    ));
    assert!(matches!(
        add_tag("---\ntags: {a: 1}\n---\n", "p"),
        Err(MarkdownError::UnsupportedTags(_))
    ));
    assert!(matches!(
        add_tag("---\ntags: [[a]]\n---\n", "p"),
        Err(MarkdownError::UnsupportedTags(_))
    ));
    assert!(matches!(
        add_tag("---\ntags: |\n  a\n---\n", "p"),
        Err(MarkdownError::UnsupportedTags(_))
    ));
    assert!(matches!(
        add_tag("---\ntags: [a\n---\n", "p"),
        Err(MarkdownError::Syntax { .. })
    ));
}

#[test]
fn remove_from_a_flow_list() {
    removed(
        "---\ntags: [a, proj, b]\n---\n",
        "proj",
        "---\ntags: [a, b]\n---\n",
        1,
    );
    removed(
        "---\ntags: [a, proj]\n---\n",
        "proj",
        "---\ntags: [a]\n---\n",
        1,
    );
    removed(
        "---\ntags: [proj, a]\n---\n",
        "proj",
        "---\ntags: [a]\n---\n",
        1,
    );
    removed(
        "---\ntags: [proj]\n---\n",
        "proj",
        "---\ntags: []\n---\n",
        1,
    );
    removed(
        "---\ntags: [ \"#Proj\" , proj ]\n---\n",
        "proj",
        "---\ntags: []\n---\n",
        2,
    );
    removed(
        "---\ntags: [a, proj, proj]\n---\n",
        "proj",
        "---\ntags: [a]\n---\n",
        2,
    );
}

#[test]
fn remove_from_a_block_list() {
    removed(
        "---\ntags:\n  - a\n  - proj\n  - b\n---\n",
        "proj",
        "---\ntags:\n  - a\n  - b\n---\n",
        1,
    );
    removed(
        "---\ntags:\n  - proj\ntitle: T\n---\n",
        "proj",
        "---\ntags: []\ntitle: T\n---\n",
        1,
    );
}

#[test]
fn remove_from_a_scalar() {
    removed("---\ntags: proj\n---\n", "proj", "---\ntags: []\n---\n", 1);
    removed(
        "---\ntags: a, proj\n---\n",
        "proj",
        "---\ntags: a\n---\n",
        1,
    );
    removed("---\ntags: proj b\n---\n", "proj", "---\ntags: b\n---\n", 1);
    removed(
        "---\ntags: \"proj\"\n---\n",
        "proj",
        "---\ntags: []\n---\n",
        1,
    );
}

#[test]
fn remove_inline_whole_tags_only() {
    removed(
        "Text #proj and #project.\n",
        "proj",
        "Text and #project.\n",
        1,
    );
    removed("#proj at start\n", "proj", "at start\n", 1);
    removed("end #proj\n", "proj", "end\n", 1);
    removed("x #proj, y\n", "proj", "x, y\n", 1);
    removed("#Proj #proj/sub #[[proj]]\n", "proj", "#proj/sub\n", 2);
    removed(
        "keep `#proj` in code\n\n```\n#proj\n```\n",
        "proj",
        "keep `#proj` in code\n\n```\n#proj\n```\n",
        0,
    );
}

#[test]
fn remove_everywhere_at_once() {
    removed(
        "---\ntitle: T\ntags: [proj, a]\n---\n- task #proj\n  - note #a #proj\n",
        "#proj",
        "---\ntitle: T\ntags: [a]\n---\n- task\n  - note #a\n",
        3,
    );
}

#[test]
fn remove_nothing_is_a_no_op() {
    removed(
        "---\ntags: [a]\n---\nText #b\n",
        "proj",
        "---\ntags: [a]\n---\nText #b\n",
        0,
    );
    removed("", "proj", "", 0);
}

#[test]
fn both_tag_keys_are_edited() {
    removed(
        "---\ntags: [a]\ntag: proj\n---\n",
        "proj",
        "---\ntags: [a]\ntag: []\n---\n",
        1,
    );
    assert_eq!(
        add_tag("---\ntags: [a]\ntag: proj\n---\n", "proj").unwrap(),
        None
    );
}

#[test]
fn logseq_tags_property_counts_as_tagged() {
    assert_eq!(
        add_tag("tags:: proj, x\n\n- block\n", "proj").unwrap(),
        None
    );
}

#[test]
fn edits_that_would_not_read_back_are_refused() {
    // A multi-line plain scalar: appending to it in place is not something this edit does.
    assert!(matches!(
        add_tag("---\ntags:\n  a b\n---\n", "p"),
        Err(MarkdownError::UnsupportedTags(_))
    ));
}

#[test]
fn a_value_continued_on_the_next_line_is_refused_not_missed() {
    // Found by fuzzing (frontmatter target): `tags:` with its value on the next line is the
    // string "fuzz-tag" to YAML; the edit saw an empty key, removed nothing and reported success.
    let text = "---\ntitle: T\ntags:\n fuzz-tag\n---\n# T #fqzz-tag\n";
    assert!(matches!(
        remove_tag(text, "fuzz-tag"),
        Err(MarkdownError::UnsupportedTags(_))
    ));
    // Items the reader and YAML would read differently are refused too.
    for text in [
        "---\ntags:\n  - a\n  -\tb\n---\n",
        "---\ntags: a\n  b\n---\n",
        "---\ntags: [a, b\n  c]\n---\n",
    ] {
        assert!(
            matches!(
                remove_tag(text, "a"),
                Err(MarkdownError::UnsupportedTags(_))
            ) || {
                let (out, _) = remove_tag(text, "a").unwrap();
                !pkm_markdown::block_parser::parse_page(&out, "n")
                    .tags
                    .iter()
                    .any(|t| t == "a")
            },
            "{text:?}"
        );
    }
}
