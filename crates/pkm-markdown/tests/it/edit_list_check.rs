//! The check of the `edit_list` fuzz target (`fuzz/fuzz_targets/edit_list.rs`), here so that the
//! tests run it on the target's seeds and on generated inputs, and the target cannot drift from a
//! build that only the fuzz script makes.
//!
//! For any note and any list of edits, nothing panics, every edit's splices are sorted, within
//! the text and on character boundaries, the bytes outside them stay as they were, and `apply`
//! gives what the splices give one edit after another. Sections, their line spans and the diff of
//! the result are computed too, for the panics they might hide.
//!
//! Input: the note, then edits, separated by NUL; an edit is an op letter (a append, p prepend,
//! s replace_section, r replace, b replace_block), then its fields separated by \x01. A section
//! field `#n` names the note's n-th section path, so the fuzzer reaches real headings. An odd first
//! byte applies the edits as in an outline vault.

use pkm_markdown::block_parser::parse_blocks;
use pkm_markdown::diff::unified;
use pkm_markdown::edit::{BlockIds, EditOp, apply, plan, splice};
use pkm_markdown::frontmatter::body_start;
use pkm_markdown::sections::{find, line_span, sections};

/// Block ids `b<n>`: the n-th block in pre-order (the edit tests use it too).
pub struct ByOrder;

impl BlockIds for ByOrder {
    fn position(&self, text: &str, id: &str) -> Option<usize> {
        let n: usize = id.strip_prefix('b')?.parse().ok()?;
        let mut count = 0;
        let mut stack: Vec<_> = parse_blocks(text, body_start(text))
            .into_iter()
            .rev()
            .collect();
        while let Some(b) = stack.pop() {
            count += 1;
            stack.extend(b.children.into_iter().rev());
        }
        (n < count).then_some(n)
    }
}

fn section(note: &str, field: &str) -> String {
    match field
        .strip_prefix('#')
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) => {
            let all = sections(note);
            all.get(n % all.len().max(1))
                .map_or_else(|| field.to_owned(), |s| s.path.clone())
        }
        None => field.to_owned(),
    }
}

fn edit(note: &str, raw: &str) -> Option<EditOp> {
    let mut chars = raw.chars();
    let op = chars.next()?;
    let fields: Vec<&str> = chars.as_str().split('\u{1}').collect();
    let f = |i: usize| fields.get(i).copied().unwrap_or_default().to_owned();
    let opt = |i: usize| fields.get(i).map(|s| section(note, s));
    Some(match op {
        'a' => EditOp::Append {
            text: f(0),
            section: opt(1),
        },
        'p' => EditOp::Prepend {
            text: f(0),
            section: opt(1),
        },
        's' => EditOp::ReplaceSection {
            section: section(note, &f(0)),
            text: f(1),
        },
        'r' => EditOp::Replace {
            find: f(0),
            text: f(1),
            count: f(2).len() % 4,
        },
        'b' => EditOp::ReplaceBlock {
            block_id: f(0),
            text: f(1),
        },
        _ => return None,
    })
}

/// Runs the check on one input; panics on a violation.
pub fn check(data: &[u8]) {
    let input = String::from_utf8_lossy(data);
    let mut parts = input.split('\u{0}');
    let note = parts.next().unwrap_or_default().to_owned();
    let edits: Vec<EditOp> = parts.filter_map(|p| edit(&note, p)).take(50).collect();
    let outline = data.first().is_some_and(|b| b % 2 == 1);

    let all = sections(&note);
    for s in &all {
        assert!(s.heading.start <= s.heading.end && s.heading.end <= s.body.start);
        assert!(s.body.start <= s.body.end && s.body.end <= note.len());
        assert!(note.get(s.range()).is_some(), "section off a char boundary");
        let _ = line_span(&note, &s.range());
        let _ = find(&note, &all, &s.path);
    }

    let mut current = note.clone();
    let mut refused = false;
    for e in &edits {
        let Ok(splices) = plan(&current, e, outline, &ByOrder) else {
            refused = true;
            break;
        };
        let mut end = 0;
        for s in &splices {
            assert!(end <= s.range.start && s.range.start <= s.range.end);
            assert!(
                current.get(s.range.clone()).is_some(),
                "splice off a char boundary"
            );
            end = s.range.end;
        }
        let next = splice(&current, &splices).expect("splices in bounds apply");
        if let (Some(first), Some(last)) = (splices.first(), splices.last()) {
            assert!(
                next.starts_with(&current[..first.range.start]),
                "bytes before changed"
            );
            assert!(
                next.ends_with(&current[last.range.end..]),
                "bytes after changed"
            );
        } else {
            assert_eq!(next, current);
        }
        current = next;
    }
    let applied = apply(&note, &edits, outline, &ByOrder);
    if refused {
        assert!(applied.is_err());
    } else {
        assert_eq!(applied.as_deref(), Ok(current.as_str()));
    }
    let _ = unified(&note, &current, "n.md");
}
