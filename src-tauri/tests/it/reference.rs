//! The reference resolver the property tests check the app against: ADR-0008's rules written
//! out directly, independent of `resolver.rs`.

/// (path, slug lowercased, title lowercased, alias lowercased)
pub type RefPage = (String, String, String, Option<String>);

pub struct Reference {
    pub pages: Vec<RefPage>,
    /// Obsidian matches a partial path before an alias; the others an alias first.
    pub aliases_last: bool,
}

impl Reference {
    /// The page `target` names, read from the note at `from` (the nearest by shared folders
    /// among equals), or from nowhere (the shortest path).
    pub fn resolve(&self, target: &str, from: Option<&str>) -> Option<String> {
        let key = target.to_lowercase();
        let key = key.strip_suffix(".md").unwrap_or(&key).to_owned();
        type Rule<'a> = &'a dyn Fn(&RefPage) -> bool;
        let by_path: Rule = &|p| p.1 == key;
        let by_title: Rule = &|p| p.2 == key;
        let by_alias: Rule = &|p| p.3.as_deref() == Some(key.as_str());
        let by_suffix: Rule = &|p| p.1.ends_with(&format!("/{key}"));
        let rules = if self.aliases_last {
            [by_path, by_title, by_suffix, by_alias]
        } else {
            [by_path, by_title, by_alias, by_suffix]
        };
        for rule in rules {
            let mut found: Vec<&String> = self
                .pages
                .iter()
                .filter(|p| rule(p))
                .map(|p| &p.0)
                .collect();
            if found.is_empty() {
                continue;
            }
            found.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
            let Some(from) = from else {
                return Some(found[0].clone());
            };
            let folders = |p: &str| -> Vec<String> {
                let mut v: Vec<String> = p.split('/').map(str::to_lowercase).collect();
                v.pop();
                v
            };
            let shared = |p: &str| {
                folders(p)
                    .iter()
                    .zip(folders(from).iter())
                    .take_while(|(x, y)| x == y)
                    .count()
            };
            // The first of the candidates sharing the most folders.
            let best = found.iter().map(|p| shared(p)).max().unwrap();
            return found.into_iter().find(|p| shared(p) == best).cloned();
        }
        None
    }
}
