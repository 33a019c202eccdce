//! Runs every example of `tests/data/links.md` (the literate spec of links and tags).

use pkm_markdown::linker::{LinkKind, extract_links};
use pkm_markdown::tags::extract_inline_tags;

const FENCE: &str = "````````````````````````````````";

/// One example: where it starts in the spec, its input and its expected lines.
struct Example {
    line: usize,
    input: String,
    expected: String,
}

fn examples(spec: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut lines = spec.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line != format!("{FENCE} example") {
            continue;
        }
        let mut input = String::new();
        for (_, l) in lines.by_ref() {
            if l == "." {
                break;
            }
            input.push_str(l);
            input.push('\n');
        }
        let mut expected = String::new();
        for (_, l) in lines.by_ref() {
            if l == FENCE {
                break;
            }
            expected.push_str(l);
            expected.push('\n');
        }
        out.push(Example {
            line: n + 1,
            input,
            expected,
        });
    }
    out
}

/// What the two extractors find in `input`, one line each, in order of position.
fn render(input: &str) -> String {
    let mut found: Vec<(usize, String)> = Vec::new();
    for l in extract_links(input) {
        let kind = match l.kind {
            LinkKind::Wiki => "wiki",
            LinkKind::Embed => "embed",
            LinkKind::Markdown => "md",
            LinkKind::BlockRef => "blockref",
        };
        let mut s = format!("{kind} {:?} @{}", l.target, l.position);
        for (name, v) in [
            ("alias", &l.alias),
            ("heading", &l.heading),
            ("block", &l.block_ref),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(" {name}={v:?}"));
            }
        }
        found.push((l.position, s));
    }
    for (tag, pos) in extract_inline_tags(input) {
        found.push((pos, format!("tag {tag:?} @{pos}")));
    }
    found.sort();
    found.into_iter().map(|(_, s)| s + "\n").collect()
}

#[test]
fn links_spec() {
    let spec = include_str!("../data/links.md");
    let examples = examples(spec);
    assert!(
        examples.len() >= 24,
        "the spec lost examples: {}",
        examples.len()
    );
    let failures: Vec<String> = examples
        .iter()
        .filter_map(|ex| {
            let got = render(&ex.input);
            (got != ex.expected).then(|| {
                format!(
                    "example at links.md:{}\ninput:\n{}expected:\n{}got:\n{}",
                    ex.line, ex.input, ex.expected, got
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
