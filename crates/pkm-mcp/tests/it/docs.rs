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
