//! `kb_move_page` over generated vaults (issue #34): after a random move of a note or a folder,
//! every link that resolved to a moved note resolves to it at its new path, every other link
//! resolves as before, and every byte outside the rewritten link targets is unchanged. Resolution
//! is checked with a small resolver written here from the documented rules (ADR-0008), not the
//! app's, and links are read back from the text by this test's own reading of the lines it wrote.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::reference::Reference;
use pkm_core::{ErrorKind, Vault};
use proptest::prelude::*;
use stratum_app::commands::move_page;
use stratum_app::scan::{self, ScanMode};
use stratum_app::{App, AppConfig};

/// Folders and names drawn from small sets, so that one file name lands in several folders and
/// titles and aliases collide with file names; `Moved`/`new` only as targets of a move.
const FOLDERS: [&str; 6] = ["", "a", "a/b", "c", "c/b", "a/c"];
const TO_FOLDERS: [&str; 5] = ["", "a/b", "c", "new", "a/new"];
const NAMES: [&str; 5] = ["Alpha", "beta", "Gamma Ray", "b", "x___y"];
const TO_NAMES: [&str; 4] = ["Alpha", "Moved", "Gamma Ray", "m___n"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum App3 {
    Markdown,
    Obsidian,
    Logseq,
}

#[derive(Debug, Clone)]
enum Line {
    /// `- see {prefix}[[T{suffix}]]`: prefix `!` or nothing; suffix `|shown`, `#Part` or nothing.
    Wiki {
        target: (Option<usize>, usize),
        embed: bool,
        suffix: usize,
    },
    /// `- md [x](rel)` to the note at (folder, name), relative, spaces as `%20`.
    Markdown { folder: usize, name: usize },
    /// A wiki link inside code: never changes.
    Code { name: usize },
}

const SUFFIXES: [&str; 3] = ["", "|shown", "#Part"];

#[derive(Debug, Clone)]
struct Note {
    folder: usize,
    name: usize,
    heading: Option<usize>,
    alias: Option<usize>,
    lines: Vec<Line>,
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        3 => ((proptest::option::of(1..FOLDERS.len()), 0..NAMES.len()), any::<bool>(), 0..SUFFIXES.len())
            .prop_map(|(target, embed, suffix)| Line::Wiki { target, embed, suffix }),
        1 => (0..FOLDERS.len(), 0..NAMES.len()).prop_map(|(folder, name)| Line::Markdown { folder, name }),
        1 => (0..NAMES.len()).prop_map(|name| Line::Code { name }),
    ]
}

fn note() -> impl Strategy<Value = Note> {
    (
        0..FOLDERS.len(),
        0..NAMES.len(),
        proptest::option::of(0..NAMES.len()),
        proptest::option::of(0..NAMES.len()),
        proptest::collection::vec(line(), 1..8),
    )
        .prop_map(|(folder, name, heading, alias, lines)| Note {
            folder,
            name,
            heading,
            alias,
            lines,
        })
}

fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() {
        format!("{name}.md")
    } else {
        format!("{folder}/{name}.md")
    }
}

fn folder_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(f, _)| f)
}

fn relative(from: &str, to: &str) -> String {
    let from: Vec<&str> = folder_of(from)
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let to: Vec<&str> = to.split('/').collect();
    let common = from
        .iter()
        .zip(&to[..to.len() - 1])
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = "../".repeat(from.len() - common);
    out.push_str(&to[common..].join("/"));
    out
}

fn text_of(n: &Note, path: &str, flavor: App3) -> String {
    let mut t = String::new();
    if let Some(a) = n.alias.filter(|_| flavor != App3::Logseq) {
        t.push_str(&format!("---\naliases: [\"{}\"]\n---\n", NAMES[a]));
    }
    if let Some(h) = n.heading {
        t.push_str(&format!("# {}\n\n", NAMES[h]));
    }
    for l in &n.lines {
        match l {
            Line::Wiki {
                target: (f, name),
                embed,
                suffix,
            } => {
                let target = match f {
                    Some(f) => format!(
                        "{}/{}",
                        FOLDERS[*f].rsplit('/').next().unwrap(),
                        NAMES[*name]
                    ),
                    None => NAMES[*name].to_owned(),
                };
                let bang = if *embed { "!" } else { "" };
                t.push_str(&format!("- see {bang}[[{target}{}]]\n", SUFFIXES[*suffix]));
            }
            Line::Markdown { folder, name } => {
                let rel = relative(path, &join(FOLDERS[*folder], NAMES[*name]));
                t.push_str(&format!("- md [x]({})\n", rel.replace(' ', "%20")));
            }
            Line::Code { name } => t.push_str(&format!("- `[[{}]]`\n", NAMES[*name])),
        }
    }
    t.push_str("- end\n");
    t
}

/// One link read back from a line this test wrote: its kind, the target as written, and the
/// line with the target cut out (what must not change).
#[derive(Debug)]
struct ReadLink {
    markdown: bool,
    target: String,
    rest: String,
}

fn read_line(line: &str) -> Option<ReadLink> {
    if let Some(r) = line.strip_prefix("- see ") {
        let open = r.find("[[")? + 2;
        let close = r.find("]]")?;
        let inner = &r[open..close];
        let end = inner.find(['|', '#']).unwrap_or(inner.len());
        let target = inner[..end].to_owned();
        let rest = format!("- see {}{}{}", &r[..open], &inner[end..], &r[close..]);
        return Some(ReadLink {
            markdown: false,
            target,
            rest,
        });
    }
    let r = line.strip_prefix("- md [x](")?;
    let close = r.rfind(')')?;
    Some(ReadLink {
        markdown: true,
        target: r[..close].replace("%20", " "),
        rest: format!("- md [x]({}", &r[close..]),
    })
}

/// The pages of a generated vault as the reference resolver reads them, and the links it reads
/// back.
impl Reference {
    fn new(flavor: App3, pages: &BTreeMap<String, (Option<usize>, Option<usize>)>) -> Reference {
        Reference {
            pages: pages
                .iter()
                .map(|(path, (heading, alias))| {
                    let slug = path.strip_suffix(".md").unwrap().to_lowercase();
                    let stem = slug.rsplit('/').next().unwrap().to_owned();
                    let title = match flavor {
                        App3::Markdown => heading.map_or(stem, |h| NAMES[h].to_lowercase()),
                        App3::Obsidian => stem,
                        App3::Logseq => stem.replace("___", "/"),
                    };
                    let alias = alias
                        .filter(|_| flavor != App3::Logseq)
                        .map(|a| NAMES[a].to_lowercase());
                    (path.clone(), slug, title, alias)
                })
                .collect(),
            aliases_last: flavor == App3::Obsidian,
        }
    }

    /// What a link read back from the note at `from` names.
    fn resolve_link(&self, l: &ReadLink, from: &str) -> Option<String> {
        if !l.markdown {
            return self.resolve(&l.target, Some(from));
        }
        let mut parts: Vec<&str> = folder_of(from)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for seg in l.target.split('/') {
            match seg {
                ".." => {
                    parts.pop()?;
                }
                "." | "" => {}
                s => parts.push(s),
            }
        }
        self.resolve(&parts.join("/"), Some(from))
    }
}

#[derive(Debug, Clone)]
enum Move {
    Note {
        note: usize,
        folder: usize,
        name: usize,
    },
    Folder {
        from: usize,
        to: usize,
    },
}

fn a_move() -> impl Strategy<Value = Move> {
    prop_oneof![
        3 => (0..64usize, 0..TO_FOLDERS.len(), 0..TO_NAMES.len())
            .prop_map(|(note, folder, name)| Move::Note { note, folder, name }),
        1 => (1..FOLDERS.len(), 0..TO_FOLDERS.len()).prop_map(|(from, to)| Move::Folder { from, to }),
    ]
}

fn flavor() -> impl Strategy<Value = App3> {
    prop_oneof![
        Just(App3::Markdown),
        Just(App3::Obsidian),
        Just(App3::Logseq)
    ]
}

fn read_vault(root: &std::path::Path, paths: &[String]) -> BTreeMap<String, String> {
    paths
        .iter()
        .map(|p| (p.clone(), std::fs::read_to_string(root.join(p)).unwrap()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn a_move_keeps_every_link(
        notes in proptest::collection::vec(note(), 2..14),
        mv in a_move(),
        flavor in flavor(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        if flavor == App3::Obsidian {
            std::fs::create_dir_all(dir.path().join(".obsidian")).unwrap();
        }
        if flavor == App3::Logseq {
            std::fs::create_dir_all(dir.path().join("logseq")).unwrap();
            std::fs::write(dir.path().join("logseq/config.edn"), "{:file/name-format :triple-lowbar}\n").unwrap();
        }
        // A later note at the same path replaces an earlier one.
        let mut by_path: BTreeMap<String, Note> = BTreeMap::new();
        for n in notes {
            by_path.insert(join(FOLDERS[n.folder], NAMES[n.name]), n);
        }
        for (path, n) in &by_path {
            let abs = dir.path().join(path);
            std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
            std::fs::write(abs, text_of(n, path, flavor)).unwrap();
        }
        let paths: Vec<String> = by_path.keys().cloned().collect();
        let before = read_vault(dir.path(), &paths);
        let app: Arc<App> = App::open(Vault::open(dir.path()).unwrap(), AppConfig::default()).unwrap();
        scan::scan(&app, ScanMode::Incremental).unwrap();
        app.mark_ready();

        // The move asked, and old path → new path of each note it takes.
        let (from, to, moves): (String, String, BTreeMap<String, String>) = match mv {
            Move::Note { note, folder, name } => {
                let from = paths[note % paths.len()].clone();
                let to = join(TO_FOLDERS[folder], TO_NAMES[name]);
                (from.clone(), to.clone(), BTreeMap::from([(from, to)]))
            }
            Move::Folder { from, to } => {
                let (f, t) = (format!("{}/", FOLDERS[from]), format!("{}/", TO_FOLDERS[to]));
                let t = if t == "/" { "top/".to_owned() } else { t };
                let moves = paths
                    .iter()
                    .filter_map(|p| p.strip_prefix(&f).map(|rest| (p.clone(), format!("{t}{rest}"))))
                    .collect();
                (f, t, moves)
            }
        };
        let result = move_page::move_page(&app, &from, &to, true, None, false);
        let taken = moves.values().any(|t| paths.contains(t) && !moves.contains_key(t))
            || moves.values().any(|t| paths.contains(t));
        let into_itself = from.ends_with('/') && to.to_lowercase().starts_with(&from.to_lowercase());
        if from == to || into_itself {
            prop_assert_eq!(result.unwrap_err().kind, ErrorKind::InvalidArgs);
            return Ok(());
        }
        if moves.is_empty() {
            prop_assert_eq!(result.unwrap_err().kind, ErrorKind::NotFound);
            return Ok(());
        }
        if taken {
            prop_assert_eq!(result.unwrap_err().kind, ErrorKind::Conflict);
            prop_assert_eq!(read_vault(dir.path(), &paths), before, "a refused move changed nothing");
            return Ok(());
        }
        let answer = result.unwrap();
        prop_assert_eq!(answer.moved.len(), moves.len());
        for old in moves.keys() {
            prop_assert!(!dir.path().join(old).exists(), "{} is gone", old);
        }
        let map = |p: &str| moves.get(p).cloned().unwrap_or_else(|| p.to_owned());
        let new_paths: Vec<String> = paths.iter().map(|p| map(p)).collect();
        let after = read_vault(dir.path(), &new_paths);

        let meta = |m: &dyn Fn(&str) -> String| -> BTreeMap<String, (Option<usize>, Option<usize>)> {
            by_path.iter().map(|(p, n)| (m(p), (n.heading, n.alias))).collect()
        };
        let old_ref = Reference::new(flavor, &meta(&|p| p.to_owned()));
        let new_ref = Reference::new(flavor, &meta(&map));
        let mut rewritten: BTreeMap<String, usize> = BTreeMap::new();
        for path in &paths {
            let new_path = map(path);
            let (old_text, new_text) = (&before[path], &after[&new_path]);
            let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (old_text.lines().collect(), new_text.lines().collect());
            prop_assert_eq!(old_lines.len(), new_lines.len(), "{} → {}:\n{}\n---\n{}", path, new_path, old_text, new_text);
            for (o, n) in old_lines.iter().zip(&new_lines) {
                match (read_line(o), read_line(n)) {
                    (Some(ol), Some(nl)) => {
                        prop_assert_eq!(&ol.rest, &nl.rest, "bytes outside the target in {}", new_path);
                        let was = old_ref.resolve_link(&ol, path);
                        let now = new_ref.resolve_link(&nl, &new_path);
                        match was {
                            Some(was) => prop_assert_eq!(now, Some(map(&was)), "{:?} in {} (now {:?} in {})", o, path, n, new_path),
                            None => prop_assert_eq!(o, n, "an unresolved link stays as written"),
                        }
                        if o != n {
                            *rewritten.entry(new_path.clone()).or_default() += 1;
                        }
                    }
                    (None, None) => prop_assert_eq!(o, n, "a line without a link stays, in {}", new_path),
                    _ => prop_assert!(false, "{:?} became {:?}", o, n),
                }
            }
        }
        let answered: BTreeMap<String, usize> = answer.rewritten.iter().map(|r| (r.path.clone(), r.links)).collect();
        prop_assert_eq!(answered, rewritten);
    }
}

/// Opens a vault of `files` (path, text), moves `from` to `to`, and returns the files after.
fn moved(files: &[(&str, &str)], from: &str, to: &str) -> BTreeMap<String, String> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let abs = dir.path().join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, text).unwrap();
    }
    let app: Arc<App> = App::open(Vault::open(dir.path()).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();
    move_page::move_page(&app, from, to, true, None, false).unwrap();
    let mut out = BTreeMap::new();
    for (path, _) in files {
        let path = if *path == from { to } else { path };
        if let Ok(text) = std::fs::read_to_string(dir.path().join(path)) {
            out.insert(path.to_owned(), text);
        }
    }
    out
}

#[test]
fn logseq_references_follow_the_graphs_file_names() {
    let after = moved(
        &[
            ("logseq/config.edn", "{:file/name-format :triple-lowbar}\n"),
            ("pages/a___b.md", "- the page a/b\n"),
            (
                "pages/linking.md",
                "tags:: a/b, other\n\n- see [[a/b]] and #[[a/b]] and #a/b\n- `[[a/b]]` stays\n",
            ),
        ],
        "pages/a___b.md",
        "pages/c___d e.md",
    );
    assert_eq!(
        after["pages/linking.md"],
        "tags:: c/d e, other\n\n- see [[c/d e]] and #[[c/d e]] and #[[c/d e]]\n- `[[a/b]]` stays\n"
    );
}

#[test]
fn foam_definitions_follow_their_wiki_links() {
    let after = moved(
        &[
            ("notes/note.md", "text\n"),
            (
                "index.md",
                "See [[note]] and [the note][note].\n\n[note]: notes/note.md \"Note\"\n",
            ),
        ],
        "notes/note.md",
        "archive/renamed.md",
    );
    assert_eq!(
        after["index.md"],
        "See [[renamed]] and [the note][note].\n\n[note]: archive/renamed.md \"Note\"\n"
    );
    // Used by no reference link, Foam's definition takes the wiki link's new name as label.
    let after = moved(
        &[
            ("notes/note.md", "text\n"),
            (
                "index.md",
                "See [[note]].\n\n[note]: notes/note.md \"Note\"\n",
            ),
        ],
        "notes/note.md",
        "archive/renamed.md",
    );
    assert_eq!(
        after["index.md"],
        "See [[renamed]].\n\n[renamed]: archive/renamed.md \"Note\"\n"
    );
}
