//! Logseq outlines that CommonMark reads as indented code. Logseq indents blocks with tabs (or
//! spaces), also right under a heading that is not a bullet (`## Usage\n\t- item [[A]]`); to
//! pulldown-cmark those lines are an indented code block, so their links and tags would be lost.
//! [`in_code`] recognises such a block by the rule the block parser follows
//! ([`lines::opens_outline`]) and gives its lines dedented, to be scanned again as the list they
//! are, with the way back to the note's offsets.

use std::ops::Range;

use crate::lines::{self, Line};

/// An outline found inside an indented code block.
pub(crate) struct Outline {
    /// The outline's lines, each without the root bullet's indentation, line breaks kept.
    pub text: String,
    /// For each line: where its kept part starts in `text` and in the note.
    starts: Vec<(usize, usize)>,
    /// Where the outline ends in the note; the rest of the code block (from here to its end) is
    /// still code.
    pub end: usize,
}

impl Outline {
    /// The note's offset of offset `at` of [`Outline::text`].
    pub fn to_note(&self, at: usize) -> usize {
        let i = self.starts.partition_point(|&(new, _)| new <= at);
        match i.checked_sub(1).and_then(|i| self.starts.get(i)) {
            Some(&(new, old)) => old + (at - new),
            None => self.end,
        }
    }

    /// [`Outline::to_note`] of both ends.
    pub fn range_to_note(&self, r: Range<usize>) -> Range<usize> {
        self.to_note(r.start)..self.to_note(r.end)
    }
}

/// The outline at the start of the indented code block `code` (pulldown-cmark's range, which
/// starts after the first line's indentation), if that block is one: its first line is a bullet
/// that directly follows a non-blank line. The outline runs to the code block's end, or to the
/// first line after a blank line that is not a bullet and is indented less than the root item's
/// text (where the block parser closes the outline and reads indented code again).
pub(crate) fn in_code(text: &str, code: Range<usize>) -> Option<Outline> {
    let start = text
        .get(..code.start)?
        .rfind(['\n', '\r'])
        .map_or(0, |i| i + 1);
    if !lines::is_blank(text.get(start..code.start)?) {
        return None;
    }
    let first = lines::lines(text, start).next()?;
    let (root_cols, bullet) = lines::opens_outline(text, first)?;
    let root_content = root_cols + bullet.content_offset_cols;

    let mut out = Outline {
        text: String::new(),
        starts: Vec::new(),
        end: code.end,
    };
    let mut pending: Vec<Line> = Vec::new();
    for l in lines::lines(text, start).take_while(|l| l.start < code.end) {
        let s = text.get(l.start..l.end).unwrap_or_default();
        if lines::is_blank(s) {
            pending.push(l);
            continue;
        }
        let (cols, ibytes) = lines::indent(s);
        let is_bullet = s
            .get(ibytes..)
            .and_then(|a| lines::bullet(a, cols))
            .is_some();
        if let Some(blank) = pending.first()
            && !is_bullet
            && cols < root_content
        {
            out.end = blank.start;
            break;
        }
        for b in pending.drain(..).chain(std::iter::once(l)) {
            let s = text.get(b.start..b.end).unwrap_or_default();
            let kept = lines::strip_cols(s, root_cols);
            let kept_start = b.end - kept.len();
            out.starts.push((out.text.len(), kept_start));
            out.text.push_str(
                text.get(kept_start..b.next.min(code.end))
                    .unwrap_or_default(),
            );
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_parser::parse_page;
    use crate::linker::extract_links;
    use crate::serialize::outline;
    use crate::tags::extract_inline_tags;

    fn targets(text: &str) -> Vec<String> {
        extract_links(text).into_iter().map(|l| l.target).collect()
    }

    fn tags(text: &str) -> Vec<String> {
        extract_inline_tags(text)
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn links_and_tags_in_a_tab_indented_outline_under_a_heading_are_found() {
        let text = "## Usage\n\t- item [[A]] #one\n\t  collapsed:: true\n\t\t- child [[B]] `[[not]]`\n\t\t\t- grandchild [[C]] #two\n## More\n\t- other [[D]]\n";
        assert_eq!(targets(text), ["A", "B", "C", "D"]);
        assert_eq!(tags(text), ["one", "two"]);
        // The block tree reads the same outline.
        assert_eq!(
            outline(&parse_page(text, "p").blocks),
            "# [H2] Usage\n  - item [[A]] #one  {collapsed: true}\n    - child [[B]] `[[not]]`\n      - grandchild [[C]] #two\n# [H2] More\n  - other [[D]]\n"
        );
    }

    #[test]
    fn space_indented_outlines_and_crlf_too() {
        assert_eq!(
            targets("# H\r\n    - item [[A]]\r\n        - child [[B]]\r\n"),
            ["A", "B"]
        );
        assert_eq!(
            targets("---\ntitle: T\n---\n# H\n\t- under frontmatter [[A]]\n"),
            ["A"]
        );
    }

    #[test]
    fn real_indented_code_stays_code() {
        // After a blank line, indented lines are code, bullet or not.
        assert_eq!(targets("# H\n\n\t- code [[A]]\n"), Vec::<String>::new());
        assert_eq!(targets("para\n\n    code [[A]]\n"), Vec::<String>::new());
        // The body's first line, also right after frontmatter, is no outline's continuation.
        assert_eq!(targets("\t- code [[A]]\n"), Vec::<String>::new());
        assert_eq!(
            targets("---\ntitle: T\n---\n\t- code [[A]]\n"),
            Vec::<String>::new()
        );
        // After a heading, indented text that is no bullet is code.
        assert_eq!(targets("# H\n    code [[A]]\n"), Vec::<String>::new());
        // Code after the outline and a blank line stays code.
        let text = "# H\n\t- item [[A]]\n\n    code [[B]]\n\n\t- more [[C]]\n";
        assert_eq!(targets(text), ["A"]);
        assert_eq!(
            outline(&parse_page(text, "p").blocks),
            "# [H1] H\n  - item [[A]]\n  ```     code [[B]]⏎⏎\t- more [[C]]\n"
        );
    }

    #[test]
    fn offsets_map_back_to_the_note() {
        let text = "# H\n\t- a [[A]]\n\n\t\t- b [[B]]\n\n    x\n";
        let code_start = text.find("- a").unwrap_or_default();
        let o = in_code(text, code_start..text.len()).unwrap();
        assert_eq!(o.text, "- a [[A]]\n\n\t- b [[B]]\n");
        assert_eq!(o.end, text.find("\n    x").unwrap_or_default());
        let b = o.text.find("[[B]]").unwrap_or_default();
        assert_eq!(o.to_note(b), text.find("[[B]]").unwrap_or_default());
        let links: Vec<usize> = extract_links(text).iter().map(|l| l.position).collect();
        assert_eq!(
            links,
            [
                text.find("[[A]]").unwrap_or_default(),
                text.find("[[B]]").unwrap_or_default()
            ]
        );
    }
}
