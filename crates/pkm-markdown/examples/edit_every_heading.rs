//! Tries every heading of every note of a folder the way `kb_edit_page` edits it: replacing a
//! section with its own body changes nothing; appending under it and replacing it change only
//! that section (every byte before and after it stays) and a heading's section then holds the
//! new text.
//!
//! `cargo run --release -p pkm-markdown --example edit_every_heading -- <folder> [--outline]`
//! (`--outline`: as a Logseq vault). Prints the counts and every failure; exits 1 on one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use pkm_markdown::edit::{BlockIds, EditOp, apply};
use pkm_markdown::sections::{Section, SectionKind, find, sections};

struct NoIds;

impl BlockIds for NoIds {
    fn position(&self, _: &str, _: &str) -> Option<usize> {
        None
    }
}

fn notes(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            notes(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// What is wrong with editing section `s` of `text`, if anything.
fn check(text: &str, s: &Section, outline: bool) -> Option<String> {
    let edit = |op: EditOp| apply(text, &[op], outline, &NoIds).map_err(|e| e.to_string());
    let body = text[s.body.clone()].to_owned();
    let same = edit(EditOp::ReplaceSection {
        section: s.path.clone(),
        text: body,
    });
    if same.as_deref() != Ok(text) {
        return Some(format!("replace_section with its own body: {same:?}"));
    }
    let probe = "- edit probe line";
    for op in [
        EditOp::Append {
            text: probe.into(),
            section: Some(s.path.clone()),
        },
        EditOp::ReplaceSection {
            section: s.path.clone(),
            text: probe.into(),
        },
    ] {
        let new = match edit(op.clone()) {
            Ok(n) => n,
            Err(e) => return Some(format!("{op:?}: {e}")),
        };
        let (before, after) = match op {
            EditOp::Append { .. } => (&text[..s.body.end], &text[s.body.end..]),
            _ => (&text[..s.body.start], &text[s.body.end..]),
        };
        if !new.starts_with(before) || !new.ends_with(after) {
            return Some(format!("{op:?} changed bytes outside the section"));
        }
        // An Obsidian `^id` on a paragraph has nothing under it: text added goes after it.
        if s.kind == SectionKind::Anchor {
            continue;
        }
        let again = sections(&new);
        match find(&new, &again, &s.path) {
            Ok(got) if new[got.range()].contains("edit probe line") => {}
            other => {
                return Some(format!(
                    "{op:?}: the section does not hold the text: {other:?}"
                ));
            }
        }
    }
    None
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outline = args.iter().any(|a| a == "--outline");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .expect("a folder");
    let mut files = Vec::new();
    notes(Path::new(dir), &mut files);
    let (mut tried, mut ambiguous, mut failed) = (0, 0, 0);
    for f in &files {
        let Ok(text) = String::from_utf8(std::fs::read(f).unwrap()) else {
            continue;
        };
        let all = sections(&text);
        for s in &all {
            if find(&text, &all, &s.path).ok() != Some(s) {
                ambiguous += 1;
                continue;
            }
            tried += 1;
            if let Some(why) = check(&text, s, outline) {
                failed += 1;
                println!("{}: {:?}: {why}", f.display(), s.path);
            }
        }
    }
    println!(
        "{} notes, {tried} sections edited, {ambiguous} not addressable alone (a path two share), {failed} failed",
        files.len()
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
