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
    /// The envelope: tags, importance, confidence, source, task, key, metadata.
    #[serde(flatten)]
    pub envelope: EnvelopeJson,
    /// The typed body.
    pub body: Value,
    /// Fields no revision has (refused by [`RecordJson::into_record`]).
    #[serde(flatten, skip_serializing)]
    unknown: Map<String, Value>,
}

/// A record's envelope as JSON: the one list of its fields with their names and forms, which
/// the export line and the `--json` view ([`RecordJson`]), the loose input form
/// ([`parse_input`]) and its inverse ([`loose_form`]) all use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvelopeJson {
    /// Tags (a loose record may give one as a string).
    #[serde(deserialize_with = "one_or_many")]
    pub tags: TextList,
    /// Importance, 1 to 5.
    pub importance: Option<u8>,
    /// Confidence, 0 to 1.
    pub confidence: Option<f32>,
    /// The agent that recorded it (`agent` in a loose record).
    pub source: Option<Text>,
    /// Its task.
    pub task: Option<Text>,
    /// An explicit identity key.
    pub key: Option<Text>,
    /// Free metadata.
    pub metadata: JsonText,
}

/// Tags as a list of strings, or one string.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<TextList, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Tags {
        One(Text),
        Many(TextList),
    }
    Ok(match Option::<Tags>::deserialize(d)? {
        None => TextList::new(),
        Some(Tags::One(t)) => mnemon_storage::text_list![t.as_str()],
        Some(Tags::Many(ts)) => ts,
    })
}

impl From<&Envelope> for EnvelopeJson {
    fn from(e: &Envelope) -> Self {
        EnvelopeJson {
            tags: e.tags.clone(),
            importance: e.importance,
            confidence: e.confidence,
            source: e.source.clone(),
            task: e.task.clone(),
            key: e.key.clone(),
            metadata: e.metadata.clone(),
        }
    }
}

impl From<EnvelopeJson> for Envelope {
    fn from(e: EnvelopeJson) -> Self {
        Envelope {
            tags: e.tags,
            importance: e.importance,
            confidence: e.confidence,
            source: e.source,
            task: e.task,
            key: e.key,
            metadata: e.metadata,
        }
    }
}

impl EnvelopeJson {
    /// Its fields' names, in order.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(EnvelopeJson::default()) {
            Ok(Value::Object(m)) => m.into_iter().map(|(k, _)| k).collect(),
            _ => Vec::new(),
        }
    }

    /// The envelope a loose record's fields give (`fields`: its keys that are not the body's),
    /// with `agent` as another name of `source`. An ill-formed field is an error naming it.
    fn from_loose(mut fields: Map<String, Value>) -> Result<EnvelopeJson> {
        if let Some(agent) = fields.remove("agent")
            && fields.get("source").is_none_or(|s| s.is_null())
        {
            fields.insert("source".into(), agent);
        }
        let names = EnvelopeJson::names();
        fields.retain(|k, _| names.contains(k));
        serde_json::from_value(Value::Object(fields.clone())).map_err(|e| {
            // Name the field: the first that fails alone.
            let field = fields.iter().find(|(k, v)| {
                let one = Map::from_iter([((*k).clone(), (*v).clone())]);
                serde_json::from_value::<EnvelopeJson>(Value::Object(one)).is_err()
            });
            match field {
                Some((k, v)) => invalid(format!("`{k}` cannot be {v}: {e}")),
                None => invalid(e.to_string()),
            }
        })
    }
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
            envelope: EnvelopeJson::from(&r.envelope),
            body: r.body.to_json(),
            unknown: Map::new(),
        }
    }

    /// Back to a revision (validating the body against the kind).
    pub fn into_record(self) -> Result<Record, InputError> {
        if let Some(k) = self.unknown.keys().next() {
            return Err(InputError::Invalid(format!("unknown field `{k}` in an export line")));
        }
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
            envelope: self.envelope.into(),
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

/// The keys of a loose record that are not its body's (unless its kind claims them, see
/// [`body_claims`]): where and when it lives, and its envelope ([`EnvelopeJson`], with `agent`
/// for `source`).
fn is_envelope_key(key: &str) -> bool {
    ["namespace", "kind", "id", "valid_from", "valid_until", "expires_at", "agent"].contains(&key)
        || EnvelopeJson::names().iter().any(|n| n == key)
}

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
    let claimed = |k: &str| body_claims(kind, k);
    let envelope_fields: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| is_envelope_key(k) && !claimed(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let envelope: Envelope = EnvelopeJson::from_loose(envelope_fields)?.into();
    let valid_from = time_field(&obj, "valid_from")?;
    let valid_until = time_field(&obj, "valid_until")?;
    let expires_at = time_field(&obj, "expires_at")?;
    let body_fields: Map<String, Value> =
        obj.into_iter().filter(|(k, _)| !is_envelope_key(k) || body_claims(kind, k)).collect();
    // What the kind requires and the envelope's ranges are checked once, by the store, when
    // the record is written ([`NewRecord::check`] checks them before).
    let body = Body::parse_json(kind, Value::Object(body_fields))?;
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
        if fields.contains_key(k) || is_envelope_key(k) || v.is_null() {
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
            // Refused when read, or when checked as the store will.
            let e = parse_input(bad.clone(), Some(Kind::Decision), &ns)
                .and_then(|i| i.record.check().map_err(Into::into))
                .err();
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

/// The loose form of a record (what [`parse_input`] reads back): its body's fields with its
/// envelope's and its valid times beside them.
pub fn loose_form(r: &Record) -> Value {
    let mut obj = match r.body.to_json() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let kind = r.kind();
    if let Ok(Value::Object(env)) = serde_json::to_value(EnvelopeJson::from(&r.envelope)) {
        obj.extend(env.into_iter().filter(|(k, _)| !body_claims(kind, k)));
    }
    obj.insert("valid_from".into(), serde_json::json!(r.valid_from));
    obj.insert("valid_until".into(), serde_json::json!(r.valid_until));
    obj.insert("expires_at".into(), serde_json::json!(r.expires_at));
    Value::Object(obj)
}

#[cfg(test)]
mod envelope_tests {
    use serde_json::json;

    use super::*;

    fn ns() -> Namespace {
        Namespace::new("p").unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn one_envelope_schema_reads_writes_and_round_trips()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        // The loose form: a tag as a string, `agent` for `source`, envelope beside the body.
        let loose = json!({"title": "Use redb", "tags": "storage", "agent": "dev", "importance": 4,
                           "confidence": 0.5, "metadata": {"pr": 7}, "valid_from": "2024-01-01"});
        let rec = parse_input(loose, Some(Kind::Decision), &ns())?.record;
        assert_eq!(rec.envelope.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["storage"]);
        assert_eq!((rec.envelope.source.as_deref(), rec.envelope.importance), (Some("dev"), Some(4)));
        // An ill-formed field is named; a value out of range is the storage's rule.
        let e = parse_input(json!({"title": "x", "importance": "high"}), Some(Kind::Decision), &ns());
        assert!(e.err().is_some_and(|e| e.to_string().contains("`importance` cannot be \"high\"")));
        let e =
            parse_input(json!({"title": "x", "confidence": 7}), Some(Kind::Decision), &ns())?.record.check();
        assert!(e.err().is_some_and(|e| e.to_string().contains("confidence")));
        // A preference's `key` and a metrics record's `task` are the body's.
        let p = parse_input(json!({"key": "Indent", "value": 4}), Some(Kind::Preference), &ns())?.record;
        assert_eq!(p.envelope.key, None);

        // The export line: the envelope's fields in place, unknown fields refused on import.
        let r = Record {
            namespace: ns(),
            id: rec.id,
            rev: 0,
            recorded_at: Timestamp::from_micros(1),
            replaced_at: None,
            op: Op::Insert,
            valid_from: Timestamp::from_micros(1),
            valid_until: None,
            expires_at: None,
            supersedes: None,
            superseded_by: None,
            envelope: rec.envelope.clone(),
            body: rec.body.clone(),
        };
        let text = serde_json::to_string(&RecordJson::from_record(&r))?;
        let line: Value = serde_json::from_str(&text)?;
        // In the order written (a Value's map sorts its keys).
        let mut keys: Vec<&str> =
            line.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        keys.sort_by_key(|k| text.find(&format!("\"{k}\":")));
        assert_eq!(
            keys,
            [
                "namespace",
                "id",
                "kind",
                "rev",
                "op",
                "recorded_at",
                "replaced_at",
                "valid_from",
                "valid_until",
                "expires_at",
                "supersedes",
                "superseded_by",
                "tags",
                "importance",
                "confidence",
                "source",
                "task",
                "key",
                "metadata",
                "body"
            ]
        );
        let back: RecordJson = serde_json::from_value(line.clone())?;
        assert_eq!(back.into_record()?, r);
        let mut extra = line;
        extra["titel"] = json!("typo");
        let e = serde_json::from_value::<RecordJson>(extra)?.into_record();
        assert!(e.err().is_some_and(|e| e.to_string().contains("unknown field `titel`")));

        // The loose form reads back as the same record.
        let again = parse_input(loose_form(&r), Some(Kind::Decision), &ns())?.record;
        assert_eq!((again.body, again.envelope), (r.body, r.envelope));
        Ok(())
    }
}
