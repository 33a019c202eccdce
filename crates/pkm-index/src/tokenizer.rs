//! The analyzer shared by indexing, querying and snippets: words of alphanumeric characters,
//! with Han and Japanese kana split into one token per character, lowercased, stemmed in the
//! vault's search language (English unless configured; see [`SearchLanguage`]) and ASCII-folded.
//! No stop words are removed: "to be or not to be" stays a searchable phrase.
//!
//! Reason for the custom tokenizer: tantivy's `SimpleTokenizer` keeps a run of CJK characters as
//! one token (they are alphanumeric and unspaced), so a Chinese sentence became a single,
//! usually over-long, unsearchable token. Indexing each ideograph alone makes CJK text findable;
//! the query builder turns a run of them back into a phrase.

use std::collections::HashMap;

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RawTokenizer, RemoveLongFilter, Stemmer,
    TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
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

/// Builds the analyzer: [`WordTokenizer`] → drop long tokens → lowercase → stem → ASCII folding.
/// Stemming comes before folding because the Snowball stemmers expect their language's accents.
pub(crate) fn analyzer(language: SearchLanguage) -> TextAnalyzer {
    let builder = TextAnalyzer::builder(WordTokenizer::default())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .dynamic();
    match language.0 {
        Some(language) => builder.filter_dynamic(CachedStemmer::new(language)),
        None => builder,
    }
    .filter_dynamic(AsciiFoldingFilter)
    .build()
}

/// Words remembered by one [`CachedStemmer`] before it starts over.
const STEM_CACHE_WORDS: usize = 1 << 16;

/// tantivy's Snowball [`Stemmer`], remembering the stem of each word it has seen. A vault's
/// vocabulary is small next to its word count, and a Snowball stem costs ~300 ns; the cache made
/// stemming nearly free at indexing time (measured on the 10k-note bench vault: +55 % CPU for a
/// cold index with the plain stemmer). The cache lives in the analyzer's copy, one per indexing
/// segment or search.
#[derive(Clone)]
pub(crate) struct CachedStemmer {
    stemmer: TextAnalyzer,
    /// foldhash (randomly seeded): SipHash was most of the lookup's cost.
    cache: HashMap<String, String, foldhash::fast::RandomState>,
}

impl CachedStemmer {
    fn new(language: Language) -> CachedStemmer {
        CachedStemmer {
            stemmer: TextAnalyzer::builder(RawTokenizer::default())
                .filter(Stemmer::new(language))
                .build(),
            cache: HashMap::default(),
        }
    }

    fn stem(&mut self, word: &mut String) {
        if let Some(stem) = self.cache.get(word.as_str()) {
            word.clear();
            word.push_str(stem);
            return;
        }
        let stem = match self.stemmer.token_stream(word).next() {
            Some(token) => token.text.clone(),
            None => return,
        };
        if self.cache.len() >= STEM_CACHE_WORDS {
            self.cache.clear();
        }
        self.cache
            .insert(std::mem::replace(word, stem.clone()), stem);
    }
}

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter {
            inner,
            stemmer: self,
        }
    }
}

#[derive(Clone)]
pub(crate) struct CachedStemmerFilter<T> {
    inner: T,
    stemmer: CachedStemmer,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream {
            tail: self.inner.token_stream(text),
            stemmer: &mut self.stemmer,
        }
    }
}

pub(crate) struct CachedStemmerStream<'a, T> {
    tail: T,
    stemmer: &'a mut CachedStemmer,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        self.stemmer.stem(&mut self.tail.token_mut().text);
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

impl TokenStream for WordTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let rest = self.text.get(self.cursor..).unwrap_or_default();
        let mut start = None;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match start {
                None if is_unspaced_script(c) => {
                    start = Some(i);
                    end = i + c.len_utf8();
                    break;
                }
                None if c.is_alphanumeric() => start = Some(i),
                None => {}
                Some(_) if c.is_alphanumeric() && !is_unspaced_script(c) => {}
                Some(_) => {
                    end = i;
                    break;
                }
            }
        }
        let Some(start) = start else {
            self.cursor = self.text.len();
            return false;
        };
        let (from, to) = (self.cursor + start, self.cursor + end);
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
    fn the_cache_gives_the_stemmer_s_answer() {
        let mut cached = CachedStemmer::new(Language::English);
        let mut plain = TextAnalyzer::builder(RawTokenizer::default())
            .filter(Stemmer::new(Language::English))
            .build();
        for _ in 0..2 {
            for word in ["references", "running", "alias", "aliases", "東", ""] {
                let mut got = word.to_owned();
                cached.stem(&mut got);
                let want = plain.token_stream(word).next().map(|t| t.text.clone());
                assert_eq!(Some(got), want.or(Some(String::new())), "{word}");
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
