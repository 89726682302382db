//! Free-form JSON inside typed records.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::text::Text;

/// A JSON value kept as canonical compact text (object keys sorted).
///
/// The binary codec is not self-describing, so free JSON (metadata, entity properties,
/// preference values) is stored as its text; JSON output sees the value itself.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsonText(Text);

impl JsonText {
    /// JSON `null`.
    pub fn null() -> Self {
        JsonText(Text::const_new("null"))
    }

    /// An empty JSON object.
    pub fn empty_object() -> Self {
        JsonText(Text::const_new("{}"))
    }

    /// From a parsed value (canonicalised: object keys sorted, compact).
    pub fn from_value(value: &serde_json::Value) -> Self {
        // serde_json's Map is ordered by key unless `preserve_order` is enabled, which this
        // workspace never enables: the text is canonical.
        JsonText(Text::from(value.to_string()))
    }

    /// Text read back from storage, written there by this type (so already canonical).
    pub(crate) fn from_stored(text: &str) -> Self {
        JsonText(Text::from(text))
    }

    /// The parsed value. Stored text was produced by `serde_json`, so it always parses; a
    /// damaged value reads as `null` rather than failing a whole listing.
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        self.0 == "null"
    }

    /// Whether this is `null` or an empty object/array.
    pub fn is_empty(&self) -> bool {
        matches!(self.0.as_str(), "null" | "{}" | "[]")
    }
}

impl Default for JsonText {
    fn default() -> Self {
        JsonText::null()
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<serde_json::Value> for JsonText {
    fn from(value: serde_json::Value) -> Self {
        JsonText::from_value(&value)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            self.value().serialize(serializer)
        } else {
            serializer.serialize_str(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let v = serde_json::Value::deserialize(deserializer)?;
            Ok(JsonText::from_value(&v))
        } else {
            Ok(JsonText(Text::deserialize(deserializer)?))
        }
    }
}
