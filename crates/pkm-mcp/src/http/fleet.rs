//! A fleet of instances on one Redis (`--redis-url`): what must be one across instances behind a
//! load balancer lives there instead of in this process.
//!
//! - Rate-limit buckets: one Lua script per check takes from every bucket of the call or from
//!   none, on Redis's clock (`TIME`), so a burst of 60 is 60 across the fleet.
//! - Sessions: `initialize` on one instance stores the session's record; any instance serves it.
//! - Revocations: an instance that sees a token vanish from its token store adds the token's hash
//!   to a set every instance reads each [`TICK`], so a token revoked on one host is refused by all
//!   within a second, also where each host keeps its own copy of the store.
//!
//! Redis being unreachable is noticed by a failed call or by the [`TICK`] ping; until a ping
//! succeeds again no call waits on it, and the instance does what `--redis-fail` says: serve on
//! with its own buckets and sessions, or answer 503.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::{Deserialize, Serialize};

use super::rate::{Limit, MAX_RETRY_SECONDS, RateLimits, RateStore};
use crate::protocol::Protocol;
use crate::scope::Scope;
use crate::tokens::TokenVerifier;

/// How often an instance pings Redis and reads the revocations.
pub(super) const TICK: Duration = Duration::from_millis(500);
/// The longest a request waits on Redis before the instance counts it as unreachable.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);
/// Sessions idle this long expire (as in this process's own table).
pub(super) const SESSION_TTL_SECONDS: u64 = 24 * 60 * 60;
const REVOKED: &str = "stratum:revoked";

/// Takes one call from each bucket (KEYS; ARGV holds burst and rate per bucket) or from none.
/// Returns "0" when taken, else the seconds until every bucket holds a call again.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local left = {}
local wait = 0
for i, key in ipairs(KEYS) do
  local burst = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  local v = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(v[1]) or burst
  local ts = tonumber(v[2]) or now
  tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
  left[i] = tokens
  if tokens < 1 then wait = math.max(wait, (1 - tokens) / rate) end
end
if wait > 0 then return tostring(wait) end
for i, key in ipairs(KEYS) do
  local burst = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  redis.call('HSET', key, 'tokens', tostring(left[i] - 1), 'ts', tostring(now))
  redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
end
return '0'
";

/// A session as every instance sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SessionRecord {
    pub(super) token: Option<String>,
    pub(super) protocol: String,
}

impl SessionRecord {
    pub(super) fn new(token: Option<String>, protocol: Protocol) -> SessionRecord {
        SessionRecord {
            token,
            protocol: protocol.as_str().to_owned(),
        }
    }
}

/// What an instance does while its Redis is unreachable (`--redis-fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Serve on with this instance's own rate-limit buckets and sessions, and log a warning.
    Open,
    /// Answer 503 until Redis is back.
    Closed,
}

/// Redis could not answer; the caller falls back as `--redis-fail` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unreachable;

pub struct Fleet {
    redis: ConnectionManager,
    take: redis::Script,
    up: AtomicBool,
    on_failure: OnFailure,
    /// The size of the revocation set when last read (it only grows).
    revoked_seen: parking_lot::Mutex<usize>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("up", &self.is_up())
            .field("on_failure", &self.on_failure)
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// Connects lazily to `url` (a Redis that is down now is only logged). Must run inside the
    /// Tokio runtime. A malformed URL is an error (one line).
    pub fn new(url: &str, on_failure: OnFailure) -> Result<Fleet, String> {
        let client = redis::Client::open(url)
            .map_err(|e| format!("--redis-url {url:?} is not a Redis URL: {e}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let redis = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("--redis-url {url:?}: {e}"))?;
        Ok(Fleet {
            redis,
            take: redis::Script::new(TAKE),
            up: AtomicBool::new(true),
            on_failure,
            revoked_seen: parking_lot::Mutex::new(0),
        })
    }

    /// Adds a revoked token's hash to the fleet's set (`token revoke --redis-url`), without a
    /// runtime: one connection, one `SADD`.
    pub fn publish_revoked(url: &str, hash: &str) -> Result<(), String> {
        let client = redis::Client::open(url).map_err(|e| format!("{url:?}: {e}"))?;
        let mut c = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .map_err(|e| format!("{url}: {e}"))?;
        redis::cmd("SADD")
            .arg(REVOKED)
            .arg(hash)
            .query::<()>(&mut c)
            .map_err(|e| format!("{url}: {e}"))
    }

    pub(super) fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    pub(super) fn fails_closed(&self) -> bool {
        self.on_failure == OnFailure::Closed
    }

    pub(super) fn on_failure(&self) -> &'static str {
        match self.on_failure {
            OnFailure::Open => "open",
            OnFailure::Closed => "closed",
        }
    }

    fn mark(&self, up: bool) {
        let was = self.up.swap(up, Ordering::Relaxed);
        match (was, up) {
            (true, false) if self.fails_closed() => {
                tracing::error!("Redis is unreachable: answering 503 until it is back");
            }
            (true, false) => tracing::warn!(
                "Redis is unreachable: serving on with this instance's own rate limits and sessions"
            ),
            (false, true) => tracing::info!("Redis is reachable again"),
            _ => {}
        }
    }

    /// Runs one Redis call unless Redis is known to be down; a failure marks it down.
    async fn call<T, F>(&self, f: impl FnOnce(ConnectionManager) -> F) -> Result<T, Unreachable>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        if !self.is_up() {
            return Err(Unreachable);
        }
        match tokio::time::timeout(CALL_TIMEOUT, f(self.redis.clone())).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "Redis call failed");
                self.mark(false);
                Err(Unreachable)
            }
            Err(_) => {
                self.mark(false);
                Err(Unreachable)
            }
        }
    }

    /// [`super::rate::RateStore::take`] on the fleet's buckets.
    pub(super) async fn take(
        &self,
        buckets: &[(String, Limit)],
    ) -> Result<Result<(), Duration>, Unreachable> {
        let mut invocation = self.take.prepare_invoke();
        for (key, limit) in buckets {
            // The hash tag keeps a caller's buckets in one slot of a Redis Cluster.
            let key = match key.split_once('|') {
                Some((who, tier)) => format!("stratum:rate:{{{who}}}|{tier}"),
                None => format!("stratum:rate:{{{key}}}"),
            };
            invocation.key(key).arg(limit.burst).arg(limit.per_second);
        }
        let wait: String = self
            .call(|mut c| async move { invocation.invoke_async(&mut c).await })
            .await?;
        let wait = wait.parse::<f64>().unwrap_or(0.0);
        Ok(if wait > 0.0 {
            Err(Duration::from_secs_f64(wait.min(MAX_RETRY_SECONDS as f64)))
        } else {
            Ok(())
        })
    }

    fn session_key(vault: &str, id: &str) -> String {
        format!("stratum:session:{vault}:{id}")
    }

    pub(super) async fn put_session(
        &self,
        vault: &str,
        id: &str,
        record: &SessionRecord,
    ) -> Result<(), Unreachable> {
        let key = Fleet::session_key(vault, id);
        let value = serde_json::to_string(record).unwrap_or_default();
        self.call(
            |mut c| async move { c.set_ex::<_, _, ()>(key, value, SESSION_TTL_SECONDS).await },
        )
        .await
    }

    /// The session's record, its idle time restarted; `None` when there is none.
    pub(super) async fn touch_session(
        &self,
        vault: &str,
        id: &str,
    ) -> Result<Option<SessionRecord>, Unreachable> {
        let key = Fleet::session_key(vault, id);
        let value: Option<String> = self
            .call(
                |mut c| async move { c.get_ex(key, redis::Expiry::EX(SESSION_TTL_SECONDS)).await },
            )
            .await?;
        Ok(value.and_then(|v| serde_json::from_str(&v).ok()))
    }

    pub(super) async fn end_session(&self, vault: &str, id: &str) -> Result<(), Unreachable> {
        let key = Fleet::session_key(vault, id);
        self.call(|mut c| async move { c.del::<_, ()>(key).await })
            .await
    }

    /// Every [`TICK`]: pings Redis (marking it up or down), publishes the hashes of tokens that
    /// left this instance's token store, and hands the fleet's revocations to `verifier`.
    pub async fn run(self: Arc<Self>, verifier: Option<Arc<TokenVerifier>>) {
        let mut stored: Option<HashSet<String>> = None;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let up = tokio::time::timeout(CALL_TIMEOUT, async {
                let mut c = self.redis.clone();
                redis::cmd("PING").query_async::<String>(&mut c).await
            })
            .await
            .is_ok_and(|r| r.is_ok());
            self.mark(up);
            let Some(verifier) = verifier.as_ref().filter(|_| up) else {
                continue;
            };
            let now = {
                let v = Arc::clone(verifier);
                tokio::task::spawn_blocking(move || v.stored_hashes())
                    .await
                    .ok()
                    .flatten()
            };
            if let (Some(before), Some(now)) = (&stored, &now) {
                let gone: Vec<&String> = before.difference(now).collect();
                if !gone.is_empty()
                    && self
                        .call(|mut c| async move { c.sadd::<_, _, ()>(REVOKED, gone).await })
                        .await
                        .is_ok()
                {
                    tracing::info!("published revoked tokens to the fleet");
                }
            }
            if now.is_some() {
                stored = now;
            }
            self.read_revocations(verifier).await;
        }
    }

    async fn read_revocations(&self, verifier: &TokenVerifier) {
        let Ok(count) = self
            .call(|mut c| async move { c.scard::<_, usize>(REVOKED).await })
            .await
        else {
            return;
        };
        if count == *self.revoked_seen.lock() {
            return;
        }
        if let Ok(hashes) = self
            .call(|mut c| async move { c.smembers::<_, HashSet<String>>(REVOKED).await })
            .await
        {
            *self.revoked_seen.lock() = hashes.len();
            verifier.deny(hashes);
        }
    }
}

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Over the limit: the `Retry-After` to announce, at least 1.
    Limited(u64),
    /// The fleet's Redis is unreachable and `--redis-fail closed`.
    Unavailable,
}

/// The limits applied to keys: in the fleet's Redis when there is one (this process's buckets
/// while it is unreachable and `--redis-fail open`), else in `store`.
pub(super) struct Limiter {
    limits: RateLimits,
    store: Arc<dyn RateStore>,
    fleet: Option<Arc<Fleet>>,
}

impl Limiter {
    pub(super) fn new(
        limits: RateLimits,
        store: Arc<dyn RateStore>,
        fleet: Option<Arc<Fleet>>,
    ) -> Limiter {
        Limiter {
            limits,
            store,
            fleet,
        }
    }

    /// One call by `key` in `tier` (None: a call outside the tool table, default bucket only).
    pub(super) async fn check(&self, key: &str, tier: Option<Scope>) -> Result<(), Refusal> {
        let mut buckets = vec![(key.to_owned(), self.limits.default)];
        if let Some((scope, limit)) = tier.and_then(|s| self.limits.tiers.get(&s).map(|l| (s, *l)))
        {
            buckets.push((format!("{key}|{}", scope.tier_name()), limit));
        }
        let taken = match &self.fleet {
            Some(fleet) => match fleet.take(&buckets).await {
                Ok(taken) => taken,
                Err(Unreachable) if fleet.fails_closed() => return Err(Refusal::Unavailable),
                Err(Unreachable) => self.store.take(&buckets),
            },
            None => self.store.take(&buckets),
        };
        taken.map_err(|wait| {
            Refusal::Limited((wait.as_secs_f64().ceil() as u64).clamp(1, MAX_RETRY_SECONDS))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::rate::MemoryRateStore;
    use super::*;

    #[test]
    fn limiter_applies_tiers_and_rounds_retry_up() {
        let limits = RateLimits {
            default: Limit {
                burst: 100,
                per_second: 100.0,
            },
            tiers: BTreeMap::new(),
        }
        .with_tier(
            Scope::Write,
            Limit {
                burst: 1,
                per_second: 0.4,
            },
        );
        let l = Limiter::new(limits, Arc::new(MemoryRateStore::new()), None);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let check = |key: &str, scope| rt.block_on(l.check(key, Some(scope)));
        assert!(check("token:a", Scope::Write).is_ok());
        let Err(Refusal::Limited(retry)) = check("token:a", Scope::Write) else {
            panic!("the second write is over the tier's limit");
        };
        assert!((2..=3).contains(&retry), "{retry}");
        assert!(check("token:a", Scope::Read).is_ok());
        assert!(check("token:b", Scope::Write).is_ok());
    }
}
