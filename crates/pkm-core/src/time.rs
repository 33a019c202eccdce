//! RFC 3339 UTC timestamps. A note's `modified_at` is its file's mtime with nanoseconds, written
//! the same way everywhere, so a client can hand it back as `expected_modified`.

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-09-19T08:00:00.123456789Z`: always nine fractional digits and `Z`.
pub fn to_rfc3339(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// Parses any RFC 3339 timestamp (any offset, any precision) into a `SystemTime`.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let dt = DateTime::parse_from_rfc3339(s.trim()).ok()?;
    let nanos = dt.timestamp_nanos_opt()?;
    if nanos >= 0 {
        Some(UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos).ok()?))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_nanos(nanos.unsigned_abs()))
    }
}

/// Nanoseconds since the epoch, for storage; 0 for times before it.
pub fn to_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub fn from_nanos(n: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(u64::try_from(n).unwrap_or(0))
}

pub fn now_rfc3339() -> String {
    to_rfc3339(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_nanoseconds() {
        let t = UNIX_EPOCH + Duration::new(1_758_268_800, 123_456_789);
        let s = to_rfc3339(t);
        assert_eq!(s, "2025-09-19T08:00:00.123456789Z");
        assert_eq!(parse_rfc3339(&s), Some(t));
        assert_eq!(
            parse_rfc3339("2025-09-19T10:00:00.123456789+02:00"),
            Some(t)
        );
        assert_eq!(from_nanos(to_nanos(t)), t);
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339(""), None);
    }
}
