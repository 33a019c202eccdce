//! Behaviour of the search index as the command layer relies on it.

// clippy.toml's allow-unwrap-in-tests covers `#[test]` fns only, not this binary's helpers.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use pkm_core::ErrorKind;
use pkm_index::{
    BlockDoc, IndexEngine, IndexError, IndexWriter, IndexingGuard, MAX_SCORE_MATCHES, NoteDoc,
    SearchLanguage, SearchPage, autocomplete,
};
use tempfile::TempDir;

/// A block; `_page` names the note it goes in, for the reader.
fn block(id: &str, _page: &str, content: &str) -> BlockDoc {
    BlockDoc {
        block_id: id.to_owned(),
        content: content.to_owned(),
        tags: Vec::new(),
    }
}

/// Both handles of one index: reads through `Deref`, writes through the writer.
struct Engine {
    index: IndexEngine,
    writer: IndexWriter,
}

impl std::ops::Deref for Engine {
    type Target = IndexEngine;
    fn deref(&self) -> &IndexEngine {
        &self.index
    }
}

impl Engine {
    fn open(path: &Path) -> Engine {
        let (index, writer) = IndexEngine::open(path, SearchLanguage::ENGLISH).unwrap();
        Engine { index, writer }
    }

    fn recreate(path: &Path) -> Engine {
        let (index, writer) = IndexEngine::recreate(path, SearchLanguage::ENGLISH).unwrap();
        Engine { index, writer }
    }

    fn replace_page(&mut self, path: &str, note: &NoteDoc) -> Result<(), IndexError> {
        self.writer.replace_page(path, note)
    }

    fn add_page(&mut self, path: &str, note: &NoteDoc) -> Result<(), IndexError> {
        self.writer.add_page(path, note)
    }

    fn delete_page(&mut self, path: &str) -> Result<(), IndexError> {
        self.writer.delete_page(path)
    }

    fn clear(&mut self) -> Result<(), IndexError> {
        self.writer.clear()
    }

    fn commit(&mut self) -> Result<u64, IndexError> {
        self.writer.commit()
    }

    /// Indexing a note of `blocks` titled after its file name.
    fn replace_note(&mut self, path: &str, blocks: &[BlockDoc]) -> Result<(), IndexError> {
        let title = Path::new(path).file_stem().unwrap().to_str().unwrap();
        self.replace_page(
            path,
            &NoteDoc {
                title: title.to_owned(),
                aliases: Vec::new(),
                blocks: blocks.to_vec(),
                meaning: None,
            },
        )
    }
}

fn tagged(id: &str, page: &str, content: &str, tags: &[&str]) -> BlockDoc {
    BlockDoc {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        ..block(id, page, content)
    }
}

/// An empty engine ranking by words alone: most tests here check the word ranking, exactly; the
/// meaning signal, which adds notes close in meaning, is turned on by the tests of it.
fn engine() -> (TempDir, Engine) {
    let dir = TempDir::new().unwrap();
    let engine = Engine::open(&dir.path().join("search"));
    engine.set_meaning(false);
    (dir, engine)
}

/// An engine holding `pages` (path, blocks), committed.
fn engine_with(pages: &[(&str, Vec<BlockDoc>)]) -> (TempDir, Engine) {
    let (dir, mut engine) = engine();
    for (path, docs) in pages {
        engine.replace_note(path, docs).unwrap();
    }
    engine.commit().unwrap();
    (dir, engine)
}

/// An engine holding one note per block, `<id>.md`, committed.
fn engine_of_blocks(blocks: &[(&str, &str)]) -> (TempDir, Engine) {
    let (dir, mut engine) = engine();
    for (id, content) in blocks {
        let path = format!("{id}.md");
        engine
            .replace_note(&path, &[block(id, &path, content)])
            .unwrap();
    }
    engine.commit().unwrap();
    (dir, engine)
}

fn ids(page: &SearchPage) -> Vec<&str> {
    page.hits.iter().map(|h| h.block_id.as_str()).collect()
}

fn search_ids(engine: &IndexEngine, query: &str) -> Vec<String> {
    let mut found: Vec<String> = engine
        .search(query, 100, 0)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.block_id)
        .collect();
    found.sort();
    found
}

#[test]
fn engine_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<IndexEngine>();
    fn assert_send<T: Send>() {}
    assert_send::<IndexWriter>();
    assert_send_sync::<IndexingGuard>();
}

#[test]
fn a_committed_block_is_found_with_a_highlighted_snippet() {
    let (_dir, mut engine) = engine();
    engine
        .replace_note(
            "notes/animals.md",
            &[block(
                "b1",
                "notes/animals.md",
                "The quick brown fox jumps over <the> dog",
            )],
        )
        .unwrap();
    assert_eq!(
        engine.search("fox", 10, 0).unwrap().total,
        0,
        "invisible before commit"
    );

    engine.commit().unwrap();
    let page = engine.search("FOX", 10, 0).unwrap();
    assert_eq!(page.total, 1);
    let hit = &page.hits[0];
    assert_eq!(hit.block_id, "b1");
    assert_eq!(hit.page_path, "notes/animals.md");
    assert_eq!(hit.content, "The quick brown fox jumps over <the> dog");
    assert_eq!(
        hit.snippet,
        "The quick brown <b>fox</b> jumps over <the> dog"
    );
    assert!(hit.score > 0.0);
}

#[test]
fn long_content_gets_a_cut_snippet_around_the_match() {
    let filler = "lorem ipsum dolor sit amet ".repeat(20);
    let content = format!("{filler}the needle is here {filler}");
    let (_dir, engine) = engine_with(&[("a.md", vec![block("b1", "a.md", &content)])]);
    let snippet = &engine.search("needle", 10, 0).unwrap().hits[0].snippet;
    assert!(snippet.contains("<b>needle</b>"), "{snippet}");
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet}"
    );
    assert!(snippet.len() < content.len() / 2, "{snippet}");
}

#[test]
fn every_word_must_match_in_the_note_or_its_names_and_a_note_is_one_hit() {
    let (_dir, engine) = engine_with(&[
        (
            "rust.md",
            vec![
                block("r1", "rust.md", "async io"),
                block("r2", "rust.md", "ownership"),
            ],
        ),
        (
            "notes.md",
            vec![
                block("n1", "notes.md", "rust async runtime"),
                block("n2", "notes.md", "python tooling"),
            ],
        ),
    ]);
    // The title counts as the note's words; each note is one hit, at its best block.
    assert_eq!(search_ids(&engine, "rust async"), ["n1", "r1"]);
    assert_eq!(search_ids(&engine, "ownership"), ["r2"]);
    // Words spread over two blocks of one note find the note.
    let spread = engine.search("python runtime", 10, 0).unwrap();
    assert_eq!(spread.total, 1);
    assert_eq!(spread.hits[0].page_path, "notes.md");
    // Words in two different notes: no note holds both, so the fallback asks for all but one.
    let fallback = engine.search("tooling ownership", 10, 0).unwrap();
    assert_eq!(fallback.total, 2);
    assert_eq!(search_ids(&engine, "tooling ownership"), ["n2", "r2"]);
    assert_eq!(search_ids(&engine, "zebra"), Vec::<String>::new());
}

#[test]
fn inflections_match_and_names_rank_first() {
    let (_dir, engine) = engine_with(&[
        (
            "Block references.md",
            vec![block(
                "ref",
                "Block references.md",
                "How to link to a block.",
            )],
        ),
        (
            "Changelog.md",
            vec![
                block("c1", "Changelog.md", "Fixed block reference rendering."),
                block(
                    "c2",
                    "Changelog.md",
                    "Block references in tables; more block references.",
                ),
            ],
        ),
        (
            "Sidebar.md",
            vec![block(
                "side",
                "Sidebar.md",
                "There is a left and a right sidebar.",
            )],
        ),
        (
            "Tabs.md",
            vec![block(
                "tabs",
                "Tabs.md",
                "Tabs open in the right sidebar or the main area; the right sidebar holds tabs.",
            )],
        ),
    ]);
    let pages = |query: &str| -> Vec<String> {
        engine
            .search(query, 10, 0)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.page_path)
            .collect()
    };
    assert_eq!(
        pages("block reference"),
        ["Block references.md", "Changelog.md"]
    );
    assert_eq!(
        pages("Block References"),
        ["Block references.md", "Changelog.md"]
    );
    assert_eq!(pages("sidebar"), ["Sidebar.md", "Tabs.md"]);
    // A typo in a longer word still finds the note when nothing matches exactly.
    assert_eq!(pages("sidebra"), ["Sidebar.md", "Tabs.md"]);
    // Short words are never matched with a typo.
    assert_eq!(pages("tabz"), Vec::<String>::new());
}

#[test]
fn aliases_and_the_file_name_are_names() {
    let (_dir, mut engine) = engine();
    engine
        .replace_page(
            "people/ghopper.md",
            &NoteDoc {
                title: "Grace Hopper".to_owned(),
                aliases: vec!["Amazing Grace".to_owned()],
                blocks: vec![block("g1", "", "Compiler pioneer.")],
                meaning: None,
            },
        )
        .unwrap();
    engine
        .replace_note(
            "log.md",
            &[block("l1", "log.md", "grace period for ghopper amazing")],
        )
        .unwrap();
    engine.commit().unwrap();
    engine
        .replace_note(
            "Kayak.md",
            &[block("k0", "", "  "), block("k1", "", "Boat maintenance.")],
        )
        .unwrap();
    engine.commit().unwrap();
    // Only the name matched and the first block is empty: the first block that says something.
    assert_eq!(search_ids(&engine, "kayak"), ["k1"]);
    for query in ["grace hopper", "amazing grace", "ghopper"] {
        let page = engine.search(query, 10, 0).unwrap();
        assert_eq!(page.hits[0].page_path, "people/ghopper.md", "{query}");
        // A match in a name only points at the note's first block.
        assert_eq!(page.hits[0].block_id, "g1");
    }
}

#[test]
fn accents_and_case_are_folded() {
    let (_dir, engine) = engine_of_blocks(&[("b1", "Un Café à Paris"), ("b2", "Straße")]);
    assert_eq!(search_ids(&engine, "cafe"), ["b1"]);
    assert_eq!(search_ids(&engine, "CAFÉ"), ["b1"]);
    assert_eq!(search_ids(&engine, "strasse"), ["b2"]);
}

#[test]
fn han_text_is_searchable_by_words_inside_a_sentence() {
    let (_dir, engine) = engine_of_blocks(&[
        ("b1", "我明天去东京旅行"),
        ("b2", "京东商城"),
        ("b3", "Привет мир"),
    ]);
    assert_eq!(search_ids(&engine, "东京"), ["b1"]);
    assert_eq!(search_ids(&engine, "京东"), ["b2"]);
    assert_eq!(search_ids(&engine, "привет"), ["b3"]);
}

#[test]
fn quoted_words_match_as_a_phrase() {
    let (_dir, engine) = engine_of_blocks(&[("b1", "a brown fox"), ("b2", "the fox is brown")]);
    assert_eq!(search_ids(&engine, "\"brown fox\""), ["b1"]);
    assert_eq!(search_ids(&engine, "brown fox"), ["b1", "b2"]);
    // A phrase must stand in one block: split over two blocks of a note it does not match.
    let (_dir, split) = engine_with(&[(
        "s.md",
        vec![block("s1", "s.md", "the brown"), block("s2", "s.md", "fox")],
    )]);
    assert_eq!(split.search("brown fox", 10, 0).unwrap().total, 1);
    assert_eq!(split.search("\"brown fox\"", 10, 0).unwrap().total, 0);
}

#[test]
fn query_syntax_is_searched_as_words() {
    let (_dir, engine) = engine_of_blocks(&[
        ("title-x", "the title is x"),
        ("x-only", "just x here"),
        ("and-words", "a and b"),
        ("star", "content with a * star"),
        ("unbalanced", "an unbalanced quote"),
    ]);
    // `title:x` is two words, not a field query.
    assert_eq!(search_ids(&engine, "title:x"), ["title-x"]);
    // `-x` does not negate.
    assert_eq!(search_ids(&engine, "-x"), ["title-x", "x-only"]);
    // `*` is no wildcard: nothing to search for.
    assert_eq!(engine.search("*", 10, 0).unwrap(), SearchPage::default());
    assert_eq!(search_ids(&engine, "content:*"), ["star"]);
    assert_eq!(search_ids(&engine, "\"unbalanced"), ["unbalanced"]);
    assert_eq!(search_ids(&engine, "a AND (b"), ["and-words"]);
    for hostile in [
        "title:",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "^",
        "~2",
        "\"\"",
        "\\",
        "OR",
        "NOT x",
        "+a",
        "a:b:c",
        "field:[a TO b]",
    ] {
        engine.search(hostile, 10, 0).unwrap();
    }
}

#[test]
fn a_phrase_spanning_an_overlong_token_still_matches() {
    let long = "z".repeat(100);
    let (_dir, engine) = engine_with(&[(
        "a.md",
        vec![block("b1", "a.md", &format!("keep {long} this"))],
    )]);
    assert_eq!(
        search_ids(&engine, &format!("\"keep {long} this\"")),
        ["b1"]
    );
    assert_eq!(
        engine
            .search_phrase(&format!("keep {long} this"), 10)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_query_without_words_finds_nothing() {
    let (_dir, engine) = engine_with(&[("a.md", vec![block("b1", "a.md", "something")])]);
    for empty in ["", "   ", "!!! ... ---", "\"\""] {
        assert_eq!(
            engine.search(empty, 10, 0).unwrap(),
            SearchPage::default(),
            "{empty:?}"
        );
    }
}

#[test]
fn paging_returns_every_match_once_in_a_stable_order() {
    // Repeating the word varies the score; identical notes tie and are ordered by path.
    let notes: Vec<(String, String)> = (0..25)
        .map(|i| {
            (
                format!("id{i:02}"),
                format!("{} filler words", "common ".repeat(1 + i % 4)),
            )
        })
        .collect();
    let notes: Vec<(&str, &str)> = notes
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_dir, engine) = engine_of_blocks(&notes);

    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = engine.search("common", 7, offset).unwrap();
        assert_eq!(page.total, 25);
        if page.hits.is_empty() {
            break;
        }
        seen.extend(page.hits);
        offset += 7;
    }
    let unique: HashSet<&str> = seen.iter().map(|h| h.block_id.as_str()).collect();
    assert_eq!(seen.len(), 25);
    assert_eq!(unique.len(), 25);
    for pair in seen.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.score > b.score || (a.score == b.score && a.page_path < b.page_path),
            "{a:?} before {b:?}"
        );
    }
    assert_eq!(
        engine.search("common", 7, 0).unwrap(),
        engine.search("common", 7, 0).unwrap()
    );
}

#[test]
fn ties_are_ordered_by_page_path_across_segments() {
    let (_dir, mut engine) = engine();
    // One commit per page: each lands in its own segment, in an order unrelated to the paths.
    for (page, ids) in [
        ("z.md", ["d", "b"]),
        ("m.md", ["e", "a"]),
        ("a.md", ["c", "f"]),
        ("k.md", ["g", "h"]),
    ] {
        let docs: Vec<BlockDoc> = ids
            .iter()
            .map(|id| tagged(id, page, "same text", &["t"]))
            .collect();
        engine.replace_note(page, &docs).unwrap();
        engine.commit().unwrap();
    }
    // Equal blocks of a note: its first one.
    let all = engine.search("same", 10, 0).unwrap();
    assert_eq!(ids(&all), ["c", "g", "e", "d"]);
    assert_eq!(ids(&engine.search("same", 2, 1).unwrap()), ["g", "e"]);
    assert_eq!(
        ids(&engine.search_by_tag("t", 10, 0).unwrap()),
        ["c", "f", "g", "h", "e", "a", "d", "b"]
    );
}

#[test]
fn each_hit_points_at_its_best_block_or_the_first_that_says_something() {
    let (_dir, mut engine) = engine();
    // Two commits: the hits of one search come from two segments.
    engine
        .replace_note(
            "Gardening.md",
            &[
                block("g0", "Gardening.md", ""),
                block("g1", "Gardening.md", "Soil first."),
                block("g2", "Gardening.md", "Tomatoes, tomatoes."),
                block(
                    "g3",
                    "Gardening.md",
                    "Compost, mulch, beans, peas and one row of tomatoes by the fence.",
                ),
            ],
        )
        .unwrap();
    engine.commit().unwrap();
    engine
        .replace_note(
            "Tomatoes.md",
            &[
                block("t0", "Tomatoes.md", ""),
                block("t1", "Tomatoes.md", "A fruit."),
                block("t2", "Tomatoes.md", "Grown in summer."),
            ],
        )
        .unwrap();
    engine
        .replace_note(
            "Kitchen.md",
            &[
                block("k0", "Kitchen.md", "Knives."),
                block("k1", "Kitchen.md", "Pans."),
            ],
        )
        .unwrap();
    engine.commit().unwrap();
    // Words in the text: the block they score best in. Only the name: the first block, past an
    // empty one.
    let hits = engine.search("tomatoes", 10, 0).unwrap();
    let by_page: Vec<(&str, &str)> = hits
        .hits
        .iter()
        .map(|h| (h.page_path.as_str(), h.block_id.as_str()))
        .collect();
    assert_eq!(by_page, [("Tomatoes.md", "t1"), ("Gardening.md", "g2")]);
    assert_eq!(ids(&engine.search("kitchen", 10, 0).unwrap()), ["k0"]);
    assert_eq!(ids(&engine.search("pans", 10, 0).unwrap()), ["k1"]);
}

#[test]
fn paging_stops_at_the_score_match_cap() {
    let (_dir, mut engine) = engine();
    for i in 0..MAX_SCORE_MATCHES + 10 {
        let path = format!("b{i:05}.md");
        engine
            .add_page(
                &path,
                &NoteDoc {
                    title: String::new(),
                    aliases: Vec::new(),
                    blocks: vec![block(&format!("b{i:05}"), &path, "same words")],
                    meaning: None,
                },
            )
            .unwrap();
    }
    engine.commit().unwrap();
    let page = engine.search("same", 10, 0).unwrap();
    assert_eq!(page.total, MAX_SCORE_MATCHES);
    assert_eq!(
        ids(&page),
        (0..10).map(|i| format!("b{i:05}")).collect::<Vec<_>>()
    );
    assert_eq!(
        engine
            .search("same", 10, MAX_SCORE_MATCHES - 5)
            .unwrap()
            .hits
            .len(),
        5
    );
    let past = engine.search("same", 10, MAX_SCORE_MATCHES).unwrap();
    assert!(past.hits.is_empty());
    assert_eq!(past.total, MAX_SCORE_MATCHES);
    assert!(engine.search("same", 0, 0).unwrap().hits.is_empty());
}

#[test]
fn replace_page_drops_the_old_blocks() {
    let (_dir, mut engine) = engine_with(&[(
        "a.md",
        vec![
            block("old1", "a.md", "alpha"),
            block("old2", "a.md", "alpha two"),
        ],
    )]);
    engine
        .replace_note("a.md", &[block("new1", "a.md", "beta")])
        .unwrap();
    // A second replace before the commit supersedes the first one.
    engine
        .replace_note("a.md", &[block("new2", "a.md", "beta gamma")])
        .unwrap();
    engine.commit().unwrap();
    assert_eq!(search_ids(&engine, "alpha"), Vec::<String>::new());
    assert_eq!(search_ids(&engine, "beta"), ["new2"]);
    assert_eq!(engine.doc_count().unwrap(), 1);
}

#[test]
fn delete_page_and_clear_remove_blocks_and_counts_follow() {
    let (_dir, mut engine) = engine_with(&[
        (
            "a.md",
            vec![block("a1", "a.md", "shared"), block("a2", "a.md", "shared")],
        ),
        ("b.md", vec![block("b1", "b.md", "shared")]),
        ("c.md", vec![block("c1", "c.md", "shared")]),
    ]);
    assert_eq!(
        (engine.doc_count().unwrap(), engine.page_count().unwrap()),
        (4, 3)
    );

    engine.delete_page("b.md").unwrap();
    engine.delete_page("missing.md").unwrap();
    engine.commit().unwrap();
    assert_eq!(search_ids(&engine, "shared"), ["a1", "c1"]);
    // b.md is still in the segment's term dictionary, only marked deleted.
    assert_eq!(
        (engine.doc_count().unwrap(), engine.page_count().unwrap()),
        (3, 2)
    );

    engine.clear().unwrap();
    engine.commit().unwrap();
    assert_eq!(
        (engine.doc_count().unwrap(), engine.page_count().unwrap()),
        (0, 0)
    );
    assert_eq!(engine.search("shared", 10, 0).unwrap().total, 0);
}

#[test]
fn tag_search_ignores_case_and_a_leading_hash() {
    let (_dir, engine) = engine_with(&[
        (
            "b.md",
            vec![
                tagged("b1", "b.md", "one", &["Project"]),
                block("b2", "b.md", "two"),
                tagged("b3", "b.md", "three", &["#project"]),
            ],
        ),
        (
            "a.md",
            vec![tagged("a1", "a.md", "first <x>", &["#Research", "project"])],
        ),
        ("c.md", vec![tagged("c1", "c.md", "other", &["projects"])]),
    ]);
    for query in ["project", "#project", "PROJECT", "#Project", " #project "] {
        let page = engine.search_by_tag(query, 10, 0).unwrap();
        assert_eq!(ids(&page), ["a1", "b1", "b3"], "{query}");
        assert_eq!(page.total, 3);
    }
    let research = engine.search_by_tag("research", 10, 0).unwrap();
    assert_eq!(ids(&research), ["a1"]);
    assert_eq!(research.hits[0].score, 1.0);
    assert_eq!(research.hits[0].snippet, "first <x>");
    let limited = engine.search_by_tag("project", 2, 0).unwrap();
    assert_eq!((ids(&limited), limited.total), (vec!["a1", "b1"], 3));
    assert_eq!(engine.search_by_tag("proj", 10, 0).unwrap().total, 0);
    assert_eq!(
        engine.search_by_tag("#", 10, 0).unwrap(),
        SearchPage::default()
    );
}

#[test]
fn snippets_are_the_text_as_written_with_marked_matches() {
    let text = "it's \"quoted\" a > b & c";
    let (_dir, engine) = engine_with(&[("q.md", vec![tagged("q1", "q.md", text, &["quote"])])]);
    let found = engine.search("quoted", 10, 0).unwrap();
    assert_eq!(found.hits[0].snippet, "it's \"<b>quoted</b>\" a > b & c");
    let tagged = engine.search_by_tag("quote", 10, 0).unwrap();
    assert_eq!(tagged.hits[0].snippet, text);
    let phrase = engine.search_phrase("quoted", 10).unwrap();
    assert_eq!(phrase[0].snippet, "it's \"<b>quoted</b>\" a > b & c");
}

#[test]
fn tag_search_pages_with_an_offset_through_exactly_total_hits() {
    let docs: Vec<BlockDoc> = (0..51)
        .map(|i| tagged(&format!("b{i:02}"), "t.md", "tagged block", &["t"]))
        .collect();
    let (_dir, engine) = engine_with(&[("t.md", docs)]);
    let first = engine.search_by_tag("t", 50, 0).unwrap();
    assert_eq!((first.hits.len(), first.total), (50, 51));
    let rest = engine.search_by_tag("t", 50, 50).unwrap();
    assert_eq!((ids(&rest), rest.total), (vec!["b50"], 51));
    let past = engine.search_by_tag("t", 50, 51).unwrap();
    assert_eq!((past.hits.len(), past.total), (0, 51));
}

#[test]
fn tag_search_pages_across_notes_as_one_list_in_page_and_block_order() {
    // Which blocks of a note carry the tag (with another tag beside it, and a block with only
    // the other one): the list runs over three notes, two commits, and a note replaced in the
    // second (its old document deleted in the first segment).
    let note = |page: &str, carried: &[bool]| -> Vec<BlockDoc> {
        carried
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let tags: &[&str] = if *t { &["t", "other"] } else { &["other"] };
                tagged(&format!("{page}-{i}"), page, "text", tags)
            })
            .collect()
    };
    let (_dir, mut engine) = engine();
    engine
        .replace_note("b.md", &note("b.md", &[true, false, true, true]))
        .unwrap();
    engine
        .replace_note("c.md", &note("c.md", &[false, true]))
        .unwrap();
    engine.commit().unwrap();
    engine
        .replace_note("a.md", &note("a.md", &[true, true]))
        .unwrap();
    engine
        .replace_note("c.md", &note("c.md", &[true, false, true]))
        .unwrap();
    engine.commit().unwrap();
    let all = [
        "a.md-0", "a.md-1", "b.md-0", "b.md-2", "b.md-3", "c.md-0", "c.md-2",
    ];
    for offset in 0..=all.len() {
        for limit in 1..=all.len() {
            let page = engine.search_by_tag("t", limit, offset).unwrap();
            let end = (offset + limit).min(all.len());
            assert_eq!(
                ids(&page),
                all[offset..end],
                "offset {offset}, limit {limit}"
            );
            assert_eq!(page.total, all.len());
        }
    }
    let past = engine
        .search_by_tag("t", 10, pkm_index::MAX_SCORE_MATCHES + 5)
        .unwrap();
    assert_eq!((past.hits.len(), past.total), (0, all.len()));
    assert_eq!(engine.search_by_tag("other", 20, 0).unwrap().total, 9);
    assert_eq!(engine.doc_count().unwrap(), 9);
    assert_eq!(engine.page_count().unwrap(), 3);
}

#[test]
fn phrase_search_finds_adjacent_words_only() {
    let (_dir, engine) = engine_with(&[
        (
            "b.md",
            vec![
                block("b1", "b.md", "Notes on Machine Learning today"),
                block("b2", "b.md", "learning a machine"),
            ],
        ),
        (
            "a.md",
            vec![
                block("a1", "a.md", "[[machine learning]] link"),
                block("a2", "a.md", "machine-learning"),
            ],
        ),
    ]);
    let hits = engine.search_phrase("machine learning", 10).unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.block_id.as_str()).collect();
    assert_eq!(found, ["a1", "a2", "b1"]);
    assert_eq!(
        hits[2].snippet,
        "Notes on <b>Machine</b> <b>Learning</b> today"
    );
    assert_eq!(
        engine.search_phrase("machine learning", 1).unwrap().len(),
        1
    );
    assert_eq!(engine.search_phrase("machine", 10).unwrap().len(), 4);
    assert!(engine.search_phrase(" - ", 10).unwrap().is_empty());
}

/// A phrase found in a note's text is placed in its block by where the block starts among the
/// note's words: empty blocks, dropped over-long words (also as a block's last word), Han text,
/// and a phrase that would only read across two blocks.
#[test]
fn phrase_search_places_each_match_in_its_block() {
    let long = "x".repeat(80);
    let blocks = vec![
        block("empty", "n.md", ""),
        block("trailing", "n.md", &format!("ends with a dropped {long}")),
        block("only-long", "n.md", &long),
        block("han", "n.md", "去东京看 red lantern"),
        block("split-1", "n.md", "the red"),
        block("split-2", "n.md", "lantern and more"),
        block(
            "inner",
            "n.md",
            &format!("a {long} red lantern, again a red lantern"),
        ),
        block("last", "n.md", "red lanterns"),
    ];
    let (_dir, engine) = engine_with(&[("n.md", blocks)]);
    let found = |phrase: &str| -> Vec<String> {
        engine
            .search_phrase(phrase, 100)
            .unwrap()
            .into_iter()
            .map(|h| h.block_id)
            .collect()
    };
    assert_eq!(found("red lantern"), ["han", "inner", "last"]);
    assert_eq!(found("东京"), ["han"]);
    assert_eq!(found("dropped"), ["trailing"]);
    assert_eq!(found("and more"), ["split-2"]);
    assert_eq!(engine.search_phrase("red lantern", 2).unwrap().len(), 2);
}

#[test]
fn a_reopened_index_keeps_its_data() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("search");
    {
        let mut engine = Engine::open(&path);
        engine
            .replace_note(
                "a.md",
                &[tagged("b1", "a.md", "persistent words", &["kept"])],
            )
            .unwrap();
        engine.commit().unwrap();
    }
    let mut engine = Engine::open(&path);
    assert_eq!(engine.doc_count().unwrap(), 1);
    assert_eq!(search_ids(&engine, "persistent"), ["b1"]);
    assert_eq!(ids(&engine.search_by_tag("kept", 10, 0).unwrap()), ["b1"]);
    // Writable after reopening.
    engine
        .replace_note("b.md", &[block("b2", "b.md", "more words")])
        .unwrap();
    engine.commit().unwrap();
    assert_eq!(search_ids(&engine, "words"), ["b1", "b2"]);
}

fn populated_dir() -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("search");
    let mut engine = Engine::open(&path);
    engine
        .replace_note("a.md", &[block("b1", "a.md", "words")])
        .unwrap();
    engine.commit().unwrap();
    (dir, path)
}

fn assert_recreate_fixes(path: &Path) {
    let mut engine = Engine::recreate(path);
    assert_eq!(engine.doc_count().unwrap(), 0);
    engine
        .replace_note("a.md", &[block("b1", "a.md", "fresh")])
        .unwrap();
    engine.commit().unwrap();
    drop(engine);
    assert_eq!(search_ids(&Engine::open(path), "fresh"), ["b1"]);
}

#[test]
fn unreadable_metadata_is_corrupt_and_recreate_fixes_it() {
    let (_dir, path) = populated_dir();
    std::fs::write(path.join("meta.json"), "{ not json").unwrap();
    let err = IndexEngine::open(&path, SearchLanguage::ENGLISH).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt(_)), "{err:?}");
    assert!(err.needs_rebuild());
    let kb: pkm_core::KbError = err.into();
    assert_eq!(kb.kind, ErrorKind::External);
    assert!(
        !kb.message.contains("json"),
        "no internals in the message: {}",
        kb.message
    );
    assert_recreate_fixes(&path);
}

/// The list of files Tantivy manages is replaced without a sync (ADR-0022): a machine crash can
/// leave it empty or cut, and the index must then be reported for a rebuild, not fail otherwise.
#[test]
fn a_cut_managed_file_list_is_corrupt_and_recreate_fixes_it() {
    for cut in ["", "[\"a.m"] {
        let (_dir, path) = populated_dir();
        std::fs::write(path.join(".managed.json"), cut).unwrap();
        let err = IndexEngine::open(&path, SearchLanguage::ENGLISH).unwrap_err();
        assert!(matches!(err, IndexError::Corrupt(_)), "{cut:?}: {err:?}");
        assert_recreate_fixes(&path);
    }
}

/// A copy of the folder `from` at `to` (files only: an index folder has no subfolders).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn an_unsynced_index_is_used_only_if_every_file_of_its_last_commit_is_whole() {
    let (dir, path) = populated_dir();
    assert!(
        !path.join("unsynced").exists(),
        "a clean close syncs and drops the mark"
    );
    let mut engine = Engine::open(&path);
    let before = engine.writer.last_commit();
    engine
        .replace_note("b.md", &[block("b2", "b.md", "badger")])
        .unwrap();
    let stamp = engine.commit().unwrap();
    assert!(stamp > before && engine.writer.last_commit() == stamp);
    assert!(path.join("unsynced").exists(), "a commit is not synced");
    // The folder as the disk could hold it if the machine stopped now.
    let stopped = dir.path().join("stopped");
    copy_dir(&path, &stopped);
    drop(engine);
    assert!(!path.join("unsynced").exists());
    assert_eq!(search_ids(&Engine::open(&path), "badger"), ["b2"]);

    // Whole: it opens and holds the last commit.
    let whole = dir.path().join("whole");
    copy_dir(&stopped, &whole);
    let (engine, writer) = IndexEngine::open(&whole, SearchLanguage::ENGLISH).unwrap();
    assert_eq!(writer.last_commit(), stamp);
    assert_eq!(search_ids(&engine, "badger"), ["b2"]);
    drop((engine, writer));

    // Any file the last commit names cut short, gone, or with a byte that is not what was
    // written (past its footer's own checks: only its checksum tells): corrupt, and recreate
    // fixes it.
    // A segment's files are named by its id, which meta.json writes with dashes.
    let meta = std::fs::read_to_string(stopped.join("meta.json"))
        .unwrap()
        .replace('-', "");
    let mut segment_files: Vec<_> = std::fs::read_dir(&stopped)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| {
            n.find('.')
                .is_some_and(|dot| dot == 32 && meta.contains(&n[..dot]))
        })
        .collect();
    segment_files.sort();
    assert!(
        segment_files.len() >= 12,
        "two segments of six files: {segment_files:?}"
    );
    for (i, name) in segment_files.iter().enumerate() {
        let cut = dir.path().join(format!("cut{i}"));
        copy_dir(&stopped, &cut);
        let file = cut.join(name);
        match i % 3 {
            0 => {
                let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
                f.set_len(f.metadata().unwrap().len() - 1).unwrap();
            }
            1 => std::fs::remove_file(&file).unwrap(),
            _ => {
                let mut bytes = std::fs::read(&file).unwrap();
                bytes[0] ^= 0xff;
                std::fs::write(&file, bytes).unwrap();
            }
        }
        let err = IndexEngine::open(&cut, SearchLanguage::ENGLISH).unwrap_err();
        assert!(matches!(err, IndexError::Corrupt(_)), "{name}: {err:?}");
        assert_recreate_fixes(&cut);
    }
}

#[test]
fn leftover_files_without_metadata_are_corrupt() {
    let (_dir, path) = populated_dir();
    std::fs::remove_file(path.join("meta.json")).unwrap();
    assert!(matches!(
        IndexEngine::open(&path, SearchLanguage::ENGLISH),
        Err(IndexError::Corrupt(_))
    ));
    assert_recreate_fixes(&path);
}

#[test]
fn another_schema_version_is_a_mismatch() {
    let (_dir, path) = populated_dir();
    std::fs::write(path.join("pkm-schema-version"), "pkm-index/0\n").unwrap();
    assert!(matches!(
        IndexEngine::open(&path, SearchLanguage::ENGLISH),
        Err(IndexError::SchemaMismatch)
    ));
    std::fs::remove_file(path.join("pkm-schema-version")).unwrap();
    assert!(matches!(
        IndexEngine::open(&path, SearchLanguage::ENGLISH),
        Err(IndexError::SchemaMismatch)
    ));
    assert_recreate_fixes(&path);
}

#[test]
fn an_index_held_by_another_engine_is_locked_not_corrupt() {
    let (_dir, path) = populated_dir();
    let first = Engine::open(&path);
    let err = IndexEngine::open(&path, SearchLanguage::ENGLISH).unwrap_err();
    assert!(matches!(err, IndexError::Tantivy(_)), "{err:?}");
    assert!(!err.needs_rebuild());
    assert_eq!(first.doc_count().unwrap(), 1);
}

#[test]
fn recreate_works_on_a_missing_directory() {
    let dir = TempDir::new().unwrap();
    assert_recreate_fixes(&dir.path().join("deep").join("search"));
}

#[test]
fn exclusive_guard_blocks_shared_until_released() {
    let guard = IndexingGuard::new();
    let rebuild = guard.exclusive(Duration::from_millis(10)).unwrap();
    assert!(guard.is_rebuilding());
    assert!(guard.shared(Duration::from_millis(20)).is_none());
    assert!(guard.exclusive(Duration::ZERO).is_none());
    drop(rebuild);
    assert!(!guard.is_rebuilding());
    let writer = guard.shared(Duration::from_millis(10)).unwrap();
    let other_writer = guard.shared(Duration::from_millis(10)).unwrap();
    assert!(guard.exclusive(Duration::from_millis(20)).is_none());
    drop((writer, other_writer));
    assert!(guard.exclusive(Duration::ZERO).is_some());
}

#[test]
fn a_waiting_rebuild_is_not_starved_by_new_writers() {
    let guard = Arc::new(IndexingGuard::new());
    let writer = guard.shared(Duration::ZERO).unwrap();
    let acquired = Arc::new(AtomicBool::new(false));
    let rebuild = {
        let (guard, acquired) = (Arc::clone(&guard), Arc::clone(&acquired));
        thread::spawn(move || {
            let held = guard.exclusive(Duration::from_secs(30)).is_some();
            acquired.store(held, Ordering::SeqCst);
        })
    };
    // Once the rebuild is queued, a new writer must wait behind it instead of slipping in.
    let mut queued = false;
    for _ in 0..30_000 {
        match guard.shared(Duration::from_millis(1)) {
            Some(_) => thread::sleep(Duration::from_millis(1)),
            None => {
                queued = true;
                break;
            }
        }
    }
    assert!(queued, "the rebuild never queued ahead of new writers");
    drop(writer);
    rebuild.join().unwrap();
    assert!(acquired.load(Ordering::SeqCst));
}

fn ranked<'a>(query: &str, candidates: &[&'a str], limit: usize) -> Vec<&'a str> {
    autocomplete::rank(query, candidates.iter().copied(), limit)
        .into_iter()
        .map(|(i, _)| candidates[i])
        .collect()
}

#[test]
fn autocomplete_orders_by_match_tier() {
    let candidates = [
        "unrelated",
        "r-u-s-t",
        "Crust notes",
        "trust",
        "Learn Rust",
        "rustacean",
        "Rust",
        "RUST",
        "rusty",
    ];
    assert_eq!(
        ranked("rust", &candidates, 20),
        [
            "RUST",
            "Rust",
            "rusty",
            "rustacean",
            "Learn Rust",
            "trust",
            "Crust notes",
            "r-u-s-t"
        ]
    );
    assert_eq!(ranked("  Rust ", &candidates, 2), ["RUST", "Rust"]);
    assert!(ranked("rust", &candidates, 0).is_empty());

    let scored = autocomplete::rank("rust", candidates.iter().copied(), 20);
    assert_eq!(scored[0].1, 1.0);
    for pair in scored.windows(2) {
        assert!(pair[0].1 >= pair[1].1, "{scored:?}");
    }
    assert!(scored.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
}

#[test]
fn autocomplete_ties_go_to_shorter_then_lexicographic() {
    assert_eq!(
        ranked("a", &["abc", "ab", "aa", "a"], 10),
        ["a", "aa", "ab", "abc"]
    );
    assert_eq!(
        ranked("note", &["my notes", "my note", "big notebook"], 10),
        ["my note", "my notes", "big notebook"]
    );
}

#[test]
fn autocomplete_is_unicode_aware() {
    assert_eq!(
        ranked(
            "élan",
            &["ÉLAN", "Élan vital", "mon élan", "Sélan", "elan"],
            10
        ),
        ["ÉLAN", "Élan vital", "mon élan", "Sélan"]
    );
    assert_eq!(ranked("σοφία", &["ΣΟΦΊΑ"], 10), ["ΣΟΦΊΑ"]);
    assert_eq!(
        ranked("东京", &["去东京", "东京塔", "京东"], 10),
        ["东京塔", "去东京"]
    );
    assert_eq!(
        ranked("dk", &["Daily work", "desk"], 10),
        ["desk", "Daily work"]
    );
}

#[test]
fn autocomplete_keeps_the_best_among_many() {
    let candidates: Vec<String> = (0..100_000).rev().map(|i| format!("page {i:05}")).collect();
    let refs: Vec<&str> = candidates.iter().map(String::as_str).collect();
    assert_eq!(ranked("page 04242", &refs, 3), ["page 04242"]);
    assert_eq!(
        ranked("page", &refs, 3),
        ["page 00000", "page 00001", "page 00002"]
    );
    // Pruning while scanning gives the same head as ranking everything.
    let all = ranked("9", &refs, usize::MAX);
    assert_eq!(ranked("9", &refs, 25), all[..25]);
}

#[test]
fn searches_run_while_pages_are_replaced() {
    let (_dir, mut engine) = engine();
    for p in 0..10 {
        let path = format!("p{p}.md");
        engine
            .replace_note(
                &path,
                &[block(&format!("{path}#0"), &path, "stable content v0")],
            )
            .unwrap();
    }
    engine.commit().unwrap();
    let Engine { index, mut writer } = engine;
    let index = Arc::new(index);

    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (engine, done) = (Arc::clone(&index), Arc::clone(&done));
            thread::spawn(move || {
                let mut rounds = 0;
                while !done.load(Ordering::SeqCst) || rounds < 20 {
                    let page = engine.search("stable content", 50, 0).unwrap();
                    // Every page always has exactly one block: a commit is all-or-nothing.
                    assert_eq!(page.total, 10);
                    engine.search_by_tag("t", 10, 0).unwrap();
                    engine.search_phrase("stable content", 10).unwrap();
                    engine.page_count().unwrap();
                    rounds += 1;
                }
            })
        })
        .collect();
    for round in 1..=10 {
        let path = format!("p{}.md", round % 10);
        let doc = tagged(
            &format!("{path}#{round}"),
            &path,
            &format!("stable content v{round}"),
            &["t"],
        );
        writer
            .replace_page(
                &path,
                &NoteDoc {
                    title: path.trim_end_matches(".md").to_owned(),
                    aliases: Vec::new(),
                    blocks: vec![doc],
                    meaning: None,
                },
            )
            .unwrap();
        writer.commit().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        reader.join().unwrap();
    }
    assert_eq!(index.doc_count().unwrap(), 10);
    assert_eq!(search_ids(&index, "v10"), ["p0.md#10"]);
}

/// Notes on unrelated subjects, one block each; the refund note never says "money" or "back".
const SUBJECTS: &[(&str, &str)] = &[
    (
        "Refund policy.md",
        "If a purchase did not work out, write to support within 30 days of the order and we \
         reimburse the full price of the licence to the card you paid with.",
    ),
    (
        "Garden.md",
        "Tomatoes want sun and water every other day; prune the side shoots in July.",
    ),
    (
        "Sourdough.md",
        "Feed the starter with flour and water, let the dough rise overnight and bake it hot.",
    ),
    (
        "Travel checklist.md",
        "Passport, charger, tickets and a spare shirt before the flight leaves.",
    ),
];

fn subjects() -> (TempDir, Engine) {
    let pages: Vec<(&str, Vec<BlockDoc>)> = SUBJECTS
        .iter()
        .map(|(path, text)| (*path, vec![block(path, path, text)]))
        .collect();
    let (dir, engine) = engine_with(&pages);
    engine.set_meaning(true);
    (dir, engine)
}

#[test]
fn a_question_finds_the_note_it_means_without_sharing_a_word() {
    let (_dir, engine) = subjects();
    let page = engine.search("how do I get my money back", 10, 0).unwrap();
    assert_eq!(
        page.hits.first().map(|h| h.page_path.as_str()),
        Some("Refund policy.md"),
        "{page:?}"
    );
    assert!(
        page.total < SUBJECTS.len(),
        "unrelated notes stay out: {page:?}"
    );

    // Off, only words count: none of the question's is in any note.
    engine.set_meaning(false);
    assert_eq!(
        engine
            .search("how do I get my money back", 10, 0)
            .unwrap()
            .total,
        0
    );
}

#[test]
fn a_question_ranks_by_how_much_of_it_a_note_holds_and_names_first() {
    let (_dir, engine) = engine_with(&[
        (
            "Embed files.md",
            vec![block(
                "e",
                "Embed files.md",
                "Put an exclamation mark before a link.",
            )],
        ),
        (
            "Sync FAQ.md",
            vec![block(
                "s",
                "Sync FAQ.md",
                "A pdf in a note syncs like any other file.",
            )],
        ),
    ]);
    // Not every word is in one note: the note whose name holds the rarer words comes first.
    let page = engine
        .search("how can I embed a pdf in a note", 10, 0)
        .unwrap();
    assert_eq!(ids(&page).first(), Some(&"e"), "{page:?}");
    assert_eq!(page.total, 2);
}

/// Files of `ext` in the index folder: one per segment on the disk (merged away or not).
fn segment_files(path: &Path, ext: &str) -> usize {
    std::fs::read_dir(path)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == ext)
        })
        .count()
}

#[test]
fn a_close_lets_the_merge_under_way_finish() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("search");
    let mut engine = Engine::open(&path);
    // One segment per commit; the eighth in the lowest layer starts a merge of them all
    // (Tantivy's log merge policy).
    for i in 0..8 {
        let note = format!("n{i}.md");
        engine
            .replace_note(&note, &[block(&format!("b{i}"), &note, "heron")])
            .unwrap();
        engine.commit().unwrap();
    }
    drop(engine);
    // The merge finished, committed, and its inputs went: one segment, nothing left over.
    assert_eq!(segment_files(&path, "store"), 1);
    assert!(
        !path.join("unsynced").exists(),
        "the merge's commit is synced"
    );
    let engine = Engine::open(&path);
    assert_eq!(search_ids(&engine, "heron").len(), 8);
}
