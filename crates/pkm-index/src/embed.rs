//! The meaning signal of search: a static embedding model (a vector per WordPiece token, no
//! network at query time), compiled into the binary, that turns a text into one unit vector.
//! Words that mean the same get nearby vectors ("car", "automobile": cosine 0.82); a paraphrase
//! of several words much less ("money back", "refund": 0.06; ADR-0015).
//!
//! The model is `model/static-minilm.s2v` (made by the script beside it, see
//! `crates/pkm-index/model/`), in this format, all little-endian: the magic `S2VEC001`; `u32`
//! dims; `u32` vocabulary length; `u32` id of `[UNK]`; `u8` flags (bit 0: BERT-uncased
//! normalisation, lowercase and strip accents; bit 1: L2-normalise the mean); per token in id
//! order, a `u16` byte length and its UTF-8 text (WordPiece continuations keep `##`); `f32`
//! scale per token; `i8` vectors, one row of dims per token (value = `i8` × the token's scale).
//!
//! A text's vector is the mean of its tokens' vectors ([`UNK`] skipped), L2-normalised. Tokens
//! are BERT's: control characters dropped, split at whitespace, each punctuation mark and CJK
//! ideograph its own word, lowercased and accents stripped, then each word cut greedily into the
//! longest pieces the vocabulary holds (a word of more than [`MAX_WORD_CHARS`] characters, or one
//! that cannot be cut, is `[UNK]`).

use std::collections::HashMap;
use std::sync::LazyLock;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::char::decompose_canonical;

use crate::error::IndexError;

/// The model, compiled in: nothing is read or downloaded at run time.
static MODEL_BYTES: &[u8] = include_bytes!("../model/static-minilm.s2v");

/// Parsed once, on first use.
static MODEL: LazyLock<Result<Model<'static>, &'static str>> =
    LazyLock::new(|| Model::parse(MODEL_BYTES));

/// The compiled-in model, or why it cannot be read.
pub(crate) fn model() -> Result<&'static Model<'static>, IndexError> {
    MODEL.as_ref().map_err(|reason| IndexError::Model(reason))
}

const MAGIC: &[u8; 8] = b"S2VEC001";
/// A word longer than this (in characters) is `[UNK]`, as in BERT's WordPiece.
pub(crate) const MAX_WORD_CHARS: usize = 100;
/// Tokens of a note read for its vector: the mean of a static model settles long before, and
/// the cost of indexing stays bounded by the note, not its length.
pub(crate) const NOTE_TOKENS: usize = 512;

/// Tokens of a query's word (or quoted phrase) read for its specificity.
const SPECIFICITY_TOKENS: usize = 16;

const FLAG_UNCASED: u8 = 1;

/// A static embedding model (see the module docs).
pub(crate) struct Model<'a> {
    dims: usize,
    unk: u32,
    uncased: bool,
    vocab: HashMap<&'a str, u32, foldhash::fast::FixedState>,
    /// The continuation pieces (`##` tokens), by their text after the `##`: WordPiece looks
    /// them up without building the `##` string each time.
    continuations: HashMap<&'a str, u32, foldhash::fast::FixedState>,
    /// The longest token in bytes, and the longest continuation after its `##`: WordPiece tries
    /// no longer piece than these.
    longest: usize,
    longest_continuation: usize,
    scales: Vec<f32>,
    /// `i8` values, stored as their bytes.
    vectors: &'a [u8],
}

/// Reads the model format front to back.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.bytes.len() < n {
            return Err("the embedding model is truncated");
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<usize, &'static str> {
        usize::try_from(u32::from_le_bytes(self.array()?)).map_err(|_| "too large")
    }
}

impl<'a> Model<'a> {
    /// Reads a model; an ill-formed one is an error, never a panic.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Model<'a>, &'static str> {
        let mut reader = Reader { bytes };
        if reader.take(MAGIC.len())? != MAGIC {
            return Err("the embedding model has the wrong magic");
        }
        let dims = reader.u32()?;
        let vocab_len = reader.u32()?;
        let unk = reader.u32()?;
        let [flags] = reader.array::<1>()?;
        if dims == 0 || vocab_len == 0 || unk >= vocab_len {
            return Err("the embedding model's header is inconsistent");
        }
        // Each entry takes at least its two length bytes: bounds the allocation by the input.
        if vocab_len > reader.bytes.len() / 2 {
            return Err("the embedding model is truncated");
        }
        let mut vocab = HashMap::with_capacity_and_hasher(vocab_len, Default::default());
        for id in 0..vocab_len {
            let len = usize::from(u16::from_le_bytes(reader.array()?));
            let token = std::str::from_utf8(reader.take(len)?)
                .map_err(|_| "the embedding model has a token that is not UTF-8")?;
            let id = u32::try_from(id).map_err(|_| "too large")?;
            vocab.entry(token).or_insert(id);
        }
        // A continuation is looked up as `##` and a non-empty piece: the same entries (the
        // first id of a text wins, as above).
        let mut continuations = HashMap::with_hasher(Default::default());
        for (token, id) in &vocab {
            if let Some(piece) = token.strip_prefix("##")
                && !piece.is_empty()
            {
                continuations.insert(piece, *id);
            }
        }
        let longest = vocab.keys().map(|t| t.len()).max().unwrap_or(0);
        let longest_continuation = continuations.keys().map(|t| t.len()).max().unwrap_or(0);
        let scale_bytes = reader.take(vocab_len.checked_mul(4).ok_or("too large")?)?;
        let scales: Vec<f32> = scale_bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if scales.iter().any(|s| !s.is_finite()) {
            return Err("the embedding model has a scale that is not a number");
        }
        let vectors = reader.take(vocab_len.checked_mul(dims).ok_or("too large")?)?;
        if !reader.bytes.is_empty() {
            return Err("the embedding model has bytes after its vectors");
        }
        Ok(Model {
            dims,
            unk: u32::try_from(unk).map_err(|_| "too large")?,
            uncased: flags & FLAG_UNCASED != 0,
            vocab,
            continuations,
            longest,
            longest_continuation,
            scales,
            vectors,
        })
    }

    /// Length of every vector.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Appends the ids of `text`'s tokens to `out`, `[UNK]` included, until `out` holds `max`.
    pub(crate) fn tokenize(&self, text: &str, max: usize, out: &mut Vec<u32>) {
        self.tokenize_with(text, max, out, &mut |word, out| self.wordpiece(word, out));
    }

    /// [`Model::tokenize`], each word cut into pieces by `pieces` (WordPiece, or a cache of it).
    fn tokenize_with(
        &self,
        text: &str,
        max: usize,
        out: &mut Vec<u32>,
        pieces: &mut impl FnMut(&str, &mut Vec<u32>),
    ) {
        let mut word = String::new();
        let mut flush = |word: &mut String, out: &mut Vec<u32>| {
            if !word.is_empty() && out.len() < max {
                pieces(word, out);
            }
            word.clear();
        };
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if out.len() >= max {
                break;
            }
            // A run of ASCII letters and digits (most of a note) joins the word as it is, or
            // lowercased: what the loop below does to each of them, without classifying them.
            let run = rest
                .bytes()
                .position(|b| !b.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            if let Some((letters, after)) = rest.split_at_checked(run).filter(|_| run > 0) {
                if self.uncased {
                    word.extend(letters.chars().map(|c| c.to_ascii_lowercase()));
                } else {
                    word.push_str(letters);
                }
                rest = after;
                continue;
            }
            rest = rest.get(c.len_utf8()..).unwrap_or_default();
            match classify(c) {
                Class::Dropped => {}
                Class::Space => flush(&mut word, out),
                Class::Alone => {
                    flush(&mut word, out);
                    word.push(c);
                    flush(&mut word, out);
                }
                Class::Other => {
                    if !self.uncased {
                        push_char(c, &mut word, out, &mut flush);
                        continue;
                    }
                    // Most of a note: ASCII lowercases without the Unicode tables.
                    if c.is_ascii() {
                        push_char(c.to_ascii_lowercase(), &mut word, out, &mut flush);
                        continue;
                    }
                    for lower in c.to_lowercase() {
                        if lower.is_ascii() {
                            push_char(lower, &mut word, out, &mut flush);
                            continue;
                        }
                        decompose_canonical(lower, |d| {
                            if get_general_category(d) != GeneralCategory::NonspacingMark {
                                push_char(d, &mut word, out, &mut flush);
                            }
                        });
                    }
                }
            }
        }
        flush(&mut word, out);
        out.truncate(max);
    }

    /// Greedy longest-match-first WordPiece of one word.
    fn wordpiece(&self, word: &str, out: &mut Vec<u32>) {
        // More characters than bytes cannot be: most words skip the count.
        if word.len() > MAX_WORD_CHARS && word.chars().nth(MAX_WORD_CHARS).is_some() {
            out.push(self.unk);
            return;
        }
        let first = out.len();
        let mut start = 0;
        while start < word.len() {
            // No token is longer: the longer candidates cannot match.
            let longest = if start == 0 {
                self.longest
            } else {
                self.longest_continuation
            };
            let mut end = word.len().min(start.saturating_add(longest));
            let mut found = None;
            while end > start {
                if let Some(text) = word.get(start..end) {
                    let id = if start == 0 {
                        self.vocab.get(text)
                    } else {
                        self.continuations.get(text)
                    };
                    if let Some(id) = id {
                        found = Some((*id, end));
                        break;
                    }
                }
                end -= 1;
            }
            match found {
                Some((id, end)) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(first);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }

    /// The unit vector of `text` from at most `max` tokens; `None` when no token is known.
    pub(crate) fn embed(&self, text: &str, max: usize) -> Option<Vec<f32>> {
        let mut ids = Vec::new();
        self.tokenize(text, max, &mut ids);
        self.mean(&ids)
    }

    /// How specific `text` is in English at large: the largest length of its tokens' vectors
    /// (`[UNK]` skipped; the first [`SPECIFICITY_TOKENS`] tokens); `None` when none is known.
    /// model2vec's frequency weighting (SIF) baked into the vectors makes the vector of a common
    /// token short ("what" 2.1, "time" 2.5) and of a rare one long ("yeast" 7.6).
    pub(crate) fn specificity(&self, text: &str) -> Option<f32> {
        let mut ids = Vec::new();
        self.tokenize(text, SPECIFICITY_TOKENS, &mut ids);
        ids.iter()
            .filter(|id| **id != self.unk)
            .filter_map(|id| {
                let row = usize::try_from(*id).ok()?;
                let scale = self.scales.get(row)?;
                let values = self.vectors.get(row * self.dims..(row + 1) * self.dims)?;
                let sum: f32 = values.iter().map(|v| f32::from(*v as i8).powi(2)).sum();
                Some(sum.sqrt() * scale)
            })
            .reduce(f32::max)
    }

    /// The normalised mean of the vectors of `ids`, `[UNK]` skipped.
    pub(crate) fn mean(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let mut sum = Vec::new();
        self.mean_into(ids, &mut sum).then_some(sum)
    }

    /// [`Model::mean`] into `sum` (its allocation reused); false when it is `None`.
    ///
    /// Each distinct token's row is added once, times its count: about half of a note's first
    /// 512 words repeat one before (52 % in the bench vault's notes, 62 % in this project's
    /// docs), and adding the rows (widened from `i8`) was the largest part of a note's vector
    /// (docs/benchmarks.md). The same sum, in another order.
    fn mean_into(&self, ids: &[u32], sum: &mut Vec<f32>) -> bool {
        sum.clear();
        sum.resize(self.dims, 0.0);
        let mut count = 0usize;
        let mut rows: [(f32, &[u8]); ROWS_AT_ONCE] = [(0.0, &[]); ROWS_AT_ONCE];
        let mut held = 0;
        TALLY.with_borrow_mut(|tally| {
            tally.each_distinct(ids, self.unk, self.scales.len(), |row, times| {
                let (Some(scale), Some(values)) = (
                    self.scales.get(row),
                    self.vectors.get(row * self.dims..(row + 1) * self.dims),
                ) else {
                    return;
                };
                if let Some(slot) = rows.get_mut(held) {
                    *slot = (scale * times as f32, values);
                    held += 1;
                }
                if held == ROWS_AT_ONCE {
                    add_rows(sum, &rows);
                    held = 0;
                }
                count += times;
            });
        });
        add_rows(sum, rows.get(..held).unwrap_or_default());
        if count == 0 {
            return false;
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm <= f32::EPSILON {
            return false;
        }
        for v in sum.iter_mut() {
            *v /= norm;
        }
        true
    }
}

thread_local! {
    /// [`Model::mean_into`]'s counts, kept from one text to the next on each thread.
    static TALLY: std::cell::RefCell<Tally> = std::cell::RefCell::default();
}

/// Counts a text's tokens by id, then gives each distinct id with its count in ascending order:
/// a bit per entry of the vocabulary instead of a sort of the ids (the sort was a fifth of a
/// note's vector).
#[derive(Default)]
struct Tally {
    /// Bit `id % 64` of word `id / 64`: the id is counted.
    seen: Vec<u64>,
    /// Per id, how many times it is counted.
    counts: Vec<usize>,
}

impl Tally {
    /// Calls `each(id, times)` for each distinct id of `ids` below `vocabulary` but `skip`, in
    /// ascending order, and forgets them.
    fn each_distinct(
        &mut self,
        ids: &[u32],
        skip: u32,
        vocabulary: usize,
        mut each: impl FnMut(usize, usize),
    ) {
        if self.counts.len() < vocabulary {
            self.counts.resize(vocabulary, 0);
            self.seen.resize(vocabulary.div_ceil(64), 0);
        }
        for id in ids.iter().filter(|id| **id != skip) {
            let Ok(id) = usize::try_from(*id) else {
                continue;
            };
            if let (Some(times), Some(word)) = (self.counts.get_mut(id), self.seen.get_mut(id / 64))
            {
                *times += 1;
                *word |= 1 << (id % 64);
            }
        }
        for (at, word) in self.seen.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let id = at * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(times) = self.counts.get_mut(id) {
                    each(id, std::mem::take(times));
                }
            }
        }
    }
}

/// Rows [`Model::mean_into`] adds in one pass over the sum.
const ROWS_AT_ONCE: usize = 4;

/// Adds each `(weight, row)` of `rows` (`i8` values) times its weight to `sum`, in their order:
/// the same sum as one row after the other, but four rows go in one pass. A row is a random
/// place in the model's 7.5 MB, so most rows miss the cache; in one pass the four misses are
/// waited for at once, and the sum is read and written once instead of four times.
fn add_rows(sum: &mut [f32], rows: &[(f32, &[u8])]) {
    let widen = |v: &u8| f32::from(*v as i8);
    if let [(wa, a), (wb, b), (wc, c), (wd, d)] = rows {
        for ((((s, a), b), c), d) in sum.iter_mut().zip(*a).zip(*b).zip(*c).zip(*d) {
            *s = *s + widen(a) * wa + widen(b) * wb + widen(c) * wc + widen(d) * wd;
        }
        return;
    }
    for (weight, row) in rows {
        for (s, v) in sum.iter_mut().zip(*row) {
            *s += widen(v) * weight;
        }
    }
}

/// Words a [`WordPieces`] remembers before it starts over.
const REMEMBERED_WORDS: usize = 1 << 14;

/// The pieces of each word WordPiece has cut, remembered: a vault's words repeat, and WordPiece
/// tries up to a lookup per prefix of a word the vocabulary does not hold whole. For one model.
#[derive(Default)]
pub(crate) struct WordPieces {
    /// Each word cut so far: the range of its pieces in `pieces`.
    words: HashMap<String, (u32, u32), foldhash::fast::FixedState>,
    pieces: Vec<u32>,
}

impl WordPieces {
    /// Appends `word`'s pieces under `model` to `out`.
    fn cut(&mut self, model: &Model<'_>, word: &str, out: &mut Vec<u32>) {
        let range = match self.words.get(word) {
            Some(range) => *range,
            None => {
                if self.words.len() >= REMEMBERED_WORDS {
                    self.words.clear();
                    self.pieces.clear();
                }
                let from = self.pieces.len();
                model.wordpiece(word, &mut self.pieces);
                let range = (
                    u32::try_from(from).unwrap_or(u32::MAX),
                    u32::try_from(self.pieces.len()).unwrap_or(u32::MAX),
                );
                self.words.insert(word.to_owned(), range);
                range
            }
        };
        out.extend_from_slice(
            self.pieces
                .get(range.0 as usize..range.1 as usize)
                .unwrap_or(&[]),
        );
    }
}

impl Model<'_> {
    /// [`Model::tokenize`], the pieces of each word taken from `known` where it has them.
    pub(crate) fn tokenize_known(
        &self,
        text: &str,
        max: usize,
        out: &mut Vec<u32>,
        known: &mut WordPieces,
    ) {
        self.tokenize_with(text, max, out, &mut |word, out| known.cut(self, word, out));
    }
}

/// Embeds many texts with one model, as [`Model::embed`] does, remembering the pieces of each
/// word it has cut and reusing its buffers: the blocks of a page of hits, whose words repeat.
pub(crate) struct Embedder<'m> {
    model: &'m Model<'m>,
    known: WordPieces,
    ids: Vec<u32>,
    vector: Vec<f32>,
}

impl<'m> Embedder<'m> {
    pub(crate) fn new(model: &'m Model<'m>) -> Embedder<'m> {
        Embedder {
            model,
            known: WordPieces::default(),
            ids: Vec::new(),
            vector: Vec::new(),
        }
    }

    /// [`Model::embed`]: the unit vector of `text` from at most `max` tokens, `None` when no
    /// token is known (valid until the next call).
    pub(crate) fn embed(&mut self, text: &str, max: usize) -> Option<&[f32]> {
        let Embedder {
            model,
            known,
            ids,
            vector,
        } = self;
        ids.clear();
        model.tokenize_known(text, max, ids, known);
        model.mean_into(ids, vector).then_some(vector.as_slice())
    }
}

/// What BERT's basic tokenizer does with a character.
enum Class {
    /// NUL, U+FFFD and control characters other than whitespace.
    Dropped,
    Space,
    /// A CJK ideograph: a word of its own.
    Alone,
    /// Anything else (punctuation is told apart after lowercasing, see [`push_char`]).
    Other,
}

fn classify(c: char) -> Class {
    if c.is_ascii() {
        return match c {
            ' ' | '\t' | '\n' | '\r' => Class::Space,
            '\0'..='\x1f' | '\x7f' => Class::Dropped,
            _ => Class::Other,
        };
    }
    if c == '\u{fffd}' {
        return Class::Dropped;
    }
    if is_cjk(c) {
        return Class::Alone;
    }
    match get_general_category(c) {
        GeneralCategory::SpaceSeparator
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => Class::Space,
        GeneralCategory::Control
        | GeneralCategory::Format
        | GeneralCategory::Unassigned
        | GeneralCategory::PrivateUse
        | GeneralCategory::Surrogate => {
            if c == '\u{85}' {
                Class::Space
            } else {
                Class::Dropped
            }
        }
        _ => Class::Other,
    }
}

/// Adds a normalised character to the word, or a punctuation mark as a word of its own.
fn push_char(
    c: char,
    word: &mut String,
    out: &mut Vec<u32>,
    flush: &mut impl FnMut(&mut String, &mut Vec<u32>),
) {
    if is_punctuation(c) {
        flush(word, out);
        word.push(c);
        flush(word, out);
    } else {
        word.push(c);
    }
}

/// BERT's punctuation: every non-alphanumeric ASCII character that is not a space or control,
/// and every Unicode punctuation category.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    matches!(
        get_general_category(c),
        GeneralCategory::ConnectorPunctuation
            | GeneralCategory::DashPunctuation
            | GeneralCategory::OpenPunctuation
            | GeneralCategory::ClosePunctuation
            | GeneralCategory::InitialPunctuation
            | GeneralCategory::FinalPunctuation
            | GeneralCategory::OtherPunctuation
    )
}

/// The CJK Unified Ideographs blocks, as BERT's tokenizer lists them (not Hangul or kana).
fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x2_0000..=0x2_A6DF
        | 0x2_A700..=0x2_B73F
        | 0x2_B740..=0x2_B81F
        | 0x2_B820..=0x2_CEAF
        | 0xF900..=0xFAFF
        | 0x2_F800..=0x2_FA1F)
}

/// A unit vector quantised to `i8` with one scale: `dims` bytes, then the scale (`f32`, little
/// endian). What a note document stores, and what a search compares against.
pub(crate) fn quantize(vector: &[f32]) -> Vec<u8> {
    let max = vector.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let mut out: Vec<u8> = vector
        .iter()
        .map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect();
    out.extend_from_slice(&scale.to_le_bytes());
    out
}

/// The `i8` values and scale of a vector made by [`quantize`] for `dims`, or `None` when the
/// bytes are not one.
pub(crate) fn dequantize_parts(bytes: &[u8], dims: usize) -> Option<(&[u8], f32)> {
    if bytes.len() != dims + 4 {
        return None;
    }
    let (values, scale) = bytes.split_at(dims);
    let scale = f32::from_le_bytes(scale.try_into().ok()?);
    scale.is_finite().then_some((values, scale))
}

/// The query side of a comparison: the query's unit vector quantised to `i8`, so that a note's
/// similarity is one integer dot product and two multiplications.
pub(crate) struct QueryVector {
    /// The quantised values, widened to `i16` once: the scan multiplies them with each note's
    /// `i8` values in pairs (see [`QueryVector::similarity`]).
    values: Vec<i16>,
    scale: f32,
    /// The unquantised vector, for comparing blocks.
    pub(crate) exact: Vec<f32>,
}

/// Values multiplied per step of [`QueryVector::similarity`].
const LANES: usize = 16;

impl QueryVector {
    pub(crate) fn new(vector: Vec<f32>) -> QueryVector {
        let bytes = quantize(&vector);
        let dims = vector.len();
        let (values, scale) = dequantize_parts(&bytes, dims).unwrap_or((&[], 1.0));
        QueryVector {
            values: values.iter().map(|v| i16::from(*v as i8)).collect(),
            scale,
            exact: vector,
        }
    }

    /// Cosine similarity with a note's stored values and scale (both unit vectors).
    ///
    /// The hot loop of a search (one call per note): the query's values are `i16` already and
    /// the products go to [`LANES`] running sums, summed once at the end, which the compiler
    /// turns into packed multiply-adds (`pmaddwd` on x86-64) and packed adds. The plain `i8` ×
    /// `i8` sum it did not vectorise (10k vectors of 256: 0.45 to 0.53 ms against 0.60 to 0.68
    /// ms, a microbenchmark on two busy cores); a sum per block of [`LANES`] spent about 40 % of
    /// the loop adding across the register (100k vectors: 4.4 ms against 4.1 ms with running
    /// sums). An `i8` × `i8` product fits an `i16`, and 256 of them are far from overflowing an
    /// `i32`.
    #[inline]
    pub(crate) fn similarity(&self, values: &[i8], scale: f32) -> f32 {
        let query = self.values.chunks_exact(LANES);
        let note = values.chunks_exact(LANES);
        let rest: i32 = query
            .remainder()
            .iter()
            .zip(note.remainder())
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        let mut lanes = [0i32; LANES];
        for (q, n) in query.zip(note) {
            for ((lane, a), b) in lanes.iter_mut().zip(q).zip(n) {
                *lane += i32::from(*a) * i32::from(i16::from(*b));
            }
        }
        (rest + lanes.iter().sum::<i32>()) as f32 * self.scale * scale
    }
}

/// Cosine similarity of two unit vectors.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny model: `dims` 2, tokens with the given vectors (scale 1/127 each).
    fn model_bytes(tokens: &[(&str, [i8; 2])], flags: u8) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&u32::try_from(tokens.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.push(flags);
        for (token, _) in tokens {
            out.extend_from_slice(&u16::try_from(token.len()).unwrap().to_le_bytes());
            out.extend_from_slice(token.as_bytes());
        }
        for _ in tokens {
            out.extend_from_slice(&(1.0f32 / 127.0).to_le_bytes());
        }
        for (_, v) in tokens {
            out.extend(v.iter().map(|x| *x as u8));
        }
        out
    }

    const TINY: &[(&str, [i8; 2])] = &[
        ("[PAD]", [0, 0]),
        ("[UNK]", [0, 0]),
        ("refund", [127, 0]),
        ("money", [100, 20]),
        ("back", [60, 60]),
        ("un", [0, 127]),
        ("##aff", [0, 100]),
        ("##able", [10, 100]),
        ("cafe", [50, 50]),
        ("!", [-127, 0]),
        ("东", [0, -127]),
    ];

    fn words(model: &Model<'_>, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        model.tokenize(text, usize::MAX, &mut out);
        out
    }

    #[test]
    fn text_is_cut_into_the_longest_known_pieces() {
        let bytes = model_bytes(TINY, FLAG_UNCASED | 2);
        let model = Model::parse(&bytes).unwrap();
        assert_eq!(words(&model, "Unaffable"), [5, 6, 7]);
        assert_eq!(words(&model, "REFUND!money"), [2, 9, 3]);
        assert_eq!(words(&model, "Café\u{0}东x"), [8, 10, 1]);
        assert_eq!(words(&model, &"a".repeat(101)), [1]);
        assert_eq!(
            words(&model, "unx"),
            [1],
            "a word that cannot be cut is [UNK]"
        );
    }

    #[test]
    fn remembered_pieces_are_the_pieces_cut_afresh_and_past_the_cap() {
        let bytes = model_bytes(TINY, FLAG_UNCASED | 2);
        let model = Model::parse(&bytes).unwrap();
        // The words of a vault repeat; more distinct ones than a WordPieces keeps make it start
        // over, and what it gives after that is the same.
        let distinct: Vec<String> = (0..REMEMBERED_WORDS + 50)
            .map(|i| format!("unaffable{i} refund"))
            .collect();
        let texts = [
            "Unaffable REFUND!money",
            "Café\u{0}东x unx",
            &distinct.join(" "),
        ];
        let mut known = WordPieces::default();
        for _ in 0..2 {
            for text in texts {
                let mut remembered = Vec::new();
                model.tokenize_known(text, usize::MAX, &mut remembered, &mut known);
                assert_eq!(remembered, words(&model, text));
            }
        }
        assert!(known.words.len() <= REMEMBERED_WORDS);
    }

    /// The tally gives what a sort of the ids gives: each distinct id once, ascending, with its
    /// count, the skipped id and ids past the vocabulary left out; and it forgets them after.
    #[test]
    fn a_tally_gives_the_distinct_ids_in_order_with_their_counts() {
        let texts: [&[u32]; 3] = [
            &[7, 3, 7, 1, 64, 63, 7, 200, 65, 3, 1000, 1],
            &[5, 5, 130, 0, 2, 2, 2],
            &[],
        ];
        let mut tally = Tally::default();
        for _ in 0..2 {
            for ids in texts {
                let mut sorted: Vec<u32> = ids
                    .iter()
                    .copied()
                    .filter(|id| *id != 1 && *id < 300)
                    .collect();
                sorted.sort_unstable();
                let expected: Vec<(usize, usize)> = sorted
                    .chunk_by(|a, b| a == b)
                    .map(|run| (run[0] as usize, run.len()))
                    .collect();
                let mut given = Vec::new();
                tally.each_distinct(ids, 1, 300, |id, times| given.push((id, times)));
                assert_eq!(given, expected, "{ids:?}");
            }
        }
    }

    /// Rows added four at a time give the sum of adding them one after the other, to the bit,
    /// for every count of rows left over.
    #[test]
    fn rows_added_at_once_sum_as_one_after_the_other() {
        let model = model().unwrap();
        for n in 0..=9usize {
            let rows: Vec<(f32, &[u8])> = (0..n)
                .map(|i| {
                    let row = 1000 + 733 * i;
                    let weight = model.scales[row] * (i + 1) as f32;
                    (
                        weight,
                        &model.vectors[row * model.dims..(row + 1) * model.dims],
                    )
                })
                .collect();
            let mut one_by_one = vec![0.25f32; model.dims];
            for (weight, row) in &rows {
                for (s, v) in one_by_one.iter_mut().zip(*row) {
                    *s += f32::from(*v as i8) * weight;
                }
            }
            let mut at_once = vec![0.25f32; model.dims];
            for chunk in rows.chunks(ROWS_AT_ONCE) {
                add_rows(&mut at_once, chunk);
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&at_once), bits(&one_by_one), "{n} rows");
        }
    }

    #[test]
    fn a_text_is_the_normalised_mean_of_its_known_tokens() {
        let bytes = model_bytes(TINY, FLAG_UNCASED | 2);
        let model = Model::parse(&bytes).unwrap();
        let refund = model.embed("refund", 100).unwrap();
        assert!((refund[0] - 1.0).abs() < 1e-6 && refund[1].abs() < 1e-6);
        let money = model.embed("money back ???zzz", 100).unwrap();
        let norm: f32 = money.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-5);
        let unrelated = model.embed("un", 100).unwrap();
        assert!(cosine(&refund, &money) > 0.8);
        assert!(cosine(&refund, &unrelated).abs() < 1e-6);
        assert_eq!(model.embed("zzz qqq", 100), None);

        let query = QueryVector::new(money.clone());
        let stored = quantize(&refund);
        let (values, scale) = dequantize_parts(&stored, 2).unwrap();
        let values: Vec<i8> = values.iter().map(|v| *v as i8).collect();
        assert!((query.similarity(&values, scale) - cosine(&money, &refund)).abs() < 0.02);
    }

    /// The embedder that remembers words gives the model's vectors exactly, for texts that
    /// repeat words, cut them into pieces, hold unknown words or nothing known, and run past
    /// the token limit.
    #[test]
    fn the_embedder_gives_the_models_vectors() {
        let model = model().unwrap();
        let mut embedder = Embedder::new(model);
        let texts = [
            "How do I get my money back after buying a license?",
            "Unaffable refunds, unaffable refunds: the money comes back.",
            "",
            "\u{0}\u{fffd}",
            "Café naïve coöperate 东京 ulfenka morkache tisstriche",
            "How do I get my money back after buying a license?",
        ];
        for text in texts {
            for max in [3, 256] {
                let expected = model.embed(text, max);
                let got = embedder.embed(text, max).map(<[f32]>::to_vec);
                assert_eq!(got, expected, "{text:?}, {max}");
            }
        }
        let long = "ulfenka morkache ".repeat(300);
        assert_eq!(
            embedder.embed(&long, 256).map(<[f32]>::to_vec),
            model.embed(&long, 256)
        );
    }

    /// The scan's dot product (blocks of pairs, then the rest) is the plain one, for vectors
    /// of the model's length and of lengths that leave a rest, extremes included.
    #[test]
    fn the_similarity_is_the_dot_product_of_the_quantised_vectors() {
        for dims in [2, 16, 17, 256, 261] {
            let vector: Vec<f32> = (0..dims)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * if i % 7 == 0 { 3.0 } else { 1.0 })
                .collect();
            let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
            let vector: Vec<f32> = vector.iter().map(|v| v / norm).collect();
            let query = QueryVector::new(vector.clone());
            let (q, q_scale) = {
                let bytes = quantize(&vector);
                let (values, scale) = dequantize_parts(&bytes, dims).unwrap();
                (values.iter().map(|v| *v as i8).collect::<Vec<i8>>(), scale)
            };
            for note in [
                q.clone(),
                q.iter().map(|v| v.saturating_neg()).collect(),
                vec![127i8; dims],
                vec![-127i8; dims],
                (0..dims).map(|i| (i % 255) as u8 as i8).collect(),
            ] {
                let plain: i64 = q
                    .iter()
                    .zip(&note)
                    .map(|(a, b)| i64::from(*a) * i64::from(*b))
                    .sum();
                let want = plain as f32 * q_scale * 0.5;
                let got = query.similarity(&note, 0.5);
                assert!(
                    (got - want).abs() <= want.abs() * 1e-6,
                    "{dims}: {got} / {want}"
                );
            }
        }
    }

    /// The compiled-in model reads, and cuts and embeds texts as the model's own tokenizer did
    /// when `model/golden.json` was written (tokens exactly, the first components of the vector
    /// within the quantisation's error).
    #[test]
    fn the_shipped_model_matches_its_golden_texts() {
        let model = model().unwrap();
        let golden: serde_json::Value =
            serde_json::from_str(include_str!("../model/golden.json")).unwrap();
        let cases = golden.as_array().unwrap();
        assert!(!cases.is_empty());
        let mut names: Vec<&str> = vec![""; model.scales.len()];
        for (token, id) in &model.vocab {
            names[*id as usize] = token;
        }
        for case in cases {
            let text = case["text"].as_str().unwrap();
            let mut ids = Vec::new();
            model.tokenize(text, usize::MAX, &mut ids);
            let tokens: Vec<&str> = ids.iter().map(|id| names[*id as usize]).collect();
            let expected: Vec<&str> = case["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert_eq!(tokens, expected, "{text:?}");
            let vector = model.embed(text, usize::MAX);
            let expected: Vec<f32> = case["vector"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            match vector {
                None => assert!(expected.iter().all(|v| *v == 0.0), "{text:?}"),
                Some(vector) => {
                    for (got, want) in vector.iter().zip(&expected) {
                        assert!(
                            (got - want).abs() < 2e-3,
                            "{text:?}: {vector:?} / {expected:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_corrupt_model_is_an_error() {
        let good = model_bytes(TINY, FLAG_UNCASED);
        assert!(Model::parse(&good).is_ok());
        for cut in 0..good.len() {
            assert!(Model::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(Model::parse(&longer).is_err());
        let mut magic = good.clone();
        magic[0] = b'X';
        assert!(Model::parse(&magic).is_err());
        let mut huge = good.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Model::parse(&huge).is_err());
        let mut unk = good.clone();
        unk[16..20].copy_from_slice(&99u32.to_le_bytes());
        assert!(Model::parse(&unk).is_err());
        let mut utf8 = good.clone();
        utf8[23] = 0xff;
        assert!(Model::parse(&utf8).is_err());
        assert!(dequantize_parts(&[1, 2, 3], 2).is_none());
    }

    /// A question's form words weigh less than its subject under coverage ranking: the model
    /// rates common words less specific than the words a question is about, and knows nothing
    /// of text without a known token.
    #[test]
    fn specificity_rates_common_words_below_subject_words() {
        let model = model().unwrap();
        let of = |word: &str| model.specificity(word).unwrap();
        for common in ["what", "best", "time", "take", "get"] {
            for subject in ["yeast", "quarter", "database", "skeleton", "monitoring"] {
                assert!(of(common) < of(subject), "{common} vs {subject}");
            }
        }
        // A word of several pieces counts its most specific piece.
        assert!(of("acronyms") > of("what"));
        assert_eq!(model.specificity(""), None);
        assert_eq!(model.specificity("\u{1F600}"), None);
    }
}
