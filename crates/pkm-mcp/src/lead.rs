//! `Host`: one vault as this process serves it, shared with every other `stratum-mcp` on the same
//! folder (ADR-0007).
//!
//! The first process to take the vault's lock (`.pkm/write.lock`) leads: it opens the store and
//! the index, runs the vault's writer and file watcher, and answers the other processes on a local
//! socket (`.pkm/leader.sock`, mode 0600, peers checked to be the same user). Every other process
//! follows: it checks scopes and arguments itself, then forwards each call to the leader, so every
//! process gives the same answers from the same store. A follower waits on the lock in the
//! background and takes the lead when the leader exits or is killed (the kernel drops the lock).
//!
//! The socket speaks one JSON object per line: a request, then (for a scan) progress lines, then one
//! `ok` or `err` line. A request that could not be sent is retried on the next leader; a read
//! whose leader died mid-call is retried too; a write whose leader died mid-call answers an error
//! that says the write may or may not have happened (nothing acknowledged is ever lost).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use pkm_core::{ErrorKind, KbError, KbResult, Vault, VaultPath};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stratum_app::scan::{self, ScanMode};
use stratum_app::watcher::{self, VaultWatcher, WatchMode};
use stratum_app::{App, AppConfig, SaveHooks, VaultLock};

use crate::server::VERSION;
use crate::tools::{self, Args};

/// How long a call waits for a leader (a new one after the old exits) before giving up.
const LEADER_WAIT: Duration = Duration::from_secs(10);
/// The longest line a peer may send or answer (a 1 MiB note, JSON-escaped, and then some).
const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;
/// Idle connections a follower keeps to its leader.
const MAX_IDLE_CONNECTIONS: usize = 8;
/// `sockaddr_un` holds 108 bytes; longer socket paths go to the runtime folder instead.
const MAX_SOCKET_PATH: usize = 100;

/// What one call asks of the vault.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// A `tools/call`, arguments already checked against the tool's schema and the caller's scopes.
    Tool { name: String, args: Args },
    /// Notes in path order (`resources/list`).
    ListPages {
        limit: usize,
        cursor: Option<String>,
    },
    /// A note's raw markdown (`resources/read`).
    ReadRaw { path: String },
    /// The store's counts and freshness (`/health`).
    Info,
    /// An incremental scan or a rebuild (`stratum-mcp index`), with progress.
    Scan { rebuild: bool },
}

impl Request {
    /// Whether running it twice is harmless, so a call lost with its leader may be sent again.
    fn retry_safe(&self) -> bool {
        match self {
            Request::Tool { name, .. } => tools::find(name).is_some_and(|t| t.read_only),
            _ => true,
        }
    }
}

/// One line on the socket, leader to follower.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Progress(usize, usize),
    Ok(Value),
    Err(WireError),
}

/// A follower's request line: the version guards against two different builds sharing a vault.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    version: String,
    #[serde(flatten)]
    request: Request,
}

/// `KbError` as it crosses the socket.
#[derive(Debug, Serialize, Deserialize)]
struct WireError {
    kind: String,
    message: String,
    hint: Option<String>,
    note_path: Option<String>,
    retry_after_seconds: Option<u64>,
}

const KINDS: [ErrorKind; 6] = [
    ErrorKind::InvalidArgs,
    ErrorKind::NotFound,
    ErrorKind::Conflict,
    ErrorKind::VaultLocked,
    ErrorKind::External,
    ErrorKind::Internal,
];

impl From<KbError> for WireError {
    fn from(e: KbError) -> WireError {
        WireError {
            kind: e.kind.as_str().to_owned(),
            message: e.message,
            hint: e.hint,
            note_path: e.note_path,
            retry_after_seconds: e.retry_after_seconds,
        }
    }
}

impl From<WireError> for KbError {
    fn from(w: WireError) -> KbError {
        let kind = KINDS
            .into_iter()
            .find(|k| k.as_str() == w.kind)
            .unwrap_or(ErrorKind::Internal);
        KbError {
            kind,
            message: w.message,
            hint: w.hint,
            note_path: w.note_path,
            retry_after_seconds: w.retry_after_seconds,
        }
    }
}

/// How this process serves its vault.
#[derive(Clone)]
pub struct HostOptions {
    pub config: AppConfig,
    /// The watcher the leader runs; `None` for a leader that does not serve (`index`), which
    /// neither watches nor warms up: the scan it was asked for is its only one.
    pub watch: Option<WatchMode>,
    /// Hooks every save runs on the leading process.
    pub hooks: Vec<Arc<dyn SaveHooks>>,
}

/// What this process is to the vault right now.
#[derive(Clone)]
enum Role {
    Leader(Arc<App>),
    Follower(Arc<Client>),
}

/// One vault as this process serves it: leading or following, switching to leading when the
/// leader goes.
pub struct Host {
    vault: Vault,
    options: HostOptions,
    role: RwLock<Role>,
    /// The leader's watcher and socket, kept for as long as this process leads.
    leading: Mutex<Option<Leading>>,
}

struct Leading {
    _watcher: Option<VaultWatcher>,
}

impl Host {
    /// A host that leads with `app` and shares it with no other process (tests, fuzzing).
    pub fn local(app: Arc<App>) -> Arc<Host> {
        Arc::new(Host {
            vault: app.vault().clone(),
            options: HostOptions {
                config: crate::server::app_config(),
                watch: None,
                hooks: Vec::new(),
            },
            role: RwLock::new(Role::Leader(app)),
            leading: Mutex::new(None),
        })
    }

    /// Joins the vault: leads it if nobody does (then warms up, watches and listens), else follows
    /// the leader and waits in the background to take over.
    pub fn open(vault: Vault, options: HostOptions) -> KbResult<Arc<Host>> {
        let lead = VaultLock::try_acquire(&vault)?;
        let socket = socket_path(&vault);
        let host = Arc::new(Host {
            role: RwLock::new(Role::Follower(Arc::new(Client::new(socket)))),
            vault,
            options,
            leading: Mutex::new(None),
        });
        match lead {
            Some(lead) => host.lead(lead)?,
            None => {
                tracing::info!(
                    leader = VaultLock::holder(&host.vault).unwrap_or(0),
                    "another stratum-mcp process leads this vault; following it"
                );
                host.wait_for_lead()?;
            }
        }
        Ok(host)
    }

    /// Whether this process leads the vault now.
    pub fn is_leader(&self) -> bool {
        matches!(*self.role.read(), Role::Leader(_))
    }

    pub fn vault(&self) -> &Vault {
        &self.vault
    }

    /// Becomes the leader: opens the store and index, starts the first scan and the watcher (when
    /// it serves) and the socket, then answers its own calls locally.
    fn lead(self: &Arc<Self>, lead: VaultLock) -> KbResult<()> {
        let app = App::open_leading(self.vault.clone(), lead, self.options.config.clone())?;
        for h in &self.options.hooks {
            app.add_hooks(Arc::clone(h));
        }
        let watcher = match self.options.watch {
            Some(mode) => {
                app.warm_up();
                watcher::watch_with(&app, mode).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "external edits will reach the index only on kb_reindex");
                    None
                })
            }
            None => None,
        };
        listen(&self.vault, &app)?;
        *self.leading.lock() = Some(Leading { _watcher: watcher });
        *self.role.write() = Role::Leader(app);
        Ok(())
    }

    /// Waits on the vault's lock in the background; takes the lead when it is free.
    fn wait_for_lead(self: &Arc<Self>) -> KbResult<()> {
        let host = Arc::downgrade(self);
        let vault = self.vault.clone();
        std::thread::Builder::new()
            .name("stratum-follower".into())
            .spawn(move || {
                let lead = match VaultLock::acquire(&vault) {
                    Ok(lead) => lead,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot wait for the vault's lead");
                        return;
                    }
                };
                let Some(host) = host.upgrade() else { return };
                match host.lead(lead) {
                    Ok(()) => {
                        tracing::info!("the leading process exited; this one leads the vault now")
                    }
                    Err(e) => tracing::error!(error = %e, "cannot take the lead of the vault"),
                }
            })
            .map(|_| ())
            .map_err(|_| KbError::external("starting the follower thread"))
    }

    fn role(&self) -> Role {
        self.role.read().clone()
    }

    /// Runs `request` here when this process leads, else on the leader. Blocking.
    pub fn call(&self, request: Request) -> KbResult<Value> {
        self.call_with_progress(request, &|_, _| {})
    }

    /// [`Host::call`], with `progress(done, total)` for scans.
    pub fn call_with_progress(
        &self,
        request: Request,
        progress: &(dyn Fn(usize, usize) + Send + Sync),
    ) -> KbResult<Value> {
        let deadline = Instant::now() + LEADER_WAIT;
        loop {
            let client = match self.role() {
                Role::Leader(app) => return execute(&app, request, progress),
                Role::Follower(client) => client,
            };
            match client.call(&request, progress) {
                Ok(answer) => return answer,
                Err(Lost::Unsent) => {}
                Err(Lost::InFlight) if request.retry_safe() => {}
                Err(Lost::InFlight) => {
                    return Err(KbError::new(
                        ErrorKind::External,
                        "the process leading this vault exited during the call; the change may or may not have been made",
                    )
                    .with_hint("Read the note again (kb_get_page) before retrying."));
                }
            }
            if Instant::now() >= deadline {
                let mut e = KbError::locked(1);
                e.message = "no stratum-mcp process leads this vault right now".into();
                e.hint = Some("Retry; a waiting process takes the lead within seconds.".into());
                return Err(e);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// Runs a request on the leading process's app.
fn execute(
    app: &Arc<App>,
    request: Request,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> KbResult<Value> {
    use stratum_app::commands::{page, vault};
    match request {
        Request::Tool { name, args } => {
            let tool = tools::find(&name)
                .ok_or_else(|| KbError::invalid(format!("unknown tool {name}")))?;
            (tool.handler)(app, args)
        }
        Request::ListPages { limit, cursor } => {
            json(&page::list_pages(app, limit, cursor.as_deref())?)
        }
        Request::ReadRaw { path } => {
            let p = VaultPath::parse(app.vault(), &path)
                .map_err(|e| tools::path_error("uri", &path, &e))?;
            Ok(Value::String(page::read_raw(app, &p)?))
        }
        Request::Info => json(&vault::get_vault_info(app)?),
        Request::Scan { rebuild } => {
            let mode = if rebuild {
                ScanMode::Rebuild
            } else {
                ScanMode::Incremental
            };
            let started = Instant::now();
            // The progress callback must outlive the call on the writer thread; it is forwarded
            // through a channel drained here.
            let (tx, rx) = std::sync::mpsc::channel::<(usize, usize)>();
            let report = std::thread::scope(|s| {
                let worker = s.spawn(|| {
                    scan::scan_with_progress(
                        app,
                        mode,
                        Arc::new(move |d, t| {
                            let _ = tx.send((d, t));
                        }),
                    )
                });
                for (d, t) in rx {
                    progress(d, t);
                }
                worker.join()
            })
            .map_err(|_| KbError::internal("the scan thread failed"))??;
            // A leader that did not warm up (`index`) is ready once its scan is done.
            app.mark_ready();
            Ok(json!({
                "scanned": report.scanned,
                "updated": report.updated,
                "removed": report.removed,
                "skipped": report.skipped,
                "elapsed_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            }))
        }
    }
}

fn json(v: &impl Serialize) -> KbResult<Value> {
    serde_json::to_value(v).map_err(|_| KbError::internal("serializing a response"))
}

/// Where the leader of `vault` listens: `.pkm/leader.sock`, or, when that path is too long for a
/// Unix socket, a file named after the vault in the user's runtime folder.
pub fn socket_path(vault: &Vault) -> PathBuf {
    let inside = vault.pkm_dir().join("leader.sock");
    if inside.as_os_str().len() <= MAX_SOCKET_PATH {
        return inside;
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(vault.root().as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    runtime_dir().join(format!("{name}.sock"))
}

fn runtime_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!(
                "stratum-mcp-{}",
                rustix::process::getuid().as_raw()
            ))
        })
}

/// Binds the leader's socket (replacing one a dead leader left) and answers peers on threads.
fn listen(vault: &Vault, app: &Arc<App>) -> KbResult<()> {
    let path = socket_path(vault);
    let listener = bind(&path).map_err(|e| {
        tracing::error!(error = %e, socket = %path.display(), "cannot listen for other processes");
        KbError::external("opening the vault's local socket")
    })?;
    let app = Arc::downgrade(app);
    std::thread::Builder::new()
        .name("stratum-leader".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let Some(app) = app.upgrade() else { return };
                if !same_user(&conn) {
                    tracing::warn!("refused a local connection from another user");
                    continue;
                }
                let spawned = std::thread::Builder::new()
                    .name("stratum-peer".into())
                    .spawn(move || serve_peer(&app, conn));
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "cannot serve a local connection");
                }
            }
        })
        .map(|_| ())
        .map_err(|_| KbError::external("starting the leader's listener"))
}

fn bind(path: &Path) -> std::io::Result<UnixListener> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("socket path has no folder"))?;
    if !dir.exists() {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    // Bound under a private name, made owner-only, then renamed over whatever a dead leader left:
    // the socket is never reachable with looser permissions.
    let tmp = dir.join(format!(
        ".{}.{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&tmp, path)?;
    Ok(listener)
}

fn same_user(conn: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(conn)
        .is_ok_and(|cred| cred.uid == rustix::process::getuid())
}

/// Answers one peer's requests, in order, until it hangs up.
fn serve_peer(app: &Arc<App>, conn: UnixStream) {
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut input = BufReader::new(conn);
    loop {
        let Some(line) = read_line(&mut input) else {
            return;
        };
        let reply = match serde_json::from_str::<Envelope>(&line) {
            Err(e) => {
                Reply::Err(KbError::invalid(format!("bad request from a local peer: {e}")).into())
            }
            Ok(env) if env.version != VERSION => Reply::Err(
                KbError::new(
                    ErrorKind::Internal,
                    format!(
                        "the process leading this vault runs stratum-mcp {VERSION}, this one {}",
                        env.version
                    ),
                )
                .with_hint(
                    "Run one version of stratum-mcp on a vault: restart the older processes.",
                )
                .into(),
            ),
            Ok(env) => {
                let progress = |d: usize, t: usize| {
                    let _ = write_line(&mut &out, &Reply::Progress(d, t));
                };
                match execute(app, env.request, &progress) {
                    Ok(v) => Reply::Ok(v),
                    Err(e) => Reply::Err(e.into()),
                }
            }
        };
        if write_line(&mut out, &reply).is_err() {
            return;
        }
    }
}

fn read_line(input: &mut BufReader<UnixStream>) -> Option<String> {
    let mut line = String::new();
    match input.by_ref().take(MAX_LINE_BYTES).read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) if !line.ends_with('\n') => None,
        Ok(_) => Some(line),
    }
}

fn write_line(out: &mut impl Write, msg: &impl Serialize) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}

/// Why a forwarded call has no answer.
enum Lost {
    /// Nothing reached a leader (none listens yet, or the connection was refused).
    Unsent,
    /// The request was sent and the leader went away before answering.
    InFlight,
}

/// A follower's connections to its leader.
struct Client {
    socket: PathBuf,
    idle: Mutex<Vec<BufReader<UnixStream>>>,
}

impl Client {
    fn new(socket: PathBuf) -> Client {
        Client {
            socket,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn connect(&self) -> Option<BufReader<UnixStream>> {
        let conn = UnixStream::connect(&self.socket).ok()?;
        if !same_user(&conn) {
            tracing::error!(socket = %self.socket.display(), "the vault's socket belongs to another user");
            return None;
        }
        Some(BufReader::new(conn))
    }

    fn call(
        &self,
        request: &Request,
        progress: &(dyn Fn(usize, usize) + Send + Sync),
    ) -> Result<KbResult<Value>, Lost> {
        let envelope = Envelope {
            version: VERSION.to_owned(),
            request: request.clone(),
        };
        // A pooled connection may be to a leader that has since exited: then try a fresh one,
        // which tells "nobody listens" (unsent) from "died while answering" (in flight).
        let pooled = self.idle.lock().pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => self.connect().ok_or(Lost::Unsent)?,
        };
        if write_line(conn.get_mut(), &envelope).is_err() {
            self.idle.lock().clear();
            conn = self.connect().ok_or(Lost::Unsent)?;
            write_line(conn.get_mut(), &envelope).map_err(|_| Lost::Unsent)?;
        }
        loop {
            let Some(line) = read_line(&mut conn) else {
                self.idle.lock().clear();
                return Err(Lost::InFlight);
            };
            match serde_json::from_str::<Reply>(&line) {
                Ok(Reply::Progress(d, t)) => progress(d, t),
                Ok(done) => {
                    let mut idle = self.idle.lock();
                    if idle.len() < MAX_IDLE_CONNECTIONS {
                        idle.push(conn);
                    }
                    return Ok(match done {
                        Reply::Ok(v) => Ok(v),
                        Reply::Err(e) => Err(e.into()),
                        Reply::Progress(..) => Err(KbError::internal("unexpected progress")),
                    });
                }
                Err(e) => {
                    tracing::error!(error = %e, "the leading process sent a line this one cannot read");
                    return Ok(Err(KbError::internal(
                        "an unreadable answer from the leading process",
                    )));
                }
            }
        }
    }
}
