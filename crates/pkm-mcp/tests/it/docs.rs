//! The docs cannot drift from the code: the tools table of docs/advanced/mcp.md is rendered from
//! `TOOLS`. When it differs, this test rewrites the file and fails, so a rerun passes and the
//! diff shows in review (as rust-analyzer's `ensure_file_contents`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use std::path::Path;

#[test]
fn tools_table_in_the_docs_matches_the_tool_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/advanced/mcp.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- tools-table:start -->\n", "<!-- tools-table:end -->");
    let a = doc.find(start).expect("start marker") + start.len();
    let b = doc.find(end).expect("end marker");
    let want = pkm_mcp::tools::docs_table();
    if doc[a..b] != want {
        let updated = format!("{}{}{}", &doc[..a], want, &doc[b..]);
        std::fs::write(&path, updated).unwrap();
        panic!(
            "docs/advanced/mcp.md tools table was out of date; it has been regenerated, rerun the tests"
        );
    }
}

/// Every repository path ARCHITECTURE.md and AGENTS.md name in backticks exists, and every source
/// file of the code map's crates is named in ARCHITECTURE.md or lives in a folder it names: a
/// module moved, renamed or added without the map being updated fails here.
#[test]
fn the_architecture_map_names_files_that_exist_and_misses_none() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let agents = std::fs::read_to_string(root.join("AGENTS.md")).unwrap();
    let named = |doc: &str| -> Vec<String> {
        doc.split('`')
            .skip(1)
            .step_by(2)
            .filter(|s| {
                // Not a pattern (`schemas/<name>.json`) nor a command line.
                !s.contains(' ')
                    && !s.contains('<')
                    && (s.starts_with("crates/")
                        || s.starts_with("src-tauri/")
                        || s.starts_with("docs/")
                        || s.starts_with("scripts/")
                        || s.starts_with("tests/clients/"))
            })
            .map(str::to_owned)
            .collect()
    };
    for path in named(&map).iter().chain(&named(&agents)) {
        assert!(
            root.join(path).exists(),
            "{path} is named in the docs but does not exist"
        );
    }
    // The code map names a crate's files by their name within the crate's section: each `.rs` file
    // of pkm-mcp, stratum-app and pkm-index must be mentioned (as `name.rs` or its folder `name/`).
    for src in [
        "crates/pkm-mcp/src",
        "src-tauri/src",
        "crates/pkm-index/src",
        "crates/pkm-markdown/src",
    ] {
        for entry in std::fs::read_dir(root.join(src)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let plain = ["lib.rs", "main.rs", "error.rs", "mod.rs"];
            if plain.contains(&name.as_str())
                || name.ends_with(".rs") && map.contains(&format!("`{name}`"))
            {
                continue;
            }
            let folder = format!("`{}/`", name.trim_end_matches(".rs"));
            assert!(
                map.contains(&folder) || map.contains(&format!("`{name}`")),
                "{src}/{name} is not in ARCHITECTURE.md's code map"
            );
        }
    }
}

/// Wire words stay in pkm-mcp: no string in the code of the crates below it names a tool (a hint
/// names an operation as `{save_page}`, and `errors.rs` words it; comments may name tools).
#[test]
fn no_crate_below_the_server_names_a_tool_in_its_strings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for src in [
        "crates/pkm-core/src",
        "crates/pkm-markdown/src",
        "crates/pkm-block/src",
        "crates/pkm-index/src",
        "src-tauri/src",
    ] {
        rust_files(&root.join(src), &mut files);
    }
    let tools: Vec<&str> = pkm_mcp::tools::TOOLS.iter().map(|t| t.name).collect();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests at the end of a file may speak of tools; the code above them may not.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            let quoted = line.split('"').skip(1).step_by(2);
            for s in quoted {
                assert!(
                    !tools.iter().any(|t| s.contains(t)),
                    "{}:{}: {s:?} names a tool; name the operation ({{save_page}}, …) instead",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}

/// The dependency line of ARCHITECTURE.md (`a ← b / c ← d`: each layer builds on the ones
/// before it) is what `cargo metadata` says: every workspace crate stands in it once, each uses
/// only workspace crates of earlier layers, and each above the first uses one of the layer right
/// before it (so no crate stands higher than it must).
#[test]
fn the_architecture_dependency_line_is_what_cargo_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let line = map
        .lines()
        .find(|l| l.starts_with("`pkm-core ←"))
        .expect("ARCHITECTURE.md has a line `pkm-core ← …`");
    let layers: Vec<Vec<String>> = line
        .trim_end_matches('.')
        .trim_matches('`')
        .split('←')
        .map(|layer| {
            layer
                .split('/')
                .map(|c| c.split('(').next().unwrap_or_default().trim().to_owned())
                .collect()
        })
        .collect();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let members: Vec<(String, Vec<String>)> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut deps: Vec<String> = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                // Path dependencies used by the code (not by its tests only).
                .filter(|d| d["path"].is_string() && d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            deps.sort();
            deps.dedup();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect();
    let layer_of = |name: &str| layers.iter().position(|l| l.iter().any(|c| c == name));
    let mut named: Vec<&String> = layers.iter().flatten().collect();
    named.sort();
    let mut crates: Vec<&String> = members.iter().map(|(n, _)| n).collect();
    crates.sort();
    assert_eq!(
        named, crates,
        "ARCHITECTURE.md's dependency line names each workspace crate once"
    );
    for (name, deps) in &members {
        let at = layer_of(name).unwrap();
        for d in deps {
            let dep_at = layer_of(d).unwrap_or(usize::MAX);
            assert!(
                dep_at < at,
                "{name} uses {d}, which the dependency line does not put below it"
            );
        }
        assert!(
            at == 0 || deps.iter().any(|d| layer_of(d) == Some(at - 1)),
            "{name} uses no crate of the layer right below it ({deps:?}): the line puts it too high"
        );
    }
}

/// Comments and docs cite only what a clone of the repository holds: no file names the design
/// documents kept outside it (what the code relies on of them is docs/adr/0013).
#[test]
fn no_file_points_outside_the_repository() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name();
            let skip = [
                "target",
                ".git",
                "node_modules",
                ".venv",
                "__pycache__",
                "artifacts",
                "corpus",
            ];
            if skip.iter().any(|s| name == *s) {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    walk(&root, &mut files);
    // Spelled in two pieces, so this file does not name them itself.
    let outside = [concat!("SPEC-", "operations"), concat!("../", "shared")];
    let mut found = Vec::new();
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for word in outside {
            if text.contains(word) {
                found.push(format!("{} names {word}", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// No file of a crate uses (`crate::…`, `super::…`) a file that uses it back, directly or through
/// others: a name two files need lives in the lower one.
#[test]
fn no_file_uses_a_file_that_uses_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut crates = vec!["src-tauri".to_owned()];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        crates.push(format!("crates/{name}"));
    }
    let mut found = Vec::new();
    for krate in &crates {
        let src = root.join(krate).join("src");
        if !src.is_dir() {
            continue;
        }
        for circle in circles(&src) {
            found.push(format!("{krate}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(
        found.is_empty(),
        "files that use each other:\n{}",
        found.join("\n")
    );
}

/// The sets of files of one crate (module paths, `a/b` for `src/a/b.rs`) that use each other,
/// each sorted, found from their `crate::` and `super::` paths outside `#[cfg(test)]` modules.
fn circles(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let module = |path: &Path| -> Vec<String> {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut segs: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            segs.last().map(String::as_str),
            Some("lib" | "main" | "mod")
        ) {
            segs.pop();
        }
        segs
    };
    let modules: Vec<Vec<String>> = files.iter().map(|f| module(f)).collect();
    let mut uses: Vec<Vec<usize>> = Vec::new();
    for (file, me) in files.iter().zip(&modules) {
        let text = std::fs::read_to_string(file).unwrap();
        let code = text.split("#[cfg(test)]\nmod ").next().unwrap_or_default();
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let mut targets = Vec::new();
        for path in paths(&code) {
            let (head, rest) = path.split_first().unwrap();
            let mut full: Vec<String> = match head.as_str() {
                "crate" => Vec::new(),
                // `super` of `a/b.rs` and of `a/b/mod.rs` alike is `a`.
                _ => me[..me.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = rest;
            while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
                full.pop();
                rest = tail;
            }
            full.extend(rest.iter().cloned());
            // The longest prefix that is a file of the crate.
            if let Some(i) = (1..=full.len())
                .rev()
                .find_map(|n| modules.iter().position(|m| *m == full[..n]))
                .filter(|&i| modules[i] != *me)
            {
                targets.push(i);
            }
        }
        targets.sort_unstable();
        targets.dedup();
        uses.push(targets);
    }
    // Two files are in one circle when each reaches the other.
    let reach = |from: usize| -> Vec<bool> {
        let mut seen = vec![false; uses.len()];
        let mut stack = uses[from].clone();
        while let Some(n) = stack.pop() {
            if !seen[n] {
                seen[n] = true;
                stack.extend(&uses[n]);
            }
        }
        seen
    };
    let reaches: Vec<Vec<bool>> = (0..uses.len()).map(reach).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (a, from_a) in reaches.iter().enumerate() {
        let mut circle: Vec<String> = (0..uses.len())
            .filter(|&b| b == a || (from_a[b] && reaches[b][a]))
            .map(|b| modules[b].join("/"))
            .collect();
        circle.sort();
        if circle.len() > 1 && !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

/// Every `crate::…` and `super::…` path of `code`, as its segments; `a::{b, c::d}` gives
/// `a::b` and `a::c`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    for head in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(rel) = code[from..].find(head) {
            let at = from + rel;
            from = at + head.len();
            if at > 0 && ident(bytes[at - 1]) {
                continue;
            }
            let mut segs = vec![head.trim_end_matches(':').to_owned()];
            let mut i = from;
            loop {
                let start = i;
                while i < bytes.len() && ident(bytes[i]) {
                    i += 1;
                }
                if i > start {
                    segs.push(code[start..i].to_owned());
                }
                if code[i..].starts_with("::") && i > start {
                    i += 2;
                    continue;
                }
                break;
            }
            if code[i..].starts_with('{') {
                let end = code[i..].find('}').map_or(code.len(), |e| i + e);
                for item in code[i + 1..end].split(',') {
                    let first: String = item
                        .trim()
                        .trim_start_matches('{')
                        .bytes()
                        .take_while(|&b| ident(b))
                        .map(char::from)
                        .collect();
                    if !first.is_empty() && first != "self" {
                        let mut p = segs.clone();
                        p.push(first);
                        out.push(p);
                    }
                }
            }
            out.push(segs);
        }
    }
    out
}

/// Every `.rs` file below `dir`, into `out`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
