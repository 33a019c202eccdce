//! Edits inside a note: what each op writes, that bytes it does not address stay, that a list of
//! edits applies whole or not at all; and, as properties, for generated notes and every heading
//! of the fixture vaults.

use std::path::Path;

use pkm_markdown::MarkdownError;
use pkm_markdown::diff::unified;
use pkm_markdown::edit::{EditOp, apply, plan, splice};
use pkm_markdown::sections::{find, sections};
use proptest::prelude::*;

use crate::edit_list_check::ByOrder;

fn edit(text: &str, edits: &[EditOp]) -> String {
    apply(text, edits, false, &ByOrder).unwrap()
}

fn outline_edit(text: &str, edits: &[EditOp]) -> String {
    apply(text, edits, true, &ByOrder).unwrap()
}

fn append(text: &str, section: Option<&str>) -> EditOp {
    EditOp::Append {
        text: text.into(),
        section: section.map(Into::into),
    }
}

fn prepend(text: &str, section: Option<&str>) -> EditOp {
    EditOp::Prepend {
        text: text.into(),
        section: section.map(Into::into),
    }
}

fn replace_section(section: &str, text: &str) -> EditOp {
    EditOp::ReplaceSection {
        section: section.into(),
        text: text.into(),
    }
}

fn replace(find: &str, text: &str, count: usize) -> EditOp {
    EditOp::Replace {
        find: find.into(),
        text: text.into(),
        count,
    }
}

const NOTE: &str =
    "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n- one\n\n## Fixed\n- old\n";

#[test]
fn append_and_prepend_to_a_section_and_to_the_note() {
    assert_eq!(
        edit(NOTE, &[append("- two\n", Some("known issues"))]),
        "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n- one\n- two\n\n## Fixed\n- old\n"
    );
    assert_eq!(
        edit(NOTE, &[prepend("first", Some("Sync#Fixed"))]),
        "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n- one\n\n## Fixed\nfirst\n- old\n"
    );
    assert_eq!(
        edit(NOTE, &[prepend("top", None), append("end", None)]),
        "---\ntitle: T\n---\ntop\n# Sync\nintro\n\n## Known issues\n- one\n\n## Fixed\n- old\nend\n"
    );
}

#[test]
fn replace_section_keeps_the_heading_and_the_blank_lines_after() {
    assert_eq!(
        edit(NOTE, &[replace_section("Known issues", "- none\n\n\n")]),
        "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n- none\n\n## Fixed\n- old\n"
    );
    // Emptied, then filled again.
    let emptied = edit(NOTE, &[replace_section("Known issues", "")]);
    assert_eq!(
        emptied,
        "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n\n## Fixed\n- old\n"
    );
    assert_eq!(
        edit(&emptied, &[replace_section("Known issues", "- back")]),
        "---\ntitle: T\n---\n# Sync\nintro\n\n## Known issues\n- back\n\n## Fixed\n- old\n"
    );
}

#[test]
fn replace_needs_the_expected_count() {
    let text = "a cat, a cat, a dog\n";
    assert_eq!(
        edit(text, &[replace("cat", "cow", 2)]),
        "a cow, a cow, a dog\n"
    );
    assert_eq!(
        apply(text, &[replace("cat", "cow", 1)], false, &ByOrder),
        Err(MarkdownError::InEdit {
            n: 1,
            source: Box::new(MarkdownError::FindCount {
                find: "cat".into(),
                expected: 1,
                found: 2
            })
        })
    );
    let err = apply(
        text,
        &[replace("dog", "x", 1), replace("emu", "y", 1)],
        false,
        &ByOrder,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "edit 2: found 0 occurrence(s) of \"emu\", expected 1; nothing was written"
    );
}

#[test]
fn edits_apply_in_order_on_what_the_edits_before_left() {
    let text = "# A\nx\n";
    assert_eq!(
        edit(
            text,
            &[append("## B\ny", Some("A")), append("z", Some("A#B"))]
        ),
        "# A\nx\n## B\ny\nz\n"
    );
}

#[test]
fn line_endings_bom_and_final_newline_stay() {
    let crlf = "\u{feff}# A\r\nx\r\n\r\n# B\r\ny";
    assert_eq!(
        edit(
            crlf,
            &[append("one\ntwo", Some("A")), append("end", Some("B"))]
        ),
        "\u{feff}# A\r\nx\r\none\r\ntwo\r\n\r\n# B\r\ny\r\nend"
    );
    assert_eq!(
        edit(crlf, &[replace_section("B", "new")]),
        "\u{feff}# A\r\nx\r\n\r\n# B\r\nnew"
    );
    assert_eq!(
        edit(crlf, &[prepend("p", None)]),
        "\u{feff}p\r\n# A\r\nx\r\n\r\n# B\r\ny"
    );
    assert_eq!(edit("", &[append("first", None)]), "first\n");
    assert_eq!(edit("# H", &[append("x", Some("H"))]), "# H\nx");
}

#[test]
fn logseq_sections_get_blocks_at_their_indentation() {
    let text = "title:: P\n\n- ## Plans\n\t- one\n- other\n";
    assert_eq!(
        outline_edit(text, &[append("two\nmore", Some("Plans"))]),
        "title:: P\n\n- ## Plans\n\t- one\n\t- two\n\t  more\n- other\n"
    );
    assert_eq!(
        outline_edit(text, &[prepend("- zero\n\t- zero.a", Some("Plans"))]),
        "title:: P\n\n- ## Plans\n\t- zero\n\t\t- zero.a\n\t- one\n- other\n"
    );
    assert_eq!(
        outline_edit(text, &[append("last", None), prepend("first", None)]),
        "title:: P\n- first\n\n- ## Plans\n\t- one\n- other\n- last\n"
    );
    // Under a markdown heading of an outline note, the blocks' indentation.
    let md = "## Usage\n\t- one\n\t\t- deep\n## Notes\n## Text\nplain\n";
    assert_eq!(
        outline_edit(
            md,
            &[
                append("two", Some("Usage")),
                append("n", Some("Notes")),
                append("more", Some("Text"))
            ]
        ),
        "## Usage\n\t- one\n\t\t- deep\n\t- two\n## Notes\n- n\n## Text\nplain\nmore\n"
    );
    // A heading with no children yet: one step deeper than it, as the note indents.
    let spaces = "- # A\n  - a\n- # B\n";
    assert_eq!(
        outline_edit(spaces, &[append("b", Some("B"))]),
        "- # A\n  - a\n- # B\n  - b\n"
    );
    // Text copied from the note (already at the children's indentation) is kept as it is.
    assert_eq!(
        outline_edit(text, &[replace_section("Plans", "\t- new\n\t\t- deeper")]),
        "title:: P\n\n- ## Plans\n\t- new\n\t\t- deeper\n- other\n"
    );
}

#[test]
fn replace_block_changes_its_own_text_only() {
    let text = "- TODO first\n  id:: 6571a9c2-1111-4c4c-8888-000000000001\n  - child\n- second\n";
    assert_eq!(
        outline_edit(
            text,
            &[EditOp::ReplaceBlock {
                block_id: "b0".into(),
                text: "DONE first\nmore".into()
            }]
        ),
        "- DONE first\n  more\n  id:: 6571a9c2-1111-4c4c-8888-000000000001\n  - child\n- second\n"
    );
    let md = "# Title\n\npara line\nsecond line\n";
    assert_eq!(
        edit(
            md,
            &[EditOp::ReplaceBlock {
                block_id: "b0".into(),
                text: "New title".into()
            }]
        ),
        "# New title\n\npara line\nsecond line\n"
    );
    let err = apply(
        md,
        &[EditOp::ReplaceBlock {
            block_id: "b9".into(),
            text: "x".into(),
        }],
        false,
        &ByOrder,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "edit 1: no block \"b9\" in this note");
    assert_eq!(err.kind(), pkm_core::ErrorKind::NotFound);
}

#[test]
fn a_refused_section_names_what_there_is() {
    let err = apply(NOTE, &[append("x", Some("Nope"))], false, &ByOrder)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("edit 1: no section \"Nope\" in this note; its headings: Sync, Sync#Known issues, Sync#Fixed"),
        "{err}"
    );
}

#[test]
fn the_diff_shows_the_change_with_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
    assert_eq!(
        unified(old, new, "n.md"),
        "--- a/n.md\n+++ b/n.md\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
    );
    assert_eq!(unified(old, old, "n.md"), "");
    assert_eq!(
        unified("x", "x\ny", "n.md"),
        "--- a/n.md\n+++ b/n.md\n@@ -1,1 +1,2 @@\n-x\n\\ No newline at end of file\n+x\n+y\n\\ No newline at end of file\n"
    );
    assert_eq!(
        unified("", "new\n", "n.md"),
        "--- a/n.md\n+++ b/n.md\n@@ -0,0 +1,1 @@\n+new\n"
    );
}

// ---- properties ----

/// Every note of the repository's fixture vaults and the example vault.
fn fixture_notes() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    let mut dirs = vec![root.join("examples/vault"), root.join("tests/fixtures")];
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"));
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let text = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
                out.push((p.display().to_string(), text));
            }
        }
    }
    assert!(out.len() >= 40, "fixture notes found: {}", out.len());
    out
}

#[test]
fn every_heading_of_the_fixture_vaults_round_trips() {
    let mut headings = 0;
    for (name, text) in fixture_notes() {
        for outline in [false, true] {
            for s in sections(&text) {
                let body = text[s.body.clone()].to_owned();
                let same = apply(&text, &[replace_section(&s.path, &body)], outline, &ByOrder);
                assert_eq!(
                    same,
                    Ok(text.clone()),
                    "{name}: replace_section {:?}",
                    s.path
                );
                headings += 1;
            }
        }
    }
    assert!(headings > 100, "headings tried: {headings}");
}

#[test]
fn appending_under_each_fixture_heading_changes_only_that_section() {
    for (name, text) in fixture_notes() {
        let all = sections(&text);
        for s in &all {
            let Ok(one) = find(&text, &all, &s.path) else {
                continue;
            };
            if one != s {
                continue;
            }
            let new = edit(&text, &[append("- added line", Some(&s.path))]);
            // Everything before the section's end is as it was, and everything after it.
            let end = s.body.end;
            assert!(new.starts_with(&text[..end]), "{name}: {}", s.path);
            assert!(new.ends_with(&text[end..]), "{name}: {}", s.path);
            // The section now holds the line.
            let again = sections(&new);
            let got = find(&new, &again, &s.path).unwrap();
            assert!(
                new[got.range()].contains("- added line"),
                "{name}: {}",
                s.path
            );
        }
    }
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{1,6}( [a-z]{1,6}){0,3}",
        2 => "#{1,4} [A-Za-z]{1,5}",
        1 => "- [a-z]{1,5}",
        1 => "\t- [a-z]{1,5}",
        1 => "\t\t- #{1,2} [a-z]{1,5}",
        1 => Just("```".to_owned()),
        1 => Just("===".to_owned()),
        1 => Just("---".to_owned()),
        1 => Just("  heading:: true".to_owned()),
        1 => Just("text ^blk".to_owned()),
        2 => Just(String::new()),
    ]
}

fn note() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(line(), 0..25),
    )
        .prop_map(|(bom, crlf, final_eol, lines)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut t = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            t.push_str(&lines.join(eol));
            if final_eol && !lines.is_empty() {
                t.push_str(eol);
            }
            t
        })
}

fn op(headings: Vec<String>) -> impl Strategy<Value = EditOp> {
    let section = prop::sample::select(if headings.is_empty() {
        vec!["none".to_owned()]
    } else {
        headings
    });
    let text = "[a-z]{0,4}(\n[a-z\\- ]{0,6}){0,2}\n?";
    prop_oneof![
        (text, prop::option::of(section.clone())).prop_map(|(t, s)| EditOp::Append {
            text: t,
            section: s
        }),
        (text, prop::option::of(section.clone())).prop_map(|(t, s)| EditOp::Prepend {
            text: t,
            section: s
        }),
        (text, section).prop_map(|(t, s)| EditOp::ReplaceSection {
            section: s,
            text: t
        }),
        ("[a-z]{1,2}", text, 1..3usize).prop_map(|(f, t, c)| EditOp::Replace {
            find: f,
            text: t,
            count: c
        }),
        (text, 0..8usize).prop_map(|(t, n)| EditOp::ReplaceBlock {
            block_id: format!("b{n}"),
            text: t
        }),
    ]
}

fn note_and_ops() -> impl Strategy<Value = (String, Vec<EditOp>, bool)> {
    note().prop_flat_map(|n| {
        let heads: Vec<String> = sections(&n).into_iter().map(|s| s.path).collect();
        (
            Just(n),
            prop::collection::vec(op(heads), 1..5),
            any::<bool>(),
        )
    })
}

/// Where an edit may change the text it is given: the section's body or its end for section
/// edits, the occurrences for a replace, the block's own lines for a block.
fn addressed(text: &str, edit: &EditOp) -> Option<std::ops::Range<usize>> {
    let all = sections(text);
    let section = |a: &str| find(text, &all, a).ok().cloned();
    Some(match edit {
        EditOp::Append {
            section: Some(a), ..
        } => {
            let s = section(a)?;
            s.body.end..s.body.end
        }
        EditOp::Prepend {
            section: Some(a), ..
        } => {
            let s = section(a)?;
            s.heading.end..s.heading.end
        }
        EditOp::ReplaceSection { section: a, .. } => section(a)?.body,
        _ => return None,
    })
}

/// The `edit_list` fuzz target's check, on its seeds (`fuzz/seeds/edit_list/`).
#[test]
fn the_fuzz_targets_seeds_pass_its_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/edit_list");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        crate::edit_list_check::check(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n >= 3, "seeds: {n}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(512)))]

    /// Every byte outside what an edit addresses is unchanged, whatever the edits, and the
    /// splices an edit plans give the text `apply` gives.
    #[test]
    fn bytes_no_edit_addresses_stay((text, ops, outline) in note_and_ops()) {
        let mut current = text.clone();
        let mut ok = true;
        for e in &ops {
            let Ok(splices) = plan(&current, e, outline, &ByOrder) else { ok = false; break };
            let next = splice(&current, &splices).expect("splices in bounds apply");
            for w in splices.windows(2) {
                prop_assert!(w[0].range.end <= w[1].range.start);
            }
            if let Some(r) = addressed(&current, e) {
                for s in &splices {
                    prop_assert!(r.start <= s.range.start && s.range.end <= r.end, "{e:?} {s:?} {r:?}");
                }
            }
            if let Some(first) = splices.first() {
                prop_assert!(next.starts_with(&current[..first.range.start]));
            }
            if let Some(last) = splices.last() {
                prop_assert!(next.ends_with(&current[last.range.end..]));
            }
            if let EditOp::Replace { find, count, .. } = e {
                prop_assert_eq!(splices.len(), *count);
                for s in &splices {
                    prop_assert_eq!(&current[s.range.clone()], find.as_str());
                }
            }
            current = next;
        }
        let all = apply(&text, &ops, outline, &ByOrder);
        if ok {
            prop_assert_eq!(all, Ok(current));
        } else {
            prop_assert!(all.is_err());
        }
    }

    /// Replacing a section's body with its own text changes nothing; replacing it with new text
    /// then reading the section gives that text back.
    #[test]
    fn replace_section_round_trips(text in note(), outline in any::<bool>(), new in "[a-z]{1,5}( [a-z]{1,5})?") {
        let all = sections(&text);
        for s in &all {
            // Every section has a path of its own, repeated headings included.
            prop_assert_eq!(find(&text, &all, &s.path), Ok(s));
            let body = text[s.body.clone()].to_owned();
            prop_assert_eq!(apply(&text, &[replace_section(&s.path, &body)], outline, &ByOrder), Ok(text.clone()));
            let changed = apply(&text, &[replace_section(&s.path, &new)], outline, &ByOrder).unwrap();
            let again = sections(&changed);
            // Unless the new line joined what follows (a setext underline makes it a heading).
            let same_shape = again.iter().map(|x| &x.path).eq(all.iter().map(|x| &x.path));
            if let (true, Ok(got)) = (same_shape, find(&changed, &again, &s.path)) {
                let body = &changed[got.body.clone()];
                prop_assert!(body.trim_end().ends_with(new.as_str()), "{:?} in {:?}", new, body);
            }
        }
    }

    /// The fuzz target's check, on inputs built of note-like pieces.
    #[test]
    fn the_fuzz_targets_check_holds(
        pieces in prop::collection::vec(prop_oneof![
            3 => line(),
            1 => Just("\u{0}".to_owned()),
            1 => prop::sample::select(vec!["\u{0}a", "\u{0}p", "\u{0}s#", "\u{0}r", "\u{0}b", "\u{1}", "\u{1}#", "\n", "\r\n", "b1"]).prop_map(str::to_owned),
        ], 0..30)
    ) {
        crate::edit_list_check::check(pieces.concat().as_bytes());
    }
}
