//! A live, shared vault, driven through the real binary: edits made by other programs reach
//! search, listings and backlinks without `kb_reindex`; any number of processes (stdio, HTTP,
//! `index`) serve one vault with the same answers; `expected_modified` holds across processes;
//! a follower takes the lead when the leader is killed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::serial;
use common::stdio::Server;

/// How soon an external edit must be visible to every tool (issue #12).
const VISIBLE_WITHIN: Duration = Duration::from_secs(2);

/// Polls `f` until it holds; fails after `within`.
fn within(within: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The notes whose results hold the word `q`, sorted: what the index holds of each file. Notes
/// close in meaning that do not hold it may follow them in a search (ADR-0015) and are left out.
fn search_paths(s: &mut Server, q: &str) -> Vec<String> {
    let mut paths: Vec<String> = s.ok("kb_search", json!({"query": q, "limit": 50}))["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| {
            h["content"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains(&q.to_lowercase())
        })
        .map(|h| h["page_path"].as_str().unwrap().to_owned())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn listed(s: &mut Server) -> Vec<String> {
    s.ok("kb_list_pages", json!({"limit": 1000}))["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_owned())
        .collect()
}

fn backlink_sources(s: &mut Server, path: &str) -> Vec<String> {
    let r = s.call(
        "kb_backlinks",
        json!({"path": path, "include_unlinked": false}),
    );
    let Some(list) = r["result"]["structuredContent"]["backlinks"].as_array() else {
        return Vec::new();
    };
    let mut out: Vec<String> = list
        .iter()
        .map(|b| b["source_page"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn fresh(s: &mut Server) -> bool {
    s.ok("kb_index_status", json!({}))["index_fresh"] == json!(true)
}

fn vault_with_target() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Target.md"),
        "# Target\n\n- the page others link to\n",
    )
    .unwrap();
    dir
}

#[test]
fn edits_by_other_programs_reach_search_listing_and_backlinks_without_reindex() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let mut s = Server::start(v);
    assert_eq!(listed(&mut s), vec!["Target.md"]);

    // Create, as any editor would.
    std::fs::create_dir(v.join("inbox")).unwrap();
    std::fs::write(
        v.join("inbox/idea.md"),
        "- a capybara idea linking [[Target]]\n",
    )
    .unwrap();
    within(
        VISIBLE_WITHIN,
        "created note searchable, listed, linking",
        || {
            search_paths(&mut s, "capybara") == ["inbox/idea.md"]
                && listed(&mut s).contains(&"inbox/idea.md".to_owned())
                && backlink_sources(&mut s, "Target.md") == ["inbox/idea.md"]
        },
    );

    // Modify in place (Obsidian writes the file directly).
    std::fs::write(
        v.join("inbox/idea.md"),
        "- an axolotl idea, no link any more\n",
    )
    .unwrap();
    within(VISIBLE_WITHIN, "modified note re-indexed", || {
        search_paths(&mut s, "axolotl") == ["inbox/idea.md"]
            && search_paths(&mut s, "capybara").is_empty()
            && backlink_sources(&mut s, "Target.md").is_empty()
    });

    // Save as temp file + rename (vim's backupcopy=no, VS Code, many sync tools); vim's swap and
    // backup files must never show up as notes.
    std::fs::write(v.join("inbox/.idea.md.swp"), "swap").unwrap();
    std::fs::write(v.join("inbox/idea.md~"), "backup").unwrap();
    std::fs::write(
        v.join("inbox/idea.md.tmp-1"),
        "- a quokka idea [[Target]]\n",
    )
    .unwrap();
    std::fs::rename(v.join("inbox/idea.md.tmp-1"), v.join("inbox/idea.md")).unwrap();
    within(VISIBLE_WITHIN, "temp-file-and-rename save applied", || {
        search_paths(&mut s, "quokka") == ["inbox/idea.md"]
            && search_paths(&mut s, "axolotl").is_empty()
            && backlink_sources(&mut s, "Target.md") == ["inbox/idea.md"]
    });

    // Rename a note.
    std::fs::rename(v.join("inbox/idea.md"), v.join("inbox/renamed.md")).unwrap();
    within(VISIBLE_WITHIN, "renamed note moved", || {
        search_paths(&mut s, "quokka") == ["inbox/renamed.md"]
            && !listed(&mut s).contains(&"inbox/idea.md".to_owned())
            && backlink_sources(&mut s, "Target.md") == ["inbox/renamed.md"]
    });

    // Rename the folder it is in.
    std::fs::rename(v.join("inbox"), v.join("archive")).unwrap();
    within(VISIBLE_WITHIN, "folder rename applied", || {
        search_paths(&mut s, "quokka") == ["archive/renamed.md"]
            && listed(&mut s) == ["Target.md", "archive/renamed.md"]
            && backlink_sources(&mut s, "Target.md") == ["archive/renamed.md"]
    });

    // Delete.
    std::fs::remove_file(v.join("archive/renamed.md")).unwrap();
    within(VISIBLE_WITHIN, "deleted note gone", || {
        search_paths(&mut s, "quokka").is_empty()
            && listed(&mut s) == ["Target.md"]
            && backlink_sources(&mut s, "Target.md").is_empty()
    });
    within(VISIBLE_WITHIN, "fresh once applied", || fresh(&mut s));

    // A checkout of many files at once.
    for i in 0..200 {
        std::fs::write(
            v.join(format!("n{i:03}.md")),
            format!("- checked out wombat number{i}\n"),
        )
        .unwrap();
    }
    within(
        Duration::from_secs(5),
        "a burst of 200 files applied",
        || fresh(&mut s) && s.ok("kb_search", json!({"query": "wombat"}))["total"] == json!(200),
    );
}

#[test]
fn index_fresh_is_false_while_a_change_is_pending_and_true_once_applied() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let mut s = Server::start(v);
    within(VISIBLE_WITHIN, "fresh after the first scan", || {
        fresh(&mut s)
    });

    // An editor saving the same note over and over (autosave): some of the time the watcher holds
    // changes it has not applied yet, and then the index must not claim to be fresh.
    let writer = {
        let path = v.join("busy.md");
        std::thread::spawn(move || {
            for i in 0..60 {
                std::fs::write(&path, format!("- autosave gecko{i}\n")).unwrap();
                std::thread::sleep(Duration::from_millis(25));
            }
        })
    };
    let mut seen_stale = false;
    while !writer.is_finished() {
        seen_stale |= !fresh(&mut s);
    }
    writer.join().unwrap();
    assert!(
        seen_stale,
        "index_fresh stayed true while edits were pending"
    );
    within(VISIBLE_WITHIN, "fresh once the edits are applied", || {
        fresh(&mut s) && search_paths(&mut s, "gecko59") == ["busy.md"]
    });
}

#[test]
fn kb_reindex_right_after_external_writes_answers_fresh_and_so_does_kb_index_status() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let mut s = Server::start(v);
    within(VISIBLE_WITHIN, "fresh after the first scan", || {
        fresh(&mut s)
    });
    // Files written just before the call: the reindex applies them while the watcher's events
    // for them still wait to be applied. Those are not pending any more: disk and index agree.
    for round in 0..50 {
        for n in 0..3 {
            std::fs::write(
                v.join(format!("round{round}-{n}.md")),
                format!("- quokka{round} number {n}\n"),
            )
            .unwrap();
        }
        let reindexed = s.ok("kb_reindex", json!({"mode": "incremental"}));
        assert_eq!(
            reindexed["index_fresh"],
            json!(true),
            "round {round}: kb_reindex answered {reindexed}"
        );
        assert!(fresh(&mut s), "round {round}: kb_index_status right after");
        assert_eq!(
            search_paths(&mut s, &format!("quokka{round}")),
            (0..3)
                .map(|n| format!("round{round}-{n}.md"))
                .collect::<Vec<_>>(),
            "round {round}"
        );
    }
}

#[test]
fn with_watch_off_external_edits_wait_for_kb_reindex() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
    cmd.args(["--stdio", "--watch", "off", "--vault"])
        .arg(v)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit());
    let mut s = Server::start_command(cmd);
    within(VISIBLE_WITHIN, "first scan", || fresh(&mut s));
    std::fs::write(v.join("late.md"), "- a tardy tortoise\n").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        search_paths(&mut s, "tortoise").is_empty(),
        "no watcher runs with --watch off"
    );
    s.ok("kb_reindex", json!({"mode": "incremental"}));
    assert_eq!(search_paths(&mut s, "tortoise"), ["late.md"]);
}

#[test]
fn with_watch_poll_external_edits_arrive_at_the_next_poll() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
    cmd.args([
        "--stdio",
        "--watch",
        "poll",
        "--poll-interval",
        "0.2",
        "--vault",
    ])
    .arg(v)
    .env("RUST_LOG", "warn")
    .stderr(Stdio::inherit());
    let mut s = Server::start_command(cmd);
    std::fs::write(v.join("polled.md"), "- a patient pangolin [[Target]]\n").unwrap();
    within(VISIBLE_WITHIN, "polled note searchable", || {
        search_paths(&mut s, "pangolin") == ["polled.md"]
            && backlink_sources(&mut s, "Target.md") == ["polled.md"]
    });
    std::fs::remove_file(v.join("polled.md")).unwrap();
    within(VISIBLE_WITHIN, "polled delete applied", || {
        search_paths(&mut s, "pangolin").is_empty()
    });
}

/// `stratum-mcp --http --no-auth` on a free loopback port, as a child process.
struct HttpServer {
    child: Child,
    url: String,
    client: reqwest::blocking::Client,
    session: Option<String>,
}

impl HttpServer {
    fn start(vault: &Path) -> HttpServer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
        cmd.args(["--http", "--no-auth", "--bind", "127.0.0.1:0", "--vault"])
            .arg(vault)
            .env("RUST_LOG", "warn");
        let (child, base) = common::spawn_http(cmd);
        let url = format!("{base}/mcp");
        let mut h = HttpServer {
            child,
            url,
            client: reqwest::blocking::Client::new(),
            session: None,
        };
        let init = h.post(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tests","version":"1"}}}));
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        h
    }

    fn post(&mut self, body: Value) -> Value {
        let mut req = self
            .client
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&body);
        if let Some(s) = &self.session {
            req = req.header("Mcp-Session-Id", s);
        }
        let resp = req.send().unwrap();
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_owned());
        }
        resp.json().unwrap()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.post(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args}}))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        common::terminate(&mut self.child);
    }
}

fn modified_at(doc: &Value) -> String {
    doc["modified_at"].as_str().unwrap().to_owned()
}

#[test]
fn four_processes_serve_one_vault_with_the_same_answers() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path();
    for i in 0..300 {
        std::fs::write(
            v.join(format!("seed{i:03}.md")),
            format!("# Seed {i}\n\n- a seeded heron note {i}\n"),
        )
        .unwrap();
    }
    let mut a = Server::start(v);
    let mut b = Server::start(v);
    let mut c = HttpServer::start(v);
    within(Duration::from_secs(10), "the first scan", || fresh(&mut a));
    assert_eq!(a.ok("kb_vault_info", json!({}))["page_count"], json!(300));
    assert_eq!(b.ok("kb_vault_info", json!({}))["page_count"], json!(300));

    // `index` with servers running: the leader does the work, `index` reports it and exits 0.
    let out = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"))
        .args(["index", "--vault"])
        .arg(v)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("indexed 300 notes"), "{stderr}");

    // Interleaved writes from every process, each read back by the others.
    for round in 0..10 {
        let (path, content) = (
            format!("shared/r{round}.md"),
            format!("- round{round} kestrel"),
        );
        match round % 3 {
            0 => a.ok("kb_write_page", json!({"path": path, "content": content})),
            1 => b.ok("kb_write_page", json!({"path": path, "content": content})),
            _ => c.call("kb_write_page", json!({"path": path, "content": content}))["result"]
                ["structuredContent"]
                .clone(),
        };
        let q = json!({"query": format!("round{round}")});
        let from_a = a.ok("kb_search", q.clone());
        // The new note is found by its word, first (earlier rounds' notes, close in meaning,
        // may follow: ADR-0015); every process answers the same.
        assert_eq!(from_a["results"][0]["page_path"], json!(path), "{from_a}");
        assert_eq!(from_a, b.ok("kb_search", q.clone()));
        assert_eq!(
            from_a,
            c.call("kb_search", q)["result"]["structuredContent"]
        );
    }
    let everyone = [
        a.ok("kb_list_pages", json!({"limit": 1000})),
        b.ok("kb_list_pages", json!({"limit": 1000})),
        c.call("kb_list_pages", json!({"limit": 1000}))["result"]["structuredContent"].clone(),
    ];
    assert_eq!(everyone[0]["pages"].as_array().unwrap().len(), 310);
    assert_eq!(everyone[0], everyone[1]);
    assert_eq!(everyone[0], everyone[2]);

    // expected_modified across processes: b and c read the same version; a writes; both stale
    // writers are refused with Conflict and nothing changes; a fresh read lets c write.
    let seen_b = b.ok("kb_get_page", json!({"path": "shared/r0.md"}));
    let seen_c =
        c.call("kb_get_page", json!({"path": "shared/r0.md"}))["result"]["structuredContent"]
            .clone();
    assert_eq!(modified_at(&seen_b), modified_at(&seen_c));
    a.ok("kb_write_page", json!({"path": "shared/r0.md", "content": "- by a", "expected_modified": modified_at(&seen_b)}));
    let e = b.err("kb_write_page", json!({"path": "shared/r0.md", "content": "- by b", "expected_modified": modified_at(&seen_b)}));
    assert_eq!(e["data"]["kind"], "Conflict", "{e}");
    let e = c.call("kb_write_page", json!({"path": "shared/r0.md", "content": "- by c", "expected_modified": modified_at(&seen_c)}));
    assert_eq!(e["error"]["data"]["kind"], "Conflict", "{e}");
    assert_eq!(
        std::fs::read_to_string(v.join("shared/r0.md")).unwrap(),
        "- by a"
    );
    let now = c.call("kb_get_page", json!({"path": "shared/r0.md"}))["result"]["structuredContent"]
        .clone();
    let r = c.call("kb_write_page", json!({"path": "shared/r0.md", "content": "- by c", "expected_modified": modified_at(&now)}));
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(
        b.ok("kb_get_page", json!({"path": "shared/r0.md"}))["content"],
        "- by c"
    );

    // An edit by another program is seen by every process.
    std::fs::write(v.join("outside.md"), "- an outside ocelot\n").unwrap();
    within(VISIBLE_WITHIN, "external edit seen by all", || {
        search_paths(&mut a, "ocelot") == ["outside.md"]
            && search_paths(&mut b, "ocelot") == ["outside.md"]
            && c.call("kb_search", json!({"query": "ocelot"}))["result"]["structuredContent"]["total"]
                == json!(1)
    });
}

#[test]
fn a_follower_takes_the_lead_when_the_leader_is_killed() {
    let _serial = serial();
    let dir = vault_with_target();
    let v = dir.path();
    let leader = Server::start(v);
    let mut follower = Server::start(v);
    follower.ok(
        "kb_write_page",
        json!({"path": "before.md", "content": "- written through the leader, a lynx"}),
    );
    leader.kill9();

    // The follower answers reads and writes as the new leader, and runs the watcher now.
    within(Duration::from_secs(2), "the follower leads", || {
        follower
            .call(
                "kb_write_page",
                json!({"path": "after.md", "content": "- written after, a marten"}),
            )
            .get("result")
            .is_some()
    });
    assert_eq!(search_paths(&mut follower, "lynx"), ["before.md"]);
    assert_eq!(search_paths(&mut follower, "marten"), ["after.md"]);
    std::fs::write(v.join("ext.md"), "- an external ermine\n").unwrap();
    within(
        VISIBLE_WITHIN,
        "the new leader's watcher applies edits",
        || search_paths(&mut follower, "ermine") == ["ext.md"],
    );

    // A process started now follows it.
    let mut late = Server::start(v);
    assert_eq!(search_paths(&mut late, "marten"), ["after.md"]);
}
