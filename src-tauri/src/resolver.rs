//! Wiki-link resolution over the current set of pages, in memory, so that the graph and the
//! backlinks of a 100k-note vault resolve every link without a query each.
//!
//! Rules (contract §5.12, ADR-0008): strip `|alias`, `#heading` and `^block`, then match
//! case-insensitively by exact path (with or without `.md`), title (the page name the app shows:
//! a Logseq namespace `a/b`, a journal's date), alias, then path suffix (a file name, or a
//! partial path `folder/name`), in that order; in Obsidian aliases come last. When several pages
//! match under the first rule that matches, the one nearest the linking note wins, as in
//! Obsidian: the most leading folders shared with it, then the shortest path, then the
//! lexicographically first. A Logseq block reference `((uuid))` names the page that holds the
//! block.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use pkm_block::PageRow;
use pkm_markdown::Dialect;

/// The pages that answer to one name, in page order (shortest path first).
#[derive(Debug, Clone)]
enum Matches {
    One(usize),
    Many(Vec<usize>),
}

impl Matches {
    fn push(&mut self, i: usize) {
        match self {
            Matches::One(j) if *j == i => {}
            Matches::One(j) => *self = Matches::Many(vec![*j, i]),
            Matches::Many(v) => {
                if v.last() != Some(&i) {
                    v.push(i);
                }
            }
        }
    }

    fn as_slice(&self) -> &[usize] {
        match self {
            Matches::One(i) => std::slice::from_ref(i),
            Matches::Many(v) => v,
        }
    }
}

#[derive(Default)]
struct NameMap(HashMap<String, Matches>);

impl NameMap {
    fn add(&mut self, key: String, i: usize) {
        if key.is_empty() {
            return;
        }
        match self.0.get_mut(&key) {
            Some(m) => m.push(i),
            None => {
                self.0.insert(key, Matches::One(i));
            }
        }
    }

    fn get(&self, key: &str) -> Option<&[usize]> {
        self.0.get(key).map(Matches::as_slice)
    }
}

pub struct Resolver {
    pages: Vec<PageRow>,
    by_path: NameMap,
    by_title: NameMap,
    by_alias: NameMap,
    by_suffix: NameMap,
    /// `((uuid))` → the page holding that block.
    by_block: HashMap<String, usize>,
    /// Aliases come after partial paths and file names (Obsidian).
    aliases_last: bool,
}

/// The part of a link target that names a page, lowercased, without `.md`.
pub fn page_key(target: &str) -> String {
    let mut t = target;
    if !(t.starts_with("((") && t.ends_with("))")) {
        for sep in ['|', '#', '^'] {
            if let Some((head, _)) = t.split_once(sep) {
                t = head;
            }
        }
    }
    let key = pkm_markdown::linker::target_key(t);
    key.strip_suffix(".md").map(str::to_owned).unwrap_or(key)
}

fn slug_lower(path: &str) -> String {
    pkm_core::path::slug_of(path).to_lowercase()
}

/// `a/b/c` → `b/c`, `c`: the partial paths a page answers to besides its whole path.
fn suffixes(slug: &str) -> impl Iterator<Item = &str> {
    slug.match_indices('/')
        .filter_map(|(i, _)| slug.get(i + 1..))
        .filter(|s| !s.is_empty())
}

/// How many leading folders two note paths share.
fn shared_folders(a: &str, b: &str) -> usize {
    let folders = |p: &str| -> Vec<String> {
        let mut parts: Vec<String> = p.split('/').map(str::to_lowercase).collect();
        parts.pop();
        parts
    };
    folders(a)
        .iter()
        .zip(folders(b).iter())
        .take_while(|(x, y)| x == y)
        .count()
}

impl Resolver {
    /// `block_refs`: `((uuid))` keys with the path of the page that holds the block.
    pub fn new(
        mut pages: Vec<PageRow>,
        block_refs: Vec<(String, String)>,
        dialect: &Dialect,
    ) -> Resolver {
        pages.sort_by(|a, b| {
            a.path
                .len()
                .cmp(&b.path.len())
                .then_with(|| a.path.cmp(&b.path))
        });
        let mut r = Resolver {
            by_path: NameMap::default(),
            by_title: NameMap::default(),
            by_alias: NameMap::default(),
            by_suffix: NameMap::default(),
            by_block: HashMap::new(),
            aliases_last: dialect.aliases_last(),
            pages: Vec::new(),
        };
        let mut index_of: HashMap<&str, usize> = HashMap::with_capacity(pages.len());
        for (i, p) in pages.iter().enumerate() {
            index_of.insert(p.path.as_str(), i);
            let slug = slug_lower(&p.path);
            r.by_title.add(p.title.trim().to_lowercase(), i);
            for alias in &p.aliases {
                r.by_alias.add(alias.trim().to_lowercase(), i);
            }
            for suffix in suffixes(&slug) {
                r.by_suffix.add(suffix.to_owned(), i);
            }
            r.by_path.add(slug, i);
        }
        for (key, path) in block_refs {
            if let Some(&i) = index_of.get(path.as_str()) {
                r.by_block.insert(key, i);
            }
        }
        r.pages = pages;
        r
    }

    /// The page a link target names, if any, for a link written outside any note (the nearest
    /// match is then the one with the shortest path).
    pub fn resolve(&self, target: &str) -> Option<&PageRow> {
        self.resolve_from(target, None)
    }

    /// The page a link target written in the note at `from` names, if any.
    pub fn resolve_from(&self, target: &str, from: Option<&str>) -> Option<&PageRow> {
        let key = page_key(target);
        if key.is_empty() {
            return None;
        }
        if let Some(&i) = self.by_block.get(&key) {
            return self.pages.get(i);
        }
        let rules = if self.aliases_last {
            [
                &self.by_path,
                &self.by_title,
                &self.by_suffix,
                &self.by_alias,
            ]
        } else {
            [
                &self.by_path,
                &self.by_title,
                &self.by_alias,
                &self.by_suffix,
            ]
        };
        let found = rules.into_iter().find_map(|map| map.get(&key))?;
        let best = match (found, from) {
            ([one], _) | ([one, ..], None) => *one,
            (many, Some(from)) => {
                let mut best = *many.first()?;
                let mut best_shared = 0;
                for &i in many {
                    let shared = self
                        .pages
                        .get(i)
                        .map_or(0, |p| shared_folders(&p.path, from));
                    if shared > best_shared {
                        (best, best_shared) = (i, shared);
                    }
                }
                best
            }
            ([], _) => return None,
        };
        self.pages.get(best)
    }

    pub fn pages(&self) -> &[PageRow] {
        &self.pages
    }

    /// Every name under which `page` can be linked (lowercased keys), for backlink lookups: its
    /// path and partial paths, title, aliases, and the `((uuid))` of its referenced blocks.
    pub fn names_of(&self, page: &PageRow) -> Vec<String> {
        let slug = slug_lower(&page.path);
        let mut names: Vec<String> = suffixes(&slug).map(str::to_owned).collect();
        names.push(slug.clone());
        names.push(page.title.trim().to_lowercase());
        names.extend(page.aliases.iter().map(|a| a.trim().to_lowercase()));
        names.extend(
            self.by_block
                .iter()
                .filter(|(_, i)| self.pages.get(**i).is_some_and(|p| p.path == page.path))
                .map(|(k, _)| k.clone()),
        );
        names.retain(|n| !n.is_empty());
        names.sort();
        names.dedup();
        names
    }
}

/// The vault's links resolved to pages: one edge per (source, target) pair, self-links left out.
pub struct LinkGraph {
    pub resolver: Arc<Resolver>,
    /// Per page (an index into `resolver.pages()`): its link targets in link order, each with the
    /// alias of the first link to it.
    pub out: Vec<Vec<(usize, Option<String>)>>,
    /// Per page: its neighbours, links followed both ways.
    pub adjacency: Vec<Vec<usize>>,
    /// Link targets that name no page, distinct, sorted.
    pub unresolved: Vec<String>,
}

impl LinkGraph {
    /// Builds the graph from every link that `links` feeds to its callback as
    /// `(source page path, target, alias)`, in document order within a page.
    pub fn new<E>(
        resolver: Arc<Resolver>,
        links: impl FnOnce(&mut dyn FnMut(&str, &str, Option<&str>)) -> Result<(), E>,
    ) -> Result<LinkGraph, E> {
        let pages = resolver.pages();
        let index_of: HashMap<&str, usize> = pages
            .iter()
            .enumerate()
            .map(|(i, p)| (p.path.as_str(), i))
            .collect();
        let mut seen: HashSet<(usize, usize)> = HashSet::new();
        let mut out = vec![Vec::new(); pages.len()];
        let mut adjacency = vec![Vec::new(); pages.len()];
        let mut unresolved: HashSet<String> = HashSet::new();
        links(&mut |source, target, alias| {
            let Some(&s) = index_of.get(source) else {
                return;
            };
            let Some(&t) = resolver
                .resolve_from(target, Some(source))
                .and_then(|p| index_of.get(p.path.as_str()))
            else {
                if !unresolved.contains(target) {
                    unresolved.insert(target.to_owned());
                }
                return;
            };
            if s == t || !seen.insert((s, t)) {
                return;
            }
            if let Some(o) = out.get_mut(s) {
                o.push((t, alias.map(str::to_owned)));
            }
            if !seen.contains(&(t, s)) {
                for (a, b) in [(s, t), (t, s)] {
                    if let Some(n) = adjacency.get_mut(a) {
                        n.push(b);
                    }
                }
            }
        })?;
        let mut unresolved: Vec<String> = unresolved.into_iter().collect();
        unresolved.sort();
        Ok(LinkGraph {
            resolver: Arc::clone(&resolver),
            out,
            adjacency,
            unresolved,
        })
    }

    /// Page indexes within `depth` hops of `start` (itself included), links followed both ways.
    pub fn within(&self, start: usize, depth: usize) -> HashSet<usize> {
        let mut seen = HashSet::from([start]);
        let mut queue = std::collections::VecDeque::from([(start, 0usize)]);
        while let Some((n, d)) = queue.pop_front() {
            if d == depth {
                continue;
            }
            for &m in self.adjacency.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                if seen.insert(m) {
                    queue.push_back((m, d + 1));
                }
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, title: &str, aliases: &[&str]) -> PageRow {
        PageRow {
            path: path.into(),
            title: title.into(),
            frontmatter_json: None,
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
            tags: Vec::new(),
            block_count: 0,
            mtime_ns: 0,
            size: 0,
            hash: String::new(),
            modified_at: String::new(),
        }
    }

    fn resolved(pages: &[PageRow], target: &str) -> Option<String> {
        Resolver::new(pages.to_vec(), Vec::new(), &Dialect::default())
            .resolve(target)
            .map(|p| p.path.clone())
    }

    #[test]
    fn the_rules_apply_in_order() {
        let pages = [
            row("projects/Example.md", "Example note", &[]),
            row("notes/x1.md", "Great Idea", &[]),
            row("notes/x2.md", "Second", &["GI-Alias"]),
            row("deep/folder/Unique-Stem.md", "Something else", &[]),
            row("intl/ueber.md", "Über Alles", &[]),
        ];
        let cases = [
            // Exact path, with or without .md, any case.
            ("projects/Example.md", "projects/Example.md"),
            ("PROJECTS/EXAMPLE.MD", "projects/Example.md"),
            ("projects/example", "projects/Example.md"),
            // Title, including non-ASCII case folding.
            ("great idea", "notes/x1.md"),
            ("ÜBER ALLES", "intl/ueber.md"),
            // Frontmatter alias.
            ("gi-alias", "notes/x2.md"),
            // File stem, with or without .md.
            ("unique-stem", "deep/folder/Unique-Stem.md"),
            ("Unique-Stem.md", "deep/folder/Unique-Stem.md"),
            // Heading, block and alias parts are stripped.
            ("Great Idea#Section", "notes/x1.md"),
            ("Great Idea^abc123", "notes/x1.md"),
            ("Great Idea|shown text", "notes/x1.md"),
            ("Great Idea#^blk", "notes/x1.md"),
            (" Great Idea #H|a", "notes/x1.md"),
        ];
        for (target, path) in cases {
            assert_eq!(
                resolved(&pages, target).as_deref(),
                Some(path),
                "{target:?}"
            );
        }
        for target in ["nothing here", "", "#only-heading", "|alias only", "notes"] {
            assert_eq!(resolved(&pages, target), None, "{target:?}");
        }
    }

    #[test]
    fn obsidian_resolves_aliases_after_file_names_and_partial_paths() {
        let pages = vec![
            row("en/Sync/Security.md", "Security", &[]),
            row("km/Sync/X.md", "X", &["Sync/Security", "Security"]),
        ];
        let obsidian = Resolver::new(
            pages.clone(),
            Vec::new(),
            &Dialect::of(pkm_markdown::Flavor::Obsidian),
        );
        for target in ["Sync/Security", "Security"] {
            assert_eq!(
                obsidian.resolve(target).map(|p| p.path.as_str()),
                Some("en/Sync/Security.md"),
                "{target}"
            );
        }
        // Plain markdown keeps the contract's order: an alias before a partial path.
        assert_eq!(
            resolved(&pages, "Sync/Security").as_deref(),
            Some("km/Sync/X.md")
        );
    }

    #[test]
    fn an_earlier_rule_wins_then_the_shortest_path() {
        let mut pages = vec![row("a/alpha.md", "Beta", &[]), row("b/beta.md", "B", &[])];
        // "beta" is a title and a stem: the title comes first.
        assert_eq!(resolved(&pages, "beta").as_deref(), Some("a/alpha.md"));
        // "alpha" is a stem and an alias: the alias comes first.
        pages.push(row("c/c.md", "C", &["Alpha"]));
        assert_eq!(resolved(&pages, "alpha").as_deref(), Some("c/c.md"));
        // "gamma" is an alias and a title: the title comes first.
        pages.push(row("d/d.md", "D", &["gamma"]));
        pages.push(row("e/e.md", "Gamma", &[]));
        assert_eq!(resolved(&pages, "gamma").as_deref(), Some("e/e.md"));
        // "a/alpha" is a path and a title: the path comes first.
        pages.push(row("f/f.md", "a/alpha", &[]));
        assert_eq!(resolved(&pages, "a/alpha").as_deref(), Some("a/alpha.md"));
        // Within a rule: the shortest path, then the lexicographically first.
        for p in ["zz/dup.md", "long/dup.md", "aa/dup.md"] {
            pages.push(row(p, "t", &[]));
        }
        assert_eq!(resolved(&pages, "dup").as_deref(), Some("aa/dup.md"));
        pages.push(row("x/dup.md", "x", &[]));
        assert_eq!(resolved(&pages, "DUP").as_deref(), Some("x/dup.md"));
    }
}
