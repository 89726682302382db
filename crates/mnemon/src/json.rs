//! JSON forms of records: the lossless export line, the view printed by `--json`, and the
//! loose input accepted by `mnemon add` and simple imports.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use mnemon_storage::{
    Body, Envelope, Expiry, InputError, JsonText, Kind, Namespace, NewRecord, Op, Record, RecordId, Status,
    Text, TextList, Timestamp,
};

use crate::error::{Result, invalid};

/// One revision as a JSON object: the lossless export format (`mnemon export`), one per line.
/// Field order is fixed, so exports are byte-for-byte reproducible.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordJson {
    /// Namespace.
    pub namespace: Namespace,
    /// Record id.
    pub id: RecordId,
    /// Kind.
    pub kind: Kind,
    /// Revision number.
    pub rev: u32,
    /// The operation that produced the revision.
    pub op: Op,
    /// Transaction time start.
    pub recorded_at: Timestamp,
    /// Transaction time end (derived; ignored on import).
    #[serde(default)]
    pub replaced_at: Option<Timestamp>,
    /// Valid time start.
    pub valid_from: Timestamp,
    /// Valid time end.
    #[serde(default)]
    pub valid_until: Option<Timestamp>,
    /// Expiry.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    /// The record it replaced.
    #[serde(default)]
    pub supersedes: Option<RecordId>,
    /// The record that replaced it.
    #[serde(default)]
    pub superseded_by: Option<RecordId>,
    /// Tags.
    #[serde(default)]
    pub tags: TextList,
    /// Importance.
    #[serde(default)]
    pub importance: Option<u8>,
    /// Confidence.
    #[serde(default)]
    pub confidence: Option<f32>,
    /// Source agent.
    #[serde(default)]
    pub source: Option<Text>,
    /// Task.
    #[serde(default)]
    pub task: Option<Text>,
    /// Explicit identity key.
    #[serde(default)]
    pub key: Option<Text>,
    /// Free metadata.
    #[serde(default)]
    pub metadata: JsonText,
    /// The typed body.
    pub body: Value,
}

impl RecordJson {
    /// The JSON form of a revision.
    pub fn from_record(r: &Record) -> Self {
        RecordJson {
            namespace: r.namespace.clone(),
            id: r.id,
            kind: r.kind(),
            rev: r.rev,
            op: r.op,
            recorded_at: r.recorded_at,
            replaced_at: r.replaced_at,
            valid_from: r.valid_from,
            valid_until: r.valid_until,
            expires_at: r.expires_at,
            supersedes: r.supersedes,
            superseded_by: r.superseded_by,
            tags: r.envelope.tags.clone(),
            importance: r.envelope.importance,
            confidence: r.envelope.confidence,
            source: r.envelope.source.clone(),
            task: r.envelope.task.clone(),
            key: r.envelope.key.clone(),
            metadata: r.envelope.metadata.clone(),
            body: r.body.to_json(),
        }
    }

    /// Back to a revision (validating the body against the kind).
    pub fn into_record(self) -> Result<Record, InputError> {
        let body = Body::from_json(self.kind, self.body)?;
        Ok(Record {
            namespace: self.namespace,
            id: self.id,
            rev: self.rev,
            recorded_at: self.recorded_at,
            replaced_at: self.replaced_at,
            op: self.op,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            expires_at: self.expires_at,
            supersedes: self.supersedes,
            superseded_by: self.superseded_by,
            envelope: Envelope {
                tags: self.tags,
                importance: self.importance,
                confidence: self.confidence,
                source: self.source,
                task: self.task,
                key: self.key,
                metadata: self.metadata,
            },
            body,
        })
    }
}

/// What `--json` prints for a record: its status at the queried valid time, then the record.
#[derive(Clone, Debug, Serialize)]
pub struct RecordView {
    /// Status at the valid time of the query.
    pub status: Status,
    /// The record.
    #[serde(flatten)]
    pub record: RecordJson,
}

impl RecordView {
    /// The view of `r` at valid time `at`.
    pub fn new(r: &Record, at: Timestamp) -> Self {
        RecordView { status: r.status_at(at), record: RecordJson::from_record(r) }
    }
}

/// A record described loosely: envelope fields and body fields side by side, as accepted by
/// `mnemon add KIND --data` and by the simple import form
/// `{"namespace","kind","text" or typed fields,"valid_from","valid_until","tags","importance","metadata"}`.
#[derive(Clone, Debug)]
pub struct RecordInput {
    /// Namespace, if the input names one.
    pub namespace: Option<Namespace>,
    /// The new record (namespace filled with the default if the input had none).
    pub record: NewRecord,
}

const ENVELOPE_KEYS: &[&str] = &[
    "namespace",
    "kind",
    "id",
    "valid_from",
    "valid_until",
    "expires_at",
    "tags",
    "importance",
    "confidence",
    "source",
    "agent",
    "task",
    "key",
    "metadata",
];

/// Whether `field` is a body field of `kind` that shares its name with an envelope field.
fn body_claims(kind: Kind, field: &str) -> bool {
    matches!((kind, field), (Kind::Preference, "key") | (Kind::Metrics, "task"))
}

fn time_field(obj: &Map<String, Value>, name: &str) -> Result<Option<Timestamp>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(Timestamp::parse(s)?)),
        Some(other) => Err(invalid(format!("`{name}` must be a time string, not {other}"))),
    }
}

fn opt_string(obj: &Map<String, Value>, name: &str) -> Result<Option<Text>> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(Text::from(s.as_str()))),
        Some(other) => Err(invalid(format!("`{name}` must be a string, not {other}"))),
    }
}

/// Parse a loose record. `kind` is required either as the argument or in the input; a kind
/// in the input that contradicts the argument is an error.
pub fn parse_input(value: Value, kind: Option<Kind>, default_ns: &Namespace) -> Result<RecordInput> {
    let Value::Object(obj) = value else {
        return Err(invalid("the record must be a JSON object"));
    };
    let in_kind = match obj.get("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.parse::<Kind>()?),
        Some(other) => return Err(invalid(format!("`kind` must be a string, not {other}"))),
    };
    let kind = match (kind, in_kind) {
        (Some(a), Some(b)) if a != b => {
            return Err(invalid(format!("the data says kind {b}, but the command says {a}")));
        }
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => return Err(invalid("the record has no `kind`")),
    };
    let namespace = match obj.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Namespace::new(s.as_str())?),
        Some(other) => return Err(invalid(format!("`namespace` must be a string, not {other}"))),
    };
    let id = match opt_string(&obj, "id")? {
        Some(s) => RecordId::parse(s.as_str())?,
        None => RecordId::new(),
    };
    let tags = match obj.get("tags") {
        None | Some(Value::Null) => TextList::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|t| {
                t.as_str().map(Text::from).ok_or_else(|| invalid(format!("tags must be strings, not {t}")))
            })
            .collect::<Result<TextList>>()?,
        Some(Value::String(s)) => mnemon_storage::text_list![s.as_str()],
        Some(other) => return Err(invalid(format!("`tags` must be a list of strings, not {other}"))),
    };
    let importance = match obj.get("importance") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64() {
            Some(i) if (1..=5).contains(&i) => u8::try_from(i).ok(),
            Some(i) => return Err(InputError::BadImportance { value: i }.into()),
            None => return Err(invalid(format!("`importance` must be a whole number from 1 to 5, not {v}"))),
        },
    };
    let confidence = match obj.get("confidence") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(c) if c.is_finite() && (0.0..=1.0).contains(&c) => Some(c as f32),
            Some(c) => return Err(InputError::BadConfidence { value: c }.into()),
            None => return Err(invalid(format!("`confidence` must be a number from 0 to 1, not {v}"))),
        },
    };
    let source = match opt_string(&obj, "source")? {
        Some(s) => Some(s),
        None => opt_string(&obj, "agent")?,
    };
    let task = if body_claims(kind, "task") { None } else { opt_string(&obj, "task")? };
    let key = if body_claims(kind, "key") { None } else { opt_string(&obj, "key")? };
    let metadata = match obj.get("metadata") {
        None => JsonText::null(),
        Some(v) => JsonText::from_value(v),
    };
    let valid_from = time_field(&obj, "valid_from")?;
    let valid_until = time_field(&obj, "valid_until")?;
    let expires_at = time_field(&obj, "expires_at")?;
    let body_fields: Map<String, Value> = obj
        .into_iter()
        .filter(|(k, _)| !ENVELOPE_KEYS.contains(&k.as_str()) || body_claims(kind, k))
        .collect();
    let body = Body::from_json(kind, Value::Object(body_fields))?;
    let mut envelope = Envelope { tags, importance, confidence, source, task, key, metadata };
    envelope.validate()?;
    let record = NewRecord {
        namespace: namespace.clone().unwrap_or_else(|| default_ns.clone()),
        id,
        body,
        envelope,
        valid_from,
        valid_until,
        expiry: expires_at.map_or(Expiry::Default, Expiry::At),
        on_conflict: Default::default(),
    };
    Ok(RecordInput { namespace, record })
}

/// `patch` with its keys that are other names of `body`'s fields (a gotcha's `text` for its
/// `title`, an error fix's `pattern` for its `error`) renamed to the fields they stand for, so
/// that merged into a record's JSON it replaces the field instead of naming it twice. Which
/// field a name stands for is found by letting the kind's own deserializer place the value.
pub fn canonical_patch(kind: Kind, body: &Value, patch: &Value) -> Value {
    let (Some(fields), Some(p)) = (body.as_object(), patch.as_object()) else { return patch.clone() };
    let mut out = p.clone();
    for (k, v) in p {
        if fields.contains_key(k) || ENVELOPE_KEYS.contains(&k.as_str()) || v.is_null() {
            continue;
        }
        let stands_for = fields.keys().find(|f| {
            let mut probe = fields.clone();
            probe.remove(*f);
            probe.insert(k.clone(), v.clone());
            Body::from_json(kind, Value::Object(probe)).is_ok_and(|b| b.to_json().get(*f) == Some(v))
        });
        if let Some(f) = stands_for
            && !p.contains_key(f)
            && let Some(v) = out.remove(k)
        {
            out.insert(f.clone(), v);
        }
    }
    Value::Object(out)
}

/// RFC 7386 JSON merge patch: objects merge recursively, `null` deletes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A revision may name a field by any name the kind takes on input: the name is replaced
    /// by the field's, so the merged record names it once (a gotcha revised with `text` was
    /// refused: "duplicate field `title`").
    #[test]
    fn a_patch_names_fields_by_their_input_names() -> std::result::Result<(), mnemon_storage::InputError> {
        let gotcha = Body::from_json(Kind::Gotcha, json!({"title": "old", "problem": "d"}))?.to_json();
        let cases = [
            (
                Kind::Gotcha,
                &gotcha,
                json!({"text": "new", "tags": ["x"]}),
                json!({"title": "new", "tags": ["x"]}),
            ),
            // The field's own name too: kept, and the other name left for the parser to refuse.
            (Kind::Gotcha, &gotcha, json!({"text": "a", "title": "b"}), json!({"text": "a", "title": "b"})),
            // Deleting (null) and unknown names are left alone.
            (Kind::Gotcha, &gotcha, json!({"text": null, "nope": 1}), json!({"text": null, "nope": 1})),
        ];
        for (kind, body, patch, want) in cases {
            assert_eq!(canonical_patch(kind, body, &patch), want, "{patch}");
        }
        let fix = Body::from_json(Kind::ErrorFix, json!({"error": "E1", "solution": "s"}))?.to_json();
        assert_eq!(canonical_patch(Kind::ErrorFix, &fix, &json!({"pattern": "E2"})), json!({"error": "E2"}));
        Ok(())
    }

    #[test]
    fn loose_input_splits_envelope_and_body() -> Result<()> {
        let ns = Namespace::new("default")?;
        let i = parse_input(
            json!({"text": "Use redb", "rationale": "fast", "tags": ["db"], "importance": 4, "valid_from": "2024-05-07"}),
            Some(Kind::Decision),
            &ns,
        )?;
        assert_eq!(i.record.envelope.tags.as_slice(), [Text::from("db")]);
        assert_eq!(i.record.envelope.importance, Some(4));
        assert_eq!(i.record.valid_from, Some(Timestamp::parse("2024-05-07")?));
        assert_eq!(i.record.body.title(), "Use redb");
        Ok(())
    }

    #[test]
    fn bad_inputs_are_input_errors() -> Result<()> {
        let ns = Namespace::new("default")?;
        for bad in [
            json!([1]),
            json!({"title": "x", "importance": 9}),
            json!({"title": "x", "valid_from": "tomorrow"}),
            json!({"title": "x", "kind": "task"}),
            json!({"titel": "x"}),
            json!({"title": "x", "confidence": 2.0}),
        ] {
            let e = parse_input(bad.clone(), Some(Kind::Decision), &ns).err();
            assert!(e.as_ref().is_some_and(crate::Error::is_input), "{bad} gave {e:?}");
        }
        Ok(())
    }

    #[test]
    fn preference_key_and_metrics_task_stay_in_the_body() -> Result<()> {
        let ns = Namespace::new("default")?;
        let p = parse_input(json!({"key": "indent", "value": 4}), Some(Kind::Preference), &ns)?;
        assert_eq!(p.record.envelope.key, None);
        assert_eq!(p.record.body.title(), "indent = 4");
        Ok(())
    }

    #[test]
    fn merge_patch_follows_rfc7386() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(&mut t, &json!({"a": null, "b": {"c": 5}, "e": [1]}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "e": [1]}));
    }
}
