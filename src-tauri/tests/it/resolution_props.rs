//! Properties over generated vaults (issue #13): backlinks and link resolution equal a small
//! reference resolver written here from the documented rules (ADR-0008), not from the code; and
//! the tags `kb_get_page` shows for a note are exactly the tags under which `kb_search_by_tag`
//! finds it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::reference::Reference;
use pkm_core::{Vault, VaultPath};
use proptest::prelude::*;
use stratum_app::commands::{graph, page, search};
use stratum_app::scan::{self, ScanMode};
use stratum_app::{App, AppConfig};

/// Folders and names drawn from small sets, so that the same file name lands in several folders
/// and titles and aliases collide with file names.
const FOLDERS: [&str; 6] = ["", "a", "a/b", "c", "c/b", "a/c"];
const NAMES: [&str; 5] = ["Alpha", "beta", "Gamma Ray", "b", "Delta"];

#[derive(Debug, Clone)]
struct Note {
    folder: usize,
    name: usize,
    /// An H1 that becomes the title (plain markdown), from NAMES.
    heading: Option<usize>,
    alias: Option<usize>,
    /// Link targets: a name, or a partial path `folder/name`.
    links: Vec<(Option<usize>, usize)>,
    fm_tags: Vec<usize>,
    inline_tags: Vec<usize>,
}

const TAGS: [&str; 4] = ["red", "Blue", "green/leaf", "blue"];

fn note() -> impl Strategy<Value = Note> {
    (
        0..FOLDERS.len(),
        0..NAMES.len(),
        proptest::option::of(0..NAMES.len()),
        proptest::option::of(0..NAMES.len()),
        proptest::collection::vec(
            (proptest::option::of(1..FOLDERS.len()), 0..NAMES.len()),
            0..4,
        ),
        proptest::collection::vec(0..TAGS.len(), 0..3),
        proptest::collection::vec(0..TAGS.len(), 0..3),
    )
        .prop_map(
            |(folder, name, heading, alias, links, fm_tags, inline_tags)| Note {
                folder,
                name,
                heading,
                alias,
                links,
                fm_tags,
                inline_tags,
            },
        )
}

fn path_of(n: &Note) -> String {
    let folder = FOLDERS[n.folder];
    let name = NAMES[n.name];
    if folder.is_empty() {
        format!("{name}.md")
    } else {
        format!("{folder}/{name}.md")
    }
}

fn target_of(link: &(Option<usize>, usize)) -> String {
    match link.0 {
        // The last folder of a partial path only: `b/Alpha` names `a/b/Alpha` and `c/b/Alpha`.
        Some(f) => format!(
            "{}/{}",
            FOLDERS[f].rsplit('/').next().unwrap(),
            NAMES[link.1]
        ),
        None => NAMES[link.1].to_owned(),
    }
}

fn text_of(n: &Note) -> String {
    let mut t = String::new();
    if n.alias.is_some() || !n.fm_tags.is_empty() {
        t.push_str("---\n");
        if let Some(a) = n.alias {
            t.push_str(&format!("aliases: [\"{}\"]\n", NAMES[a]));
        }
        if !n.fm_tags.is_empty() {
            let tags: Vec<&str> = n.fm_tags.iter().map(|&i| TAGS[i]).collect();
            t.push_str(&format!("tags: [{}]\n", tags.join(", ")));
        }
        t.push_str("---\n");
    }
    if let Some(h) = n.heading {
        t.push_str(&format!("# {}\n\n", NAMES[h]));
    }
    for l in &n.links {
        t.push_str(&format!("- see [[{}]]\n", target_of(l)));
    }
    for &i in &n.inline_tags {
        t.push_str(&format!("- tagged #{}\n", TAGS[i]));
    }
    t.push_str("- end\n");
    t
}

/// The notes that are written (a later note at the same path replaces an earlier one).
fn vault_of(notes: &[Note]) -> BTreeMap<String, Note> {
    notes.iter().map(|n| (path_of(n), n.clone())).collect()
}

fn open(notes: &BTreeMap<String, Note>) -> (tempfile::TempDir, Arc<App>) {
    let dir = tempfile::tempdir().unwrap();
    for (path, n) in notes {
        let abs = dir.path().join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text_of(n)).unwrap();
    }
    let app = App::open(Vault::open(dir.path()).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    (dir, app)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn backlinks_and_resolution_follow_the_rules(notes in proptest::collection::vec(note(), 1..14)) {
        let notes = vault_of(&notes);
        let (_dir, app) = open(&notes);
        let reference = Reference {
            pages: notes
                .iter()
                .map(|(path, n)| {
                    let slug = path.strip_suffix(".md").unwrap().to_lowercase();
                    let title = n.heading.map_or(NAMES[n.name], |h| NAMES[h]).to_lowercase();
                    (path.clone(), slug, title, n.alias.map(|a| NAMES[a].to_lowercase()))
                })
                .collect(),
            aliases_last: false,
        };
        // Backlinks: every linking note whose link resolves, from where it is written, to P.
        let mut want: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (path, n) in &notes {
            for l in &n.links {
                if let Some(t) = reference.resolve(&target_of(l), Some(path))
                    && &t != path
                {
                    want.entry(t).or_default().insert(path.clone());
                }
            }
        }
        for path in notes.keys() {
            let vp = VaultPath::parse(app.vault(), path).unwrap();
            let got: BTreeSet<String> = search::get_page_backlinks(&app, &vp, false)
                .unwrap()
                .backlinks
                .into_iter()
                .map(|b| b.source_page)
                .collect();
            prop_assert_eq!(&got, &want.get(path).cloned().unwrap_or_default(), "backlinks of {}", path);
        }
        // kb_resolve_link: a link written outside any note.
        let mut targets: BTreeSet<String> = NAMES.iter().map(|n| (*n).to_owned()).collect();
        for f in FOLDERS.iter().skip(1) {
            for n in NAMES {
                targets.insert(format!("{}/{n}", f.rsplit('/').next().unwrap()));
                targets.insert(format!("{f}/{n}"));
            }
        }
        for t in &targets {
            let got = graph::resolve_link_target(&app, t).unwrap().resolved.map(|r| r.path);
            prop_assert_eq!(got, reference.resolve(t, None), "resolve {}", t);
            let written = graph::resolve_link_target(&app, &format!("[[{t}|shown]]")).unwrap();
            prop_assert_eq!(written.resolved.map(|r| r.path), reference.resolve(t, None), "resolve [[{}|shown]]", t);
        }
    }

    #[test]
    fn a_notes_tags_are_the_tags_that_find_it(notes in proptest::collection::vec(note(), 1..10)) {
        let notes = vault_of(&notes);
        let (_dir, app) = open(&notes);
        let mut by_page: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for path in notes.keys() {
            let vp = VaultPath::parse(app.vault(), path).unwrap();
            let tags = page::open_page(&app, &vp).unwrap().tags;
            by_page.insert(path.clone(), tags.iter().map(|t| t.to_lowercase()).collect());
        }
        for tag in TAGS {
            let found: BTreeSet<String> = search::search_by_tag(&app, tag, 1000, 0)
                .unwrap()
                .results
                .into_iter()
                .map(|h| h.page_path)
                .collect();
            let want: BTreeSet<String> = by_page
                .iter()
                .filter(|(_, tags)| tags.contains(&tag.to_lowercase()))
                .map(|(p, _)| p.clone())
                .collect();
            prop_assert_eq!(found, want, "tag {}", tag);
        }
    }
}
