//! Tool-argument decoding: any JSON as the arguments of any tool is either accepted or refused
//! with a contract error; never a panic, never an Internal or External error. The first byte picks
//! the tool. Read-only tools run for real over a copy of the example vault; tools that write are
//! only validated, so the fixture stays the same from one input to the next.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use pkm_core::Vault;
use pkm_mcp::StratumServer;
use pkm_mcp::errors::Kind;
use pkm_mcp::protocol::Protocol;
use pkm_mcp::server::Caller;
use pkm_mcp::tools::TOOLS;
use serde_json::{Value, json};
use stratum_app::scan::{self, ScanMode};
use stratum_app::App;

struct Fixture {
    _dir: tempfile::TempDir,
    server: StratumServer,
    runtime: tokio::runtime::Runtime,
}

#[path = "../../tests/support/copy_dir.rs"]
mod copy_dir;
use copy_dir::copy_dir;

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("vault");
        copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/vault"), &root);
        let app: Arc<App> =
            App::open(Vault::open(&root).expect("vault"), pkm_mcp::server::app_config()).expect("app");
        scan::scan(&app, ScanMode::Incremental).expect("scan");
        app.mark_ready();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        Fixture { _dir: dir, server: StratumServer::new(app), runtime }
    })
}

/// Whether `args` holds, under an argument the tool's schema types `integer`, a number that is not
/// a 64-bit integer (past u64, or written with a fraction or exponent): always InvalidArgs.
fn has_unrepresentable_integer(tool: &str, args: &Value) -> bool {
    let Some(schema) = pkm_mcp::schema::input_schema(tool) else {
        return false;
    };
    let (Some(props), Some(fields)) = (schema["properties"].as_object(), args.as_object()) else {
        return false;
    };
    fields.iter().any(|(k, v)| {
        props.get(k).is_some_and(|p| p["type"] == "integer")
            && v.is_number()
            && v.as_u64().is_none()
            && v.as_i64().is_none()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(args) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let tool = &TOOLS[usize::from(pick) % TOOLS.len()];
    let unrepresentable = has_unrepresentable_integer(tool.name, &args);
    if !tool.read_only {
        let r = pkm_mcp::schema::validate(tool.name, &args);
        if unrepresentable {
            assert!(matches!(&r, Err(e) if e.kind == Kind::InvalidArgs), "{}({args})", tool.name);
        }
        return;
    }
    let f = fixture();
    let params = json!({"name": tool.name, "arguments": args});
    let result = f.runtime.block_on(f.server.call_tool(&params, &Caller::local(Protocol::V2025_06_18)));
    if unrepresentable {
        assert!(
            matches!(&result, Err(e) if e.kind == Kind::InvalidArgs),
            "{}({params}) accepted an integer it cannot represent",
            tool.name
        );
    }
    if let Err(e) = result {
        assert!(
            !matches!(e.kind, Kind::Internal | Kind::External),
            "{}({params}) -> {:?}: {}",
            tool.name,
            e.kind,
            e.message
        );
    }
});
