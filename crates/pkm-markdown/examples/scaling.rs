//! Scaling check for pathological markdown: parses each shape at N and 8N bytes and fails (exit 1)
//! when the time ratio shows quadratic growth. Linear work gives a ratio near 8 and quadratic
//! work near 64; the limit (24) sits between, wide enough for a noisy machine. Each size is
//! timed as the median of several runs. Run with
//! `cargo run --release -p pkm-markdown --example scaling` (as `.ci/run` does).

use std::time::{Duration, Instant};

use pkm_markdown::block_parser::parse_page;
use pkm_markdown::edit::{BlockIds, EditOp, apply};
use pkm_markdown::linker::extract_links;
use pkm_markdown::sections::{LineIndex, find, sections};
use pkm_markdown::serialize::serialize;
use pkm_markdown::tags::{add_tag, extract_inline_tags, remove_tag};

const BASE_BYTES: usize = 64 * 1024;
const RUNS: usize = 5;
const MAX_RATIO: f64 = 24.0;

/// Builds about `bytes` of text by repeating `unit`, then appends `tail`.
fn repeat(unit: &str, bytes: usize, tail: &str) -> String {
    let mut s = unit.repeat(bytes / unit.len().max(1));
    s.push_str(tail);
    s
}

/// The shapes: each stresses one scanner (brackets, emphasis, nesting, fences, frontmatter...).
fn shapes(bytes: usize) -> Vec<(&'static str, String)> {
    vec![
        ("open brackets", repeat("[", bytes, "")),
        ("open wiki-links", repeat("[[", bytes, "x")),
        ("half-closed wiki-links", repeat("[[a]", bytes, "")),
        ("hashes", repeat("#", bytes, "")),
        ("backticks", repeat("`", bytes, "")),
        ("emphasis run", repeat("*", bytes, "x")),
        ("angle brackets", repeat("<", bytes, "")),
        ("image openers", repeat("![](", bytes, "")),
        ("url prefixes", repeat("https://", bytes, "")),
        ("bullets on one line", repeat("- ", bytes, "x")),
        ("blockquote depth", repeat(">", bytes, " q")),
        ("tab ladder", ladder(bytes)),
        ("unclosed fences", repeat("```\n", bytes, "")),
        ("property lines", repeat("- a\n  k:: v\n", bytes, "")),
        ("tags and links", repeat("#t [[l]] `c` ", bytes, "")),
        ("headings", repeat("# a\n## b\n### c\ntext\n", bytes, "")),
        (
            "heading blocks",
            repeat("- # a\n\t- ## b\n\t\t- c\n", bytes, ""),
        ),
        (
            "frontmatter without end",
            format!("---\n{}", repeat("k: v\n", bytes, "")),
        ),
        (
            "frontmatter tag list",
            format!("---\ntags:\n{}---\nbody\n", repeat("  - t\n", bytes, "")),
        ),
    ]
}

/// Lines that climb 64 levels of tab indentation and fall back, over and over.
fn ladder(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&"\t".repeat(i % 64));
        s.push_str("- x\n");
        i += 1;
    }
    s
}

struct NoIds;

impl BlockIds for NoIds {
    fn position(&self, _: &str, _: &str) -> Option<usize> {
        None
    }
}

/// What `kb_get_outline` and `kb_edit_page` do with a note: its sections and their lines, one
/// section found by its path, an append under it.
fn sections_work(text: &str) -> usize {
    let all = sections(text);
    let lines = LineIndex::new(text);
    let spans: usize = all.iter().map(|s| lines.span(&s.range()).1).sum();
    let last = all.last().map(|s| s.path.clone());
    let found = last
        .as_deref()
        .map_or(0, |p| find(text, &all, p).map_or(0, |s| s.block));
    let edit = EditOp::Append {
        text: "x".into(),
        section: last,
    };
    let edited = apply(text, &[edit], false, &NoIds).map_or(0, |t| t.len());
    all.len() + spans + found + edited
}

/// Everything the server does with a note's text.
fn work(text: &str) -> usize {
    let page = parse_page(text, "s");
    let out = serialize(&page);
    let links = extract_links(text).len();
    let tags = extract_inline_tags(text).len();
    let added = add_tag(text, "scale").ok().flatten().map_or(0, |s| s.len());
    let removed = remove_tag(text, "t").map_or(0, |(_, n)| n);
    page.blocks.len() + out.len() + links + tags + added + removed + sections_work(text)
}

fn median_time(text: &str) -> Duration {
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(work(std::hint::black_box(text)));
            t.elapsed()
        })
        .collect();
    samples.sort();
    samples[RUNS / 2]
}

fn main() {
    let small = shapes(BASE_BYTES);
    let large = shapes(8 * BASE_BYTES);
    let mut worst = 0.0f64;
    let mut failed = Vec::new();
    println!("{:<26} {:>10} {:>10} {:>6}", "shape", "N", "8N", "ratio");
    for ((name, a), (_, b)) in small.iter().zip(&large) {
        let (ta, tb) = (median_time(a), median_time(b));
        // A floor of 50 µs keeps timer noise on tiny inputs from reading as growth.
        let ratio = tb.as_secs_f64() / ta.as_secs_f64().max(50e-6);
        worst = worst.max(ratio);
        println!("{name:<26} {ta:>10.2?} {tb:>10.2?} {ratio:>6.1}");
        if ratio > MAX_RATIO {
            failed.push(*name);
        }
    }
    println!("worst ratio {worst:.1} (linear 8, quadratic 64, limit {MAX_RATIO})");
    if !failed.is_empty() {
        eprintln!("scaling: super-linear growth in: {}", failed.join(", "));
        std::process::exit(1);
    }
}
