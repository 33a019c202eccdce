//! Links out of a note: `[[T]]`, `[[T|alias]]`, `[[T#Heading]]`, `[[T^block]]`, `![[embed]]` and
//! relative markdown links to `.md` files. Nothing is reported from code spans, code blocks, HTML
//! (comments included) or URLs. `#[[tag]]` is a tag, not a link (see [`crate::tags`]).

use std::cell::OnceCell;

use crate::dialect::{Dialect, percent_decode};
use crate::regions::{self, Regions, WikiPrefix};

/// How a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// `[[T]]`
    Wiki,
    /// `![[T]]`
    Embed,
    /// `[text](rel/path.md)`
    Markdown,
    /// Logseq's `((block-uuid))`: a link to the block with that `id::`, on whatever page holds it.
    /// Its target is written `((uuid))`, lowercased.
    BlockRef,
}

/// One link out of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The page part: `[[T|alias]]`, `[[T#H]]` and `[[T^id]]` give `T`; a markdown link gives its
    /// percent-decoded relative path (`rel/path.md`).
    pub target: String,
    /// `[[T|alias]]`'s alias, or a markdown link's text.
    pub alias: Option<String>,
    /// `[[T#H]]`'s `H`, or a markdown link's `#fragment`.
    pub heading: Option<String>,
    /// `[[T^id]]` / `[[T#^id]]`'s `id`.
    pub block_ref: Option<String>,
    pub kind: LinkKind,
    /// Byte offset of the link's first byte (`!` of an embed, `[` otherwise) in the input.
    pub position: usize,
}

/// Every link of `text` (frontmatter included: Obsidian properties may hold `"[[T]]"`), in order
/// of position. Same-page links (`[[#H]]`) have no target and are not reported.
pub fn extract_links(text: &str) -> Vec<Link> {
    extract_links_as(text, &Dialect::default())
}

/// [`extract_links`] in a vault kept in `dialect`: in Logseq every `#tag` and `#[[tag]]` is a
/// link to the page of that name; in Obsidian nothing in a `%%comment%%` is a link.
pub fn extract_links_as(text: &str, dialect: &Dialect) -> Vec<Link> {
    links_in(text, dialect, &OnceCell::new(), None)
}

/// [`extract_links_as`] and [`crate::tags::extract_inline_tags_as`] of one text, with the regions
/// both skip (a pulldown-cmark pass over the note) found once instead of once each: what a vault
/// scan reads of every note. The same two lists the two functions give.
pub fn links_and_tags_as(text: &str, dialect: &Dialect) -> (Vec<Link>, Vec<(String, usize)>) {
    let regions = OnceCell::new();
    let tags = crate::inline_tags::extract_inline_tags_in(text, dialect, &regions);
    let links = links_in(text, dialect, &regions, Some(&tags));
    (links, tags)
}

/// [`extract_links_as`], taking the text's regions from `regions` (found there if not yet) and,
/// when given, its inline tags (those of [`crate::tags::extract_inline_tags_as`]).
fn links_in(
    text: &str,
    dialect: &Dialect,
    regions: &OnceCell<Regions>,
    tags: Option<&[(String, usize)]>,
) -> Vec<Link> {
    let tags_are_links = dialect.tags_are_links() && text.contains('#');
    if !text.contains('[') && !text.contains("((") && !tags_are_links {
        return Vec::new();
    }
    let s = regions.get_or_init(|| regions::find(text, dialect));
    let allowed = regions::gaps(&s.code, text.len());
    // A wiki link may hold a code span (`[[T|`x`]]`), but none starts inside code.
    let wikis: Vec<regions::Wiki> = regions::wikilinks(text, &regions::gaps(&s.blocks, text.len()))
        .into_iter()
        .filter(|w| {
            let i = s.code.partition_point(|c| c.end <= w.range.start);
            s.code.get(i).is_none_or(|c| c.start > w.range.start)
        })
        .collect();
    let wiki_ranges = regions::merge(wikis.iter().map(|w| w.range.clone()).collect());
    let mut out = block_refs(text, &allowed);
    if tags_are_links {
        let tags = match tags {
            Some(tags) => tags.to_vec(),
            None => crate::inline_tags::extract_inline_tags_in(text, dialect, regions),
        };
        out.extend(tags.into_iter().map(|(tag, position)| Link {
            target: tag,
            alias: None,
            heading: None,
            block_ref: None,
            kind: LinkKind::Wiki,
            position,
        }));
    }
    for w in &wikis {
        let kind = match w.prefix {
            WikiPrefix::None => LinkKind::Wiki,
            WikiPrefix::Embed => LinkKind::Embed,
            WikiPrefix::Hash => continue,
        };
        if let Some(link) = wiki_link(
            text.get(w.inner.clone()).unwrap_or_default(),
            kind,
            w.range.start,
        ) {
            out.push(link);
        }
    }
    for l in &s.links {
        if l.image
            || !matches!(
                l.link_type,
                pulldown_cmark::LinkType::Inline
                    | pulldown_cmark::LinkType::Reference
                    | pulldown_cmark::LinkType::Collapsed
                    | pulldown_cmark::LinkType::Shortcut
            )
        {
            continue;
        }
        // Foam writes `[note]: note.md` definitions for its `[[note]]` links; pulldown-cmark then
        // sees a shortcut link inside the wiki link. The wiki link is the one to report.
        let i = wiki_ranges.partition_point(|r| r.end <= l.range.start);
        if wiki_ranges.get(i).is_some_and(|r| r.start < l.range.end) {
            continue;
        }
        let Some((target, heading, block_ref)) = markdown_target(&l.dest) else {
            continue;
        };
        let alias = Some(l.text.trim())
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        out.push(Link {
            target,
            alias,
            heading,
            block_ref,
            kind: LinkKind::Markdown,
            position: l.range.start,
        });
    }
    out.sort_by_key(|l| l.position);
    out
}

/// The target of a link pasted as written in a note, whole: `[[T#H|alias]]`, `![[T]]`,
/// `[text](folder/T%20x.md)`, `((uuid))`, in Logseq `#tag` and `#[[tag]]`. A relative markdown
/// target loses its leading `./` and `../` (it is then a partial path). `None` when `input` is
/// not exactly one link: it is then a bare target.
pub fn written_target(input: &str, dialect: &Dialect) -> Option<String> {
    let input = input.trim();
    let links = extract_links_as(input, dialect);
    let [link] = links.as_slice() else {
        return None;
    };
    Some(match link.kind {
        LinkKind::Markdown => strip_relative(&link.target).to_owned(),
        _ => link.target.clone(),
    })
}

/// A relative path without its leading `./` and `../` segments: a partial path.
pub fn strip_relative(mut target: &str) -> &str {
    while let Some(rest) = target
        .strip_prefix("./")
        .or_else(|| target.strip_prefix("../"))
    {
        target = rest;
    }
    target
}

/// Logseq block references `((uuid))` within `allowed` (outside code).
fn block_refs(text: &str, allowed: &[std::ops::Range<usize>]) -> Vec<Link> {
    let mut out = Vec::new();
    for gap in allowed {
        let Some(part) = text.get(gap.clone()) else {
            continue;
        };
        for (at, _) in part.match_indices("((") {
            let Some(id) = part.get(at + 2..at + 38) else {
                break;
            };
            if crate::lines::is_uuid(id) && part.get(at + 38..at + 40) == Some("))") {
                out.push(Link {
                    target: format!("(({}))", id.to_lowercase()),
                    alias: None,
                    heading: None,
                    block_ref: Some(id.to_lowercase()),
                    kind: LinkKind::BlockRef,
                    position: gap.start + at,
                });
            }
        }
    }
    out
}

/// Splits `T#H|alias`, `T^id`, `T#^id`.
fn wiki_link(inner: &str, kind: LinkKind, position: usize) -> Option<Link> {
    let (target, alias) = match inner.split_once('|') {
        Some((t, a)) => (
            t,
            Some(a.trim()).filter(|a| !a.is_empty()).map(str::to_owned),
        ),
        None => (inner, None),
    };
    // Inside a table the pipe is escaped: `[[T\|alias]]`.
    let target = target.strip_suffix('\\').unwrap_or(target);
    let (page, heading, block_ref) = if let Some((page, frag)) = target.split_once('#') {
        match frag.strip_prefix('^') {
            Some(id) => (page, None, Some(id)),
            None => (page, Some(frag), None),
        }
    } else if let Some((page, id)) = target.split_once('^') {
        (page, None, Some(id))
    } else {
        (target, None, None)
    };
    let page = page.trim();
    if page.is_empty() {
        return None;
    }
    let clean = |s: Option<&str>| {
        s.map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some(Link {
        target: page.to_owned(),
        alias,
        heading: clean(heading),
        block_ref: clean(block_ref),
        kind,
        position,
    })
}

/// A markdown link destination that names a note: relative (no scheme, no leading `/`), ending
/// in `.md` once percent-decoded. Returns (path, heading, block ref).
pub(crate) fn markdown_target(dest: &str) -> Option<(String, Option<String>, Option<String>)> {
    if dest.is_empty() || dest.starts_with(['/', '#', '\\']) || has_scheme(dest) {
        return None;
    }
    let (path, frag) = match dest.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (dest, None),
    };
    let path = percent_decode(path);
    if !path.to_lowercase().ends_with(".md") {
        return None;
    }
    let frag = frag.map(percent_decode).filter(|f| !f.is_empty());
    let (heading, block_ref) = match frag {
        Some(f) => match f.strip_prefix('^') {
            Some(id) => (None, Some(id.to_owned())),
            None => (Some(f), None),
        },
        None => (None, None),
    };
    Some((path, heading, block_ref))
}

/// `scheme:` per RFC 3986: a letter, then letters, digits, `+`, `.`, `-`, then `:`.
pub(crate) fn has_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')) {
            return false;
        }
    }
    false
}

/// The key a link target is matched by: trimmed, `\` as `/`, lowercased, without a trailing
/// `.md`.
pub fn target_key(target: &str) -> String {
    let key = target.trim().replace('\\', "/").to_lowercase();
    match key.strip_suffix(".md") {
        Some(k) => k.to_owned(),
        None => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(text: &str) -> Vec<(String, LinkKind, usize)> {
        extract_links(text)
            .into_iter()
            .map(|l| (l.target, l.kind, l.position))
            .collect()
    }

    #[test]
    fn wiki_parts() {
        let l = &extract_links("[[Page#Sec|shown]]")[0];
        assert_eq!(
            (l.target.as_str(), l.heading.as_deref(), l.alias.as_deref()),
            ("Page", Some("Sec"), Some("shown"))
        );
        let l = &extract_links("[[Page#^abc123]]")[0];
        assert_eq!(
            (l.target.as_str(), l.block_ref.as_deref()),
            ("Page", Some("abc123"))
        );
        let l = &extract_links("| [[Page\\|alias]] |")[0];
        assert_eq!(
            (l.target.as_str(), l.alias.as_deref()),
            ("Page", Some("alias"))
        );
        assert!(extract_links("[[#Only heading]] [[ ]] [[|x]]").is_empty());
        // An alias may hold a code span; a link inside one is no link.
        let l = &extract_links("see [[Functions#has|`has`]] and `[[Not]]`")[..];
        assert_eq!(
            l.iter()
                .map(|l| (l.target.as_str(), l.alias.as_deref()))
                .collect::<Vec<_>>(),
            vec![("Functions", Some("`has`"))]
        );
    }

    #[test]
    fn markdown_links() {
        let ls = extract_links(
            "[a](notes/My%20Note.md#Part%202) [b](https://x.org/y.md) [c](/abs.md) [d](img.png) [e](<with space.md>)",
        );
        let got: Vec<_> = ls
            .iter()
            .map(|l| (l.target.as_str(), l.heading.as_deref(), l.alias.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("notes/My Note.md", Some("Part 2"), Some("a")),
                ("with space.md", None, Some("e"))
            ]
        );
        assert!(extract_links("![img](x.md) <https://a.b/c.md> mailto:x@y.md").is_empty());
    }

    #[test]
    fn reference_links_resolve_and_foam_definitions_do_not_double() {
        assert_eq!(
            targets("see [x][r]\n\n[r]: other.md\n"),
            vec![("other.md".into(), LinkKind::Markdown, 4)]
        );
        assert_eq!(
            targets("[[note]]\n\n[note]: note.md \"Note\"\n"),
            vec![("note".into(), LinkKind::Wiki, 0)]
        );
    }

    #[test]
    fn frontmatter_links_count() {
        assert_eq!(
            targets("---\nup: \"[[Index]]\"\n---\n"),
            vec![("Index".into(), LinkKind::Wiki, 9)]
        );
    }

    #[test]
    fn links_as_written() {
        let d = Dialect::default();
        let cases = [
            ("[[Internal links]]", Some("Internal links")),
            ("![[Internal links]]", Some("Internal links")),
            (" [[Note#Heading|alias]] ", Some("Note")),
            ("[[Note^abc]]", Some("Note")),
            (
                "[x](Format%20your%20notes.md)",
                Some("Format your notes.md"),
            ),
            (
                "[x](../features/wikilinks.md#Part)",
                Some("features/wikilinks.md"),
            ),
            (
                "((6f0c2a9e-1111-4a4a-9b9b-0123456789ab))",
                Some("((6f0c2a9e-1111-4a4a-9b9b-0123456789ab))"),
            ),
            ("Internal links", None),
            ("features/wikilinks", None),
            ("[[a]] and [[b]]", None),
        ];
        for (input, want) in cases {
            assert_eq!(written_target(input, &d).as_deref(), want, "{input:?}");
        }
        let logseq = Dialect::of(crate::Flavor::Logseq);
        assert_eq!(
            written_target("#[[Logseq Sync]]", &logseq).as_deref(),
            Some("Logseq Sync")
        );
        assert_eq!(written_target("#docs", &logseq).as_deref(), Some("docs"));
        assert_eq!(written_target("#docs", &d), None);
    }

    #[test]
    fn dialect_rules() {
        let logseq = Dialect::of(crate::Flavor::Logseq);
        let text =
            "- a #tag and #[[two words]] ((6f0c2a9e-1111-4a4a-9b9b-0123456789ab))\n- `#code`\n";
        let got: Vec<_> = extract_links_as(text, &logseq)
            .into_iter()
            .map(|l| (l.target, l.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                ("tag".into(), LinkKind::Wiki),
                ("two words".into(), LinkKind::Wiki),
                (
                    "((6f0c2a9e-1111-4a4a-9b9b-0123456789ab))".into(),
                    LinkKind::BlockRef
                ),
            ]
        );
        // Plain markdown: tags are tags, not links.
        assert_eq!(targets(text).len(), 1);
        // Logseq's literal org blocks hold no links; its admonitions and a `#+BEGIN_SRC` written
        // as inline code are ordinary text.
        let text = "- see `#+BEGIN_SRC x` and [[a]]\n- #+BEGIN_TIP\n  [[b]]\n  #+END_TIP\n\t- #+begin_src clojure\n\t  [[c]]\n\t  #+END_SRC\n- [[d]]\n- #+BEGIN_EXAMPLE\n  [[e]]\n";
        let got: Vec<_> = extract_links_as(text, &logseq)
            .into_iter()
            .map(|l| l.target)
            .collect();
        assert_eq!(got, vec!["a", "b", "d"]);
        // Obsidian: nothing in a %%comment%% is a link or a tag, across lines; code keeps %%.
        let obsidian = Dialect::of(crate::Flavor::Obsidian);
        let text = "[[a]] %%[[b]] #t\n[[c]]%% [[d]] `%%` [[e]] %% [[f]]";
        let got: Vec<_> = extract_links_as(text, &obsidian)
            .into_iter()
            .map(|l| l.target)
            .collect();
        assert_eq!(got, vec!["a", "d", "e"]);
        assert!(crate::tags::extract_inline_tags_as(text, &obsidian).is_empty());
        assert_eq!(targets(text).len(), 6);
    }

    #[test]
    fn keys() {
        assert_eq!(target_key("  Folder\\Note.MD "), "folder/note");
        assert_eq!(target_key("Note"), "note");
        assert_eq!(percent_decode("%E2%9C%93 %zz %"), "✓ %zz %");
        assert_eq!(percent_decode("%FF"), "%FF");
    }
}
