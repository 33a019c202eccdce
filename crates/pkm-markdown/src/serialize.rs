//! Block trees back to text: [`serialize`] writes a page in the canonical outliner form, which
//! [`crate::block_parser::parse_page`] reads back as the same tree; [`outline`] prints a tree one
//! block a line, for tests and debugging.

use crate::block_parser::{Block, BlockKind, ParsedPage, take_heading, take_marker, take_priority};
use crate::lines;

/// Writes blocks in the canonical outliner form: `- ` bullets, two spaces of indentation per
/// level, heading `#`s, marker and `[#A]` on the bullet line, then the properties as indented
/// `key:: value` lines, then the content's further lines. Frontmatter, if any, comes first,
/// from its original YAML text. Every line ends with `\n`.
pub fn serialize(page: &ParsedPage) -> String {
    let mut out = String::new();
    if let Some(yaml) = &page.frontmatter_yaml {
        let nl = if yaml.contains("\r\n") { "\r\n" } else { "\n" };
        out.push_str("---");
        out.push_str(nl);
        out.push_str(yaml);
        if !yaml.is_empty() && !yaml.ends_with('\n') {
            out.push_str(nl);
        }
        out.push_str("---");
        out.push_str(nl);
    }
    let mut stack: Vec<(&Block, usize)> = page.blocks.iter().rev().map(|b| (b, 0)).collect();
    while let Some((block, depth)) = stack.pop() {
        write_block(&mut out, block, depth);
        stack.extend(block.children.iter().rev().map(|c| (c, depth + 1)));
    }
    out
}

fn write_block(out: &mut String, b: &Block, depth: usize) {
    let indent = "  ".repeat(depth);
    let mut lines = b.content.split('\n');
    let mut first = String::from("-");
    if let Some(h) = b.heading_level {
        first.push(' ');
        first.push_str(&"#".repeat(usize::from(h.clamp(1, 6))));
    }
    if let Some(m) = b.marker {
        first.push(' ');
        first.push_str(m.as_str());
    }
    if let Some(p) = b.priority {
        first.push_str(" [#");
        first.push_str(p.as_str());
        first.push(']');
    }
    let text = lines.next().unwrap_or_default();
    // Text that would read back as something else (leading spaces, a marker word, `[#A]`, a
    // bullet, a property) goes on the next line, where only the content is read.
    let on_bullet_line = reads_back_on_bullet_line(b, text);
    if on_bullet_line && !text.is_empty() {
        first.push(' ');
        first.push_str(text);
    }
    out.push_str(&indent);
    out.push_str(&first);
    out.push('\n');
    let deferred = (!on_bullet_line).then_some(text);

    let has = |key: &str| {
        b.properties
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(key))
    };
    let mut props: Vec<(&str, &str)> = b
        .properties
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    if let Some(id) = b.id.as_deref().filter(|_| !has("id")) {
        props.push(("id", id));
    }
    if b.collapsed && !has("collapsed") {
        props.push(("collapsed", "true"));
    }
    for (k, v) in props {
        out.push_str(&indent);
        out.push_str("  ");
        out.push_str(k);
        out.push_str("::");
        if !v.is_empty() {
            out.push(' ');
            out.push_str(v);
        }
        out.push('\n');
    }
    for line in deferred.into_iter().chain(lines) {
        if !line.is_empty() {
            out.push_str(&indent);
            out.push_str("  ");
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// Whether `text` written after the bullet, heading, marker and priority of `b` parses back as
/// exactly that block's first line.
fn reads_back_on_bullet_line(b: &Block, text: &str) -> bool {
    if text.starts_with([' ', '\t']) {
        return false;
    }
    let mut line = String::new();
    if let Some(h) = b.heading_level {
        line.push_str(&"#".repeat(usize::from(h.clamp(1, 6))));
        line.push(' ');
    }
    if let Some(m) = b.marker {
        line.push_str(m.as_str());
        line.push(' ');
    }
    if let Some(p) = b.priority {
        line.push_str("[#");
        line.push_str(p.as_str());
        line.push_str("] ");
    }
    line.push_str(text);
    let (h, rest) = take_heading(&line);
    let (m, rest) = take_marker(rest);
    let (p, rest) = take_priority(rest);
    let plain = h.is_none() && m.is_none() && p.is_none();
    h == b.heading_level
        && m == b.marker
        && p == b.priority
        && rest == text
        && !(plain && lines::property(rest).is_some())
        && lines::bullet(rest, 2).is_none()
        && !lines::is_thematic_break(&format!("- {line}"))
}

/// The block tree as indented text, one block a line, for tests and debugging:
/// `- [H2] [TODO] [#A] text  {key: value}`. The first symbol is the kind (`-` list item, `#`
/// heading, `¶` paragraph, ```` ``` ```` code, `|` table, `>` quote); line breaks in content
/// show as `⏎`.
pub fn outline(blocks: &[Block]) -> String {
    let mut out = String::new();
    let mut stack: Vec<(&Block, usize)> = blocks.iter().rev().map(|b| (b, 0)).collect();
    while let Some((b, depth)) = stack.pop() {
        out.push_str(&"  ".repeat(depth));
        out.push_str(match b.kind {
            BlockKind::ListItem => "-",
            BlockKind::Heading => "#",
            BlockKind::Paragraph => "¶",
            BlockKind::Code => "```",
            BlockKind::Table => "|",
            BlockKind::Quote => ">",
        });
        if let Some(h) = b.heading_level {
            out.push_str(&format!(" [H{h}]"));
        }
        if let Some(m) = b.marker {
            out.push_str(&format!(" [{}]", m.as_str()));
        }
        if let Some(p) = b.priority {
            out.push_str(&format!(" [#{}]", p.as_str()));
        }
        if !b.content.is_empty() {
            out.push(' ');
            out.push_str(&b.content.replace('\n', "⏎"));
        }
        if !b.properties.is_empty() {
            let props: Vec<String> = b
                .properties
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            out.push_str(&format!("  {{{}}}", props.join(", ")));
        }
        out.push('\n');
        stack.extend(b.children.iter().rev().map(|c| (c, depth + 1)));
    }
    out
}
