//! Wiki-link resolution over the current set of pages, in memory, so that the graph and the
//! backlinks of a 100k-note vault resolve every link without a query each.
//!
//! Rules (contract §5.12, issue "store"): strip `|alias`, `#heading` and `^block`, then match
//! case-insensitively by exact path (with or without `.md`), title, frontmatter alias, file stem,
//! in that order; within a rule the shortest path wins, then the lexicographically first.

use std::collections::HashMap;

use pkm_block::PageRow;

pub struct Resolver {
    pages: Vec<PageRow>,
    by_path: HashMap<String, usize>,
    by_title: HashMap<String, usize>,
    by_alias: HashMap<String, usize>,
    by_stem: HashMap<String, usize>,
}

/// The part of a link target that names a page, lowercased, without `.md`.
pub fn page_key(target: &str) -> String {
    let mut t = target;
    for sep in ['|', '#', '^'] {
        if let Some((head, _)) = t.split_once(sep) {
            t = head;
        }
    }
    let key = pkm_markdown::linker::target_key(t);
    key.strip_suffix(".md").map(str::to_owned).unwrap_or(key)
}

fn slug_lower(path: &str) -> String {
    pkm_core::path::slug_of(path).to_lowercase()
}

impl Resolver {
    pub fn new(mut pages: Vec<PageRow>) -> Resolver {
        pages.sort_by(|a, b| {
            a.path
                .len()
                .cmp(&b.path.len())
                .then_with(|| a.path.cmp(&b.path))
        });
        let mut r = Resolver {
            by_path: HashMap::with_capacity(pages.len()),
            by_title: HashMap::with_capacity(pages.len()),
            by_alias: HashMap::new(),
            by_stem: HashMap::with_capacity(pages.len()),
            pages: Vec::new(),
        };
        for (i, p) in pages.iter().enumerate() {
            let slug = slug_lower(&p.path);
            let stem = slug.rsplit('/').next().unwrap_or(&slug).to_owned();
            r.by_title.entry(p.title.trim().to_lowercase()).or_insert(i);
            for alias in &p.aliases {
                r.by_alias.entry(alias.trim().to_lowercase()).or_insert(i);
            }
            r.by_stem.entry(stem).or_insert(i);
            r.by_path.entry(slug).or_insert(i);
        }
        r.pages = pages;
        r
    }

    /// The page a link target names, if any.
    pub fn resolve(&self, target: &str) -> Option<&PageRow> {
        let key = page_key(target);
        if key.is_empty() {
            return None;
        }
        [&self.by_path, &self.by_title, &self.by_alias, &self.by_stem]
            .into_iter()
            .find_map(|map| map.get(&key))
            .and_then(|&i| self.pages.get(i))
    }

    pub fn pages(&self) -> &[PageRow] {
        &self.pages
    }

    /// Every name under which `page` can be linked (lowercased keys), for backlink lookups.
    pub fn names_of(page: &PageRow) -> Vec<String> {
        let slug = slug_lower(&page.path);
        let stem = slug.rsplit('/').next().unwrap_or(&slug).to_owned();
        let mut names = vec![slug.clone(), stem, page.title.trim().to_lowercase()];
        names.extend(page.aliases.iter().map(|a| a.trim().to_lowercase()));
        names.retain(|n| !n.is_empty());
        names.sort();
        names.dedup();
        names
    }
}
