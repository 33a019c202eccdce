//! Frontmatter and tag edits: hostile YAML is refused, never a hang or a crash (libFuzzer's
//! timeout and RSS limit catch both); adding a tag keeps every other frontmatter key and every
//! body byte (a Logseq page's `tags::` line gets it without any other change); removing it leaves
//! no occurrence behind; setting a property the note lacks and removing it again gives back the
//! note (or the edit is refused).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pkm_markdown::block_parser::parse_page;
use pkm_markdown::frontmatter::{self, locate};
use pkm_markdown::properties::set_properties;
use pkm_markdown::tags::{add_tag, extract_inline_tags, remove_tag};
use pkm_markdown::{Dialect, Flavor};
use serde_json::Value;

const TAG: &str = "fuzz-tag";

/// The frontmatter without its tag keys.
fn other_keys(text: &str) -> Option<Value> {
    let mut v = frontmatter::parse(text).ok()??;
    if let Value::Object(map) = &mut v {
        map.remove("tags");
        map.remove("tag");
    }
    Some(v)
}

fn body(text: &str) -> &str {
    let start = locate(text).map_or(0, |s| s.body_start);
    text.get(start..).unwrap_or_default()
}

/// Whether `out` is `text` with one run of bytes inserted somewhere.
fn one_insertion(text: &str, out: &str) -> bool {
    let (t, o) = (text.as_bytes(), out.as_bytes());
    let prefix = t.iter().zip(o).take_while(|(a, b)| a == b).count();
    let suffix = t[prefix..]
        .iter()
        .rev()
        .zip(o[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    o.len() > t.len() && prefix + suffix == t.len()
}

fn frontmatter_tags(text: &str) -> Vec<String> {
    match frontmatter::parse(text) {
        Ok(Some(v)) => match v.get("tags") {
            Some(Value::Array(a)) => a.iter().filter_map(|t| t.as_str().map(str::to_lowercase)).collect(),
            Some(Value::String(s)) => vec![s.to_lowercase()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = frontmatter::parse_yaml(text);
    let before = frontmatter::parse(text);

    if let Ok(Some(out)) = add_tag(text, TAG) {
        let page = parse_page(&out, "note");
        assert!(page.tags.iter().any(|t| t.eq_ignore_ascii_case(TAG)), "{text:?} -> {out:?}");
        if locate(text).is_some() {
            assert_eq!(body(text), body(&out), "body changed: {text:?} -> {out:?}");
        } else if locate(&out).is_some() {
            // A byte-order mark stays first, before the new frontmatter.
            let unmarked = text.strip_prefix('\u{feff}').unwrap_or(text);
            assert!(out.ends_with(unmarked), "body changed: {text:?} -> {out:?}");
        } else {
            // A Logseq page keeps its form: the tag went into its `tags::` property, one
            // insertion and nothing else changed.
            assert!(one_insertion(text, &out), "more than the tags:: line changed: {text:?} -> {out:?}");
        }
        if matches!(before, Ok(Some(_))) {
            assert_eq!(other_keys(text), other_keys(&out), "{text:?} -> {out:?}");
        }
    }

    if let Ok((out, removed)) = remove_tag(text, TAG) {
        if removed == 0 {
            assert_eq!(out, text);
        }
        assert!(
            !extract_inline_tags(&out).iter().any(|(t, _)| t.eq_ignore_ascii_case(TAG)),
            "{text:?} -> {out:?}"
        );
        assert!(!frontmatter_tags(&out).iter().any(|t| t == TAG), "{text:?} -> {out:?}");
    }

    for flavor in [Flavor::Obsidian, Flavor::Logseq] {
        let dialect = Dialect::of(flavor);
        let key = "fuzz-key".to_owned();
        let set = [(key.clone(), Value::String("a: b".to_owned()))];
        let Ok(edit) = set_properties(text, &dialect, &set, &[]) else {
            continue;
        };
        // An empty frontmatter goes with the last key removed from it (documented).
        let blank = locate(text).is_some_and(|s| text.get(s.yaml).unwrap_or_default().trim().is_empty());
        if edit.changes.first().is_some_and(|c| c.before.is_none()) && !blank {
            let back = set_properties(&edit.text, &dialect, &[], std::slice::from_ref(&key));
            assert_eq!(back.map(|b| b.text).as_deref(), Ok(text), "{text:?} -> {:?}", edit.text);
        }
    }
});
