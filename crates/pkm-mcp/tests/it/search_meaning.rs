//! kb_search answers a question asked in a sentence, in words the note does not use (issue #33):
//! the real binary over a vault written here.

use serde_json::{Value, json};

use crate::common::stdio::Server;

/// A few notes on unrelated subjects; the refund note never says "money" or "back".
const NOTES: &[(&str, &str)] = &[
    (
        "Refund policy.md",
        "# Refund policy\n\nIf a purchase did not work out, write to support within 30 days of \
         the order and we reimburse the full price of the licence to the card you paid with.\n",
    ),
    (
        "Garden.md",
        "# Garden\n\nTomatoes want sun and water every other day; prune the side shoots in \
         July.\n",
    ),
    (
        "Keyboard shortcuts.md",
        "# Keyboard shortcuts\n\nPress Ctrl+P to open the command palette and Ctrl+O to jump \
         to a file.\n",
    ),
    (
        "Sourdough.md",
        "# Sourdough\n\nFeed the starter with flour and water, let the dough rise overnight and \
         bake it in a hot oven.\n",
    ),
    (
        "Travel checklist.md",
        "# Travel checklist\n\nPassport, charger, tickets and a spare shirt before the flight \
         leaves.\n",
    ),
];

fn pages(hits: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for hit in hits["results"].as_array().unwrap() {
        let page = hit["page_path"].as_str().unwrap().to_owned();
        if !out.contains(&page) {
            out.push(page);
        }
    }
    out
}

#[test]
fn a_question_in_other_words_finds_the_note_it_means_and_keywords_still_rank_by_words() {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in NOTES {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let mut s = Server::start(dir.path());

    // No content word of the question is in the note: only its meaning finds it.
    let question = s.ok("kb_search", json!({"query": "how do I get my money back?"}));
    let found = pages(&question);
    assert_eq!(
        found.first().map(String::as_str),
        Some("Refund policy.md"),
        "{question}"
    );
    assert!(
        question["total"].as_u64().unwrap() < NOTES.len() as u64,
        "unrelated notes stay out: {question}"
    );

    // A keyword query still puts the note holding the word first, its matched words marked.
    let keyword = s.ok("kb_search", json!({"query": "sourdough"}));
    assert_eq!(
        pages(&keyword).first().map(String::as_str),
        Some("Sourdough.md"),
        "{keyword}"
    );
    assert!(
        keyword["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("<b>"),
        "{keyword}"
    );

    // A question whose content words are in a note's title: the function words do not stop it.
    let worded = s.ok(
        "kb_search",
        json!({"query": "where can I find the keyboard shortcuts?"}),
    );
    assert_eq!(
        pages(&worded).first().map(String::as_str),
        Some("Keyboard shortcuts.md"),
        "{worded}"
    );

    // Words that mean nothing here find nothing.
    let nonsense = s.ok("kb_search", json!({"query": "zqxj vbnmk"}));
    assert_eq!(nonsense["total"], 0, "{nonsense}");
}

/// A search for a word lists every note holding it before any note found by meaning alone: a
/// long note holding the word once (a low BM25) stays ahead of short notes made of look-alike
/// word pieces (as a burst of edits or an import leaves them).
#[test]
fn notes_holding_the_word_come_before_notes_close_only_in_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let word = "qxblmhkgkhgdw";
    let filler = "The quarterly review covered budgets, hiring plans and the roadmap for \
                  next year, with notes on each team's goals and risks.\n\n"
        .repeat(60);
    std::fs::write(dir.path().join("Short.md"), format!("Seen: {word}.\n")).unwrap();
    std::fs::write(
        dir.path().join("Long.md"),
        format!("# Review\n\n{filler}Burst edit {word}.\n"),
    )
    .unwrap();
    let look_alikes = [
        "qxwwmwhvvwlmq",
        "qxwjblxmbjhqz",
        "qxwddjxkbzppz",
        "qxwfcgjslbznm",
        "qxwpmgzjvhnst",
        "qxwxtxgqhgmkz",
        "qxwslrwdlnkvm",
        "qxwhwjsvjgrqf",
    ];
    for (i, other) in look_alikes.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("ext-{i}.md")),
            format!("Written by another program: {other} here.\n"),
        )
        .unwrap();
    }
    let mut s = Server::start(dir.path());
    let hits = s.ok("kb_search", json!({"query": word, "limit": 20}));
    let found = pages(&hits);
    let mut first_two = found.iter().take(2).cloned().collect::<Vec<_>>();
    first_two.sort();
    assert_eq!(first_two, ["Long.md", "Short.md"], "{hits}");
}
