//! Every command the README and the guides show is run here, as a reader would run it, against a
//! temp copy of the example vault: `stratum-mcp` command lines (however the docs spell the binary),
//! the `command` + `args` of each client configuration snippet, and the server command inside
//! `claude mcp add`. Stdio servers must answer `kb_search`, HTTP servers `/health`, the others
//! exit 0. `cargo` and `bash` (script) commands must be ones `.ci/run` runs verbatim. The only commands not run are
//! `docker` ones (no Docker daemon in the test environment); the test pins that list, so a new
//! command that nothing runs fails it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers fail loudly by design

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const DOCS: &[&str] = &[
    "README.md",
    "docs/guides/getting-started.md",
    "docs/guides/clients.md",
    "docs/guides/operating.md",
    "docs/guides/troubleshooting.md",
    "docs/guides/deployment.md",
];

/// Spellings of the binary in the docs.
const BINARY: &[&str] = &[
    "stratum-mcp",
    "target/release/stratum-mcp",
    "/abs/path/target/release/stratum-mcp",
    "/path/to/stratum-mcp/target/release/stratum-mcp",
];

/// Spellings of "your vault" in the docs; each becomes the temp vault.
const VAULTS: &[&str] = &[
    "examples/vault",
    "V",
    "/srv/vault",
    "/abs/path/to/vault",
    "/path/to/your/vault",
    "/vault",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(file, command line)` for every command in the docs, in document order.
fn doc_commands() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for file in DOCS {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let mut fence: Option<(String, String)> = None; // (language, body)
        for line in text.lines() {
            let trimmed = line.trim_start();
            match (&mut fence, trimmed.strip_prefix("```")) {
                (None, Some(lang)) => fence = Some((lang.trim().to_owned(), String::new())),
                (Some((lang, body)), Some(_)) => {
                    match lang.as_str() {
                        "sh" => out.extend(shell_lines(body).map(|l| ((*file).to_owned(), l))),
                        "json" => {
                            let v: Value = serde_json::from_str(body).unwrap_or_else(|e| {
                                panic!("{file}: a json block does not parse: {e}")
                            });
                            config_commands(&v, &mut |c| out.push(((*file).to_owned(), c)));
                        }
                        _ => {}
                    }
                    fence = None;
                }
                (Some((_, body)), None) => {
                    body.push_str(trimmed);
                    body.push('\n');
                }
                (None, None) => {}
            }
        }
    }
    out
}

fn shell_lines(body: &str) -> impl Iterator<Item = String> + '_ {
    body.lines()
        .map(|l| l.split(" # ").next().unwrap_or(l).trim().to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// The command line of every `{"command": ..., "args": [...]}` in a client configuration.
fn config_commands(v: &Value, out: &mut dyn FnMut(String)) {
    match v {
        Value::Object(map) => {
            if let (Some(Value::String(c)), Some(Value::Array(args))) =
                (map.get("command"), map.get("args"))
            {
                let args: Vec<&str> = args.iter().map(|a| a.as_str().unwrap()).collect();
                out(format!("{c} {}", args.join(" ")));
            }
            map.values().for_each(|x| config_commands(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| config_commands(x, out)),
        _ => {}
    }
}

/// GET `path` on `port`; the status code, or `None` while nothing listens.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).ok()?;
    reply.split(' ').nth(1)?.parse().ok()
}

/// The Redis the guides point at, and the URL of the one this test started instead.
const DOCS_REDIS: &str = "redis://127.0.0.1:6379";
static REDIS_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The temp path a docs spelling stands for (`redis://127.0.0.1:6379`: the test's Redis): a vault (`VAULTS`), the folder of vaults
/// `/srv/vaults` (and its `work` and `home`, copies of the example vault), the token store
/// `/srv/tokens.json`; `NAME=PATH` keeps its name.
fn local_spelling(a: &str, vault: &Path) -> String {
    if !a.starts_with('-')
        && let Some((name, path)) = a.split_once('=')
    {
        return format!("{name}={}", local_spelling(path, vault));
    }
    if VAULTS.contains(&a) {
        return vault.display().to_string();
    }
    let here = vault.parent().unwrap();
    if let Some(rest) = a.strip_prefix("/srv/vaults") {
        let vaults = here.join("vaults");
        for name in ["work", "home"] {
            if !vaults.join(name).exists() {
                common::copy_dir(&common::example_vault(), &vaults.join(name));
            }
        }
        return format!("{}{rest}", vaults.display());
    }
    if a == DOCS_REDIS {
        return REDIS_URL
            .get()
            .expect("the docs test starts a Redis first")
            .clone();
    }
    if a == "/srv/tokens.json" {
        return here.join("tokens.json").display().to_string();
    }
    a.to_owned()
}

/// Runs one `stratum-mcp` command line (program already stripped) on `vault`.
fn run_server_command(what: &str, args: &[String], vault: &Path) {
    let mut args: Vec<String> = args.iter().map(|a| local_spelling(a, vault)).collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stratum-mcp"));
    cmd.env("RUST_LOG", "warn");
    if args.iter().any(|a| a == "--stdio") {
        cmd.args(&args);
        let mut server = common::stdio::Server::start_command(cmd);
        let found = server.ok("kb_search", json!({"query": "compaction"}));
        assert!(
            found["results"].as_array().is_some_and(|r| !r.is_empty()),
            "{what}: kb_search found nothing: {found}"
        );
        server.kill9();
    } else if args.iter().any(|a| a == "--http") {
        let port = common::free_port();
        match args.iter().position(|a| a == "--bind") {
            Some(i) => args[i + 1] = format!("127.0.0.1:{port}"),
            None => {
                cmd.env("STRATUM_MCP_BIND", format!("127.0.0.1:{port}"));
            }
        }
        let base = args
            .iter()
            .position(|a| a == "--base")
            .map_or(String::new(), |i| args[i + 1].clone());
        let mut child = cmd.args(&args).stdin(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = http_status(port, &format!("{base}/health")) {
                break Some(s);
            }
            if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(status, Some(200), "{what}: /health did not answer 200");
    } else {
        let out = cmd.args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{what}: exit {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_command_in_the_readme_and_guides_works() {
    let redis = common::Redis::start();
    REDIS_URL.get_or_init(|| redis.url());
    let dir = common::temp_example_vault();
    let vault = dir.path().join("vault");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let mut not_run = Vec::new();
    let mut windows = Vec::new();
    let commands = doc_commands();
    assert!(
        commands.len() >= 15,
        "the docs parser lost commands: {commands:?}"
    );
    for (file, line) in &commands {
        let what = format!("{file}: `{line}`");
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let first = words[0].as_str();
        if let Some(rest) = line.strip_prefix("cargo run --release -p pkm-mcp -- ") {
            let args: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
            run_server_command(&what, &args, &vault);
        } else if first == "cargo" || first == "bash" {
            assert!(
                ci.contains(line.as_str()),
                "{what}: .ci/run does not run it"
            );
        } else if BINARY.contains(&first) {
            run_server_command(&what, &words[1..], &vault);
        } else if line.starts_with("claude mcp add ") {
            let server = line
                .split(" -- ")
                .nth(1)
                .expect("claude mcp add ... -- <command>");
            let words: Vec<String> = server.split_whitespace().map(str::to_owned).collect();
            assert!(BINARY.contains(&words[0].as_str()), "{what}");
            run_server_command(&what, &words[1..], &vault);
        } else if first == "docker" {
            not_run.push(line.clone());
        } else if first.ends_with("stratum-mcp.exe") {
            windows.push(line.clone());
        } else {
            panic!("{what}: no rule runs this command; add one here");
        }
    }
    // Docker needs a daemon this environment does not have; these lines are checked by hand.
    assert_eq!(
        not_run,
        [
            "docker build -t stratum-mcp .",
            "docker run --rm -v /path/to/vault:/vault stratum-mcp token create --vault /vault --name me",
            "docker run -d -p 8787:8787 -v /path/to/vault:/vault stratum-mcp",
            "docker run --rm -i -v /path/to/vault:/vault stratum-mcp --stdio --vault /vault",
        ],
        "docker commands changed: run them by hand against the Dockerfile, then update this list"
    );
    // A Windows configuration names the Windows binary by a Windows path: the wine smoke suite
    // (scripts/wine-smoke.sh) starts that binary with these arguments, on a vault whose path holds
    // a space; this test runs the Linux binary only. README.md and the clients guide show the same.
    windows.sort();
    windows.dedup();
    assert_eq!(
        windows,
        [
            r"C:\Users\me\stratum-mcp\target\release\stratum-mcp.exe --stdio --vault C:\Users\me\Documents\My Vault"
        ],
        "Windows commands changed: check them under wine (scripts/wine-smoke.sh), then update this list"
    );
    // The container's arguments are still the binary's: run them on a vault of their own.
    let dir = common::temp_example_vault();
    let vault = dir.path().join("vault");
    run_server_command(
        "docker: token create",
        &["token", "create", "--vault", "/vault", "--name", "me"].map(String::from),
        &vault,
    );
    run_server_command(
        "docker: the image's default command",
        &[
            "--http",
            "--bind",
            "0.0.0.0:8787",
            "--behind-tls-proxy",
            "--vault",
            "/vault",
        ]
        .map(String::from),
        &vault,
    );
    run_server_command(
        "docker: stdio",
        &["--stdio", "--vault", "/vault"].map(String::from),
        &vault,
    );
}
