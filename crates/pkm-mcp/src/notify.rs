//! Server-side warnings to connected clients (contract §12): a tracing layer copies every WARN and
//! ERROR event, and every milestone event (`stratum_app::MILESTONE`, such as an index rebuild's
//! start and end), into a broadcast channel; the stdio door forwards them to its client as
//! `notifications/message`, at or above the level the client chose with `logging/setLevel`
//! (default `notice`: milestones and warnings). Events from rmcp itself are never forwarded, so a
//! failed send cannot feed back into the channel.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// MCP's logging levels (RFC 5424 severities), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl ClientLevel {
    const ALL: [ClientLevel; 8] = [
        ClientLevel::Debug,
        ClientLevel::Info,
        ClientLevel::Notice,
        ClientLevel::Warning,
        ClientLevel::Error,
        ClientLevel::Critical,
        ClientLevel::Alert,
        ClientLevel::Emergency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClientLevel::Debug => "debug",
            ClientLevel::Info => "info",
            ClientLevel::Notice => "notice",
            ClientLevel::Warning => "warning",
            ClientLevel::Error => "error",
            ClientLevel::Critical => "critical",
            ClientLevel::Alert => "alert",
            ClientLevel::Emergency => "emergency",
        }
    }

    pub fn parse(s: &str) -> Option<ClientLevel> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// One message for clients.
#[derive(Debug, Clone)]
pub struct ClientLog {
    pub level: ClientLevel,
    /// The tracing target, e.g. `stratum_app::scan`.
    pub logger: String,
    /// `{"message": ..., <the event's fields>}`.
    pub data: Value,
}

/// The minimum level one client receives (`logging/setLevel`).
#[derive(Debug)]
pub struct LevelFilter(AtomicU8);

impl Default for LevelFilter {
    fn default() -> Self {
        LevelFilter(AtomicU8::new(ClientLevel::Notice as u8))
    }
}

impl LevelFilter {
    pub fn set(&self, level: ClientLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }
    pub fn allows(&self, level: ClientLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// Messages waiting for a slow client beyond this many are dropped (oldest first).
const BACKLOG: usize = 256;

fn channel() -> &'static broadcast::Sender<ClientLog> {
    static CHANNEL: OnceLock<broadcast::Sender<ClientLog>> = OnceLock::new();
    CHANNEL.get_or_init(|| broadcast::channel(BACKLOG).0)
}

/// Receives every message published from now on.
pub fn subscribe() -> broadcast::Receiver<ClientLog> {
    channel().subscribe()
}

/// The tracing layer that publishes warnings and milestones; install it next to the log writer.
pub fn layer() -> ClientLogLayer {
    ClientLogLayer
}

pub struct ClientLogLayer;

fn client_level(event: &Event<'_>) -> Option<ClientLevel> {
    let meta = event.metadata();
    if meta.target().starts_with("rmcp") {
        return None;
    }
    match *meta.level() {
        Level::ERROR => Some(ClientLevel::Error),
        Level::WARN => Some(ClientLevel::Warning),
        _ if meta.target() == stratum_app::MILESTONE => Some(ClientLevel::Notice),
        _ => None,
    }
}

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let Some(level) = client_level(event) else {
            return;
        };
        let tx = channel();
        if tx.receiver_count() == 0 {
            return;
        }
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let _ = tx.send(ClientLog {
            level,
            logger: event.metadata().target().to_owned(),
            data: Value::Object(fields.0),
        });
    }
}

struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::from(format!("{value:?}")));
    }
}

/// The server's plugin-hook subscriber: records every onSave / onLink / onDelete in the log.
pub struct TracingHooks;

impl stratum_app::SaveHooks for TracingHooks {
    fn on_save(&self, path: &str) {
        tracing::info!(target: "stratum::hooks", path, "onSave");
    }
    fn on_link(&self, path: &str, targets: &[String]) {
        tracing::info!(target: "stratum::hooks", path, targets = ?targets, "onLink");
    }
    fn on_delete(&self, path: &str) {
        tracing::info!(target: "stratum::hooks", path, "onDelete");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn warnings_and_milestones_are_published_with_their_fields() {
        let mut rx = subscribe();
        let subscriber = tracing_subscriber::registry().with(layer());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("plain info is not for clients");
            tracing::warn!(path = "a.md", reason = "not valid UTF-8", "skipping note");
            tracing::info!(target: stratum_app::MILESTONE, notes = 3u64, "index rebuild finished");
            tracing::warn!(target: "rmcp::service", "never forwarded");
        });
        let first = rx.try_recv().unwrap();
        assert_eq!(first.level, ClientLevel::Warning);
        assert_eq!(first.data["message"], "skipping note");
        assert_eq!(first.data["path"], "a.md");
        let second = rx.try_recv().unwrap();
        assert_eq!(second.level, ClientLevel::Notice);
        assert_eq!(second.logger, stratum_app::MILESTONE);
        assert_eq!(second.data["notes"], 3);
        assert!(rx.try_recv().is_err(), "nothing else is published");
    }

    #[test]
    fn levels_filter_by_severity() {
        let f = LevelFilter::default();
        assert!(f.allows(ClientLevel::Notice) && f.allows(ClientLevel::Error));
        assert!(!f.allows(ClientLevel::Info));
        f.set(ClientLevel::Error);
        assert!(!f.allows(ClientLevel::Warning));
        assert_eq!(ClientLevel::parse("warning"), Some(ClientLevel::Warning));
        assert_eq!(ClientLevel::parse("loud"), None);
    }
}
