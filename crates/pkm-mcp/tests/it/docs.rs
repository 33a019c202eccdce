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
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for src in [
        "crates/pkm-core/src",
        "crates/pkm-markdown/src",
        "crates/pkm-block/src",
        "crates/pkm-index/src",
        "src-tauri/src",
    ] {
        walk(&root.join(src), &mut files);
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
