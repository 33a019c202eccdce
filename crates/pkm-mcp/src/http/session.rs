//! MCP sessions (contract §2.1): `initialize` opens one with a random UUID v4 id, bound to the
//! token's name when a token came with it; `DELETE` ends it. Idle sessions expire, and the table
//! has a cap, because `initialize` needs no token and must not let anyone grow memory without bound.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::fleet::{Fleet, SESSION_TTL_SECONDS, SessionRecord, Unreachable};
use crate::protocol::Protocol;

const IDLE_EXPIRY: Duration = Duration::from_secs(SESSION_TTL_SECONDS);
const MAX_SESSIONS: usize = 10_000;

struct Session {
    /// The token name the session is bound to; `None` when it was opened without a token.
    token: Option<String>,
    /// The revision `initialize` agreed on.
    protocol: Protocol,
    last_used: Instant,
    /// Also stored in the fleet's Redis, which decides while it answers: a copy kept here so
    /// that this instance serves the sessions it opened while Redis is unreachable.
    in_fleet: bool,
}

/// Why a session id was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Never issued, ended, or expired (HTTP 404).
    Unknown,
    /// Bound to another token (HTTP 404).
    OtherToken,
    /// The fleet's Redis is unreachable and `--redis-fail closed` (HTTP 503).
    Unavailable,
}

/// A caller holding `caller` may use a session bound to `bound`. A session opened without a
/// token accepts any authenticated caller.
fn admits(bound: Option<&str>, caller: Option<&str>) -> bool {
    match (bound, caller) {
        (Some(bound), Some(caller)) => bound == caller,
        _ => true,
    }
}

/// One vault's sessions: in the fleet's Redis when there is one, so that any instance serves
/// them (here while it is unreachable and `--redis-fail open`); else in this process.
pub(super) struct SessionStore {
    sessions: Mutex<HashMap<String, Session>>,
    /// The fleet and this vault's name in its keys.
    fleet: Option<(Arc<Fleet>, String)>,
}

impl SessionStore {
    pub(super) fn new(fleet: Option<(Arc<Fleet>, String)>) -> SessionStore {
        SessionStore {
            sessions: Mutex::new(HashMap::new()),
            fleet,
        }
    }

    /// Whether a Redis failure refuses the request rather than falling back to this process.
    fn fall_back(&self, fleet: &Fleet) -> Result<(), Refused> {
        if fleet.fails_closed() {
            Err(Refused::Unavailable)
        } else {
            Ok(())
        }
    }

    /// Opens a session speaking `protocol`; returns its id.
    pub(super) async fn open(
        &self,
        token: Option<String>,
        protocol: Protocol,
    ) -> Result<String, Refused> {
        let id = uuid::Uuid::new_v4().to_string();
        let mut in_fleet = false;
        if let Some((fleet, vault)) = &self.fleet {
            let record = SessionRecord::new(token.clone(), protocol);
            match fleet.put_session(vault, &id, &record).await {
                Ok(()) => in_fleet = true,
                Err(Unreachable) => self.fall_back(fleet)?,
            }
        }
        let now = Instant::now();
        let mut map = self.sessions.lock();
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| now.duration_since(s.last_used) < IDLE_EXPIRY);
        }
        if map.len() >= MAX_SESSIONS {
            // Still full of live sessions: the least recently used one makes room.
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                token,
                protocol,
                last_used: now,
                in_fleet,
            },
        );
        Ok(id)
    }

    /// Checks that `id` is live and usable by `token` (the caller's token name, if any), marks it
    /// used and gives its revision.
    pub(super) async fn touch(&self, id: &str, token: Option<&str>) -> Result<Protocol, Refused> {
        let mut fleet_forgot = false;
        if let Some((fleet, vault)) = &self.fleet {
            match fleet.touch_session(vault, id).await {
                Ok(Some(record)) if admits(record.token.as_deref(), token) => {
                    return Ok(Protocol::parse(&record.protocol).unwrap_or(Protocol::ASSUMED));
                }
                Ok(Some(_)) => return Err(Refused::OtherToken),
                // Ended or expired, unless this instance opened it while Redis was unreachable.
                Ok(None) => fleet_forgot = true,
                Err(Unreachable) => self.fall_back(fleet)?,
            }
        }
        let now = Instant::now();
        let mut map = self.sessions.lock();
        let Some(s) = map.get_mut(id) else {
            return Err(Refused::Unknown);
        };
        if (fleet_forgot && s.in_fleet) || now.duration_since(s.last_used) >= IDLE_EXPIRY {
            map.remove(id);
            return Err(Refused::Unknown);
        }
        if !admits(s.token.as_deref(), token) {
            return Err(Refused::OtherToken);
        }
        s.last_used = now;
        Ok(s.protocol)
    }

    /// Ends a session after the same checks as [`SessionStore::touch`].
    pub(super) async fn end(&self, id: &str, token: Option<&str>) -> Result<(), Refused> {
        self.touch(id, token).await?;
        if let Some((fleet, vault)) = &self.fleet
            && fleet.end_session(vault, id).await.is_err()
        {
            self.fall_back(fleet)?;
        }
        self.sessions.lock().remove(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(lifecycle_in_memory());
    }

    async fn lifecycle_in_memory() {
        let s = SessionStore::new(None);
        let a = s
            .open(Some("laptop".into()), Protocol::V2025_11_25)
            .await
            .unwrap();
        let b = s.open(None, Protocol::V2025_06_18).await.unwrap();
        assert_ne!(a, b);
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 4);
        assert_eq!(s.touch(&a, Some("laptop")).await, Ok(Protocol::V2025_11_25));
        assert_eq!(s.touch(&a, Some("ci")).await, Err(Refused::OtherToken));
        assert_eq!(s.touch(&b, Some("ci")).await, Ok(Protocol::V2025_06_18));
        assert_eq!(s.touch("nope", Some("laptop")).await, Err(Refused::Unknown));
        assert_eq!(s.end(&a, Some("ci")).await, Err(Refused::OtherToken));
        assert_eq!(s.end(&a, Some("laptop")).await, Ok(()));
        assert_eq!(s.touch(&a, Some("laptop")).await, Err(Refused::Unknown));
    }
}
