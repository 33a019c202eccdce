//! `set_properties`: each case states the exact text that results, so every byte the edit
//! leaves alone is checked too; the property tests generate notes, keys and values.

use pkm_markdown::properties::{PropertyForm, set_properties};
use pkm_markdown::{Dialect, Flavor, MarkdownError};
use serde_json::{Value, json};

fn markdown() -> Dialect {
    Dialect::of(Flavor::Markdown)
}

fn logseq() -> Dialect {
    Dialect::of(Flavor::Logseq)
}

fn pairs(set: Value) -> Vec<(String, Value)> {
    set.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

#[track_caller]
fn edited(dialect: &Dialect, text: &str, set: Value, remove: &[&str], expected: &str) {
    let remove: Vec<String> = remove.iter().map(|s| s.to_string()).collect();
    let out = set_properties(text, dialect, &pairs(set.clone()), &remove).unwrap();
    assert_eq!(
        out.text, expected,
        "setting {set} and removing {remove:?} in {text:?}"
    );
}

#[test]
fn a_value_is_replaced_where_it_stands() {
    let text = "---\ntitle: 'T'   # the title\nstatus: draft  # mine\ntags: [a, b]\n---\nBody\n";
    edited(
        &markdown(),
        text,
        json!({"status": "done"}),
        &[],
        "---\ntitle: 'T'   # the title\nstatus: done  # mine\ntags: [a, b]\n---\nBody\n",
    );
    edited(
        &markdown(),
        text,
        json!({"tags": ["x", "y z"], "n": 3, "ok": true}),
        &[],
        "---\ntitle: 'T'   # the title\nstatus: draft  # mine\ntags: [x, y z]\nn: 3\nok: true\n---\nBody\n",
    );
}

#[test]
fn a_block_list_stays_a_block_list() {
    edited(
        &markdown(),
        "---\naliases:\n    - One\n    - Two\ntitle: T\n---\n",
        json!({"aliases": ["Three"]}),
        &[],
        "---\naliases:\n    - Three\ntitle: T\n---\n",
    );
}

#[test]
fn strings_that_would_read_as_something_else_are_quoted() {
    let cases = [
        ("a: b", "\"a: b\""),
        ("true", "\"true\""),
        ("12", "\"12\""),
        ("#tag", "\"#tag\""),
        ("", "\"\""),
        ("two\nlines", "\"two\\nlines\""),
        ("2024-01-05", "2024-01-05"),
        ("in progress", "in progress"),
    ];
    for (value, written) in cases {
        edited(
            &markdown(),
            "---\na: 1\n---\n",
            json!({ "s": value }),
            &[],
            &format!("---\na: 1\ns: {written}\n---\n"),
        );
    }
    edited(
        &markdown(),
        "",
        json!({"a key: odd": ["x, y", "[z]"]}),
        &[],
        "---\n\"a key: odd\": [\"x, y\", \"[z]\"]\n---\n",
    );
}

#[test]
fn multi_line_values_are_replaced_and_removed_whole() {
    let text = "---\nabout: |\n  two\n  lines\nplain: one\n  two\nnext: 1\n---\n";
    edited(
        &markdown(),
        text,
        json!({"about": "short", "plain": [] }),
        &[],
        "---\nabout: short\nplain: []\nnext: 1\n---\n",
    );
    edited(
        &markdown(),
        text,
        json!({}),
        &["about", "plain"],
        "---\nnext: 1\n---\n",
    );
}

#[test]
fn null_is_the_key_with_an_empty_value() {
    edited(
        &markdown(),
        "---\ndue: 2024-01-05 # soon\n---\n",
        json!({"due": null, "new": null}),
        &[],
        "---\ndue: # soon\nnew:\n---\n",
    );
    let out = set_properties(
        "---\na: 1\n---\n",
        &markdown(),
        &pairs(json!({"a": null})),
        &[],
    );
    assert_eq!(out.unwrap().changes[0].after, Some(Value::Null));
}

#[test]
fn removing_keys_keeps_the_rest_and_an_emptied_frontmatter_goes() {
    edited(
        &markdown(),
        "---\n# comment\nstatus: x\nlist:\n  - a\n  - b\nafter: 1\n---\nBody\n",
        json!({}),
        &["list", "absent"],
        "---\n# comment\nstatus: x\nafter: 1\n---\nBody\n",
    );
    edited(
        &markdown(),
        "\u{feff}---\r\nstatus: x\r\n---\r\nBody\r\n",
        json!({}),
        &["status"],
        "\u{feff}Body\r\n",
    );
}

#[test]
fn a_note_without_properties_gets_the_dialects_form() {
    edited(
        &markdown(),
        "\u{feff}Body\r\n",
        json!({"status": "done"}),
        &[],
        "\u{feff}---\r\nstatus: done\r\n---\r\nBody\r\n",
    );
    edited(
        &logseq(),
        "- a block\n",
        json!({"status": "done", "tags": ["a", "b"]}),
        &[],
        "status:: done\ntags:: a, b\n\n- a block\n",
    );
    edited(&logseq(), "", json!({"k": 1}), &[], "k:: 1\n");
}

#[test]
fn logseq_properties_are_edited_in_place() {
    let text = "title:: T\ntags:: a, [[b]]\n\n- block\n";
    edited(
        &logseq(),
        text,
        json!({"tags": ["c"], "status": "x"}),
        &["title"],
        "tags:: c\nstatus:: x\n\n- block\n",
    );
    edited(
        &logseq(),
        "- type:: book\n  author:: A\n  - child\n",
        json!({"Author": "B"}),
        &["type"],
        "- author:: B\n  - child\n",
    );
    // Outside Logseq a first list item's fields are the item's (Dataview), not the page's.
    edited(
        &markdown(),
        "- due:: today\n",
        json!({"status": "x"}),
        &[],
        "---\nstatus: x\n---\n- due:: today\n",
    );
    let out = set_properties(text, &logseq(), &pairs(json!({"status": "x"})), &[]).unwrap();
    assert_eq!(out.form, PropertyForm::Logseq);
    assert_eq!(out.changes[0].after, Some(json!("x")));
}

#[test]
fn what_cannot_be_written_is_refused_with_nothing_written() {
    let refused = |dialect: &Dialect, text: &str, set: Value, remove: &[&str]| {
        let remove: Vec<String> = remove.iter().map(|s| s.to_string()).collect();
        set_properties(text, dialect, &pairs(set), &remove).unwrap_err()
    };
    let e = refused(&markdown(), "", json!({"a": 1}), &["a"]);
    assert!(matches!(e, MarkdownError::InvalidProperty(_)), "{e}");
    let e = refused(&markdown(), "", json!({"a": {"b": 1}}), &[]);
    assert!(matches!(e, MarkdownError::InvalidProperty(_)), "{e}");
    let e = refused(&markdown(), "", json!({"a": [1]}), &[]);
    assert!(matches!(e, MarkdownError::InvalidProperty(_)), "{e}");
    let e = refused(&logseq(), "", json!({"a b": 1}), &[]);
    assert!(matches!(e, MarkdownError::InvalidProperty(_)), "{e}");
    let e = refused(&logseq(), "", json!({"a": "two\nlines"}), &[]);
    assert!(matches!(e, MarkdownError::InvalidProperty(_)), "{e}");
    let e = refused(&markdown(), "---\n{a: 1}\n---\n", json!({"a": 2}), &[]);
    assert!(matches!(e, MarkdownError::UnsupportedProperty(_)), "{e}");
    let e = refused(&markdown(), "---\na: [\n---\n", json!({"a": 2}), &[]);
    assert!(matches!(e, MarkdownError::Syntax { .. }), "{e}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn newline() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("\n"), Just("\r\n")]
    }

    fn key() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_-]{0,6}"
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-zA-Z0-9 ]{1,12}".prop_map(|s| json!(s.trim())),
            "[ -~]{0,12}".prop_map(|s| json!(s)),
            prop::collection::vec("[a-z0-9]{1,6}", 0..4).prop_map(|v| json!(v)),
        ]
    }

    /// A note keeping `keys` (each `key: value` on one line) in one of the forms.
    fn note() -> impl Strategy<Value = (String, Vec<String>, bool)> {
        let keys = prop::collection::btree_set(key(), 0..4);
        let body = prop::collection::vec(
            prop_oneof![
                Just("- block [[Page]]"),
                Just("text #x"),
                Just(""),
                Just("# H")
            ],
            0..3,
        );
        (0..4u8, keys, body, newline(), any::<bool>()).prop_map(|(form, keys, body, nl, bom)| {
            let keys: Vec<String> = if form == 0 {
                Vec::new()
            } else {
                keys.into_iter().collect()
            };
            let mut t = String::from(if bom { "\u{feff}" } else { "" });
            let logseq = form >= 2;
            match form {
                0 => {}
                1 => {
                    t.push_str(&format!("---{nl}# a comment{nl}"));
                    for k in &keys {
                        t.push_str(&format!("{k}: \"v {k}\"  # {k}{nl}"));
                    }
                    t.push_str(&format!("---{nl}"));
                }
                _ => {
                    for k in &keys {
                        t.push_str(&format!("{k}:: v {k}{nl}"));
                    }
                    if !keys.is_empty() {
                        t.push_str(nl);
                    }
                }
            }
            t.push_str(&body.join(nl));
            (t, keys, logseq)
        })
    }

    fn dialect(logseq: bool) -> Dialect {
        Dialect::of(if logseq {
            Flavor::Logseq
        } else {
            Flavor::Obsidian
        })
    }

    /// Whether `text` starts with a byte-order mark, and the lines of `text` that do not name
    /// `key`.
    fn others(text: &str, key: &str) -> (bool, Vec<String>) {
        let body = text.trim_start_matches('\u{feff}');
        let lines = body
            .split_inclusive('\n')
            .filter(|l| !l.starts_with(&format!("{key}:")))
            .map(str::to_owned)
            .collect();
        (body.len() < text.len(), lines)
    }

    /// Text made of the pieces frontmatter, Logseq properties and markdown are made of.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("---"),
            Just("\n"),
            Just("\r\n"),
            Just("\r"),
            Just("\u{feff}"),
            Just("a: 1"),
            Just("k:: v"),
            Just("- "),
            Just("  "),
            Just("\t"),
            Just("#"),
            Just("'"),
            Just("\""),
            Just("["),
            Just("]"),
            Just("{"),
            Just("}"),
            Just(","),
            Just("&x "),
            Just("*x"),
            Just("|"),
            Just("fuzz-key"),
            Just(":"),
            Just("é"),
            Just("```"),
        ];
        prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn any_text_is_edited_or_refused_and_a_new_key_comes_off_again(
            text in hostile(), logseq in any::<bool>(), v in value()
        ) {
            let d = dialect(logseq);
            let k = "fuzz-key".to_owned();
            let Ok(set) = set_properties(&text, &d, &[(k.clone(), v)], &[]) else {
                return Ok(());
            };
            // An empty frontmatter (`---`, `---`) is removed with the key: documented.
            let blank_frontmatter = pkm_markdown::frontmatter::locate(&text)
                .is_some_and(|s| text[s.yaml].trim().is_empty());
            if set.changes[0].before.is_none() && !blank_frontmatter {
                let back = set_properties(&set.text, &d, &[], std::slice::from_ref(&k));
                prop_assert_eq!(back.map(|b| b.text), Ok(text));
            }
        }

        #[test]
        fn set_then_remove_of_a_new_key_gives_back_the_note(
            (text, keys, logseq) in note(), k in key(), v in value()
        ) {
            prop_assume!(!keys.contains(&k));
            let d = dialect(logseq);
            let set = match set_properties(&text, &d, &[(k.clone(), v.clone())], &[]) {
                Ok(set) => set,
                // Only a Logseq value may be refused (blanks around it, a comma in an item).
                Err(MarkdownError::InvalidProperty(_)) if logseq => return Ok(()),
                Err(e) => return Err(TestCaseError::fail(format!("{e}: {text:?}"))),
            };
            let back = set_properties(&set.text, &d, &[], std::slice::from_ref(&k)).unwrap();
            prop_assert_eq!(back.text, text);
        }

        #[test]
        fn setting_a_key_leaves_every_other_line_as_it_was(
            (text, keys, logseq) in note(), pick in any::<prop::sample::Index>(), v in value()
        ) {
            if keys.is_empty() {
                return Ok(());
            }
            let k = pick.get(&keys).clone();
            let d = dialect(logseq);
            let set = match set_properties(&text, &d, &[(k.clone(), v.clone())], &[]) {
                Ok(set) => set,
                Err(MarkdownError::InvalidProperty(_)) if logseq => return Ok(()),
                Err(e) => return Err(TestCaseError::fail(format!("{e}: {text:?}"))),
            };
            prop_assert_eq!(others(&set.text, &k), others(&text, &k));
            // Removing a page's only property takes the blank line after it too (documented).
            if !logseq || keys.len() > 1 {
                let removed = set_properties(&text, &d, &[], std::slice::from_ref(&k)).unwrap();
                prop_assert_eq!(others(&removed.text, &k), others(&text, &k));
            }
        }
    }
}
