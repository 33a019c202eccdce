//! `relink`: a rewrite changes the page part of the links it is given and nothing else.

use pkm_markdown::linker::{LinkKind, extract_links_as};
use pkm_markdown::relink::{Form, replacement, rewrite, sites};
use pkm_markdown::{Dialect, Flavor};
use proptest::prelude::*;

/// Pieces of a note: links to `Old` in every form, other links, code, text.
const PIECES: &[&str] = &[
    "[[Old]]",
    "[[Old|shown]]",
    "[[Old#Part 2|x]]",
    "![[Old#^b1]]",
    "[[old]]",
    "[t](Old.md)",
    "[t](Old.md#H \"title\")",
    "[[Other]]",
    "[o](Other.md)",
    "#Old",
    "#[[Old]]",
    "`[[Old]]`",
    "\n```\n[[Old]]\n```\n",
    " words ",
    "\n- ",
    "\n\n",
    "é ",
    "%%",
    "[",
    "]",
    "(",
];

fn flavor() -> impl Strategy<Value = Flavor> {
    prop_oneof![
        Just(Flavor::Markdown),
        Just(Flavor::Obsidian),
        Just(Flavor::Logseq)
    ]
}

/// The text with every link's range cut out: what must be the same before and after.
fn outside_links(text: &str, d: &Dialect) -> Vec<String> {
    let mut out = Vec::new();
    let mut pos = 0;
    for s in sites(text, d) {
        out.push(text[pos..s.range.start.max(pos)].to_owned());
        pos = pos.max(s.range.end);
    }
    out.push(text[pos..].to_owned());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn only_the_rewritten_links_change(
        picks in prop::collection::vec(0..PIECES.len(), 0..24),
        flavor in flavor(),
        new in prop_oneof![Just("New"), Just("dir/New name"), Just("a/b"), Just("Ünï")],
    ) {
        let text: String = picks.iter().map(|&i| PIECES[i]).collect();
        let d = Dialect::of(flavor);
        let before = sites(&text, &d);
        let is_old = |t: &str| t.eq_ignore_ascii_case("old") || t.eq_ignore_ascii_case("old.md");
        let changes = before
            .iter()
            .filter(|s| is_old(&s.link.target))
            .map(|s| {
                let to = if s.form == Form::Markdown { format!("{new}.md") } else { new.to_owned() };
                replacement(&text, s, &to)
            })
            .collect();
        let got = rewrite(&text, changes).unwrap();
        let after = sites(&got, &d);
        // The same links, in the same forms, with the same aliases, headings and blocks; those
        // that named `Old` now name the new target.
        prop_assert_eq!(before.len(), after.len(), "{:?} → {:?}", text, got);
        for (b, a) in before.iter().zip(&after) {
            prop_assert_eq!(b.link.kind, a.link.kind);
            prop_assert_eq!(&b.link.alias, &a.link.alias);
            prop_assert_eq!(&b.link.heading, &a.link.heading);
            prop_assert_eq!(&b.link.block_ref, &a.link.block_ref);
            let want = if !is_old(&b.link.target) {
                b.link.target.clone()
            } else if b.link.kind == LinkKind::Markdown {
                format!("{new}.md")
            } else {
                new.to_owned()
            };
            prop_assert_eq!(&a.link.target, &want, "{:?} → {:?}", text, got);
        }
        prop_assert_eq!(outside_links(&text, &d), outside_links(&got, &d));
        // The linker sees what the sites see (block references aside).
        let n = extract_links_as(&got, &d).iter().filter(|l| l.kind != LinkKind::BlockRef).count();
        prop_assert!(after.len() >= n);
    }
}
