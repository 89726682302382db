//! Record ids (UUIDv7) and namespaces.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// An id or namespace that cannot be one (an [`crate::InputError`] where it is reported).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// Not a UUID.
    #[error("invalid record id {input:?}: expected a UUID")]
    BadId {
        /// What was given.
        input: String,
    },
    /// A namespace name that is not allowed.
    #[error("invalid namespace {name:?}: {reason}")]
    BadNamespace {
        /// What was given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
}

/// A record id: a UUIDv7, so ids sort by creation time.
///
/// In keys it is the 128-bit big-endian integer of the UUID, so key order is id order.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId(u128);

impl RecordId {
    /// A fresh UUIDv7 id.
    pub fn new() -> Self {
        RecordId(Uuid::now_v7().as_u128())
    }

    /// The id from its 128-bit integer form.
    pub const fn from_u128(v: u128) -> Self {
        RecordId(v)
    }

    /// The 128-bit integer form (used in keys).
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// The UUID.
    pub fn uuid(self) -> Uuid {
        Uuid::from_u128(self.0)
    }

    /// Parse the hyphenated (or simple) UUID form.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        Uuid::parse_str(text.trim())
            .map(|u| RecordId(u.as_u128()))
            .map_err(|_| IdError::BadId { input: text.to_string() })
    }

    /// The last eight hex digits (the random part of a UUIDv7; its first digits are the
    /// creation time, which records made together share). The command line accepts any unique
    /// suffix of an id.
    pub fn short(self) -> String {
        format!("{:08x}", self.0 & 0xffff_ffff)
    }
}

impl Default for RecordId {
    fn default() -> Self {
        RecordId::new()
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Uuid::from_u128(self.0).hyphenated(), f)
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordId({self})")
    }
}

impl FromStr for RecordId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RecordId::parse(s)
    }
}

/// JSON sees the hyphenated UUID string; the binary codec sees the integer.
impl Serialize for RecordId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_u128(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for RecordId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let s = String::deserialize(deserializer)?;
            RecordId::parse(&s).map_err(serde::de::Error::custom)
        } else {
            Ok(RecordId(u128::deserialize(deserializer)?))
        }
    }
}

/// The longest namespace name, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 200;

/// A namespace: a tenant or scope such as `global`, `project:1a2b3c4d-app` or `agent:dev-1`.
///
/// The namespace is the first component of every key, so namespaces are isolated by the key
/// layout itself: a scan within one can never reach another.
/// Cloning is cheap (a shared string): every record read carries its namespace.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Namespace(Arc<str>);

/// A quoted name, as error messages show it: `"default"`, not `Namespace("default")`.
impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Namespace {
    /// Validate a namespace name: 1 to 200 bytes, no control characters, no surrounding spaces.
    pub fn new(name: impl Into<String>) -> Result<Self, IdError> {
        let name = name.into();
        let bad = |reason: &'static str| IdError::BadNamespace { name: name.clone(), reason };
        if name.is_empty() {
            return Err(bad("it is empty"));
        }
        if name.len() > MAX_NAMESPACE_LEN {
            return Err(bad("it is longer than 200 bytes"));
        }
        if name.chars().any(char::is_control) {
            return Err(bad("it contains control characters"));
        }
        if name.trim() != name {
            return Err(bad("it has leading or trailing spaces"));
        }
        Ok(Namespace(Arc::from(name)))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Namespace {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Namespace::new(s)
    }
}

impl Serialize for Namespace {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Namespace {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Namespace::new(s).map_err(serde::de::Error::custom)
    }
}

impl AsRef<str> for Namespace {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_creation() {
        let a = RecordId::new();
        let b = RecordId::new();
        assert!(a < b);
        assert_eq!(a.uuid().get_version_num(), 7);
    }

    #[test]
    fn id_text_round_trips() -> Result<(), IdError> {
        let a = RecordId::new();
        assert_eq!(RecordId::parse(&a.to_string())?, a);
        assert!(RecordId::parse("not-an-id").is_err());
        Ok(())
    }

    #[test]
    fn namespace_validation() {
        assert!(Namespace::new("project:1a2b3c4d-app").is_ok());
        assert!(Namespace::new("").is_err());
        assert!(Namespace::new("a\u{0}b").is_err());
        assert!(Namespace::new(" x").is_err());
        assert!(Namespace::new("x".repeat(201)).is_err());
    }
}
