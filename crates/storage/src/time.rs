//! Timestamps: UTC, microsecond precision inside; RFC 3339 and plain dates at the edges.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A time that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// Not RFC 3339 and not a plain date.
    #[error("invalid time {input:?}: expected RFC 3339 (2024-05-07T10:00:00Z) or a date (2024-05-07)")]
    Malformed {
        /// What was given.
        input: String,
    },
    /// Outside the years 0000..=9999.
    #[error("time {input:?} is out of range (years 0000 to 9999)")]
    OutOfRange {
        /// What was given.
        input: String,
    },
}

/// A point in time: microseconds since the Unix epoch, UTC.
///
/// The newtype owns its order (plain integer order), so it can be used directly in keys.
/// [`Timestamp::MIN`] and [`Timestamp::MAX`] are sentinels for "beginning of time" and
/// "open ended"; they never reach the user as dates.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Timestamp(i64);

/// The earliest timestamp a caller may give: 0000-01-01T00:00:00Z.
const EARLIEST_USER_MICROS: i64 = -62_167_219_200_000_000;
/// The latest timestamp a caller may give: 9999-12-31T23:59:59.999999Z.
const LATEST_USER_MICROS: i64 = 253_402_300_799_999_999;

impl Timestamp {
    /// The smallest representable timestamp (a sentinel, never a user date).
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The largest representable timestamp (a sentinel meaning "open ended").
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// A timestamp from microseconds since the Unix epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// The current wall-clock time.
    pub fn now() -> Self {
        let micros = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
        };
        Timestamp(micros)
    }

    /// Parse RFC 3339 (`2024-05-07T10:00:00Z`, any fraction, any offset) or a plain date
    /// (`2024-05-07`, meaning midnight UTC). Fractions below a microsecond are truncated.
    pub fn parse(text: &str) -> Result<Self, TimeError> {
        let s = text.trim();
        let bad = || TimeError::Malformed { input: text.to_string() };
        let micros = if s.len() == 10 && s.as_bytes().get(4) == Some(&b'-') {
            let date = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| bad())?;
            let dt = date.and_hms_opt(0, 0, 0).ok_or_else(bad)?;
            dt.and_utc().timestamp_micros()
        } else {
            let dt = DateTime::parse_from_rfc3339(s).map_err(|_| bad())?;
            dt.timestamp_micros()
        };
        Self::checked_user(micros).ok_or(TimeError::OutOfRange { input: text.to_string() })
    }

    /// `Some` if the value lies within the years 0000..=9999, the range callers may use.
    pub fn checked_user(micros: i64) -> Option<Self> {
        (EARLIEST_USER_MICROS..=LATEST_USER_MICROS).contains(&micros).then_some(Timestamp(micros))
    }

    /// Whether this is a date a caller could have given (not a sentinel, within years 0..=9999).
    pub fn is_user_range(self) -> bool {
        Self::checked_user(self.0).is_some()
    }

    /// RFC 3339 in UTC with exactly six fractional digits, e.g. `2024-05-07T10:00:00.000000Z`.
    /// Sentinels print as `-inf` / `+inf`.
    pub fn to_rfc3339(self) -> String {
        if self == Self::MIN {
            return "-inf".to_string();
        }
        if self == Self::MAX {
            return "+inf".to_string();
        }
        match DateTime::<Utc>::from_timestamp_micros(self.0) {
            Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Micros, true),
            None => format!("@{}us", self.0),
        }
    }

    /// A short human form: `2024-05-07 10:00:00` (UTC, seconds precision).
    pub fn to_human(self) -> String {
        if self == Self::MIN || self == Self::MAX {
            return self.to_rfc3339();
        }
        match DateTime::<Utc>::from_timestamp_micros(self.0) {
            Some(dt) => dt.format("%Y-%m-%d %H:%M:%S").to_string(),
            None => format!("@{}us", self.0),
        }
    }

    /// This timestamp plus whole days, saturating at the sentinels.
    pub fn plus_days(self, days: u32) -> Self {
        Timestamp(self.0.saturating_add(i64::from(days).saturating_mul(86_400_000_000)))
    }

    /// This timestamp plus microseconds, saturating.
    pub fn plus_micros(self, micros: i64) -> Self {
        Timestamp(self.0.saturating_add(micros))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl FromStr for Timestamp {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}

/// JSON (human-readable formats) sees RFC 3339 strings; the binary codec sees the integer.
impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.to_rfc3339())
        } else {
            serializer.serialize_i64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let s = String::deserialize(deserializer)?;
            Timestamp::parse(&s).map_err(serde::de::Error::custom)
        } else {
            Ok(Timestamp(i64::deserialize(deserializer)?))
        }
    }
}

/// Where "now" comes from. The store asks its clock for transaction times; tests inject a
/// manual clock so that every time is reproducible.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to (for tests and reproducible demos).
#[derive(Debug)]
pub struct ManualClock {
    micros: std::sync::atomic::AtomicI64,
}

impl ManualClock {
    /// A manual clock starting at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock { micros: std::sync::atomic::AtomicI64::new(start.as_micros()) }
    }

    /// Move the clock to `t` (it may go backwards; transaction times stay monotonic anyway).
    pub fn set(&self, t: Timestamp) {
        self.micros.store(t.as_micros(), std::sync::atomic::Ordering::SeqCst);
    }

    /// Advance the clock by `micros`.
    pub fn advance(&self, micros: i64) {
        self.micros.fetch_add(micros, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.micros.load(std::sync::atomic::Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_dates_as_midnight_utc() -> Result<(), TimeError> {
        let t = Timestamp::parse("2024-05-07")?;
        assert_eq!(t.to_rfc3339(), "2024-05-07T00:00:00.000000Z");
        Ok(())
    }

    #[test]
    fn parses_rfc3339_with_offsets_and_fractions() -> Result<(), TimeError> {
        let a = Timestamp::parse("2024-05-07T12:00:00+02:00")?;
        let b = Timestamp::parse("2024-05-07T10:00:00Z")?;
        assert_eq!(a, b);
        let c = Timestamp::parse("2024-05-07T10:00:00.1234567Z")?;
        assert_eq!(c.as_micros() - b.as_micros(), 123_456);
        Ok(())
    }

    #[test]
    fn rejects_malformed_and_out_of_range() {
        for bad in ["", "yesterday", "2024-13-01", "2024-05-07T25:00:00Z", "12345-01-01"] {
            assert!(Timestamp::parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn formatting_round_trips_at_microsecond_precision() -> Result<(), TimeError> {
        let t = Timestamp::from_micros(1_715_076_000_123_456);
        assert_eq!(Timestamp::parse(&t.to_rfc3339())?, t);
        Ok(())
    }
}
