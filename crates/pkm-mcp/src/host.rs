//! `Host`: one vault as this process serves it, shared with every other `stratum-mcp` on the same
//! folder (ADR-0007).
//!
//! The first process to take the vault's lock (`.pkm/write.lock`) leads: it opens the store and
//! the index, runs the vault's writer and file watcher, and answers the other processes on its
//! local channel (`channel.rs`: a Unix socket, or a named pipe on Windows, for this user only).
//! Every other process follows: it checks scopes and arguments itself, then forwards each call to
//! the leader (`forward.rs`), so every process gives the same answers from the same store. A
//! follower waits on the lock in the background and takes the lead when the leader exits or is
//! killed (the OS drops the lock).
//!
//! The channel speaks one JSON object per line (`wire.rs`). A request that could not be sent is
//! retried on the next leader; a read whose leader died mid-call is retried too; a write whose
//! leader died mid-call answers an error that says the write may or may not have happened
//! (nothing acknowledged is ever lost).

use std::io::BufReader;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use pkm_core::{ErrorKind, KbError, KbResult, Vault, VaultPath};
use serde::Serialize;
use serde_json::{Value, json};
use stratum_app::scan::{self, ScanMode};
use stratum_app::watcher::{self, VaultWatcher, WatchMode};
use stratum_app::{App, AppConfig, SaveHooks, VaultLock};

use crate::channel::{Address, Conn, Listener};
use crate::forward::{Client, Lost};
use crate::tools;
use crate::wire::{Envelope, Reply, Request, VERSION, read_line, write_line};

/// How long a call waits for a leader (a new one after the old exits) before giving up.
const LEADER_WAIT: Duration = Duration::from_secs(10);

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
    /// The leader's watcher, kept for as long as this process leads.
    leading: Mutex<Option<Leading>>,
}

struct Leading {
    _watcher: Option<VaultWatcher>,
}

impl Host {
    /// A host that leads with `app` (opened with `config`) and shares it with no other process
    /// (tests, fuzzing).
    pub fn local(app: Arc<App>, config: AppConfig) -> Arc<Host> {
        Arc::new(Host {
            vault: app.vault().clone(),
            options: HostOptions {
                config,
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
        let address = Address::of(&vault);
        let host = Arc::new(Host {
            role: RwLock::new(Role::Follower(Arc::new(Client::new(address)))),
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
    /// it serves) and the channel, then answers its own calls locally.
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

/// Opens the leader's channel (replacing a socket a dead leader left) and answers peers on
/// threads.
fn listen(vault: &Vault, app: &Arc<App>) -> KbResult<()> {
    let address = Address::of(vault);
    let listener = Listener::bind(&address).map_err(|e| {
        tracing::error!(error = %e, channel = %address, "cannot listen for other processes");
        KbError::external("opening the vault's local channel")
    })?;
    let app = Arc::downgrade(app);
    std::thread::Builder::new()
        .name("stratum-leader".into())
        .spawn(move || {
            loop {
                let Ok(conn) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let Some(app) = app.upgrade() else { return };
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

/// Answers one peer's requests, in order, until it hangs up.
fn serve_peer(app: &Arc<App>, conn: Conn) {
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
