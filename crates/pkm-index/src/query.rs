//! Turning the user's search text into a Tantivy query without Tantivy's query parser.
//!
//! The text is only ever analyzed, never parsed: `title:x`, `*`, `AND`, `-x` and parentheses are
//! separators or plain words, so no input can select a field, negate, or fail to parse. A pair of
//! double quotes makes a phrase; an unpaired quote is ignored.

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, EmptyQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use crate::tokenizer::{QueryToken, analyze};

/// Weight of a title match relative to a content match: a block is found through its page's
/// title, but a block that says the word itself ranks first.
const TITLE_BOOST: f32 = 0.5;

/// At most this many clauses are kept from one query; the rest of an oversized query is ignored
/// rather than building a boolean query with thousands of required clauses.
pub(crate) const MAX_CLAUSES: usize = 64;

/// One required part of a query: a single term, or a phrase of terms at the given distances.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Clause {
    pub terms: Vec<String>,
    /// Position of each term relative to the first; a gap marks a token the analyzer dropped.
    pub offsets: Vec<usize>,
}

impl Clause {
    fn push(&mut self, token: QueryToken, first_position: usize) {
        self.offsets
            .push(token.position.saturating_sub(first_position));
        self.terms.push(token.text);
    }

    /// The clause of a quoted phrase.
    pub(crate) fn phrase(tokens: Vec<QueryToken>) -> Clause {
        let first = tokens.first().map_or(0, |t| t.position);
        let mut clause = Clause::default();
        for token in tokens {
            clause.push(token, first);
        }
        clause
    }
}

/// Splits the user's text into required clauses (see the module docs).
pub(crate) fn clauses(analyzer: &mut TextAnalyzer, text: &str) -> Vec<Clause> {
    let parts: Vec<&str> = text.split('"').collect();
    let mut out: Vec<Clause> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        // Odd parts sit between two quotes, unless the last quote has no partner.
        let quoted = i % 2 == 1 && i + 1 < parts.len();
        let tokens = analyze(analyzer, part);
        if quoted {
            push_unique(&mut out, Clause::phrase(tokens));
        } else {
            for clause in word_clauses(tokens) {
                push_unique(&mut out, clause);
            }
        }
    }
    out.truncate(MAX_CLAUSES);
    out
}

/// Unquoted text: every word is its own clause, except that an unbroken run of Han or kana
/// characters (indexed one per token) must stay together as a phrase.
fn word_clauses(tokens: Vec<QueryToken>) -> Vec<Clause> {
    let mut out: Vec<Clause> = Vec::new();
    // End offset and first position of the open run of unspaced characters.
    let mut run: Option<(usize, usize)> = None;
    for token in tokens {
        let (from, to, position, unspaced) = (
            token.offset_from,
            token.offset_to,
            token.position,
            token.unspaced,
        );
        match (out.last_mut(), run) {
            (Some(last), Some((end, first))) if unspaced && end == from => {
                last.push(token, first);
                run = Some((to, first));
            }
            _ => {
                out.push(Clause::phrase(vec![token]));
                run = unspaced.then_some((to, position));
            }
        }
    }
    out
}

fn push_unique(out: &mut Vec<Clause>, clause: Clause) {
    if !clause.terms.is_empty() && !out.contains(&clause) {
        out.push(clause);
    }
}

/// A query on one field matching the clause: a term query or a phrase query.
pub(crate) fn field_query(field: Field, clause: &Clause) -> Box<dyn Query> {
    match clause.terms.as_slice() {
        [] => Box::new(EmptyQuery),
        [term] => Box::new(TermQuery::new(
            Term::from_field_text(field, term),
            IndexRecordOption::WithFreqs,
        )),
        terms => Box::new(PhraseQuery::new_with_offset(
            clause
                .offsets
                .iter()
                .zip(terms)
                .map(|(offset, term)| (*offset, Term::from_field_text(field, term)))
                .collect(),
        )),
    }
}

/// Every clause must match, each in the content or (boosted lower) in the title. `None` when
/// there is no clause, i.e. nothing to search for.
pub(crate) fn search_query(
    content: Field,
    title: Field,
    clauses: &[Clause],
) -> Option<Box<dyn Query>> {
    if clauses.is_empty() {
        return None;
    }
    let required = clauses
        .iter()
        .map(|clause| {
            let either: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
                (Occur::Should, field_query(content, clause)),
                (
                    Occur::Should,
                    Box::new(BoostQuery::new(field_query(title, clause), TITLE_BOOST)),
                ),
            ]));
            (Occur::Must, either)
        })
        .collect();
    Some(Box::new(BooleanQuery::new(required)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::analyzer;

    fn check(text: &str) -> Vec<Vec<String>> {
        clauses(&mut analyzer(), text)
            .into_iter()
            .map(|c| c.terms)
            .collect()
    }

    fn v(items: &[&[&str]]) -> Vec<Vec<String>> {
        items
            .iter()
            .map(|c| c.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn words_become_separate_clauses() {
        assert_eq!(check("Rust  async"), v(&[&["rust"], &["async"]]));
    }

    #[test]
    fn quotes_make_phrases_and_unpaired_quotes_are_ignored() {
        assert_eq!(
            check("\"hello world\" x"),
            v(&[&["hello", "world"], &["x"]])
        );
        assert_eq!(check("\"hello world"), v(&[&["hello"], &["world"]]));
        assert_eq!(
            check("a \"b c\" \"d e"),
            v(&[&["a"], &["b", "c"], &["d"], &["e"]])
        );
    }

    #[test]
    fn syntax_characters_are_separators() {
        assert_eq!(
            check("title:x AND (b* -x"),
            v(&[&["title"], &["x"], &["and"], &["b"]])
        );
        assert!(check("* ( ) - : \"").is_empty());
    }

    #[test]
    fn han_runs_are_phrases() {
        assert_eq!(
            check("东京 大阪x"),
            v(&[&["东", "京"], &["大", "阪"], &["x"]])
        );
    }

    #[test]
    fn phrases_keep_the_gap_of_a_dropped_token() {
        let long = "x".repeat(100);
        let found = clauses(&mut analyzer(), &format!("\"keep {long} this\" 东京"));
        assert_eq!(found[0].offsets, [0, 2]);
        assert_eq!(found[1].offsets, [0, 1]);
    }

    #[test]
    fn duplicate_clauses_collapse_and_the_count_is_capped() {
        assert_eq!(check("a A á"), v(&[&["a"]]));
        let many: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        assert_eq!(check(&many.join(" ")).len(), MAX_CLAUSES);
    }
}
