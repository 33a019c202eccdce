//! Parses a generated ~2 MB note ten times and prints the median time of `parse_page` (blocks,
//! frontmatter, title, tags) and of `extract_links`. Run with
//! `cargo run --release -p pkm-markdown --example parse_bench`.

use std::time::{Duration, Instant};

use pkm_markdown::block_parser::parse_page;
use pkm_markdown::linker::extract_links;

/// A note shaped like a long-lived Logseq/Obsidian page: frontmatter, sections, nested tasks with
/// properties, links and tags, code blocks and tables.
fn generate(target_bytes: usize) -> String {
    let mut s =
        String::from("---\ntitle: Benchmark\naliases: [Bench]\ntags: [perf, generated]\n---\n");
    let mut i = 0usize;
    while s.len() < target_bytes {
        s.push_str(&format!("## Section {i}\n\nIntro paragraph for section {i} linking [[Page {i}]] and #topic{}.\n\n", i % 50));
        for j in 0..8 {
            s.push_str(&format!(
                "- TODO [#B] task {i}.{j} about [[Project {}|the project]] #work\n",
                j % 5
            ));
            s.push_str("  id:: 9bf2d85f-2c5a-4b5e-9d3e-00a1f00b1c22\n  owner:: alice\n");
            s.push_str(&format!(
                "  - note with `inline code` and a [link](notes/n{j}.md#part)\n"
            ));
            s.push_str("    - deeper detail ![[diagram.png]] and some plain words to search\n");
        }
        s.push_str("\n```rust\nfn example() -> u32 { 42 } // [[not a link]] #not-a-tag\n```\n\n");
        s.push_str("| a | b |\n|---|---|\n| [[x]] | #y |\n\n");
        i += 1;
    }
    s
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn main() {
    let text = generate(2 * 1024 * 1024);
    let runs = 10;
    let mut parse = Vec::with_capacity(runs);
    let mut links = Vec::with_capacity(runs);
    let mut blocks = 0;
    let mut link_count = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let page = parse_page(&text, "bench");
        parse.push(t.elapsed());
        blocks = page.blocks.len();
        let t = Instant::now();
        link_count = extract_links(&text).len();
        links.push(t.elapsed());
    }
    let mb = text.len() as f64 / (1024.0 * 1024.0);
    let p = median(parse);
    let l = median(links);
    println!(
        "note: {:.2} MB, {blocks} top-level blocks, {link_count} links",
        mb
    );
    println!(
        "parse_page    median of {runs}: {:?} ({:.0} MB/s)",
        p,
        mb / p.as_secs_f64()
    );
    println!(
        "extract_links median of {runs}: {:?} ({:.0} MB/s)",
        l,
        mb / l.as_secs_f64()
    );
}
