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
    // Fuzz (frontmatter): lines ending in a lone CR. The new frontmatter's fences end in `\n`,
    // or they would not be fences.
    added("\r", "proj", "---\ntags: [proj]\n---\n\r");
    added("a\rb #x\r", "proj", "---\ntags: [proj]\n---\na\rb #x\r");
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
    // A list left empty goes with its key, and the frontmatter with it when nothing else is left.
    removed("---\ntags: [proj]\n---\n", "proj", "", 1);
    removed(
        "---\ntags: [ \"#Proj\" , proj ]\n---\nBody\n",
        "proj",
        "Body\n",
        2,
    );
    removed(
        "---\ntitle: T\ntags: [proj,\n  Proj]\n# mine\n---\n",
        "proj",
        "---\ntitle: T\n# mine\n---\n",
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
        "---\ntitle: T\n---\n",
        1,
    );
}

#[test]
fn remove_from_a_scalar() {
    removed("---\ntags: proj\n---\n", "proj", "", 1);
    removed(
        "---\ntags: a, proj\n---\n",
        "proj",
        "---\ntags: a\n---\n",
        1,
    );
    removed("---\ntags: proj b\n---\n", "proj", "---\ntags: b\n---\n", 1);
    removed(
        "---\ntags: \"proj\"\ntitle: T\n---\n",
        "proj",
        "---\ntitle: T\n---\n",
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
        "---\ntags: [a]\n---\n",
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

#[test]
fn logseq_tags_line_is_edited_in_place() {
    // Page properties at column 0.
    added(
        "title:: T\ntags:: a, b\n\n- block\n",
        "proj",
        "title:: T\ntags:: a, b, proj\n\n- block\n",
    );
    // The line's separator and item style are kept.
    added(
        "tags:: [[a b]], [[c]]\n",
        "proj",
        "tags:: [[a b]], [[c]], [[proj]]\n",
    );
    added("tags:: #a #b\n- x\n", "proj", "tags:: #a #b #proj\n- x\n");
    added("tags:: a,b\n", "proj", "tags:: a,b,proj\n");
    added("tags::\n", "proj", "tags:: proj\n");
    // The first bullet's properties.
    added(
        "- tags:: a\n  title:: T\n- next\n",
        "proj",
        "- tags:: a, proj\n  title:: T\n- next\n",
    );
    added(
        "- title:: T\n\ttags:: a\n\t- child\n",
        "proj",
        "- title:: T\n\ttags:: a, proj\n\t- child\n",
    );
    added(
        "tags:: a\r\n\r\n- b\r\n",
        "proj",
        "tags:: a, proj\r\n\r\n- b\r\n",
    );
}

#[test]
fn logseq_page_properties_get_a_tags_line() {
    added(
        "title:: T\n\n- block\n",
        "proj",
        "tags:: proj\ntitle:: T\n\n- block\n",
    );
    // The text's end stays as it is.
    added("title:: T", "proj", "tags:: proj\ntitle:: T");
    added("- title:: T", "proj", "---\ntags: [proj]\n---\n- title:: T");
    added(
        "- title:: T\n  - child\n",
        "proj",
        "- title:: T\n  tags:: proj\n  - child\n",
    );
}

#[test]
fn logseq_tags_line_items_are_removed() {
    removed(
        "title:: T\ntags:: a, proj, [[b c]]\n",
        "proj",
        "title:: T\ntags:: a, [[b c]]\n",
        1,
    );
    removed("tags:: [[Proj]], a\n", "proj", "tags:: a\n", 1);
    removed("tags:: a #proj\n", "proj", "tags:: a\n", 1);
    // The last item takes the whole line with it.
    removed(
        "title:: T\ntags:: proj\n\n- b\n",
        "proj",
        "title:: T\n\n- b\n",
        1,
    );
    removed("title:: T\r\ntags:: #proj", "proj", "title:: T", 1);
    removed(
        "- tags:: proj\n  title:: T\n- b #proj\n",
        "proj",
        "- title:: T\n- b\n",
        2,
    );
    removed("- tags:: proj\n\t- child\n", "proj", "-\n\t- child\n", 1);
    removed("- tags:: proj\n- b\n", "proj", "- b\n", 1);
}

#[test]
fn removing_an_added_tag_restores_the_note() {
    for text in [
        "Body #other\n",
        "",
        "\u{feff}Body",
        "Body\r\nmore\r\n",
        "---\ntitle: T\n---\nBody\n",
        "---\r\ntitle: T\r\n---\r\nBody\r\n",
        "---\ntags: [a]\n---\n",
        "title:: T\n\n- b\n",
        "tags:: a\n- b\n",
        "- title:: T\n  - child\n",
        "title:: T",
        "\t- code #x",
    ] {
        let added = add_tag(text, "proj").unwrap().unwrap();
        assert_eq!(
            remove_tag(&added, "proj").unwrap(),
            (text.to_owned(), 1),
            "{added:?}"
        );
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn newline() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("\n"), Just("\r\n")]
    }

    fn tag() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,6}",
            "[a-z]{1,4}/[a-z]{1,4}",
            "[A-Z][a-z]{0,4}",
            Just("2024".to_owned())
        ]
    }

    /// A note in one of the forms tags are kept in, with some of `tags`.
    fn note() -> impl Strategy<Value = String> {
        let tags = prop::collection::vec(tag(), 0..3);
        let body = prop::collection::vec(
            prop_oneof![
                Just("- block [[Page]]".to_owned()),
                Just("\t- child #x".to_owned()),
                Just("text".to_owned()),
                Just(String::new()),
                Just("# Heading".to_owned()),
            ],
            0..4,
        );
        (0..7u8, tags, body, newline(), any::<bool>()).prop_map(
            |(form, mut tags, body, nl, end)| {
                // An empty list or `tags::` line is not restored: removing the last tag removes the
                // key (documented), so those forms always hold a tag here.
                if tags.is_empty() && (2..=5).contains(&form) {
                    tags.push("keep".to_owned());
                }
                let mut t = String::new();
                let joined = tags.join(", ");
                let flow: Vec<String> = tags.iter().map(|t| format!("\"{t}\"")).collect();
                match form {
                    0 => {}
                    1 => t.push_str(&format!("---{nl}title: T{nl}---{nl}")),
                    2 => t.push_str(&format!("---{nl}tags: [{}]{nl}---{nl}", flow.join(", "))),
                    3 => {
                        t.push_str(&format!("---{nl}tags:{nl}"));
                        for x in &flow {
                            t.push_str(&format!("  - {x}{nl}"));
                        }
                        t.push_str(&format!("status: x{nl}---{nl}"));
                    }
                    4 => t.push_str(&format!("title:: T{nl}tags:: {joined}{nl}{nl}")),
                    5 => t.push_str(&format!("- tags:: {joined}{nl}  title:: T{nl}")),
                    _ => t.push_str(&format!("title:: T{nl}")),
                }
                t.push_str(&body.join(nl));
                if end && !body.is_empty() {
                    t.push_str(nl);
                }
                t
            },
        )
    }

    proptest! {
        #[test]
        fn remove_undoes_add_and_add_is_idempotent(text in note(), t in tag()) {
            let key = t.to_lowercase();
            let has = pkm_markdown::block_parser::parse_page(&text, "n")
                .tags
                .iter()
                .any(|x| x.to_lowercase() == key);
            let Some(added) = add_tag(&text, &t).unwrap() else {
                prop_assert!(has, "add_tag said tagged already: {text:?}");
                return Ok(());
            };
            prop_assert!(!has);
            prop_assert_eq!(add_tag(&added, &t).unwrap(), None, "{:?}", added);
            let (back, n) = remove_tag(&added, &t).unwrap();
            prop_assert_eq!(n, 1);
            prop_assert_eq!(back, text);
        }
    }
}

#[test]
fn a_byte_order_mark_does_not_hide_a_logseq_pages_properties() {
    // Found by the `frontmatter` fuzz target: the tag went into a `tags::` line that the parser,
    // reading the mark as part of the first property's name, did not see.
    added(
        "\u{feff}title:: T\n\nBody\n",
        "proj",
        "\u{feff}tags:: proj\ntitle:: T\n\nBody\n",
    );
    added(
        "\u{feff}e::\n--eaum]]\n-  deadline::\n--eadline::\n--0\nbodJy",
        "fuzz-tag",
        "\u{feff}tags:: fuzz-tag\ne::\n--eaum]]\n-  deadline::\n--eadline::\n--0\nbodJy",
    );
    let page =
        pkm_markdown::block_parser::parse_page("\u{feff}tags:: proj\ntitle:: T\n\nBody\n", "n");
    assert_eq!(page.title, "T");
    assert_eq!(page.page_tags, ["proj"]);
    assert_eq!(
        add_tag("\u{feff}tags:: proj\ntitle:: T\n\nBody\n", "proj").unwrap(),
        None
    );
    removed(
        "\u{feff}tags:: proj\ntitle:: T\n\nBody\n",
        "proj",
        "\u{feff}title:: T\n\nBody\n",
        1,
    );
}

#[test]
fn frontmatter_keys_are_found_by_bytes_past_comments_and_quotes() {
    // Multi-byte text before the key: the edit lands at the right byte.
    added(
        "---\ntitle: Ünïcödé ä\ntags: [é]\n---\nx\n",
        "b",
        "---\ntitle: Ünïcödé ä\ntags: [é, b]\n---\nx\n",
    );
    // A quoted scalar followed by a comment: the comment is kept, after the new list.
    added(
        "---\ntags: \"ä\" # note\n---\n",
        "b",
        "---\ntags: [ä, b] # note\n---\n",
    );
    // A quoted block-list item holding a `#`, with a comment behind it.
    removed(
        "---\ntags:\n  - \"a #b\" # c\n  - d\n---\n",
        "d",
        "---\ntags:\n  - \"a #b\" # c\n---\n",
        1,
    );
    added(
        "---\ntags:\n  - 'ö #b' # c\n---\n",
        "e",
        "---\ntags:\n  - 'ö #b' # c\n  - e\n---\n",
    );
}
