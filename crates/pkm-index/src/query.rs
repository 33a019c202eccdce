//! Turning the user's search text into a Tantivy query without Tantivy's query parser.
//!
//! The text is only ever analyzed, never parsed: `title:x`, `*`, `AND`, `-x` and parentheses are
//! separators or plain words, so no input can select a field, negate, or fail to parse. A pair of
//! double quotes makes a phrase; an unpaired quote is ignored. Unquoted function words ("how do
//! I", "in my") are dropped (see [`Stopwords`]) unless nothing else is left.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tantivy::index::SegmentId;
use tantivy::query::{
    BitSetDocSet, BooleanQuery, BoostQuery, ConstScoreQuery, ConstScorer, DfaWrapper,
    DisjunctionMaxQuery, EmptyQuery, EnableScoring, Explanation, FuzzyTermQuery, Occur,
    PhraseQuery, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{BitSet, DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};
use tantivy_fst::Automaton;

use crate::tokenizer::{QueryToken, Stopwords, analyze};

/// At most this many clauses are kept from one query; the rest of an oversized query is ignored
/// rather than building a boolean query with thousands of required clauses.
pub(crate) const MAX_CLAUSES: usize = 64;

/// One required part of a query: a single term, or a phrase of terms at the given distances.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clause {
    pub terms: Vec<String>,
    /// Position of each term relative to the first; a gap marks a token the analyzer dropped.
    pub offsets: Vec<usize>,
    /// Characters of the text the clause was analyzed from (for a single word: the word as
    /// typed, which decides whether it may match with a typo).
    pub typed_chars: usize,
    /// The clause as typed (a word, or a quoted phrase's text): what the meaning model weighs
    /// (see [`coverage_weight`]).
    pub typed: String,
    /// Byte range of the typed text in the part of the query it came from.
    from: usize,
    to: usize,
}

/// Two clauses are the same when they match the same: the same terms at the same offsets.
impl PartialEq for Clause {
    fn eq(&self, other: &Clause) -> bool {
        self.terms == other.terms && self.offsets == other.offsets
    }
}

impl Eq for Clause {}

impl Clause {
    fn push(&mut self, token: QueryToken, first_position: usize) {
        if self.terms.is_empty() {
            self.from = token.offset_from;
        }
        self.to = token.offset_to;
        self.typed_chars += token.typed_chars;
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

/// Splits the user's text into required clauses (see the module docs). Unquoted words that are
/// `stopwords` of the language are left out, unless every clause would be.
pub(crate) fn clauses(
    analyzer: &mut TextAnalyzer,
    stopwords: &mut Stopwords,
    text: &str,
) -> Vec<Clause> {
    let parts: Vec<&str> = text.split('"').collect();
    let mut out: Vec<Clause> = Vec::new();
    let mut all: Vec<Clause> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        // Odd parts sit between two quotes, unless the last quote has no partner.
        let quoted = i % 2 == 1 && i + 1 < parts.len();
        let tokens = analyze(analyzer, part);
        if quoted {
            let mut phrase = Clause::phrase(tokens);
            phrase.typed = (*part).to_owned();
            push_unique(&mut all, phrase.clone());
            push_unique(&mut out, phrase);
        } else {
            for mut clause in word_clauses(tokens) {
                let typed = part.get(clause.from..clause.to).unwrap_or_default();
                clause.typed = typed.to_owned();
                push_unique(&mut all, clause.clone());
                if clause.terms.len() > 1 || !stopwords.contains(typed) {
                    push_unique(&mut out, clause);
                }
            }
        }
    }
    if out.is_empty() {
        out = all;
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

/// The fields a search reads, of the one document of each note: `name` (its title, aliases and
/// file name), `name_exact` (each of those analyzed and joined), `body` (the text of every block,
/// one value each, with positions).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchFields {
    pub name: Field,
    pub name_exact: Field,
    pub body: Field,
    pub page_path: Field,
}

/// How strictly the clauses of a query must match; a search tries each in turn until one finds
/// something (see [`MATCHINGS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Matching {
    /// Every clause, as written (after analysis: stemmed and folded).
    Every,
    /// Every clause, a word of [`FUZZY_MIN_CHARS`] or more also at one typo (two from
    /// [`FUZZY_TWO_CHARS`]).
    EveryFuzzy,
    /// Any clause, typos allowed as in `EveryFuzzy`; a note ranks by how much of the query it
    /// covers: the summed rarity of the clauses it holds, a clause in a name counting
    /// [`COVER_NAME`] times more, BM25 only breaking near-ties.
    Coverage,
}

/// The order in which [`Matching`]s are tried.
pub(crate) const MATCHINGS: [Matching; 3] =
    [Matching::Every, Matching::EveryFuzzy, Matching::Coverage];

/// Under [`Matching::Coverage`], the weight of a clause found in a note's name against found in
/// its text (both count: a clause in the name and the text weighs 3.5 times one in the text).
const COVER_NAME: f32 = 2.5;
/// Under [`Matching::Coverage`], a clause weighs its rarity among notes to this power (see
/// [`coverage_weight`]).
const COVER_RARITY_POWER: f32 = 1.5;
/// The length of a typical content word's vector in the meaning model (between "meeting", 4.0,
/// and "week", 3.7; "what" is 2.1, "yeast" 7.6): a clause whose word has this length keeps its
/// weight under [`coverage_weight`].
const COVER_SPECIFIC_LENGTH: f32 = 4.0;

/// The weight of a clause under [`Matching::Coverage`]: its `rarity` (the summed inverse document
/// frequency of its terms among notes) to the power [`COVER_RARITY_POWER`], times its
/// `specificity` relative to [`COVER_SPECIFIC_LENGTH`] when known.
///
/// Why: a question's words that the vault holds in few notes are not all telling. In a small
/// vault "best", "time" or "take" are as rare as "quarter" or "yeast", and a note that holds two
/// such words outranked the note holding the one rare word the question is about. The power
/// spreads the rarities apart (a word in one note weighs far more than a word in ten), and the
/// specificity says how specific the word is in English at large: the length of its vector in
/// the static meaning model (the largest of its word pieces', [`crate::embed::Model::specificity`]),
/// which model2vec's frequency weighting makes short for common words. Measured on the judged
/// question sets of `scripts/bench/relevance/` (ADR-0015).
pub(crate) fn coverage_weight(rarity: f32, specificity: Option<f32>) -> f32 {
    let rarity = rarity.max(0.0).powf(COVER_RARITY_POWER);
    match specificity {
        Some(length) if length > 0.0 => rarity * length / COVER_SPECIFIC_LENGTH,
        _ => rarity,
    }
}
/// Under [`Matching::Coverage`], the weight of the BM25 score beside the coverage.
const COVER_BM25: f32 = 0.1;

/// Words shorter than this (in characters, as typed) are never matched with a typo: at one edit
/// too many short words are another word.
const FUZZY_MIN_CHARS: usize = 5;
/// Words of this many characters may have two typos.
const FUZZY_TWO_CHARS: usize = 9;

/// Weight of a match in a note's name (title, alias, file name) against one in its text.
pub(crate) const NAME_BOOST: f32 = 4.0;
/// Weight of the query's words forming a phrase in the name, in order.
pub(crate) const NAME_PHRASE_BOOST: f32 = 6.0;
/// Weight of the query being exactly a name of the note.
pub(crate) const NAME_EXACT_BOOST: f32 = 16.0;
/// Weight of a typo match against the word itself.
const FUZZY_WEIGHT: f32 = 0.3;

/// The analyzed words of `text` joined by one space: the form under which a note's names are
/// indexed in `name_exact`, and the query looked up there.
pub(crate) fn exact_key(analyzer: &mut TextAnalyzer, text: &str) -> String {
    let tokens = analyze(analyzer, text);
    let words: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    words.join(" ")
}

impl Clause {
    /// Whether this clause is a single word long enough to be matched with a typo, and with
    /// how many.
    fn typos(&self, matching: Matching) -> Option<u8> {
        if matching == Matching::Every {
            return None;
        }
        match (self.terms.as_slice(), self.typed_chars) {
            ([_], n) if n >= FUZZY_TWO_CHARS => Some(2),
            ([_], n) if n >= FUZZY_MIN_CHARS => Some(1),
            _ => None,
        }
    }
}

/// The typo matches of a search's words: each word's Levenshtein automaton is built once, and its
/// matches in a field of a segment found once, for every matching that asks for them (a search
/// that falls back to typos asks for each word up to four times: in the name and the text under
/// `EveryFuzzy` and under `Coverage` ([`CoverageQuery`]; five when a phrase among the clauses
/// keeps Coverage's nested queries, which ask twice in the text); building the automaton of a
/// long word at two edits, and walking a term dictionary with it, are the costly parts). The
/// queries match and score exactly as Tantivy's `FuzzyTermQuery` with transpositions (its
/// `AutomatonWeight`: every document holding a matching term, scored 1), which builds its
/// automaton and walks the dictionary anew each time.
#[derive(Default)]
pub(crate) struct Typos {
    words: HashMap<(String, u8), Arc<TypoMatches>>,
}

/// The documents a word's typos matched in one field of one segment, in order.
type FieldMatches = HashMap<(SegmentId, Field), Arc<[DocId]>>;

/// One word's automaton, and the documents it matched so far, by segment and field.
struct TypoMatches {
    automaton: DfaWrapper,
    docs: Mutex<FieldMatches>,
}

impl Typos {
    /// The documents whose `field` holds a word within `distance` edits of `term`, scored 1.
    fn query(&mut self, field: Field, term: &str, distance: u8) -> Box<dyn Query> {
        match self.shared(field, term, distance) {
            Some(shared) => Box::new(shared),
            // Tantivy's query reports the same error when searched.
            None => Box::new(FuzzyTermQuery::new(
                Term::from_field_text(field, term),
                distance,
                true,
            )),
        }
    }

    /// The query of [`Typos::query`] with its automaton and matches shared; `None` when the
    /// automaton cannot be built.
    fn shared(&mut self, field: Field, term: &str, distance: u8) -> Option<SharedTypos> {
        let matches = self.word(term, distance)?;
        Some(SharedTypos { field, matches })
    }

    /// The automaton of `term` within `distance` edits (and its matches so far), built once.
    fn word(&mut self, term: &str, distance: u8) -> Option<Arc<TypoMatches>> {
        let key = (term.to_owned(), distance);
        if let Some(matches) = self.words.get(&key) {
            return Some(Arc::clone(matches));
        }
        // The automaton depends on the term's text alone: any field will do.
        let field = Field::from_field_id(0);
        let fuzzy = FuzzyTermQuery::new(Term::from_field_text(field, term), distance, true);
        let matches = Arc::new(TypoMatches {
            automaton: fuzzy.automaton().ok()?,
            docs: Mutex::new(HashMap::new()),
        });
        self.words.insert(key, Arc::clone(&matches));
        Some(matches)
    }
}

impl TypoMatches {
    /// Whether `word` is within the automaton's edits of its term: the test the index's typo
    /// matches passed, run on one word (a byte at a time, stopping once no match is possible).
    fn accepts(&self, word: &str) -> bool {
        let automaton = &self.automaton;
        let mut state = automaton.start();
        for byte in word.bytes() {
            state = automaton.accept(&state, byte);
            if !automaton.can_match(&state) {
                return false;
            }
        }
        automaton.is_match(&state)
    }

    /// The documents of `segment` whose `field` holds a term the automaton accepts, in order.
    fn docs(&self, segment: &SegmentReader, field: Field) -> tantivy::Result<SharedDocs> {
        let key = (segment.segment_id(), field);
        if let Some(docs) = self.docs.lock().get(&key) {
            return Ok(SharedDocs::new(Arc::clone(docs)));
        }
        let mut docs = BitSet::with_max_value(segment.max_doc());
        let inverted = segment.inverted_index(field)?;
        let mut terms = inverted.terms().search(&self.automaton).into_stream()?;
        while terms.advance() {
            let mut postings = inverted
                .read_block_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
            loop {
                let block = postings.docs();
                if block.is_empty() {
                    break;
                }
                for doc in block {
                    docs.insert(*doc);
                }
                postings.advance();
            }
        }
        // Kept as a list: a search reads each word's matches up to three times (the bit set
        // spans every document of the segment, blocks included, and was copied each time).
        let mut list = Vec::new();
        let mut iter = BitSetDocSet::from(docs);
        while iter.doc() != TERMINATED {
            list.push(iter.doc());
            iter.advance();
        }
        let docs: Arc<[DocId]> = list.into();
        self.docs.lock().insert(key, Arc::clone(&docs));
        Ok(SharedDocs::new(docs))
    }
}

/// Documents in order, shared: the matches of one word's typos in a segment's field.
struct SharedDocs {
    docs: Arc<[DocId]>,
    at: usize,
}

impl SharedDocs {
    fn new(docs: Arc<[DocId]>) -> SharedDocs {
        SharedDocs { docs, at: 0 }
    }

    fn contains(&self, doc: DocId) -> bool {
        self.docs.binary_search(&doc).is_ok()
    }
}

impl DocSet for SharedDocs {
    fn advance(&mut self) -> DocId {
        self.at = self.at.saturating_add(1).min(self.docs.len());
        self.doc()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        let rest = self.docs.get(self.at..).unwrap_or_default();
        self.at += rest.partition_point(|doc| *doc < target);
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.at).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        u32::try_from(self.docs.len() - self.at).unwrap_or(u32::MAX)
    }
}

/// A typo query on one field, its automaton and matches shared (see [`Typos`]).
#[derive(Clone)]
struct SharedTypos {
    field: Field,
    matches: Arc<TypoMatches>,
}

impl std::fmt::Debug for SharedTypos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTypos")
            .field("field", &self.field)
            .finish_non_exhaustive()
    }
}

impl Query for SharedTypos {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for SharedTypos {
    fn scorer(&self, segment: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matches.docs(segment, self.field)?;
        Ok(Box::new(ConstScorer::new(docs, boost)))
    }

    fn explain(&self, segment: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matches.docs(segment, self.field)?.contains(doc) {
            Ok(Explanation::new("SharedTypos", 1.0))
        } else {
            Err(TantivyError::InvalidArgument(
                "the document does not match".to_owned(),
            ))
        }
    }
}

/// A single word in `field`, also with `typos` edits when given (weighted lower).
fn word_query(field: Field, term: &str, typos: Option<u8>, automata: &mut Typos) -> Box<dyn Query> {
    let exact: Box<dyn Query> = Box::new(TermQuery::new(
        Term::from_field_text(field, term),
        IndexRecordOption::WithFreqs,
    ));
    match typos {
        None => exact,
        Some(distance) => Box::new(BooleanQuery::new(vec![
            (Occur::Should, exact),
            (
                Occur::Should,
                Box::new(BoostQuery::new(
                    automata.query(field, term, distance),
                    FUZZY_WEIGHT,
                )),
            ),
        ])),
    }
}

/// The query on note documents: each clause (as `matching` asks) in the note's name or text, a
/// phrase clause within one block (the text of each block is its own value of `body`, and Tantivy
/// leaves a position free between values, so a phrase never spans two blocks) or in the name;
/// scored by the text, names weighted up, the exact name most.
///
/// Under [`Matching::Coverage`], `weights` (one per clause: its rarity among notes) score each
/// clause a note holds.
pub(crate) fn note_query(
    fields: &SearchFields,
    clauses: &[Clause],
    weights: &[f32],
    exact: &str,
    matching: Matching,
    automata: &mut Typos,
) -> Box<dyn Query> {
    let flat = match matching {
        Matching::Coverage => CoverageQuery::of(fields, clauses, weights, automata),
        Matching::Every | Matching::EveryFuzzy => None,
    };
    let words: Box<dyn Query> = match flat {
        Some(flat) => Box::new(flat),
        None => words_query(fields, clauses, weights, matching, automata),
    };
    let mut all_terms = Clause::default();
    for term in clauses.iter().flat_map(|c| &c.terms) {
        all_terms.offsets.push(all_terms.terms.len());
        all_terms.terms.push(term.clone());
    }
    let mut top: Vec<(Occur, Box<dyn Query>)> = vec![
        (Occur::Must, words),
        (
            Occur::Should,
            Box::new(BoostQuery::new(
                Box::new(TermQuery::new(
                    Term::from_field_text(fields.name_exact, exact),
                    IndexRecordOption::Basic,
                )),
                NAME_EXACT_BOOST,
            )),
        ),
    ];
    if all_terms.terms.len() > 1 {
        top.push((
            Occur::Should,
            Box::new(BoostQuery::new(
                field_query(fields.name, &all_terms),
                NAME_PHRASE_BOOST,
            )),
        ));
    }
    Box::new(BooleanQuery::new(top))
}

/// The clauses of [`note_query`] as nested queries: every clause required, or under
/// [`Matching::Coverage`] any ([`coverage_query`]).
fn words_query(
    fields: &SearchFields,
    clauses: &[Clause],
    weights: &[f32],
    matching: Matching,
    automata: &mut Typos,
) -> Box<dyn Query> {
    let per_clause: Vec<(Occur, Box<dyn Query>)> = clauses
        .iter()
        .zip(weights.iter().copied().chain(std::iter::repeat(1.0)))
        .map(|(clause, weight)| {
            if matching == Matching::Coverage {
                return (
                    Occur::Should,
                    coverage_query(fields, clause, weight, automata),
                );
            }
            let typos = clause.typos(matching);
            let in_name: Box<dyn Query> = match typos {
                Some(_) => word_query(fields.name, &clause.terms[0], typos, automata),
                None => field_query(fields.name, clause),
            };
            let in_name: Box<dyn Query> = Box::new(BoostQuery::new(in_name, NAME_BOOST));
            let mut parts: Vec<(Occur, Box<dyn Query>)> = clause
                .terms
                .iter()
                .map(|t| (Occur::Should, word_query(fields.body, t, typos, automata)))
                .collect();
            if clause.terms.len() > 1 {
                // A phrase: in one block of the note, or in its name; the words score in the text.
                let in_block = ConstScoreQuery::new(field_query(fields.body, clause), 0.0);
                let either = BooleanQuery::new(vec![
                    (Occur::Should, Box::new(in_block) as Box<dyn Query>),
                    (Occur::Should, in_name),
                ]);
                parts.push((Occur::Must, Box::new(either)));
            } else {
                parts.push((Occur::Should, in_name));
            }
            (
                Occur::Should,
                Box::new(BooleanQuery::new(parts)) as Box<dyn Query>,
            )
        })
        .collect();
    let required = match matching {
        Matching::Coverage => 1,
        Matching::Every | Matching::EveryFuzzy => per_clause.len(),
    };
    Box::new(BooleanQuery::with_minimum_required_clauses(
        per_clause, required,
    ))
}

/// One clause under [`Matching::Coverage`]: its `weight` when the note holds it in its text, a
/// typo of it [`FUZZY_WEIGHT`] of that, [`COVER_NAME`] times more when in a name; a fraction of
/// its BM25 score besides.
fn coverage_query(
    fields: &SearchFields,
    clause: &Clause,
    weight: f32,
    automata: &mut Typos,
) -> Box<dyn Query> {
    let typos = clause.typos(Matching::Coverage);
    let mut held = |field: Field, weight: f32| -> Box<dyn Query> {
        let exact: Box<dyn Query> =
            Box::new(ConstScoreQuery::new(field_query(field, clause), weight));
        match (typos, clause.terms.as_slice()) {
            (Some(distance), [term]) => Box::new(DisjunctionMaxQuery::new(vec![
                exact,
                Box::new(ConstScoreQuery::new(
                    automata.query(field, term, distance),
                    weight * FUZZY_WEIGHT,
                )),
            ])),
            _ => exact,
        }
    };
    let held: Box<dyn Query> = Box::new(BooleanQuery::new(vec![
        (Occur::Should, held(fields.body, weight)),
        (Occur::Should, held(fields.name, weight * COVER_NAME)),
    ]));
    let bm25: Vec<(Occur, Box<dyn Query>)> = clause
        .terms
        .iter()
        .map(|t| (Occur::Should, word_query(fields.body, t, typos, automata)))
        .collect();
    Box::new(BooleanQuery::new(vec![
        (Occur::Must, held),
        (
            Occur::Should,
            Box::new(BoostQuery::new(
                Box::new(BooleanQuery::new(bm25)),
                COVER_BM25,
            )),
        ),
    ]))
}

/// [`Matching::Coverage`]'s union of clauses when every clause is one word, evaluated flat: the
/// same documents, each scored as the union of [`coverage_query`]s scores it (the clauses' scores
/// summed in clause order), but by one scorer that merges each word's postings in the text and the
/// name and its typo matches, instead of five nested Boolean, disjunction-max and constant scorers
/// per word. At 100k notes a ten-word question's union holds most notes, and the nested scorers
/// made kb_search's p95 30 ms.
#[derive(Clone)]
pub(crate) struct CoverageQuery {
    words: Vec<CoverWord>,
}

/// One word of a [`CoverageQuery`]: its terms in the text and the name, its weight
/// ([`coverage_weight`]), its typo matches in the text and the name when it may have typos.
#[derive(Clone)]
struct CoverWord {
    body: Term,
    name: Term,
    weight: f32,
    typos: Option<(SharedTypos, SharedTypos)>,
}

impl std::fmt::Debug for CoverageQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoverageQuery")
            .field("words", &self.words.len())
            .finish_non_exhaustive()
    }
}

impl CoverageQuery {
    /// The flat query of `clauses` weighted `weights`, or `None` when a clause is a phrase (or a
    /// typo automaton cannot be built): then the nested queries of [`coverage_query`] serve.
    fn of(
        fields: &SearchFields,
        clauses: &[Clause],
        weights: &[f32],
        automata: &mut Typos,
    ) -> Option<CoverageQuery> {
        let mut words = Vec::with_capacity(clauses.len());
        for (clause, weight) in clauses
            .iter()
            .zip(weights.iter().copied().chain(std::iter::repeat(1.0)))
        {
            let [term] = clause.terms.as_slice() else {
                return None;
            };
            let typos = match clause.typos(Matching::Coverage) {
                Some(distance) => Some((
                    automata.shared(fields.body, term, distance)?,
                    automata.shared(fields.name, term, distance)?,
                )),
                None => None,
            };
            words.push(CoverWord {
                body: Term::from_field_text(fields.body, term),
                name: Term::from_field_text(fields.name, term),
                weight,
                typos,
            });
        }
        Some(CoverageQuery { words })
    }
}

impl Query for CoverageQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let words = self
            .words
            .iter()
            .map(|word| {
                Ok(CoverWordWeight {
                    body: TermQuery::new(word.body.clone(), IndexRecordOption::WithFreqs)
                        .weight(scoring)?,
                    name: TermQuery::new(word.name.clone(), IndexRecordOption::Basic)
                        .weight(scoring)?,
                    weight: word.weight,
                    typos: word.typos.clone(),
                })
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(CoverageWeight { words }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for word in &self.words {
            visitor(&word.body, false);
            visitor(&word.name, false);
        }
    }
}

struct CoverageWeight {
    words: Vec<CoverWordWeight>,
}

struct CoverWordWeight {
    body: Box<dyn Weight>,
    name: Box<dyn Weight>,
    weight: f32,
    typos: Option<(SharedTypos, SharedTypos)>,
}

impl Weight for CoverageWeight {
    fn scorer(&self, segment: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        // The scores of `coverage_query`'s parts, computed as its scorers compute them: a
        // constant query multiplies its score by the boost given to it (1 for the held parts,
        // under the Boolean queries), a boost query passes its boost down multiplied by its own.
        let bm25_boost = boost * COVER_BM25;
        let words = self
            .words
            .iter()
            .map(|word| {
                let name_weight = word.weight * COVER_NAME;
                let (body_typos, name_typos) = match &word.typos {
                    Some((body, name)) => (
                        Some(body.matches.docs(segment, body.field)?),
                        Some(name.matches.docs(segment, name.field)?),
                    ),
                    None => (None, None),
                };
                let mut stream = WordStream {
                    body: word.body.scorer(segment, bm25_boost)?,
                    name: word.name.scorer(segment, 1.0)?,
                    body_typos,
                    name_typos,
                    in_body: word.weight,
                    in_body_typo: word.weight * FUZZY_WEIGHT,
                    in_name: name_weight,
                    in_name_typo: name_weight * FUZZY_WEIGHT,
                    bm25_typo: bm25_boost * FUZZY_WEIGHT,
                    doc: 0,
                    score: 0.0,
                };
                stream.advance();
                Ok(stream)
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        let mut scorer = CoverageScorer {
            words,
            doc: 0,
            score: 0.0,
        };
        scorer.advance();
        Ok(Box::new(scorer))
    }

    fn explain(&self, segment: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(segment, 1.0)?;
        if scorer.seek(doc) == doc {
            Ok(Explanation::new("CoverageQuery", scorer.score()))
        } else {
            Err(TantivyError::InvalidArgument(
                "the document does not match".to_owned(),
            ))
        }
    }
}

/// The documents of one word of a [`CoverageQuery`] in order, each with the score
/// [`coverage_query`] gives it.
struct WordStream {
    /// The word in the text, scored by BM25 (boosted [`COVER_BM25`]).
    body: Box<dyn Scorer>,
    /// The word in a name.
    name: Box<dyn Scorer>,
    body_typos: Option<SharedDocs>,
    name_typos: Option<SharedDocs>,
    /// What each kind of match weighs.
    in_body: Score,
    in_body_typo: Score,
    in_name: Score,
    in_name_typo: Score,
    bm25_typo: Score,
    doc: DocId,
    score: Score,
}

fn doc_of(docs: Option<&SharedDocs>) -> DocId {
    docs.map_or(TERMINATED, DocSet::doc)
}

impl WordStream {
    /// Moves to the first document at or after `target` holding the word (see `advance`).
    fn seek(&mut self, target: DocId) {
        if self.body.doc() < target {
            self.body.seek(target);
        }
        if self.name.doc() < target {
            self.name.seek(target);
        }
        for docs in [&mut self.body_typos, &mut self.name_typos]
            .into_iter()
            .flatten()
        {
            if docs.doc() < target {
                docs.seek(target);
            }
        }
        self.advance();
    }

    /// Moves to the next document holding the word and scores it as `coverage_query` does: the
    /// best of the text's matches (the word, or a typo of it: a disjunction max) plus the best of
    /// the name's, plus BM25's part (the word's score plus the typo's constant).
    fn advance(&mut self) {
        let doc = self
            .body
            .doc()
            .min(self.name.doc())
            .min(doc_of(self.body_typos.as_ref()))
            .min(doc_of(self.name_typos.as_ref()));
        self.doc = doc;
        if doc == TERMINATED {
            return;
        }
        let body = self.body.doc() == doc;
        let body_typo = doc_of(self.body_typos.as_ref()) == doc;
        let name = self.name.doc() == doc;
        let name_typo = doc_of(self.name_typos.as_ref()) == doc;
        let in_text = best(
            body.then_some(self.in_body),
            body_typo.then_some(self.in_body_typo),
        );
        let in_name = best(
            name.then_some(self.in_name),
            name_typo.then_some(self.in_name_typo),
        );
        let bm25 = sum(
            body.then(|| self.body.score()),
            body_typo.then_some(self.bm25_typo),
        );
        let held = sum(in_text, in_name).unwrap_or(0.0);
        self.score = sum(Some(held), bm25).unwrap_or(held);
        if body {
            self.body.advance();
        }
        if name {
            self.name.advance();
        }
        if body_typo && let Some(docs) = self.body_typos.as_mut() {
            docs.advance();
        }
        if name_typo && let Some(docs) = self.name_typos.as_mut() {
            docs.advance();
        }
    }
}

/// A disjunction max of present scores (its tie breaker 0), as Tantivy combines them.
fn best(a: Option<Score>, b: Option<Score>) -> Option<Score> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A sum of present scores.
fn sum(a: Option<Score>, b: Option<Score>) -> Option<Score> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The union of a [`CoverageQuery`]'s words, each document scored by the sum of its words'
/// scores.
struct CoverageScorer {
    words: Vec<WordStream>,
    doc: DocId,
    score: Score,
}

impl DocSet for CoverageScorer {
    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        for word in &mut self.words {
            if word.doc < target {
                word.seek(target);
            }
        }
        self.advance()
    }

    fn advance(&mut self) -> DocId {
        let doc = self.words.iter().map(|w| w.doc).min().unwrap_or(TERMINATED);
        self.doc = doc;
        if doc == TERMINATED {
            return doc;
        }
        let mut score = 0.0;
        for word in &mut self.words {
            if word.doc == doc {
                score += word.score;
                word.advance();
            }
        }
        self.score = score;
        doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.words
            .iter()
            .map(|w| {
                w.body
                    .size_hint()
                    .saturating_add(w.name.size_hint())
                    .saturating_add(
                        [&w.body_typos, &w.name_typos]
                            .into_iter()
                            .flatten()
                            .map(DocSet::size_hint)
                            .fold(0u32, u32::saturating_add),
                    )
            })
            .fold(0u32, u32::saturating_add)
    }
}

impl Scorer for CoverageScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

/// Any of the clauses in a note's text, a typo allowed as `matching` says: what snippets
/// highlight.
pub(crate) fn words_in_text(
    text: Field,
    clauses: &[Clause],
    matching: Matching,
    automata: &mut Typos,
) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(
        clauses
            .iter()
            .map(|clause| {
                let query = match clause.typos(matching) {
                    Some(typos) => word_query(text, &clause.terms[0], Some(typos), automata),
                    None => field_query(text, clause),
                };
                (Occur::Should, query)
            })
            .collect(),
    ))
}

/// BM25's term-frequency saturation and length normalization, as Tantivy scores.
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// Scores the blocks of a found note against the query, to pick the block a hit points at. Blocks
/// are not indexed word by word (their words are, once, in the note's `body`): the few blocks of
/// a page of hits are analyzed here instead, and scored as BM25 would score each block as a
/// document, every clause weighted by its words' rarity among notes.
pub(crate) struct BlockScorer<'c> {
    clauses: &'c [Clause],
    /// Per clause: the automaton of its single word's typos (when it may match with typos), its
    /// weight, and its terms as indexes into `terms`.
    typos: Vec<Option<Arc<TypoMatches>>>,
    weights: Vec<f32>,
    term_ids: Vec<Vec<usize>>,
    /// The distinct terms of all clauses.
    terms: Vec<&'c str>,
}

/// What [`BlockScorer`] needs of one block's text: which query term stands at each position.
pub(crate) struct BlockWords {
    /// Number of words (the block's length for BM25).
    len: usize,
    /// Per position, the index in [`BlockScorer::terms`] of the word there, if it is one.
    at: Vec<Option<usize>>,
    /// Per clause, the typo matches of its single word, each counting [`FUZZY_WEIGHT`].
    fuzzy: Vec<f32>,
}

impl BlockWords {
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl<'c> BlockScorer<'c> {
    /// `rarity(term)`: the weight of one analyzed word (its inverse document frequency); the
    /// typo automata come from (or join) `automata`, the search's.
    pub(crate) fn new(
        clauses: &'c [Clause],
        matching: Matching,
        rarity: impl Fn(&str) -> f32,
        automata: &mut Typos,
    ) -> BlockScorer<'c> {
        let mut terms: Vec<&str> = Vec::new();
        let term_ids = clauses
            .iter()
            .map(|clause| {
                clause
                    .terms
                    .iter()
                    .map(|term| match terms.iter().position(|t| t == term) {
                        Some(id) => id,
                        None => {
                            terms.push(term);
                            terms.len() - 1
                        }
                    })
                    .collect()
            })
            .collect();
        BlockScorer {
            clauses,
            typos: clauses
                .iter()
                .map(|c| match (c.typos(matching), c.terms.as_slice()) {
                    (Some(distance), [term]) => automata.word(term, distance),
                    _ => None,
                })
                .collect(),
            weights: clauses
                .iter()
                .map(|c| c.terms.iter().map(|t| rarity(t)).sum())
                .collect(),
            term_ids,
            terms,
        }
    }

    /// Analyzes `text`, keeping only what scoring needs.
    pub(crate) fn words(&self, analyzer: &mut TextAnalyzer, text: &str) -> BlockWords {
        let fuzzy = self.typos.iter().any(Option::is_some);
        let mut words = BlockWords {
            len: 0,
            at: Vec::new(),
            fuzzy: if fuzzy {
                vec![0.0; self.clauses.len()]
            } else {
                Vec::new()
            },
        };
        let mut stream = analyzer.token_stream(text);
        while let Some(token) = stream.next() {
            words.len += 1;
            let id = self.terms.iter().position(|t| *t == token.text);
            if id.is_some() {
                if words.at.len() <= token.position {
                    words.at.resize(token.position + 1, None);
                }
                words.at[token.position] = id;
            }
            for ((clause, typos), fuzzy) in
                self.clauses.iter().zip(&self.typos).zip(&mut words.fuzzy)
            {
                if let (Some(typos), [term]) = (typos, clause.terms.as_slice())
                    && *term != token.text
                    && typos.accepts(&token.text)
                {
                    *fuzzy += FUZZY_WEIGHT;
                }
            }
        }
        words
    }

    /// How often clause `c` occurs in `words`: a phrase counts where all its words stand at
    /// their offsets; a word within its typos counts [`FUZZY_WEIGHT`].
    fn occurrences(&self, words: &BlockWords, c: usize) -> f32 {
        let (Some(clause), Some(ids)) = (self.clauses.get(c), self.term_ids.get(c)) else {
            return 0.0;
        };
        let starts = (0..words.at.len()).filter(|start| {
            ids.iter()
                .zip(&clause.offsets)
                .all(|(id, offset)| words.at.get(start + offset).copied().flatten() == Some(*id))
        });
        starts.count() as f32 + words.fuzzy.get(c).copied().unwrap_or(0.0)
    }

    /// The BM25 score of `words` among blocks of `average_len` words on average.
    pub(crate) fn score(&self, words: &BlockWords, average_len: f32) -> f32 {
        let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * words.len as f32 / average_len.max(1.0));
        self.weights
            .iter()
            .enumerate()
            .map(|(c, weight)| {
                let tf = self.occurrences(words, c);
                weight * tf * (BM25_K1 + 1.0) / (tf + norm)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{SearchLanguage, analyzer};

    fn check(text: &str) -> Vec<Vec<String>> {
        let none = SearchLanguage::from_name("none").unwrap();
        clauses(&mut analyzer(none), &mut Stopwords::of(none), text)
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

    fn english(text: &str) -> Vec<Vec<String>> {
        let english = SearchLanguage::ENGLISH;
        clauses(&mut analyzer(english), &mut Stopwords::of(english), text)
            .into_iter()
            .map(|c| c.terms)
            .collect()
    }

    #[test]
    fn a_question_keeps_its_content_words() {
        assert_eq!(
            english("How do I get my money back after buying a license?"),
            v(&[&["get"], &["money"], &["back"], &["buy"], &["licens"]])
        );
        assert_eq!(
            english("can I use vim key bindings in the editor"),
            v(&[&["use"], &["vim"], &["key"], &["bind"], &["editor"]])
        );
    }

    #[test]
    fn function_words_stay_when_nothing_else_would_and_in_quotes() {
        assert_eq!(
            english("to be or not to be"),
            v(&[&["to"], &["be"], &["or"], &["not"]])
        );
        assert_eq!(
            english("\"the end\" of it"),
            v(&[&["the", "end"]]),
            "a quoted phrase is kept whole"
        );
        let german = SearchLanguage::from_name("german").unwrap();
        let found: Vec<Vec<String>> = clauses(
            &mut analyzer(german),
            &mut Stopwords::of(german),
            "wie kann ich die Notizen synchronisieren",
        )
        .into_iter()
        .map(|c| c.terms)
        .collect();
        assert_eq!(found.len(), 2, "{found:?}");
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
        let found = clauses(
            &mut analyzer(SearchLanguage::ENGLISH),
            &mut Stopwords::of(SearchLanguage::ENGLISH),
            &format!("\"keep {long} this\" 东京"),
        );
        assert_eq!(found[0].offsets, [0, 2]);
        assert_eq!(found[1].offsets, [0, 1]);
    }

    /// Whether the block scorer counts `a` as `b` with at most `max` typos.
    fn within_typos(a: &str, b: &str, max: u8) -> bool {
        Typos::default().word(b, max).unwrap().accepts(a)
    }

    #[test]
    fn typos_count_edits_and_a_swap_of_neighbours_as_one() {
        assert!(within_typos("callout", "callout", 0));
        assert!(within_typos("calout", "callout", 1));
        assert!(
            within_typos("clalout", "callout", 1),
            "a transposition is one edit"
        );
        assert!(!within_typos("clalout", "callout", 0));
        assert!(within_typos("sidebr", "sidebar", 1));
        assert!(!within_typos("sidebr", "sidebar_x", 1));
        assert!(within_typos("lantern", "lanterns", 1));
        assert!(!within_typos("lantern", "pattern", 1));
        assert!(within_typos("lantern", "pattern", 2));
        assert!(
            within_typos("été", "ete", 2),
            "edits count characters, not bytes"
        );
        assert!(!within_typos("été", "ete", 1));
    }

    #[test]
    fn a_block_counts_phrases_at_their_offsets_and_scores_by_what_it_holds() {
        let none = || analyzer(SearchLanguage::from_name("none").unwrap());
        let one = |q: &str| clauses(&mut none(), &mut Stopwords::None, q);
        let mut analyzer = none();
        let phrase = one("\"machine learning\"");
        let scorer = BlockScorer::new(&phrase, Matching::Every, |_| 1.0, &mut Typos::default());
        let text = "Machine learning; learning machine. Machine learning!";
        let block = scorer.words(&mut analyzer, text);
        assert_eq!(scorer.occurrences(&block, 0), 2.0);
        assert!(scorer.occurrences(&block, 0) > 0.0);
        let backwards = one("\"learning machine learning\"");
        let scorer = BlockScorer::new(&backwards, Matching::Every, |_| 1.0, &mut Typos::default());
        assert_eq!(
            scorer.occurrences(&scorer.words(&mut analyzer, text), 0),
            0.0
        );

        let long = "x".repeat(100);
        let text = format!("keep {long} this");
        let with_gap = one(&format!("\"keep {long} this\""));
        let scorer = BlockScorer::new(&with_gap, Matching::Every, |_| 1.0, &mut Typos::default());
        assert_eq!(
            scorer.occurrences(&scorer.words(&mut analyzer, &text), 0),
            1.0,
            "the dropped token keeps its place"
        );
        let without = one("\"keep this\"");
        let scorer = BlockScorer::new(&without, Matching::Every, |_| 1.0, &mut Typos::default());
        assert_eq!(
            scorer.occurrences(&scorer.words(&mut analyzer, &text), 0),
            0.0
        );

        let query = one("rare common");
        let rarity = |term: &str| if term == "rare" { 3.0 } else { 0.5 };
        let scorer = BlockScorer::new(&query, Matching::Every, rarity, &mut Typos::default());
        let one_rare = scorer.words(&mut analyzer, "a rare word among others here");
        let many_common = scorer.words(&mut analyzer, "common common common words here");
        let neither = scorer.words(&mut analyzer, "nothing to see here at all");
        assert!(scorer.score(&one_rare, 6.0) > scorer.score(&many_common, 6.0));
        assert_eq!(scorer.score(&neither, 6.0), 0.0);

        let typo = one("lanterns");
        let exact = BlockScorer::new(&typo, Matching::Every, |_| 1.0, &mut Typos::default());
        let fuzzy = BlockScorer::new(&typo, Matching::EveryFuzzy, |_| 1.0, &mut Typos::default());
        let text = "the lantern glows";
        assert_eq!(exact.score(&exact.words(&mut analyzer, text), 3.0), 0.0);
        assert!(fuzzy.score(&fuzzy.words(&mut analyzer, text), 3.0) > 0.0);
    }

    /// Every document and score `query` finds, by document address.
    fn scored(searcher: &tantivy::Searcher, query: &dyn Query) -> Vec<(tantivy::DocAddress, f32)> {
        let mut found = searcher
            .search(
                query,
                &tantivy::collector::TopDocs::with_limit(1000).order_by_score(),
            )
            .unwrap();
        found.sort_by_key(|a| a.1);
        found
            .into_iter()
            .map(|(score, address)| (address, score))
            .collect()
    }

    #[test]
    fn coverage_scores_flat_as_its_nested_queries_do() {
        use tantivy::schema::{STRING, Schema, TextFieldIndexing, TextOptions};
        let none = SearchLanguage::from_name("none").unwrap();
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("words")
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let mut builder = Schema::builder();
        let fields = SearchFields {
            name: builder.add_text_field("name", text.clone()),
            name_exact: builder.add_text_field("name_exact", STRING),
            body: builder.add_text_field("body", text),
            page_path: builder.add_text_field("page_path", STRING),
        };
        let index = tantivy::Index::create_in_ram(builder.build());
        index.tokenizers().register("words", analyzer(none));
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        let notes = [
            ("Lantern care", "a lantern by the window; the lantern glows"),
            ("Windows", "lanterns and windos, a wick"),
            ("Garden", "nothing about it here"),
            (
                "Wick trimming",
                "trim the wick of a lantren before the garden party",
            ),
            ("Other", "window window window garden"),
        ];
        // Two segments, and a document without a name or a body between notes.
        for (i, (name, body)) in notes.iter().enumerate() {
            let mut doc = tantivy::TantivyDocument::default();
            doc.add_text(fields.page_path, "empty.md");
            writer.add_document(doc).unwrap();
            let mut doc = tantivy::TantivyDocument::default();
            doc.add_text(fields.name, name);
            for block in body.split(';') {
                doc.add_text(fields.body, block);
            }
            writer.add_document(doc).unwrap();
            if i == 2 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 2);
        let question = clauses(
            &mut analyzer(none),
            &mut Stopwords::None,
            "lantern windows wick garden zzz",
        );
        let weights = [1.3, 0.7, 2.2, 0.4, 1.0];
        for words in [&question[..], &question[..1], &question[1..3]] {
            let mut automata = Typos::default();
            let flat = CoverageQuery::of(&fields, words, &weights, &mut automata).unwrap();
            let nested = words_query(&fields, words, &weights, Matching::Coverage, &mut automata);
            let same = |flat: &dyn Query, nested: &dyn Query| {
                let (flat, nested) = (scored(&searcher, flat), scored(&searcher, nested));
                assert!(!flat.is_empty());
                assert_eq!(flat.len(), nested.len(), "{flat:?} {nested:?}");
                for ((a, x), (b, y)) in flat.iter().zip(&nested) {
                    assert_eq!(a, b);
                    assert!((x - y).abs() <= y.abs() * 1e-6, "{x} {y}");
                }
            };
            same(&flat, &*nested);
            // Within an intersection, which seeks the flat scorer.
            let note = |words: Box<dyn Query>| -> Box<dyn Query> {
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(tantivy::query::AllQuery)),
                    (Occur::Must, words),
                ]))
            };
            let flat = CoverageQuery::of(&fields, words, &weights, &mut automata).unwrap();
            let nested = words_query(&fields, words, &weights, Matching::Coverage, &mut automata);
            same(&*note(Box::new(flat)), &*note(nested));
        }
        let phrase = clauses(
            &mut analyzer(none),
            &mut Stopwords::None,
            "\"lantern glows\" wick",
        );
        assert!(CoverageQuery::of(&fields, &phrase, &weights, &mut Typos::default()).is_none());
    }

    #[test]
    fn duplicate_clauses_collapse_and_the_count_is_capped() {
        assert_eq!(check("a A á"), v(&[&["a"]]));
        let many: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        assert_eq!(check(&many.join(" ")).len(), MAX_CLAUSES);
    }
}
