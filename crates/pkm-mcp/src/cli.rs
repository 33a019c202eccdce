//! The command line (ADR-0013 "Command line"). Every flag has an env twin
//! `STRATUM_MCP_<FLAG>`; the `///` doc on each field is its only description (it feeds `--help`).
//! Bad flags, env values or vault paths exit 2 with one line on stderr.

use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pkm_core::Vault;
use stratum_app::{AppConfig, WatchMode};

use crate::host::{Host, HostOptions};
use crate::http::{
    self, Auth, Fleet, HttpConfig, HttpState, MemoryRateStore, OnFailure, RateLimits,
};
use crate::oauth::OAuthVerifier;
use crate::scope::{self, Scope};
use crate::server::StratumServer;
use crate::tokens::{TokenStore, TokenVerifier};
use crate::wire::Request;

/// MCP server for a markdown vault: read, write, index, search, link and tag notes.
#[derive(Debug, Parser)]
#[command(
    name = "stratum-mcp",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// How the leading process notices edits made by other programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Watch {
    /// The OS's file events; polling when they are unavailable or the OS's watch limit is reached.
    Auto,
    /// Compare the vault's files every --poll-interval (network shares, some containers).
    Poll,
    /// Not at all: external edits reach the index on kb_reindex or at the next start.
    Off,
}

/// What an instance does while its Redis is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedisFail {
    /// Serve on with this instance's own rate-limit buckets and sessions, and log a warning.
    Open,
    /// Answer 503 until Redis is back.
    Closed,
}

impl From<RedisFail> for OnFailure {
    fn from(f: RedisFail) -> OnFailure {
        match f {
            RedisFail::Open => OnFailure::Open,
            RedisFail::Closed => OnFailure::Closed,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Serve MCP on stdin/stdout (the default when neither --stdio nor --http is given).
    #[arg(long, env = "STRATUM_MCP_STDIO", conflicts_with = "http")]
    pub stdio: bool,
    /// Serve MCP over Streamable HTTP at <base>/mcp, with /health beside it.
    #[arg(long, env = "STRATUM_MCP_HTTP")]
    pub http: bool,
    /// The vault: a folder of markdown notes (.pkm/ is created inside it on first start). With
    /// --http, NAME=PATH (repeatable) serves each vault at <base>/NAME/mcp.
    #[arg(long, env = "STRATUM_MCP_VAULT", value_name = "[NAME=]PATH")]
    pub vault: Vec<String>,
    /// With --http, serve each sub-folder of DIR as a vault named after it, at <base>/NAME/mcp.
    #[arg(long, env = "STRATUM_MCP_VAULTS", value_name = "DIR")]
    pub vaults: Option<PathBuf>,
    /// Address to listen on with --http; port 0 picks a free port.
    #[arg(
        long,
        env = "STRATUM_MCP_BIND",
        default_value = "127.0.0.1:8787",
        value_name = "ADDR:PORT"
    )]
    pub bind: std::net::SocketAddr,
    /// Path prefix for the HTTP endpoints, e.g. /kb serves /kb/mcp and /kb/health.
    #[arg(
        long,
        env = "STRATUM_MCP_BASE",
        default_value = "",
        value_name = "/prefix"
    )]
    pub base: String,
    /// Token store file (default <vault>/.pkm/mcp-tokens.json).
    #[arg(long, env = "STRATUM_MCP_TOKEN_STORE", value_name = "FILE")]
    pub token_store: Option<PathBuf>,
    /// Serve HTTP without authentication; only allowed on a loopback bind address.
    #[arg(long, env = "STRATUM_MCP_NO_AUTH")]
    pub no_auth: bool,
    /// OAuth 2.1 authorization server whose JWT access tokens --http accepts beside personal
    /// access tokens (its RFC 8414 / OpenID discovery base, e.g. https://id.example.com/realms/kb);
    /// needs --oauth-audience.
    #[arg(long, env = "STRATUM_MCP_OAUTH_ISSUER", value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// This server's public URL as OAuth resource (RFC 8707), e.g. https://kb.example.com/mcp:
    /// access tokens must carry it in aud; needs --oauth-issuer.
    #[arg(long, env = "STRATUM_MCP_OAUTH_AUDIENCE", value_name = "URI")]
    pub oauth_audience: Option<String>,
    /// TLS certificate chain (PEM) to serve HTTPS natively; needs --tls-key.
    #[arg(
        long,
        env = "STRATUM_MCP_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); needs --tls-cert.
    #[arg(
        long,
        env = "STRATUM_MCP_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Declare that a reverse proxy terminates TLS in front of a non-loopback bind.
    #[arg(long, env = "STRATUM_MCP_BEHIND_TLS_PROXY")]
    pub behind_tls_proxy: bool,
    /// Another Host header value to accept (repeatable); loopback names are always accepted.
    #[arg(
        long,
        env = "STRATUM_MCP_ALLOWED_HOST",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub allowed_host: Vec<String>,
    /// A browser Origin to accept (repeatable); requests with any other Origin get 403.
    #[arg(
        long,
        env = "STRATUM_MCP_ALLOWED_ORIGIN",
        value_name = "URL",
        value_delimiter = ','
    )]
    pub allowed_origin: Vec<String>,
    /// Log format on stderr.
    #[arg(
        long,
        env = "STRATUM_MCP_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// With --http, keep rate-limit buckets, sessions and token revocations in this Redis, shared
    /// by every instance that uses it (a fleet behind a load balancer).
    #[arg(long, env = "STRATUM_MCP_REDIS_URL", value_name = "redis://HOST:PORT")]
    pub redis_url: Option<String>,
    /// What --redis-url instances do while Redis is unreachable: open serves on with this
    /// instance's own buckets and sessions (logged), closed answers 503.
    #[arg(
        long,
        env = "STRATUM_MCP_REDIS_FAIL",
        value_enum,
        default_value = "open"
    )]
    pub redis_fail: RedisFail,
    /// Serve Prometheus metrics on this separate address (off by default).
    #[arg(long, env = "STRATUM_MCP_METRICS_BIND", value_name = "ADDR:PORT")]
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// Seconds a write waits for a running rebuild before answering VaultLocked.
    #[arg(
        long,
        env = "STRATUM_MCP_WRITE_BUDGET",
        default_value_t = 10,
        value_name = "SECONDS"
    )]
    pub write_budget: u64,
    /// How edits made by other programs (editors, git, sync tools) reach the index.
    #[arg(long, env = "STRATUM_MCP_WATCH", value_enum, default_value = "auto")]
    pub watch: Watch,
    /// Seconds between two looks at the vault with --watch poll (and when auto falls back to it).
    #[arg(
        long,
        env = "STRATUM_MCP_POLL_INTERVAL",
        default_value_t = 2.0,
        value_name = "SECONDS",
        value_parser = poll_interval
    )]
    pub poll_interval: f64,
}

fn poll_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.05..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0.05 to 3600"
        )),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build or refresh the index offline (a progress bar on a terminal).
    Index {
        /// The vault to index.
        #[arg(long, env = "STRATUM_MCP_VAULT", value_name = "PATH")]
        vault: PathBuf,
        /// Re-read every note and rebuild the index from scratch.
        #[arg(long, env = "STRATUM_MCP_REBUILD")]
        rebuild: bool,
    },
    /// Manage personal access tokens for --http.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Clone, Args)]
pub struct TokenStoreArgs {
    /// The vault whose token store to use.
    #[arg(long, env = "STRATUM_MCP_VAULT", value_name = "PATH")]
    pub vault: PathBuf,
    /// Token store file (default <vault>/.pkm/mcp-tokens.json).
    #[arg(long, env = "STRATUM_MCP_TOKEN_STORE", value_name = "FILE")]
    pub token_store: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print it (the only time it is shown) as the one line on stdout.
    Create {
        #[command(flatten)]
        store: TokenStoreArgs,
        /// A name for the token, used to list and revoke it.
        #[arg(long)]
        name: String,
        /// Comma-separated scopes (default: all but kb:admin).
        #[arg(long, value_name = "kb:read,kb:search,...")]
        scopes: Option<String>,
        /// Comma-separated names of the vaults the token may use on a server of several vaults
        /// (default: all of them).
        #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
        vault_access: Option<Vec<String>>,
    },
    /// List tokens: name, scopes, creation time (never the token).
    List {
        #[command(flatten)]
        store: TokenStoreArgs,
    },
    /// Revoke a token by name; a running server refuses it from the next request on.
    Revoke {
        #[command(flatten)]
        store: TokenStoreArgs,
        /// The token's name.
        name: String,
        /// Also tell this fleet's Redis, so that every instance refuses the token within a
        /// second even where none runs on this copy of the store.
        #[arg(long, env = "STRATUM_MCP_REDIS_URL", value_name = "redis://HOST:PORT")]
        redis_url: Option<String>,
    },
}

/// A failure that ends the process: exit code and one line.
pub struct Exit(pub i32, pub String);

fn usage(msg: impl Into<String>) -> Exit {
    Exit(2, msg.into())
}

/// Opens the vault or explains in one line why not.
pub fn open_vault(path: &Path) -> Result<Vault, Exit> {
    Vault::open(path).map_err(|e| usage(e.to_string()))
}

pub fn token_store(vault: &Vault, explicit: Option<&Path>) -> TokenStore {
    TokenStore::new(
        explicit
            .map(Path::to_path_buf)
            .unwrap_or_else(|| vault.tokens_path()),
    )
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=error"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    // Clients get warnings and milestones whatever RUST_LOG says about the log file.
    let to_clients = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::WARN)
        .with_target(stratum_app::MILESTONE, tracing::Level::INFO);
    let _ = tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(crate::notify::layer().with_filter(to_clients))
        .try_init();
}

fn run_token(cmd: TokenCommand) -> Result<(), Exit> {
    let store_of = |a: &TokenStoreArgs| -> Result<TokenStore, Exit> {
        Ok(token_store(
            &open_vault(&a.vault)?,
            a.token_store.as_deref(),
        ))
    };
    match cmd {
        TokenCommand::Create {
            store,
            name,
            scopes,
            vault_access,
        } => {
            let scopes = match scopes {
                Some(s) => scope::parse_list(&s).map_err(usage)?,
                None => Scope::PERSONAL.to_vec(),
            };
            if let Some(bad) = vault_access.iter().flatten().find(|v| !is_vault_name(v)) {
                return Err(usage(format!(
                    "--vault-access: {bad:?} is not a vault name ({VAULT_NAME_RULE})"
                )));
            }
            let token = store_of(&store)?
                .create_with_access(&name, &scopes, vault_access.as_deref())
                .map_err(|e| usage(e.to_string()))?;
            println!("{token}");
        }
        TokenCommand::List { store } => {
            for t in store_of(&store)?.list().map_err(|e| usage(e.to_string()))? {
                println!("{}\t{}\t{}", t.name, t.scopes.join(","), t.created_at);
            }
        }
        TokenCommand::Revoke {
            store,
            name,
            redis_url,
        } => {
            let hash = store_of(&store)?
                .revoke(&name)
                .map_err(|e| usage(e.to_string()))?;
            eprintln!("revoked {name}");
            if let Some(url) = redis_url {
                Fleet::publish_revoked(&url, &hash).map_err(|e| {
                    Exit(
                        1,
                        format!("revoked {name} in the store, but could not tell the fleet: {e}"),
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// `stratum-mcp index`: the scan runs on the vault's leading process, which is this one unless a
/// server already leads the vault; either way the progress shows here.
fn run_index(vault: &Path, rebuild: bool) -> Result<(), Exit> {
    let vault = open_vault(vault)?;
    let host = Host::open(
        vault,
        HostOptions {
            config: crate::server::app_config(),
            watch: None,
            hooks: Vec::new(),
        },
    )
    .map_err(|e| Exit(1, format!("cannot open the vault's store: {e}")))?;
    if !host.is_leader() {
        eprintln!("a stratum-mcp server leads this vault; it runs the index update");
    }
    let started = std::time::Instant::now();
    let request = Request::Scan { rebuild };
    let report = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} indexing [{bar:40}] {pos}/{len} notes ({per_sec}, eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let shown = bar.clone();
        let r = host.call_with_progress(request, &move |done, total| {
            shown.set_length(total as u64);
            shown.set_position(done as u64);
        });
        bar.finish_and_clear();
        r
    } else {
        host.call(request)
    }
    .map_err(|e| Exit(1, e.to_string()))?;
    let count = |k: &str| report[k].as_u64().unwrap_or(0);
    let skipped = report["skipped"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    eprintln!(
        "indexed {} notes in {:.2}s: {} updated, {} removed, {} skipped",
        count("scanned"),
        started.elapsed().as_secs_f64(),
        count("updated"),
        count("removed"),
        skipped.len()
    );
    for s in skipped {
        eprintln!(
            "skipped {}: {}",
            s[0].as_str().unwrap_or_default(),
            s[1].as_str().unwrap_or_default()
        );
    }
    Ok(())
}

/// A vault to serve: its name under `<base>/`, none for the one vault of `--vault PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultSpec {
    pub name: Option<String>,
    pub path: PathBuf,
}

const VAULT_NAME_RULE: &str =
    "1-64 letters, digits, '-', '_' and '.', not starting with '.', not mcp or health";

/// Whether `name` can be a vault's path segment: it must not be one of the server's own.
pub fn is_vault_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !matches!(name, "mcp" | "health")
}

/// The vaults a serving command names: `--vault [NAME=]PATH` (repeatable) and the sub-folders of
/// `--vaults DIR`. One unnamed vault, or any number of named ones.
pub fn vault_specs(args: &ServeArgs) -> Result<Vec<VaultSpec>, Exit> {
    let mut specs: Vec<VaultSpec> = args
        .vault
        .iter()
        .map(|v| match v.split_once('=') {
            Some((name, path)) if is_vault_name(name) && !path.is_empty() => VaultSpec {
                name: Some(name.to_owned()),
                path: PathBuf::from(path),
            },
            _ => VaultSpec {
                name: None,
                path: PathBuf::from(v),
            },
        })
        .collect();
    if let Some(dir) = &args.vaults {
        let shown = dir.display();
        let entries = std::fs::read_dir(dir)
            .map_err(|e| usage(format!("--vaults {shown}: cannot read the folder: {e}")))?;
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !entry.path().is_dir() {
                continue;
            }
            if !is_vault_name(&name) {
                return Err(usage(format!(
                    "--vaults {shown}: the folder {name:?} cannot be a vault name ({VAULT_NAME_RULE})"
                )));
            }
            found.push(VaultSpec {
                path: entry.path(),
                name: Some(name),
            });
        }
        if found.is_empty() {
            return Err(usage(format!(
                "--vaults {shown} has no sub-folder to serve"
            )));
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        specs.extend(found);
    }
    match specs.as_slice() {
        [] => Err(usage(
            "--vault PATH is required (or set STRATUM_MCP_VAULT; --vaults DIR with --http)",
        )),
        [_] => Ok(specs),
        _ if specs.iter().any(|s| s.name.is_none()) => {
            Err(usage("several vaults need a name each: --vault NAME=PATH"))
        }
        _ => {
            let mut names: Vec<&str> = specs.iter().filter_map(|s| s.name.as_deref()).collect();
            names.sort_unstable();
            if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
                return Err(usage(format!("two vaults are named {}", w[0])));
            }
            // One folder under two names would be two leaders' worth of one vault.
            let mut folders: Vec<(PathBuf, &str)> = specs
                .iter()
                .filter_map(|s| Some((s.path.canonicalize().ok()?, s.name.as_deref()?)))
                .collect();
            folders.sort();
            match folders.windows(2).find(|w| w[0].0 == w[1].0) {
                Some(w) => Err(usage(format!(
                    "the vaults {} and {} are the same folder",
                    w[0].1, w[1].1
                ))),
                None => Ok(specs),
            }
        }
    }
}

/// Joins a vault of a serving command: leads it (first scan, watcher, local socket) or follows
/// the process that does. Each vault has its own writer, watcher and `.pkm/`.
fn open_host_for_serve(args: &ServeArgs, vault_path: &Path) -> Result<Arc<Host>, Exit> {
    let vault = open_vault(vault_path)?;
    let poll = std::time::Duration::from_secs_f64(args.poll_interval);
    let options = HostOptions {
        config: AppConfig {
            write_budget: std::time::Duration::from_secs(args.write_budget),
            ..crate::server::app_config()
        },
        watch: Some(match args.watch {
            Watch::Auto => WatchMode::Auto { poll },
            Watch::Poll => WatchMode::Poll(poll),
            Watch::Off => WatchMode::Off,
        }),
        hooks: vec![Arc::new(crate::notify::TracingHooks)],
    };
    Host::open(vault, options).map_err(|e| Exit(1, format!("cannot open the vault's store: {e}")))
}

fn new_runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Exit(1, format!("cannot start the runtime: {e}")))
}

fn run_serve(args: ServeArgs) -> Result<(), Exit> {
    init_logging(args.log_format);
    if args.http {
        return run_http(args);
    }
    let vault = match (vault_specs(&args)?.as_slice(), &args.vaults) {
        ([one], None) => one.path.clone(),
        _ => {
            return Err(usage(
                "stdio serves one vault: give one --vault PATH (an MCP client starts one server per vault)",
            ));
        }
    };
    // Subscribed before the warm-up scan starts, so its milestones reach the client too.
    let client_log = crate::notify::subscribe();
    let host = open_host_for_serve(&args, &vault)?;
    new_runtime()?
        .block_on(crate::stdio::serve(
            StratumServer::with_host(host),
            client_log,
        ))
        .map_err(|e| Exit(1, format!("stdio transport: {e}")))
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

/// The flag rules of ADR-0013 "HTTP security": `--no-auth` only on loopback; a non-loopback
/// bind needs native TLS or `--behind-tls-proxy`; a well-formed `--base`. The error is one line.
pub fn check_flags(args: &ServeArgs) -> Result<(), String> {
    let loopback = is_loopback(args.bind.ip());
    if args.no_auth && !loopback {
        return Err(format!(
            "--no-auth is only allowed with a loopback --bind address (127.0.0.1, ::1), not {}",
            args.bind
        ));
    }
    let tls = args.tls_cert.is_some() && args.tls_key.is_some();
    if !loopback && !tls && !args.behind_tls_proxy {
        return Err(format!(
            "--bind {} is not a loopback address, so it needs TLS: pass --tls-cert FILE --tls-key FILE, \
             or --behind-tls-proxy when a reverse proxy terminates TLS",
            args.bind
        ));
    }
    if args.tls_cert.is_some() != args.tls_key.is_some() {
        return Err("--tls-cert and --tls-key go together".into());
    }
    http::normalize_base(&args.base)?;
    match (&args.oauth_issuer, &args.oauth_audience) {
        (Some(issuer), Some(audience)) => {
            if args.no_auth {
                return Err("--oauth-issuer and --no-auth exclude each other".into());
            }
            crate::oauth::check_flags(issuer, audience)?;
        }
        (None, None) => {}
        _ => return Err("--oauth-issuer and --oauth-audience go together".into()),
    }
    Ok(())
}

/// Host values the server accepts besides the loopback names: `--allowed-host`, plus the bind
/// address itself when it is a concrete IP (a rebinding attack needs a DNS name).
fn allowed_hosts(args: &ServeArgs) -> Vec<String> {
    let mut hosts = args.allowed_host.clone();
    let ip = args.bind.ip();
    if !ip.is_unspecified() {
        hosts.push(match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    hosts
}

/// `stratum-mcp --http`: checks the flags, opens the vault, listens, prints
/// `listening on http(s)://HOST:PORT` on stderr, and serves until SIGTERM/SIGINT.
fn run_http(args: ServeArgs) -> Result<(), Exit> {
    check_flags(&args).map_err(|m| Exit(2, m))?;
    let rate_limits = RateLimits::from_env().map_err(|m| Exit(2, m))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(http::tls::server_config(cert, key).map_err(|m| Exit(2, m))?)
        }
        _ => None,
    };
    let specs = vault_specs(&args)?;
    let named = specs.iter().any(|s| s.name.is_some());
    if named && args.oauth_issuer.is_some() {
        return Err(Exit(
            2,
            "--oauth-issuer serves one vault (its audience is one resource); run one server per vault for OAuth".into(),
        ));
    }
    // One token store for every vault: the vault's own, or with several `--token-store`, or
    // the one of the `--vaults` folder (`token create --vault DIR`).
    let auth = if args.no_auth {
        Auth::Disabled
    } else {
        let store = match (&args.token_store, named, &args.vaults) {
            (Some(file), _, _) => TokenStore::new(file),
            (None, false, _) => token_store(&open_vault(&specs[0].path)?, None),
            (None, true, Some(dir)) => token_store(&open_vault(dir)?, None),
            (None, true, None) => {
                return Err(Exit(
                    2,
                    "named vaults share one token store: pass --token-store FILE".into(),
                ));
            }
        };
        Auth::Tokens(Arc::new(TokenVerifier::new(store)))
    };
    let runtime = new_runtime()?;
    let fleet = match &args.redis_url {
        Some(url) => {
            let _entered = runtime.enter();
            let fleet = Arc::new(Fleet::new(url, args.redis_fail.into()).map_err(|m| Exit(2, m))?);
            let verifier = match &auth {
                Auth::Tokens(v) => Some(Arc::clone(v)),
                Auth::Disabled => None,
            };
            runtime.spawn(Arc::clone(&fleet).run(verifier));
            Some(fleet)
        }
        None => None,
    };
    let mut vaults = Vec::with_capacity(specs.len());
    for spec in specs {
        let host = open_host_for_serve(&args, &spec.path)?;
        vaults.push((spec.name, StratumServer::with_host(host)));
    }
    let oauth = match (&args.oauth_issuer, &args.oauth_audience) {
        (Some(issuer), Some(audience)) => Some(Arc::new(
            OAuthVerifier::new(issuer, audience).map_err(|m| Exit(2, m))?,
        )),
        _ => None,
    };
    let config = HttpConfig {
        base: args.base.clone(),
        allowed_hosts: allowed_hosts(&args),
        allowed_origins: args.allowed_origin.clone(),
        rate_limits,
        oauth: oauth.clone(),
        fleet,
    };
    let state = HttpState::serving(vaults, auth, config, Arc::new(MemoryRateStore::new()))
        .map_err(|m| Exit(2, m))?;
    if let Some(oauth) = oauth {
        // The keys are fetched while the server starts listening: a token that comes first waits
        // for this fetch (not another one). An issuer that is down now is logged, and asked again
        // when a token with an unknown key arrives.
        runtime.spawn(async move {
            let _ = oauth.refresh().await;
        });
    }
    runtime
        .block_on(http::serve_until_signal(
            args.bind,
            args.metrics_bind,
            state,
            tls,
        ))
        .map_err(|m| Exit(1, m))
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return 0;
            }
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid command line");
            eprintln!("stratum-mcp: {}", line.trim_start_matches("error: "));
            return 2;
        }
    };
    let result = match cli.command {
        Some(Command::Token { command }) => run_token(command),
        Some(Command::Index { vault, rebuild }) => run_index(&vault, rebuild),
        None => run_serve(cli.serve),
    };
    match result {
        Ok(()) => 0,
        Err(Exit(code, msg)) => {
            eprintln!("stratum-mcp: {msg}");
            code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_detection_covers_mapped_addresses() {
        assert!(is_loopback("127.0.0.1".parse().unwrap()));
        assert!(is_loopback("::1".parse().unwrap()));
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("0.0.0.0".parse().unwrap()));
        assert!(!is_loopback("192.168.1.5".parse().unwrap()));
    }
}
