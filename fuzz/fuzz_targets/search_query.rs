//! The search-query adapter: any text, with any limit and offset, gives an answer (never an
//! error or a panic) over a small index; hits come in order, within the limit, one per note.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pkm_index::{BlockDoc, IndexEngine, NoteDoc, SearchLanguage};

struct Fixture {
    _dir: tempfile::TempDir,
    engine: IndexEngine,
}

const NOTES: &[(&str, &str, &[&str])] = &[
    ("Rust", "Ownership and borrowing: the borrow checker keeps references valid.", &["lang"]),
    ("Rust", "\"Fearless concurrency\" with Send + Sync; see [[Tokio]].", &["lang", "async"]),
    ("Tokio", "An async runtime: tasks, timers, I/O drivers. title:runtime *glob* (x AND y)", &["async"]),
    ("Café ☕", "Ünïcödé wörds, 日本語のテキスト, emoji 🦀 and café au lait.", &["unicode"]),
    ("Empty", "", &[]),
];

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let (engine, mut writer) =
            IndexEngine::open(dir.path(), SearchLanguage::ENGLISH).expect("index");
        let mut notes: Vec<(String, NoteDoc)> = Vec::new();
        for (i, (title, content, tags)) in NOTES.iter().enumerate() {
            let path = format!("{}.md", title.to_lowercase());
            let block = BlockDoc {
                block_id: format!("00000000-0000-4000-8000-{i:012}"),
                content: (*content).to_owned(),
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            };
            match notes.iter_mut().find(|(p, _)| *p == path) {
                Some((_, note)) => note.blocks.push(block),
                None => notes.push((
                    path,
                    NoteDoc {
                        title: (*title).to_owned(),
                        aliases: vec![format!("{title} alias")],
                        blocks: vec![block],
                        meaning: None,
                    },
                )),
            }
        }
        for (path, note) in &notes {
            writer.replace_page(path, note).expect("index a note");
        }
        writer.commit().expect("commit");
        Fixture { _dir: dir, engine }
    })
}

fuzz_target!(|data: &[u8]| {
    let (Some(&limit), Some(&offset)) = (data.first(), data.get(1)) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(&data[2..]) else {
        return;
    };
    let engine = &fixture().engine;
    let (limit, offset) = (usize::from(limit % 64), usize::from(offset % 8));
    let page = engine.search(text, limit, offset).expect("search answers any text");
    assert!(page.hits.len() <= limit, "{} hits over limit {limit}", page.hits.len());
    for pair in page.hits.windows(2) {
        assert!(pair[0].score >= pair[1].score, "hits out of order for {text:?}");
    }
    let mut notes: Vec<&str> = page.hits.iter().map(|h| h.page_path.as_str()).collect();
    notes.sort_unstable();
    notes.dedup();
    assert_eq!(notes.len(), page.hits.len(), "a note twice in the hits for {text:?}");
    engine.search_by_tag(text, limit, offset).expect("tag search answers any text");
    engine.search_phrase(text, limit).expect("phrase search answers any text");
});
