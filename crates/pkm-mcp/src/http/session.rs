//! MCP sessions (contract §2.1): `initialize` opens one with a random UUID v4 id, bound to the
//! token's name when a token came with it; `DELETE` ends it. Idle sessions expire, and the table
//! has a cap, because `initialize` needs no token and must not let anyone grow memory without bound.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::protocol::Protocol;

const IDLE_EXPIRY: Duration = Duration::from_secs(24 * 60 * 60);
const MAX_SESSIONS: usize = 10_000;

struct Session {
    /// The token name the session is bound to; `None` when it was opened without a token.
    token: Option<String>,
    /// The revision `initialize` agreed on.
    protocol: Protocol,
    last_used: Instant,
}

/// Why a session id was refused; both answer HTTP 404.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Never issued, ended, or expired.
    Unknown,
    /// Bound to another token.
    OtherToken,
}

pub(super) struct SessionStore {
    sessions: Mutex<HashMap<String, Session>>,
}

impl SessionStore {
    pub(super) fn new() -> SessionStore {
        SessionStore {
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Opens a session speaking `protocol`; returns its id.
    pub(super) fn open(&self, token: Option<String>, protocol: Protocol) -> String {
        let id = uuid::Uuid::new_v4().to_string();
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
            },
        );
        id
    }

    /// Checks that `id` is live and usable by `token` (the caller's token name, if any), marks it
    /// used and gives its revision. A session opened without a token accepts any authenticated
    /// caller.
    pub(super) fn touch(&self, id: &str, token: Option<&str>) -> Result<Protocol, Refused> {
        let now = Instant::now();
        let mut map = self.sessions.lock();
        let Some(s) = map.get_mut(id) else {
            return Err(Refused::Unknown);
        };
        if now.duration_since(s.last_used) >= IDLE_EXPIRY {
            map.remove(id);
            return Err(Refused::Unknown);
        }
        if let (Some(bound), Some(caller)) = (s.token.as_deref(), token)
            && bound != caller
        {
            return Err(Refused::OtherToken);
        }
        s.last_used = now;
        Ok(s.protocol)
    }

    /// Ends a session after the same checks as [`SessionStore::touch`].
    pub(super) fn end(&self, id: &str, token: Option<&str>) -> Result<(), Refused> {
        self.touch(id, token)?;
        self.sessions.lock().remove(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let s = SessionStore::new();
        let a = s.open(Some("laptop".into()), Protocol::V2025_11_25);
        let b = s.open(None, Protocol::V2025_06_18);
        assert_ne!(a, b);
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 4);
        assert_eq!(s.touch(&a, Some("laptop")), Ok(Protocol::V2025_11_25));
        assert_eq!(s.touch(&a, Some("ci")), Err(Refused::OtherToken));
        assert_eq!(s.touch(&b, Some("ci")), Ok(Protocol::V2025_06_18));
        assert_eq!(s.touch("nope", Some("laptop")), Err(Refused::Unknown));
        assert_eq!(s.end(&a, Some("ci")), Err(Refused::OtherToken));
        assert_eq!(s.end(&a, Some("laptop")), Ok(()));
        assert_eq!(s.touch(&a, Some("laptop")), Err(Refused::Unknown));
    }
}
