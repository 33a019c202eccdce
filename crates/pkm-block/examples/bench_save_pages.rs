//! Times `save_pages` on a synthetic vault scan (10,000 pages of 20 blocks by default), then a
//! re-save of the same pages (the id-reuse path) and a few reads.
//!
//! `cargo run --release -p pkm-block --example bench_save_pages [pages] [blocks_per_page]`

use std::time::Instant;

use pkm_block::{BlockStore, NewBlock, NewLink, PageRecord};
use pkm_core::VaultPath;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let pages: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10_000);
    let per_page: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20);

    // BENCH_NO_LINKS / BENCH_NO_TAGS leave those out, to see what each costs.
    let with_links = std::env::var_os("BENCH_NO_LINKS").is_none();
    let with_tags = std::env::var_os("BENCH_NO_TAGS").is_none();
    let dir = tempfile::tempdir()?;
    let (store, mut writer) = BlockStore::open(&dir.path().join("blocks.db"))?;
    let batch = (0..pages)
        .map(|i| {
            let path = VaultPath::lexical(&format!("folder{}/note-{i}.md", i % 50))?;
            let rec = PageRecord {
                path,
                title: format!("Note {i}"),
                frontmatter_json: Some(format!(r#"{{"title":"Note {i}"}}"#)),
                aliases: vec![format!("n{i}")],
                tags: vec!["bench".into(), format!("t{}", i % 100)],
                mtime_ns: i as i64,
                size: 2000,
                hash: format!("{i:064x}"),
                modified_at: "2026-01-01T00:00:00Z".into(),
            };
            let blocks = (0..per_page)
                .map(|j| NewBlock {
                    parent: (j % 4 != 0).then(|| j - j % 4),
                    content: format!(
                        "block {j} of note {i} links to [[Note {}]] #tag{}",
                        (i + j) % pages,
                        j % 10
                    ),
                    links: [NewLink {
                        target: format!("Note {}", (i + j) % pages),
                        target_key: format!("note {}", (i + j) % pages),
                        alias: None,
                        position: 30,
                        embed: false,
                    }]
                    .into_iter()
                    .filter(|_| with_links)
                    .collect(),
                    tags: [format!("tag{}", j % 10)]
                        .into_iter()
                        .filter(|_| with_tags)
                        .collect(),
                    ..NewBlock::default()
                })
                .collect::<Vec<NewBlock>>();
            Ok((rec, blocks))
        })
        .collect::<Result<Vec<_>, pkm_core::PathError>>()?;

    // BENCH_BULK: the fresh save as a bulk load (a first scan), its indexes built at the commit.
    let bulk = std::env::var_os("BENCH_BULK").is_some();
    let t = Instant::now();
    if bulk {
        writer.begin_bulk()?;
    }
    writer.save_pages(&batch)?;
    if bulk {
        writer.commit_transaction()?;
    }
    println!(
        "save_pages, fresh{}: {pages} pages x {per_page} blocks in {:?}",
        if bulk { " (bulk)" } else { "" },
        t.elapsed()
    );
    let t = Instant::now();
    writer.save_pages(&batch)?;
    println!("save_pages, re-save (ids reused): {:?}", t.elapsed());
    let t = Instant::now();
    let all = store.all_pages()?;
    println!("all_pages ({}): {:?}", all.len(), t.elapsed());
    let t = Instant::now();
    for _ in 0..1000 {
        store.get_meta("nothing")?;
    }
    println!("1000 get_meta (per-read overhead): {:?}", t.elapsed());
    let t = Instant::now();
    for i in 0..1000 {
        store.get_page(&batch[i * 7 % pages].0.path)?;
    }
    println!("1000 get_page: {:?}", t.elapsed());
    let t = Instant::now();
    let links = store.all_links()?;
    println!("all_links ({}): {:?}", links.len(), t.elapsed());
    Ok(())
}
