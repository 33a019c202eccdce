//! Rewriting the links of a note when the notes they name move (`kb_move_page`, ADR-0019): where
//! each link names its page ([`sites`]), the text a new target takes in the link's own form
//! ([`replacement`]), and the note with those changes made and every other byte kept
//! ([`rewrite`]). Which links change, and to what name or path, is the caller's: it resolves
//! them as the vault does. No IO.
//!
//! Forms kept: a wiki link or embed keeps its `!`, `#heading`, `^block` and `|alias` (only the
//! page part changes); a Logseq `#tag` stays a tag (`#[[name]]` when the new name is not a bare
//! tag); a markdown link keeps its text, `#fragment`, title and `<...>` brackets, and its
//! destination is encoded as the old one was ([`encode_like`]); a link reference definition
//! (`[label]: dest "title"`, as Foam writes for its wiki links) changes its destination, and the
//! caller may change its label. Links inside code are no sites (the linker reports none).

use std::ops::Range;

use crate::dialect::{Dialect, percent_decode};
use crate::error::TagEditError;
use crate::linker::{self, Link, LinkKind};
use crate::regions::{self, WikiPrefix};
use crate::splice::{self, Edit, Span};

/// How a link is written, which decides how a new target is written into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `[[T...]]` or `![[T...]]`: the target is the page part.
    Wiki,
    /// Logseq's `#tag` (`bracketed: false`) or `#[[tag]]`.
    Tag { bracketed: bool },
    /// An inline markdown link `[text](dest#frag "title")`: the target is `dest`'s path part as
    /// written (percent-encoded or not), without `<...>`.
    Markdown,
    /// A link reference definition `[label]: dest "title"`; `label` is the bytes between its
    /// brackets; `referenced` when a reference link (`[x][label]`, `[label]`) outside a wiki link
    /// uses it, so its label must stay.
    Definition {
        label: Range<usize>,
        referenced: bool,
    },
    /// A bare item of a Logseq page's `tags::` value (`tags:: a, b`): a reference to page `a`.
    /// `[[a]]` and `#a` items are wiki links and tags.
    PropertyItem,
}

/// One link of a note and where it names its page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The link as [`linker::extract_links_as`] reports it (a definition as a markdown link).
    pub link: Link,
    /// The whole link in the text.
    pub range: Range<usize>,
    /// The bytes that name the page: what a rewrite replaces.
    pub target: Range<usize>,
    pub form: Form,
}

/// Every link of `text` that names a page, with the bytes naming it: the links of
/// [`linker::extract_links_as`] (wiki links, embeds, Logseq tags, inline markdown links) and the
/// link reference definitions whose destination is a note. A reference link (`[x][r]`) is
/// rewritten through its definition, so it is no site itself; neither is a block reference
/// `((uuid))`, which names a block wherever it moves.
pub fn sites(text: &str, dialect: &Dialect) -> Vec<Site> {
    let links = linker::extract_links_as(text, dialect);
    let s = regions::find(text, dialect);
    let wikis = regions::wikilinks(text, &regions::gaps(&s.blocks, text.len()));
    let tags = if dialect.tags_are_links() {
        crate::inline_tags::inline_tags_of(text, dialect)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for link in links {
        let site = match link.kind {
            LinkKind::BlockRef => None,
            LinkKind::Wiki | LinkKind::Embed => {
                let prefix_ok = |w: &&regions::Wiki| {
                    w.range.start == link.position && w.prefix != WikiPrefix::Hash
                };
                match wikis.iter().find(prefix_ok) {
                    Some(w) => wiki_target(text, w.inner.clone()).map(|target| Site {
                        link: link.clone(),
                        range: w.range.clone(),
                        target,
                        form: Form::Wiki,
                    }),
                    None => tags
                        .iter()
                        .find(|t| t.span.start == link.position)
                        .and_then(|t| tag_site(text, &link, t.span.clone())),
                }
            }
            LinkKind::Markdown => s
                .links
                .iter()
                .find(|l| {
                    l.range.start == link.position
                        && l.link_type == pulldown_cmark::LinkType::Inline
                })
                .and_then(|l| {
                    inline_dest(text, l.range.clone(), &l.dest).map(|target| Site {
                        link: link.clone(),
                        range: l.range.clone(),
                        target,
                        form: Form::Markdown,
                    })
                }),
        };
        out.extend(site);
    }
    // Destinations that reference links outside wiki links use (a `[note]` inside Foam's
    // `[[note]]` is the wiki link's, not a reference).
    let referenced: Vec<&str> = s
        .links
        .iter()
        .filter(|l| !l.image && l.link_type != pulldown_cmark::LinkType::Inline)
        .filter(|l| {
            !wikis
                .iter()
                .any(|w| w.range.start <= l.range.start && l.range.end <= w.range.end)
        })
        .map(|l| l.dest.as_str())
        .collect();
    out.extend(definitions(text, s.body_start, &out, &referenced));
    if dialect.tags_are_links() {
        out.extend(tag_items(text, s.body_start));
    }
    out.sort_by_key(|s| s.range.start);
    out
}

/// The page part of a wiki link's inner text `T#H|alias` (`T\|alias` in a table), trimmed.
fn wiki_target(text: &str, inner: Range<usize>) -> Option<Range<usize>> {
    let s = text.get(inner.clone())?;
    let mut end = s.find('|').unwrap_or(s.len());
    if s.get(..end).is_some_and(|t| t.ends_with('\\')) {
        end -= 1;
    }
    let head = s.get(..end)?;
    let end = head.find(['#', '^']).unwrap_or(end);
    trimmed(text, inner.start..inner.start + end)
}

/// `range` without its leading and trailing whitespace; `None` when nothing is left.
fn trimmed(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let s = text.get(range.clone())?;
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    let r = range.start + lead..range.end - trail;
    (r.start < r.end).then_some(r)
}

fn tag_site(text: &str, link: &Link, span: Range<usize>) -> Option<Site> {
    let src = text.get(span.clone())?;
    let (target, bracketed) = match src.strip_prefix("#[[") {
        Some(_) => (
            trimmed(text, span.start + 3..span.end.checked_sub(2)?)?,
            true,
        ),
        None => (span.start + 1..span.end, false),
    };
    Some(Site {
        link: link.clone(),
        range: span,
        target,
        form: Form::Tag { bracketed },
    })
}

/// The bare items of the `tags::` property of a Logseq page's first block.
fn tag_items(text: &str, body_start: usize) -> Vec<Site> {
    let Ok(Some(props)) = crate::page_props::page_props(text, body_start, "tags") else {
        return Vec::new();
    };
    let Some(prop) = props.prop else {
        return Vec::new();
    };
    prop.items
        .into_iter()
        .filter(|item| item.span.of(text).is_ok_and(|src| src == item.value))
        .map(|item| {
            let range = item.span.start..item.span.end;
            Site {
                link: Link {
                    target: item.value,
                    alias: None,
                    heading: None,
                    block_ref: None,
                    kind: LinkKind::Wiki,
                    position: range.start,
                },
                range: range.clone(),
                target: range,
                form: Form::PropertyItem,
            }
        })
        .collect()
}

/// Where, inside an inline link's source `[text](dest#frag "title")`, the path part of `dest`
/// stands: the last `](` followed by optional whitespace, an optional `<`, then `dest` as
/// pulldown-cmark gave it. A destination written with escapes pulldown-cmark undid is not found,
/// and the link is left as it is.
fn inline_dest(text: &str, range: Range<usize>, dest: &str) -> Option<Range<usize>> {
    let src = text.get(range.clone())?;
    let path_len = dest.find('#').unwrap_or(dest.len());
    for (at, _) in src.rmatch_indices("](") {
        let rest = src.get(at + 2..)?;
        let after_ws = rest.trim_start();
        let after = after_ws.strip_prefix('<').unwrap_or(after_ws);
        if after.starts_with(dest) && path_len > 0 {
            let start = range.start + at + 2 + (rest.len() - after.len());
            return Some(start..start + path_len);
        }
    }
    None
}

/// Link reference definitions in the body whose destination is a note: a relative path ending in
/// `.md`, or one without an extension whose label is the target of a wiki link of the note (Foam's
/// `[note]: note "Note"` written for `[[note]]`).
fn definitions(text: &str, body_start: usize, found: &[Site], referenced: &[&str]) -> Vec<Site> {
    if !text.contains("]:") {
        return Vec::new();
    }
    let body = text.get(body_start..).unwrap_or_default();
    let parser = pulldown_cmark::Parser::new_ext(body, pulldown_cmark::Options::ENABLE_TABLES);
    let mut out = Vec::new();
    for (_, def) in parser.reference_definitions().iter() {
        let span = def.span.start + body_start..def.span.end + body_start;
        let Some(src) = text.get(span.clone()) else {
            continue;
        };
        let Some(open) = src.find('[') else { continue };
        let Some(close) = src.find("]:") else {
            continue;
        };
        let label = span.start + open + 1..span.start + close;
        let Some(label_text) = text.get(label.clone()) else {
            continue;
        };
        let dest = def.dest.as_ref();
        let rest = src.get(close + 2..).unwrap_or_default();
        let after_ws = rest.trim_start();
        let after = after_ws.strip_prefix('<').unwrap_or(after_ws);
        if !after.starts_with(dest) || dest.is_empty() {
            continue;
        }
        let start = span.start + close + 2 + (rest.len() - after.len());
        let path_len = dest.find('#').unwrap_or(dest.len());
        let target = match linker::markdown_target(dest) {
            Some((target, _, _)) => target,
            None => {
                let path = dest.get(..path_len).unwrap_or_default();
                let bare = !path.is_empty()
                    && !path.starts_with(['/', '\\'])
                    && !linker::has_scheme(path)
                    && !path.rsplit('/').next().unwrap_or_default().contains('.');
                let of_wiki = found.iter().any(|s| {
                    s.form == Form::Wiki && s.link.target.eq_ignore_ascii_case(label_text.trim())
                });
                if !(bare && of_wiki) {
                    continue;
                }
                percent_decode(path)
            }
        };
        out.push(Site {
            link: Link {
                target,
                alias: None,
                heading: None,
                block_ref: None,
                kind: LinkKind::Markdown,
                position: span.start,
            },
            range: span,
            target: start..start + path_len,
            form: Form::Definition {
                label,
                referenced: referenced.contains(&dest),
            },
        });
    }
    out
}

/// A markdown site's destination path as written (percent-encoded or not). Every destination the
/// linker reads as a note is relative to the note's folder (`/abs.md` and URLs name no note).
pub fn dest_as_written<'a>(text: &'a str, site: &Site) -> &'a str {
    text.get(site.target.clone()).unwrap_or_default()
}

/// The change that makes `site` name `new`: for a wiki link or tag, `new` is the page name or
/// path to write (without `.md`); for a markdown link or definition, the destination path
/// (unencoded, relative to the note's folder), encoded as the old one was ([`encode_like`]).
pub fn replacement(text: &str, site: &Site, new: &str) -> (Range<usize>, String) {
    match &site.form {
        Form::Wiki | Form::Tag { bracketed: true } => (site.target.clone(), new.to_owned()),
        Form::Tag { bracketed: false } => {
            if is_bare_tag(new) {
                (site.target.clone(), new.to_owned())
            } else {
                (site.range.clone(), format!("#[[{new}]]"))
            }
        }
        Form::PropertyItem => {
            // Logseq splits a `tags::` value at commas: a name holding one is written `[[name]]`.
            if new.contains(',') {
                (site.target.clone(), format!("[[{new}]]"))
            } else {
                (site.target.clone(), new.to_owned())
            }
        }
        Form::Markdown | Form::Definition { .. } => {
            let old = dest_as_written(text, site);
            let angle = text
                .get(..site.target.start)
                .is_some_and(|t| t.ends_with('<'));
            (site.target.clone(), encode_like(new, old, angle))
        }
    }
}

/// Whether `name` can be written as a bare Logseq `#tag` and read back whole.
fn is_bare_tag(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
        && !name.ends_with(['.', '/'])
        && !name.bytes().all(|b| b.is_ascii_digit())
}

/// `path` written as a markdown destination the way `old` was: percent-encoded when `old` holds
/// an escape (non-ASCII too when `old` encoded non-ASCII), as it is inside `<...>` (`angle`),
/// and otherwise with only what would break the destination encoded (spaces, parentheses, `%`,
/// `#`, `<`, `>`).
pub fn encode_like(path: &str, old: &str, angle: bool) -> String {
    let escaped = has_escape(old);
    let non_ascii = escaped && encodes_non_ascii(old);
    if angle && !escaped {
        return path.to_owned();
    }
    let mut out = String::with_capacity(path.len() + 8);
    for c in path.chars() {
        let must = matches!(c, ' ' | '(' | ')' | '%' | '#' | '<' | '>' | '\t')
            || (escaped && matches!(c, '[' | ']' | '^' | '`' | '{' | '}' | '|' | '"' | '?'))
            || (non_ascii && !c.is_ascii());
        if must {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn has_escape(s: &str) -> bool {
    s.as_bytes().windows(3).any(|w| {
        w.first() == Some(&b'%')
            && w.get(1).is_some_and(u8::is_ascii_hexdigit)
            && w.get(2).is_some_and(u8::is_ascii_hexdigit)
    })
}

/// Whether `s` holds an escape of a byte above ASCII (`%C3%A9`).
fn encodes_non_ascii(s: &str) -> bool {
    s.as_bytes().windows(2).any(|w| {
        w.first() == Some(&b'%')
            && w.get(1)
                .is_some_and(|h| matches!(h, b'8'..=b'9' | b'A'..=b'F' | b'a'..=b'f'))
    })
}

/// The path from the folder of the note at `from` (a vault path) to the vault path `to`:
/// `../x/y.md`, or the file name alone when both are in one folder.
pub fn relative_path(from: &str, to: &str) -> String {
    let from_dirs: Vec<&str> = match from.rsplit_once('/') {
        Some((dir, _)) => dir.split('/').collect(),
        None => Vec::new(),
    };
    let to_parts: Vec<&str> = to.split('/').collect();
    let to_dirs = to_parts.len().saturating_sub(1);
    let common = from_dirs
        .iter()
        .zip(to_parts.iter().take(to_dirs))
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = String::new();
    for _ in common..from_dirs.len() {
        out.push_str("../");
    }
    out.push_str(&to_parts.get(common..).unwrap_or_default().join("/"));
    out
}

/// The vault path a relative destination names from the note at `from`; `None` when it climbs
/// above the vault's root.
pub fn join_relative(from: &str, dest: &str) -> Option<String> {
    let mut parts: Vec<&str> = match from.rsplit_once('/') {
        Some((dir, _)) => dir.split('/').collect(),
        None => Vec::new(),
    };
    for seg in dest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The note with each `(range, text)` change made and every other byte kept. Changes must not
/// overlap; one that does, or that does not fall on character boundaries, is refused
/// ([`TagEditError::LostPlace`]) and nothing is changed.
pub fn rewrite(
    text: &str,
    mut changes: Vec<(Range<usize>, String)>,
) -> Result<String, TagEditError> {
    changes.sort_by_key(|(r, _)| (r.start, r.end));
    let mut end = 0;
    for (r, _) in &changes {
        Span::from(r.clone()).of(text)?;
        if r.start < end {
            return Err(TagEditError::LostPlace {
                start: r.start,
                end: r.end,
            });
        }
        end = r.end;
    }
    splice::apply(
        text,
        changes
            .into_iter()
            .map(|(r, t)| Edit::replace(Span::from(r), t))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Flavor;

    /// Rewrites every site whose target (as the linker reports it) is `old` to `new`.
    fn relink(text: &str, dialect: &Dialect, old: &str, new: &str) -> String {
        let changes = sites(text, dialect)
            .iter()
            .filter(|s| s.link.target.eq_ignore_ascii_case(old))
            .map(|s| replacement(text, s, new))
            .collect();
        rewrite(text, changes).unwrap()
    }

    #[test]
    fn wiki_links_keep_their_form() {
        let d = Dialect::of(Flavor::Obsidian);
        let text = "a [[Old]] b [[Old|shown]] c [[Old#Part two|x]] d ![[Old#^blk]] e [[ Old ]] f | [[Old\\|t]] |\n`[[Old]]` [[Other]]\n";
        assert_eq!(
            relink(text, &d, "Old", "dir/New"),
            "a [[dir/New]] b [[dir/New|shown]] c [[dir/New#Part two|x]] d ![[dir/New#^blk]] e [[ dir/New ]] f | [[dir/New\\|t]] |\n`[[Old]]` [[Other]]\n"
        );
        // Frontmatter links count; a %%comment%% holds none.
        let text = "---\nup: \"[[Old]]\"\n---\n%% [[Old]] %% [[Old^b]]\n";
        assert_eq!(
            relink(text, &d, "Old", "New"),
            "---\nup: \"[[New]]\"\n---\n%% [[Old]] %% [[New^b]]\n"
        );
    }

    #[test]
    fn markdown_links_keep_their_encoding() {
        let d = Dialect::default();
        let text = "[a](My%20Old.md#Part%202) [b](<My Old.md> \"t\") [c](./My%20Old.md)\n```\n[d](My%20Old.md)\n```\n";
        let got = relink(text, &d, "My Old.md", "../x/New name.md");
        assert_eq!(
            got,
            "[a](../x/New%20name.md#Part%202) [b](<../x/New name.md> \"t\") [c](./My%20Old.md)\n```\n[d](My%20Old.md)\n```\n"
        );
        let got = relink(
            "[a](old.md) [b](d/ü%C3%A9.md)",
            &d,
            "old.md",
            "a b (1)/é.md",
        );
        assert_eq!(got, "[a](a%20b%20%281%29/é.md) [b](d/ü%C3%A9.md)");
        let got = relink("[b](d/%C3%A9.md)", &d, "d/é.md", "é è.md");
        assert_eq!(got, "[b](%C3%A9%20%C3%A8.md)");
    }

    #[test]
    fn definitions_are_rewritten_once() {
        let d = Dialect::default();
        // A reference link is rewritten through its definition; Foam's definition of a wiki
        // link too, even without `.md`.
        let text = "see [x][r] and [[note]]\n\n[r]: old.md \"Old\"\n[note]: note \"Note\"\n";
        let s = sites(text, &d);
        let forms: Vec<_> = s
            .iter()
            .map(|s| (s.link.target.as_str(), &text[s.target.clone()]))
            .collect();
        assert_eq!(
            forms,
            vec![("note", "note"), ("old.md", "old.md"), ("note", "note")]
        );
        let Form::Definition { label, .. } = &s[2].form else {
            panic!("{:?}", s[2]);
        };
        assert_eq!(&text[label.clone()], "note");
        let changes = vec![
            replacement(text, &s[0], "sub/note2"),
            replacement(text, &s[1], "new.md"),
            replacement(text, &s[2], "sub/note2"),
            (label.clone(), "sub/note2".to_owned()),
        ];
        assert_eq!(
            rewrite(text, changes).unwrap(),
            "see [x][r] and [[sub/note2]]\n\n[r]: new.md \"Old\"\n[sub/note2]: sub/note2 \"Note\"\n"
        );
    }

    #[test]
    fn logseq_tags_and_namespaces() {
        let d = Dialect::of(Flavor::Logseq);
        let text = "- a #old and #[[old]] and [[old]]\n- `#old` #older\n";
        assert_eq!(
            relink(text, &d, "old", "proj/new"),
            "- a #proj/new and #[[proj/new]] and [[proj/new]]\n- `#old` #older\n"
        );
        assert_eq!(
            relink(text, &d, "old", "two words"),
            "- a #[[two words]] and #[[two words]] and [[two words]]\n- `#old` #older\n"
        );
        // A page's bare `tags::` items are references too; `[[b]]` and `#c` items are links.
        let text = "tags:: old, [[old]], #old, other\n\n- body\n";
        assert_eq!(
            relink(text, &d, "old", "new, name"),
            "tags:: [[new, name]], [[new, name]], #[[new, name]], other\n\n- body\n"
        );
        // Block references name blocks, not pages: no site.
        assert!(sites("- ((6f0c2a9e-1111-4a4a-9b9b-0123456789ab))", &d).is_empty());
    }

    #[test]
    fn paths() {
        assert_eq!(relative_path("a/b/n.md", "a/c/m.md"), "../c/m.md");
        assert_eq!(relative_path("a/n.md", "a/m.md"), "m.md");
        assert_eq!(relative_path("n.md", "a/b/m.md"), "a/b/m.md");
        assert_eq!(relative_path("a/b/n.md", "m.md"), "../../m.md");
        assert_eq!(
            join_relative("a/b/n.md", "../c/m.md").as_deref(),
            Some("a/c/m.md")
        );
        assert_eq!(join_relative("n.md", "../m.md"), None);
    }

    #[test]
    fn overlapping_changes_are_refused() {
        assert!(rewrite("abcdef", vec![(1..3, "x".into()), (2..4, "y".into())]).is_err());
        assert!(rewrite("é", vec![(1..2, "x".into())]).is_err());
        assert_eq!(rewrite("abc", vec![(1..2, "XY".into())]).unwrap(), "aXYc");
    }
}
