//! `kb_recent_changes` and `kb_list_tags` through the real binary.

use serde_json::{Value, json};

use crate::common::stdio::Server;
use crate::contract::assert_shape;

fn call(s: &mut Server, tool: &str, args: Value) -> Value {
    let out = s.ok(tool, args);
    assert_shape(tool, &out);
    out
}

fn paths(list: &Value) -> Vec<&str> {
    list["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect()
}

#[test]
fn recent_changes_lists_notes_changed_since_a_time_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path());
    let mut written = Vec::new();
    for name in ["one", "two", "three"] {
        let doc = s.ok(
            "kb_write_page",
            json!({"path": format!("{name}.md"), "content": format!("# Note {name}\n")}),
        );
        written.push(doc["modified_at"].clone());
    }
    let all = call(&mut s, "kb_recent_changes", json!({}));
    assert_eq!(paths(&all), ["three.md", "two.md", "one.md"]);
    assert_eq!(all["changes"][0]["title"], "Note three");
    assert_eq!(all["changes"][0]["modified_at"], written[2]);
    assert_eq!(
        (all["total"].clone(), all["next_offset"].clone()),
        (json!(3), Value::Null)
    );

    // After the first write: the two later ones; paged one at a time.
    let since = call(
        &mut s,
        "kb_recent_changes",
        json!({"since": written[0], "limit": 1}),
    );
    assert_eq!(paths(&since), ["three.md"]);
    assert_eq!(
        (since["total"].clone(), since["next_offset"].clone()),
        (json!(2), json!(1))
    );
    let next = call(
        &mut s,
        "kb_recent_changes",
        json!({"since": written[0], "limit": 1, "offset": 1}),
    );
    assert_eq!(paths(&next), ["two.md"]);
    assert_eq!(next["next_offset"], Value::Null);
    // Any offset form of RFC 3339 names the same instant.
    let later = call(
        &mut s,
        "kb_recent_changes",
        json!({"since": "2200-01-01T01:00:00+01:00"}),
    );
    assert_eq!(later["total"], 0);

    let code = |e: &Value| e["code"].as_i64().unwrap();
    for args in [
        json!({"since": "yesterday"}),
        json!({"limit": 0}),
        json!({"limit": 201}),
        json!({"offset": -1}),
        json!({"until": "2026-01-01T00:00:00Z"}),
    ] {
        let e = s.err("kb_recent_changes", args.clone());
        assert_eq!(code(&e), -32602, "{args}: {e}");
        assert!(
            !e["message"].as_str().unwrap().contains('\n'),
            "one line: {e}"
        );
    }
}

#[test]
fn list_tags_counts_notes_per_tag_from_every_place_a_tag_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    std::fs::write(v.join("a.md"), "Inline #Garden and #yard, #garden again\n").unwrap();
    std::fs::write(v.join("b.md"), "---\ntags: [garden, compost]\n---\nBody\n").unwrap();
    std::fs::write(v.join("c.md"), "tags:: garden, yard\n\n- a block\n").unwrap();
    std::fs::write(v.join("d.md"), "No tags here\n").unwrap();
    let mut s = Server::start(v);
    let mut all = Value::Null;
    for _ in 0..400 {
        all = call(&mut s, "kb_list_tags", json!({}));
        if all["total"] == 3 && all["tags"][0]["count"] == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    // Most used first, ties by name; a tag in several spellings counted once per note.
    let names: Vec<(&str, u64)> = all["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["tag"].as_str().unwrap(), t["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(names.len(), 3, "{all}");
    assert_eq!(names[0].1, 3);
    assert!(names[0].0.eq_ignore_ascii_case("garden"), "{all}");
    assert_eq!(&names[1..], [("yard", 2), ("compost", 1)]);
    assert_eq!(all["next_offset"], Value::Null);

    let page = call(&mut s, "kb_list_tags", json!({"limit": 1, "offset": 1}));
    assert_eq!(page["tags"], json!([{"tag": "yard", "count": 2}]));
    assert_eq!(
        (page["total"].clone(), page["next_offset"].clone()),
        (json!(3), json!(2))
    );
    let prefixed = call(&mut s, "kb_list_tags", json!({"prefix": "#Co"}));
    assert_eq!(prefixed["tags"], json!([{"tag": "compost", "count": 1}]));
    assert_eq!(prefixed["total"], 1);

    // A tag written now is listed at once.
    s.ok("kb_add_tag", json!({"path": "d.md", "tag": "compost"}));
    let now = call(&mut s, "kb_list_tags", json!({"prefix": "compost"}));
    assert_eq!(now["tags"], json!([{"tag": "compost", "count": 2}]));

    for args in [
        json!({"limit": 0}),
        json!({"limit": 1001}),
        json!({"prefix": 3}),
    ] {
        let e = s.err("kb_list_tags", args.clone());
        assert_eq!(e["code"], -32602, "{args}: {e}");
    }
}
