//! Moves every note of a vault that has inbound links, one at a time, the way `kb_move_page`
//! does (a copy of the vault; the folder given is not changed), and checks after each move that
//! the vault's resolved links are the same, read through the move: the note's backlinks at its
//! new path are the ones it had, no link of the vault stops resolving or resolves elsewhere
//! (the link graph's edges before, mapped through the move, equal the edges after), and which
//! links a move added (a link that named nothing and now names the moved note).
//!
//! `cargo run --release -p stratum-app --example move_every_note -- <folder> [--obsidian] [--limit N]`
//! (`--obsidian`: open the copy as an Obsidian vault, as Obsidian would create `.obsidian/` in
//! it; public vaults leave that folder out of git). Each note goes to `zz-moved/<name> moved.md`. Prints the counts and every failure; exits 1 on
//! one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

use pkm_core::{Vault, VaultPath};
use stratum_app::commands::{graph, move_page, search};
use stratum_app::scan::{self, ScanMode};
use stratum_app::{App, AppConfig};

fn copy(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let (src, dst) = (e.path(), to.join(&name));
        if src.is_dir() {
            if name == ".git" || name == ".pkm" {
                continue;
            }
            std::fs::create_dir_all(&dst).unwrap();
            copy(&src, &dst);
        } else if src
            .extension()
            .is_some_and(|x| x == "md" || x == "edn" || x == "json")
        {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn edges(app: &App) -> BTreeSet<(String, String)> {
    graph::get_graph_data(app, None, 0)
        .unwrap()
        .edges
        .into_iter()
        .map(|e| (e.source, e.target))
        .collect()
}

fn backlinks(app: &App, path: &str) -> BTreeSet<String> {
    let vp = VaultPath::parse(app.vault(), path).unwrap();
    search::get_page_backlinks(app, &vp, false)
        .unwrap()
        .backlinks
        .into_iter()
        .map(|b| b.source_page)
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let folder = Path::new(
        args.get(1)
            .expect("usage: move_every_note <folder> [--obsidian] [--limit N]"),
    );
    let limit: usize = match args.iter().position(|a| a == "--limit") {
        Some(i) => args[i + 1].parse().unwrap(),
        None => usize::MAX,
    };
    let dir = tempfile::tempdir().unwrap();
    copy(folder, dir.path());
    if args.iter().any(|a| a == "--obsidian") {
        std::fs::create_dir_all(dir.path().join(".obsidian")).unwrap();
    }
    let app = App::open(Vault::open(dir.path()).unwrap(), AppConfig::default()).unwrap();
    scan::scan(&app, ScanMode::Incremental).unwrap();
    app.mark_ready();

    let pages: Vec<String> = graph::get_graph_data(&app, None, 0)
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| n.path)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (mut moved, mut rewritten_links, mut added, mut failures) = (0, 0, 0, Vec::new());
    let started = std::time::Instant::now();
    for from in pages {
        if moved >= limit {
            break;
        }
        let before = backlinks(&app, &from);
        if before.iter().all(|s| *s == from) {
            continue;
        }
        let stem = from.rsplit('/').next().unwrap().trim_end_matches(".md");
        let to = (1..)
            .map(|i| match i {
                1 => format!("zz-moved/{stem} moved.md"),
                i => format!("zz-moved/{stem} moved {i}.md"),
            })
            .find(|p| !dir.path().join(p).exists())
            .unwrap();
        let map = |p: &String| if *p == from { to.clone() } else { p.clone() };
        let edges_before: BTreeSet<(String, String)> =
            edges(&app).iter().map(|(s, t)| (map(s), map(t))).collect();
        let answer = match move_page::move_page(&app, &from, &to, true, None, false) {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!("{from}: {}", e.message));
                continue;
            }
        };
        moved += 1;
        rewritten_links += answer.rewritten.iter().map(|r| r.links).sum::<usize>();
        let after = backlinks(&app, &to);
        let want: BTreeSet<String> = before.iter().map(map).collect();
        if after != want {
            failures.push(format!(
                "{from} → {to}: backlinks lost {:?}, gained {:?}",
                want.difference(&after).collect::<Vec<_>>(),
                after.difference(&want).collect::<Vec<_>>()
            ));
        }
        let edges_after = edges(&app);
        let lost: Vec<_> = edges_before.difference(&edges_after).collect();
        if !lost.is_empty() {
            failures.push(format!(
                "{from} → {to}: links no longer resolving as before {lost:?}"
            ));
        }
        added += edges_after.difference(&edges_before).count();
    }
    println!(
        "{} notes moved, {} links rewritten, {} links that named nothing now resolve, {} failures, {:.1} s",
        moved,
        rewritten_links,
        added,
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
