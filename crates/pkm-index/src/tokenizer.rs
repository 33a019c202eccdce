//! The analyzer shared by indexing, querying and snippets: words of alphanumeric characters,
//! with Han and Japanese kana split into one token per character, lowercased, stemmed in the
//! vault's search language (English unless configured; see [`SearchLanguage`]) and ASCII-folded.
//! No stop words are removed from the index: "to be or not to be" stays a searchable phrase. A
//! query drops its function words ([`Stopwords`]) before matching, unless that would leave nothing.
//!
//! Reason for the custom tokenizer: tantivy's `SimpleTokenizer` keeps a run of CJK characters as
//! one token (they are alphanumeric and unspaced), so a Chinese sentence became a single,
//! usually over-long, unsearchable token. Indexing each ideograph alone makes CJK text findable;
//! the query builder turns a run of them back into a phrase.

use std::collections::HashMap;

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer,
    StopWordFilter, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

/// The name under which the analyzer is registered with the index.
pub(crate) const ANALYZER_NAME: &str = "pkm_text";

/// Tokens longer than this many bytes (base64 blobs, hashes) are dropped.
const MAX_TOKEN_BYTES: usize = 64;

/// The language whose stemmer the analyzer applies, or none. A vault's setting (see
/// `IndexEngine::open`); an index built with another language is rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLanguage(Option<Language>);

/// Every accepted name, as written in the vault's settings.
const LANGUAGES: [(&str, Option<Language>); 19] = [
    ("arabic", Some(Language::Arabic)),
    ("danish", Some(Language::Danish)),
    ("dutch", Some(Language::Dutch)),
    ("english", Some(Language::English)),
    ("finnish", Some(Language::Finnish)),
    ("french", Some(Language::French)),
    ("german", Some(Language::German)),
    ("greek", Some(Language::Greek)),
    ("hungarian", Some(Language::Hungarian)),
    ("italian", Some(Language::Italian)),
    ("norwegian", Some(Language::Norwegian)),
    ("portuguese", Some(Language::Portuguese)),
    ("romanian", Some(Language::Romanian)),
    ("russian", Some(Language::Russian)),
    ("spanish", Some(Language::Spanish)),
    ("swedish", Some(Language::Swedish)),
    ("tamil", Some(Language::Tamil)),
    ("turkish", Some(Language::Turkish)),
    ("none", None),
];

impl SearchLanguage {
    /// English, the default.
    pub const ENGLISH: SearchLanguage = SearchLanguage(Some(Language::English));

    /// The language called `name` (case-insensitive), `none` for no stemming.
    pub fn from_name(name: &str) -> Option<SearchLanguage> {
        let name = name.trim().to_ascii_lowercase();
        LANGUAGES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, language)| SearchLanguage(*language))
    }

    /// Its name, as [`SearchLanguage::from_name`] reads it.
    pub fn name(self) -> &'static str {
        LANGUAGES
            .iter()
            .find(|(_, language)| *language == self.0)
            .map_or("none", |(n, _)| n)
    }

    /// Every accepted name, for error messages.
    pub fn names() -> impl Iterator<Item = &'static str> {
        LANGUAGES.iter().map(|(n, _)| *n)
    }
}

impl Default for SearchLanguage {
    fn default() -> Self {
        SearchLanguage::ENGLISH
    }
}

/// Builds the analyzer: [`WordTokenizer`] → drop long tokens → [`Normalizer`] (lowercase → stem
/// → ASCII folding). Stemming comes before folding because the Snowball stemmers expect their
/// language's accents.
pub(crate) fn analyzer(language: SearchLanguage) -> TextAnalyzer {
    TextAnalyzer::builder(WordTokenizer::default())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(Normalizer::new(language))
        .build()
}

/// Where each of `texts`, indexed one after the other as the values of one field, starts among
/// the field's positions, as Tantivy numbers them: a value's words count from its start; the next
/// value starts one position after the end of the last word the analyzer kept, or one after the
/// start when it kept none. A word dropped as over-long still takes its position but ends nothing.
/// Only the word split and that drop decide (the normalizer drops nothing), so this runs the
/// splitter alone: a fraction of the cost of the analysis.
pub(crate) fn value_starts<'a>(
    texts: impl IntoIterator<Item = &'a str>,
) -> impl Iterator<Item = u64> {
    let mut next = 0u64;
    texts.into_iter().map(move |text| {
        let start = next;
        let mut end = start;
        let (mut cursor, mut position) = (0, start);
        while let Some((from, to)) = next_word(text, cursor) {
            if to - from < MAX_TOKEN_BYTES {
                end = position + 1;
            }
            cursor = to;
            position += 1;
        }
        next = end + 1;
        start
    })
}

/// Words remembered by one [`Normalizer`] before it starts over.
const NORMALIZED_WORDS: usize = 1 << 16;

/// Lowercases, stems (in the vault's language, if any) and ASCII-folds a word with tantivy's
/// [`LowerCaser`], Snowball [`Stemmer`] and [`AsciiFoldingFilter`], remembering the result for
/// each word as written. A vault's vocabulary is small next to its word count, and a Snowball
/// stem costs ~300 ns; the cache made stemming nearly free at indexing time (measured on the
/// 10k-note bench vault: +55 % CPU for a cold index with the plain stemmer); one lookup serves
/// the three steps. The cache lives in the analyzer's copy, one per indexing segment or search.
#[derive(Clone)]
pub(crate) struct Normalizer {
    /// The three filters over a [`RawTokenizer`]: runs only on a word not in `cache`.
    steps: TextAnalyzer,
    /// foldhash (randomly seeded): SipHash was most of the lookup's cost.
    cache: HashMap<String, String, foldhash::fast::RandomState>,
}

impl Normalizer {
    fn new(language: SearchLanguage) -> Normalizer {
        Normalizer {
            steps: Normalizer::steps(language),
            cache: HashMap::default(),
        }
    }

    /// The three filters, uncached, over a [`RawTokenizer`] (the whole input is one word).
    fn steps(language: SearchLanguage) -> TextAnalyzer {
        let lowercase = TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .dynamic();
        match language.0 {
            Some(language) => lowercase.filter_dynamic(Stemmer::new(language)),
            None => lowercase,
        }
        .filter_dynamic(AsciiFoldingFilter)
        .build()
    }

    /// Replaces `word` with its indexed form.
    fn normalize(&mut self, word: &mut String) {
        if let Some(normal) = self.cache.get(word.as_str()) {
            word.clear();
            word.push_str(normal);
            return;
        }
        let normal = match self.steps.token_stream(word).next() {
            Some(token) => token.text.clone(),
            None => return,
        };
        if self.cache.len() >= NORMALIZED_WORDS {
            self.cache.clear();
        }
        self.cache
            .insert(std::mem::replace(word, normal.clone()), normal);
    }
}

impl TokenFilter for Normalizer {
    type Tokenizer<T: Tokenizer> = NormalizerFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> NormalizerFilter<T> {
        NormalizerFilter {
            inner,
            normalizer: self,
        }
    }
}

#[derive(Clone)]
pub(crate) struct NormalizerFilter<T> {
    inner: T,
    normalizer: Normalizer,
}

impl<T: Tokenizer> Tokenizer for NormalizerFilter<T> {
    type TokenStream<'a> = NormalizerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        NormalizerStream {
            tail: self.inner.token_stream(text),
            normalizer: &mut self.normalizer,
        }
    }
}

pub(crate) struct NormalizerStream<'a, T> {
    tail: T,
    normalizer: &'a mut Normalizer,
}

impl<T: TokenStream> TokenStream for NormalizerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        self.normalizer.normalize(&mut self.tail.token_mut().text);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

/// Whether `c` belongs to a script written without spaces between words, which is therefore
/// indexed one character at a time.
pub(crate) fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x3134F  // CJK Extensions B..G
    )
}

/// Splits on every non-alphanumeric character; see the module docs for unspaced scripts.
#[derive(Clone, Default)]
pub(crate) struct WordTokenizer {
    token: Token,
}

impl Tokenizer for WordTokenizer {
    type TokenStream<'a> = WordTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordTokenStream<'a> {
        self.token.reset();
        WordTokenStream {
            text,
            cursor: 0,
            token: &mut self.token,
        }
    }
}

pub(crate) struct WordTokenStream<'a> {
    text: &'a str,
    /// Byte offset where the search for the next token starts; always on a char boundary.
    cursor: usize,
    token: &'a mut Token,
}

/// The char at byte `i` of `text` and its length; ASCII without decoding (most of a note).
fn char_at(text: &str, i: usize) -> Option<(char, usize)> {
    match *text.as_bytes().get(i)? {
        b if b.is_ascii() => Some((char::from(b), 1)),
        _ => text
            .get(i..)
            .and_then(|rest| rest.chars().next())
            .map(|c| (c, c.len_utf8())),
    }
}

/// The byte range of the first word of `text` at or after `cursor` (a char boundary), as
/// [`WordTokenizer`] splits: a run of alphanumeric characters, or one character of an unspaced
/// script. ASCII bytes (most of a note) are told apart without decoding a char.
fn next_word(text: &str, cursor: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut i = cursor;
    let start = loop {
        let b = *bytes.get(i)?;
        if b.is_ascii_alphanumeric() {
            break i;
        }
        if b.is_ascii() {
            i += 1;
            continue;
        }
        let (c, len) = char_at(text, i)?;
        if is_unspaced_script(c) {
            return Some((i, i + len));
        }
        if c.is_alphanumeric() {
            break i;
        }
        i += len;
    };
    while let Some(&b) = bytes.get(i) {
        if b.is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        if b.is_ascii() {
            break;
        }
        match char_at(text, i) {
            Some((c, len)) if c.is_alphanumeric() && !is_unspaced_script(c) => i += len,
            _ => break,
        }
    }
    Some((start, i))
}

impl TokenStream for WordTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let Some((from, to)) = next_word(self.text, self.cursor) else {
            self.cursor = self.text.len();
            return false;
        };
        self.cursor = to;
        self.token.position = self.token.position.wrapping_add(1);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token
            .text
            .push_str(self.text.get(from..to).unwrap_or_default());
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// English words that carry the form of a question or request, not its subject: "how do I",
/// "can I", "what is the", "in my". Longer than Lucene's list (which tantivy ships for English):
/// agents ask in sentences. Content words that are often titles ("use", "get", "back", "may",
/// "will" as a noun) are left out. Sorted, for the binary search.
const ENGLISH_STOPWORDS: [&str; 121] = [
    "a",
    "about",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "each",
    "either",
    "else",
    "ever",
    "for",
    "from",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "might",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "on",
    "onto",
    "or",
    "other",
    "our",
    "ours",
    "please",
    "s",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "someone",
    "something",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "via",
    "want",
    "was",
    "way",
    "we",
    "were",
    "what",
    "whats",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "with",
    "within",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
];

/// The function words a query of the vault's language drops (see [`crate::query::clauses`]):
/// English's own list ([`ENGLISH_STOPWORDS`]), Snowball's list (shipped by tantivy) for Danish,
/// Dutch, Finnish, French, German, Hungarian, Italian, Norwegian, Portuguese, Russian, Spanish
/// and Swedish, none for the other languages and for `none`. Applied to query words only, as
/// typed and lowercased: the index keeps every word, so a quoted phrase stays exact.
#[derive(Clone)]
pub(crate) enum Stopwords {
    None,
    English,
    /// Lowercaser and Snowball's stop word filter over the whole word: a stop word comes out
    /// empty.
    Snowball(TextAnalyzer),
}

impl Stopwords {
    pub(crate) fn of(language: SearchLanguage) -> Stopwords {
        match language.0 {
            None => Stopwords::None,
            Some(Language::English) => Stopwords::English,
            Some(language) => match StopWordFilter::new(language) {
                Some(filter) => Stopwords::Snowball(
                    TextAnalyzer::builder(RawTokenizer::default())
                        .filter(LowerCaser)
                        .filter(filter)
                        .build(),
                ),
                None => Stopwords::None,
            },
        }
    }

    /// Whether `word` (as typed) is a function word of the language.
    pub(crate) fn contains(&mut self, word: &str) -> bool {
        match self {
            Stopwords::None => false,
            Stopwords::English => {
                // The word split cuts at apostrophes: "don't" is "don" and "t".
                let lower = word.to_lowercase();
                ENGLISH_STOPWORDS.binary_search(&lower.as_str()).is_ok()
            }
            Stopwords::Snowball(analyzer) => analyzer.token_stream(word).next().is_none(),
        }
    }
}

/// One analyzed token of a query: its indexed text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryToken {
    pub text: String,
    pub offset_from: usize,
    pub offset_to: usize,
    /// Position in the analyzed text; dropped (over-long) tokens leave gaps, as in the index.
    pub position: usize,
    /// The token is a single character of an unspaced script.
    pub unspaced: bool,
    /// Characters of the source text the token was made from.
    pub typed_chars: usize,
}

/// Runs `text` through the analyzer.
pub(crate) fn analyze(analyzer: &mut TextAnalyzer, text: &str) -> Vec<QueryToken> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        let source = text
            .get(token.offset_from..token.offset_to)
            .unwrap_or_default();
        let mut chars = source.chars();
        let unspaced =
            matches!((chars.next(), chars.next()), (Some(c), None) if is_unspaced_script(c));
        out.push(QueryToken {
            typed_chars: source.chars().count(),
            text: token.text.clone(),
            offset_from: token.offset_from,
            offset_to: token.offset_to,
            position: token.position,
            unspaced,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &str) -> Vec<String> {
        analyze(
            &mut analyzer(SearchLanguage::from_name("none").unwrap()),
            input,
        )
        .into_iter()
        .map(|t| t.text)
        .collect()
    }

    #[test]
    fn words_are_lowercased_and_folded() {
        assert_eq!(
            texts("Café  RÉSUMÉ, naïve-Straße"),
            ["cafe", "resume", "naive", "strasse"]
        );
    }

    #[test]
    fn query_syntax_is_just_separators() {
        assert_eq!(
            texts("title:x AND (b* -c \"d"),
            ["title", "x", "and", "b", "c", "d"]
        );
    }

    #[test]
    fn han_and_kana_are_one_token_per_char() {
        assert_eq!(
            texts("东京tower ひらがな"),
            ["东", "京", "tower", "ひ", "ら", "が", "な"]
        );
    }

    #[test]
    fn other_scripts_stay_words() {
        assert_eq!(texts("Привет мир 한국어"), ["привет", "мир", "한국어"]);
        assert_eq!(texts("ab東c—d 42x…"), ["ab", "東", "c", "d", "42x"]);
    }

    fn stems(language: &str, input: &str) -> Vec<String> {
        let language = SearchLanguage::from_name(language).unwrap();
        analyze(&mut analyzer(language), input)
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn english_folds_inflections_and_keeps_short_words() {
        assert_eq!(
            stems("english", "Block references callouts Publishing"),
            stems("english", "block reference callout publish")
        );
        assert_eq!(stems("english", "to be or not to be").len(), 6);
        assert_eq!(stems("english", "东京"), ["东", "京"]);
    }

    #[test]
    fn the_cache_gives_the_filters_answer() {
        for language in ["english", "german", "none"] {
            let language = SearchLanguage::from_name(language).unwrap();
            let mut cached = Normalizer::new(language);
            let mut plain = Normalizer::steps(language);
            for _ in 0..2 {
                for word in ["References", "running", "ALIAS", "Häuser", "Été", "東", ""] {
                    let mut got = word.to_owned();
                    cached.normalize(&mut got);
                    let want = plain.token_stream(word).next().map(|t| t.text.clone());
                    assert_eq!(Some(got), want.or(Some(String::new())), "{word}");
                }
            }
        }
    }

    #[test]
    fn stemming_sees_accents_before_folding() {
        assert_eq!(stems("german", "Häuser"), stems("german", "Haus"));
        assert_eq!(stems("french", "été"), ["ete"]);
    }

    #[test]
    fn language_names_round_trip() {
        for name in SearchLanguage::names() {
            assert_eq!(SearchLanguage::from_name(name).unwrap().name(), name);
        }
        assert_eq!(
            SearchLanguage::from_name(" English "),
            Some(SearchLanguage::ENGLISH)
        );
        assert_eq!(SearchLanguage::from_name("klingon"), None);
    }

    #[test]
    fn overlong_tokens_are_dropped() {
        let long = "a".repeat(100);
        assert_eq!(texts(&format!("keep {long} this")), ["keep", "this"]);
    }
}
