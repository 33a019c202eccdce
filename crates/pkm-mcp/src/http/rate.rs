//! Rate limiting (contract §9): a token bucket per key (the token's name; the client IP without
//! auth). Every tool call takes one token from the key's default bucket and, when its scope's tier
//! has its own limits (`MCP_RATE_LIMIT_<TIER>_RPS` / `_BURST`), one from the tier's bucket too, so a
//! tier can only be tighter than the default. Counters live behind [`RateStore`]; the default is
//! in memory (one process).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::scope::Scope;

const PREFIX: &str = "MCP_RATE_LIMIT_";
/// Longest `Retry-After` we announce; also the answer for a bucket that never refills.
pub(super) const MAX_RETRY_SECONDS: u64 = 3600;

/// One bucket's shape: it holds at most `burst` calls and refills `per_second` calls a second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub burst: u32,
    pub per_second: f64,
}

impl Limit {
    /// The contract's defaults: burst 60, 10 calls a second.
    pub const DEFAULT: Limit = Limit {
        burst: 60,
        per_second: 10.0,
    };
}

/// The deployment's limits: the default bucket and per-scope tiers.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimits {
    pub default: Limit,
    pub tiers: BTreeMap<Scope, Limit>,
}

impl Default for RateLimits {
    fn default() -> RateLimits {
        RateLimits {
            default: Limit::DEFAULT,
            tiers: BTreeMap::new(),
        }
    }
}

fn parse_rps(name: &str, value: &str) -> Result<f64, String> {
    match value.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{name}={value:?} is not a positive number of calls per second"
        )),
    }
}

fn parse_burst(name: &str, value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!(
            "{name}={value:?} is not a whole number of calls of at least 1"
        )),
    }
}

impl RateLimits {
    /// Adds (or replaces) the limits of one scope tier.
    pub fn with_tier(mut self, scope: Scope, limit: Limit) -> RateLimits {
        self.tiers.insert(scope, limit);
        self
    }

    /// Reads `MCP_RATE_LIMIT_*` from the process environment.
    pub fn from_env() -> Result<RateLimits, String> {
        let mut vars = Vec::new();
        for (k, v) in std::env::vars_os() {
            let Some(k) = k
                .to_str()
                .filter(|k| k.starts_with(PREFIX))
                .map(str::to_owned)
            else {
                continue;
            };
            let v = v
                .into_string()
                .map_err(|_| format!("{k} is not valid UTF-8"))?;
            vars.push((k, v));
        }
        RateLimits::from_vars(vars)
    }

    /// Parses `MCP_RATE_LIMIT_RPS`, `_BURST` and `_<TIER>_RPS` / `_<TIER>_BURST` (tiers are
    /// `Scope::tier_name`, e.g. `WRITE`). A tier with only one of the two takes the other from the
    /// default. Unknown `MCP_RATE_LIMIT_*` names and bad values are errors (one line).
    pub fn from_vars<I, K, V>(vars: I) -> Result<RateLimits, String>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut default = Limit::DEFAULT;
        let mut tier_rps: BTreeMap<Scope, f64> = BTreeMap::new();
        let mut tier_burst: BTreeMap<Scope, u32> = BTreeMap::new();
        for (k, v) in vars {
            let (name, value) = (k.as_ref(), v.as_ref());
            let Some(rest) = name.strip_prefix(PREFIX) else {
                continue;
            };
            match rest {
                "RPS" => default.per_second = parse_rps(name, value)?,
                "BURST" => default.burst = parse_burst(name, value)?,
                _ => {
                    let tier = |suffix: &str| {
                        let t = rest.strip_suffix(suffix)?;
                        Scope::ALL.into_iter().find(|s| s.tier_name() == t)
                    };
                    if let Some(s) = tier("_RPS") {
                        tier_rps.insert(s, parse_rps(name, value)?);
                    } else if let Some(s) = tier("_BURST") {
                        tier_burst.insert(s, parse_burst(name, value)?);
                    } else {
                        let tiers = Scope::ALL.map(Scope::tier_name).join(", ");
                        return Err(format!(
                            "unknown variable {name}: use MCP_RATE_LIMIT_RPS, MCP_RATE_LIMIT_BURST or MCP_RATE_LIMIT_<TIER>_RPS/_BURST with TIER one of {tiers}"
                        ));
                    }
                }
            }
        }
        let mut limits = RateLimits {
            default,
            tiers: BTreeMap::new(),
        };
        for s in Scope::ALL {
            let (rps, burst) = (tier_rps.get(&s), tier_burst.get(&s));
            if rps.is_some() || burst.is_some() {
                limits.tiers.insert(
                    s,
                    Limit {
                        burst: burst.copied().unwrap_or(default.burst),
                        per_second: rps.copied().unwrap_or(default.per_second),
                    },
                );
            }
        }
        Ok(limits)
    }
}

/// Where bucket counters live. Implementations must take from every bucket or from none.
pub trait RateStore: Send + Sync {
    /// Takes one call from each `(bucket key, limit)`. `Err(wait)`: nothing was taken, and every
    /// bucket will hold a call again after `wait`.
    fn take(&self, buckets: &[(String, Limit)]) -> Result<(), Duration>;
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// A clock for [`MemoryRateStore`]; tests pass a manual one.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Counters in this process's memory.
pub struct MemoryRateStore {
    buckets: Mutex<HashMap<String, Bucket>>,
    clock: Clock,
}

/// Above this many buckets, full ones (idle keys) are dropped: a full bucket is the same as none.
const PRUNE_ABOVE: usize = 10_000;

impl MemoryRateStore {
    pub fn new() -> MemoryRateStore {
        MemoryRateStore::with_clock(Arc::new(Instant::now))
    }

    pub fn with_clock(clock: Clock) -> MemoryRateStore {
        MemoryRateStore {
            buckets: Mutex::new(HashMap::new()),
            clock,
        }
    }
}

impl Default for MemoryRateStore {
    fn default() -> Self {
        MemoryRateStore::new()
    }
}

fn refill(b: &mut Bucket, limit: Limit, now: Instant) {
    let elapsed = now.saturating_duration_since(b.updated).as_secs_f64();
    let rate = if limit.per_second.is_finite() && limit.per_second > 0.0 {
        limit.per_second
    } else {
        0.0
    };
    b.tokens = (b.tokens + elapsed * rate).min(f64::from(limit.burst));
    b.updated = now;
}

impl RateStore for MemoryRateStore {
    fn take(&self, buckets: &[(String, Limit)]) -> Result<(), Duration> {
        let now = (self.clock)();
        let mut map = self.buckets.lock();
        if map.len() > PRUNE_ABOVE {
            let limits: HashMap<&str, Limit> =
                buckets.iter().map(|(k, l)| (k.as_str(), *l)).collect();
            map.retain(|k, b| limits.contains_key(k.as_str()) || b.tokens < 1.0);
        }
        let mut wait = 0.0_f64;
        for (key, limit) in buckets {
            let b = map.entry(key.clone()).or_insert(Bucket {
                tokens: f64::from(limit.burst),
                updated: now,
            });
            refill(b, *limit, now);
            if b.tokens < 1.0 {
                let need = if limit.per_second > 0.0 {
                    (1.0 - b.tokens) / limit.per_second
                } else {
                    f64::INFINITY
                };
                wait = wait.max(need);
            }
        }
        if wait > 0.0 {
            let secs = if wait.is_finite() {
                wait.min(MAX_RETRY_SECONDS as f64)
            } else {
                MAX_RETRY_SECONDS as f64
            };
            return Err(Duration::from_secs_f64(secs));
        }
        for (key, _) in buckets {
            if let Some(b) = map.get_mut(key) {
                b.tokens -= 1.0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Result<RateLimits, String> {
        RateLimits::from_vars(pairs.iter().copied())
    }

    #[test]
    fn env_defaults_and_tiers() {
        assert_eq!(vars(&[]).unwrap(), RateLimits::default());
        assert_eq!(
            RateLimits::default().default,
            Limit {
                burst: 60,
                per_second: 10.0
            }
        );
        let l = vars(&[
            ("MCP_RATE_LIMIT_RPS", "5"),
            ("MCP_RATE_LIMIT_BURST", "20"),
            ("MCP_RATE_LIMIT_WRITE_RPS", "0.5"),
            ("OTHER", "x"),
        ])
        .unwrap();
        assert_eq!(
            l.default,
            Limit {
                burst: 20,
                per_second: 5.0
            }
        );
        assert_eq!(
            l.tiers.get(&Scope::Write),
            Some(&Limit {
                burst: 20,
                per_second: 0.5
            })
        );
        assert_eq!(l.tiers.get(&Scope::Read), None);
        let l = vars(&[("MCP_RATE_LIMIT_SEARCH_BURST", "3")]).unwrap();
        assert_eq!(
            l.tiers.get(&Scope::Search),
            Some(&Limit {
                burst: 3,
                per_second: 10.0
            })
        );
    }

    #[test]
    fn bad_env_values_name_the_variable() {
        for (k, v) in [
            ("MCP_RATE_LIMIT_RPS", "0"),
            ("MCP_RATE_LIMIT_RPS", "fast"),
            ("MCP_RATE_LIMIT_RPS", "NaN"),
            ("MCP_RATE_LIMIT_BURST", "0"),
            ("MCP_RATE_LIMIT_BURST", "-3"),
            ("MCP_RATE_LIMIT_WRITE_BURST", "1.5"),
            ("MCP_RATE_LIMIT_WRTIE_RPS", "1"),
        ] {
            let e = vars(&[(k, v)]).unwrap_err();
            assert!(e.contains(k), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn bucket_spends_its_burst_then_refills() {
        let t0 = Instant::now();
        let now = Arc::new(Mutex::new(t0));
        let clock_now = Arc::clone(&now);
        let store = MemoryRateStore::with_clock(Arc::new(move || *clock_now.lock()));
        let limit = Limit {
            burst: 2,
            per_second: 0.5,
        };
        let b = [("k".to_owned(), limit)];
        assert!(store.take(&b).is_ok());
        assert!(store.take(&b).is_ok());
        assert_eq!(store.take(&b), Err(Duration::from_secs(2)));
        *now.lock() = t0 + Duration::from_secs(1);
        assert_eq!(
            store.take(&b),
            Err(Duration::from_secs(1)),
            "half a call refilled"
        );
        *now.lock() = t0 + Duration::from_secs(2);
        assert!(store.take(&b).is_ok());
        assert!(
            store.take(&[("other".to_owned(), limit)]).is_ok(),
            "keys are independent"
        );
    }

    #[test]
    fn all_buckets_or_none() {
        let store = MemoryRateStore::new();
        let wide = (
            "wide".to_owned(),
            Limit {
                burst: 10,
                per_second: 0.001,
            },
        );
        let tight = (
            "tight".to_owned(),
            Limit {
                burst: 1,
                per_second: 0.001,
            },
        );
        assert!(store.take(&[wide.clone(), tight.clone()]).is_ok());
        assert!(store.take(&[wide.clone(), tight.clone()]).is_err());
        // The refused call took nothing from the wide bucket: nine calls remain there.
        for _ in 0..9 {
            assert!(store.take(std::slice::from_ref(&wide)).is_ok());
        }
        assert!(store.take(std::slice::from_ref(&wide)).is_err());
    }
}
