//! Ranking of completion candidates (page titles, tags, aliases) against what the user typed.
//!
//! Pure string work, no index: the caller owns the candidate list (from the block store) and this
//! module orders it. Matching is case-insensitive with Unicode lowercasing, in five tiers:
//! exact > prefix > word-prefix (a word inside the candidate starts with the query) > substring >
//! fuzzy subsequence (the query's characters appear in order). Within a tier, shorter candidates
//! come first, then lexicographic (byte) order, then input order.

use std::cmp::Ordering;

/// How a candidate matched; lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    Exact,
    Prefix,
    WordPrefix,
    Substring,
    Fuzzy,
}

impl Tier {
    /// The lowest score of the tier. Each tier's scores lie in `[floor, floor + 0.09]`, so a
    /// better tier always scores higher.
    fn floor(self) -> f32 {
        match self {
            Tier::Exact => 1.0,
            Tier::Prefix => 0.8,
            Tier::WordPrefix => 0.6,
            Tier::Substring => 0.4,
            Tier::Fuzzy => 0.2,
        }
    }
}

struct Match<'a> {
    tier: Tier,
    /// Length of the candidate in chars.
    len: usize,
    index: usize,
    text: &'a str,
}

fn best_first(a: &Match<'_>, b: &Match<'_>) -> Ordering {
    a.tier
        .cmp(&b.tier)
        .then(a.len.cmp(&b.len))
        .then_with(|| a.text.cmp(b.text))
        .then(a.index.cmp(&b.index))
}

/// Ranks `candidates` against `query` (surrounding whitespace ignored) and returns up to `limit`
/// `(candidate index, score)` pairs, best first. Scores lie in `0..=1`: 1.0 for an exact match,
/// then by tier with a small bonus for how much of the candidate the query covers. Candidates that
/// do not match at all are left out. An empty query is a prefix of every candidate.
///
/// Linear in the total candidate length, one reused buffer, and a bounded working set, so 100k
/// titles rank in a few milliseconds.
pub fn rank<'a>(
    query: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<(usize, f32)> {
    if limit == 0 {
        return Vec::new();
    }
    let mut needle = String::new();
    let query_len = lowercase_into(query.trim(), &mut needle);
    // Keep at most this many matches between prunings: the work stays linear and memory bounded.
    let keep = limit.saturating_mul(2).max(256);

    let mut matches: Vec<Match<'a>> = Vec::new();
    let mut haystack = String::new();
    for (index, text) in candidates.into_iter().enumerate() {
        let len = lowercase_into(text, &mut haystack);
        if let Some(tier) = classify(&needle, &haystack) {
            matches.push(Match {
                tier,
                len,
                index,
                text,
            });
            if matches.len() >= keep {
                truncate_to_best(&mut matches, limit);
            }
        }
    }
    truncate_to_best(&mut matches, limit);
    matches.sort_unstable_by(best_first);
    matches
        .into_iter()
        .map(|m| (m.index, score(m.tier, query_len, m.len)))
        .collect()
}

fn truncate_to_best(matches: &mut Vec<Match<'_>>, limit: usize) {
    if matches.len() > limit && limit > 0 {
        matches.select_nth_unstable_by(limit - 1, best_first);
        matches.truncate(limit);
    }
}

fn score(tier: Tier, query_len: usize, candidate_len: usize) -> f32 {
    if tier == Tier::Exact {
        return 1.0;
    }
    let coverage = (query_len as f32 / candidate_len.max(1) as f32).min(1.0);
    tier.floor() + 0.09 * coverage
}

/// Writes the lowercase form of `text` into `out` and returns the length of `text` in chars.
fn lowercase_into(text: &str, out: &mut String) -> usize {
    out.clear();
    if text.is_ascii() {
        out.push_str(text);
        out.make_ascii_lowercase();
        text.len()
    } else {
        let mut len = 0;
        for c in text.chars() {
            // Most chars, even in non-ASCII text, are ASCII or lowercase to one char; pushing
            // those directly is several times faster than `extend` with the iterator.
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                let mut lower = c.to_lowercase();
                match (lower.next(), lower.len()) {
                    (Some(single), 0) => out.push(single),
                    (Some(first), _) => {
                        out.push(first);
                        out.extend(lower);
                    }
                    (None, _) => {}
                }
            }
            len += 1;
        }
        len
    }
}

/// How `haystack` matches `needle` (both lowercase), if at all.
fn classify(needle: &str, haystack: &str) -> Option<Tier> {
    if haystack == needle {
        return Some(Tier::Exact);
    }
    if haystack.starts_with(needle) {
        return Some(Tier::Prefix);
    }
    let mut found = false;
    let mut from = 0;
    // Every occurrence, overlapping ones included: a later one may sit on a word boundary.
    while let Some(pos) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + pos;
        found = true;
        let before = haystack.get(..at).and_then(|head| head.chars().next_back());
        if before.is_some_and(|c| !c.is_alphanumeric()) {
            return Some(Tier::WordPrefix);
        }
        let step = haystack
            .get(at..)
            .and_then(|tail| tail.chars().next())
            .map_or(1, char::len_utf8);
        from = at + step;
    }
    if found {
        return Some(Tier::Substring);
    }
    is_subsequence(needle, haystack).then_some(Tier::Fuzzy)
}

fn is_subsequence(needle: &str, haystack: &str) -> bool {
    let mut rest = haystack.chars();
    needle.chars().all(|n| rest.by_ref().any(|h| h == n))
}
