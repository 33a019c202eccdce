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
