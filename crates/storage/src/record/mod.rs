//! Records: the envelope every kind shares, and the stored revision layout.

use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::error::InputError;
use crate::id::{Namespace, RecordId};
use crate::json::JsonText;
use crate::kind::Kind;
use crate::text::{Text, TextList};
use crate::time::Timestamp;

mod revision;
mod row;
pub(crate) use revision::*;
pub(crate) use row::*;

/// The operation that produced a revision.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// The record was created.
    Insert,
    /// A correction: a new revision of the same record.
    Revise,
    /// The valid interval was closed.
    Retire,
    /// The expiry was set.
    Expire,
    /// The record was created to replace another (`supersedes` names it).
    Supersede,
    /// The record was replaced (`superseded_by` names the successor).
    Superseded,
}

/// Lifecycle status of a record at a valid time, derived from its fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// Not valid yet.
    Pending,
    /// Valid.
    Active,
    /// Replaced by its successor.
    Superseded,
    /// Its valid interval closed.
    Retired,
    /// Its TTL ran out.
    Expired,
}

/// The fields every kind shares, besides ids and times.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct Envelope {
    /// Tags.
    #[serde(default)]
    pub tags: TextList,
    /// Importance 1..=5 (the default expiry follows it: 1d, 7d, 30d, 90d, permanent).
    #[serde(default)]
    pub importance: Option<u8>,
    /// Confidence 0..=1.
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The agent (or person) that recorded it.
    #[serde(default)]
    pub source: Option<Text>,
    /// The task it belongs to.
    #[serde(default)]
    pub task: Option<Text>,
    /// An explicit identity key (normalised), overriding the kind's default identity.
    #[serde(default)]
    pub key: Option<Text>,
    /// Free JSON metadata.
    #[serde(default)]
    pub metadata: JsonText,
}

/// Days to live for importance 1..=4; importance 5 is permanent (the seeds' TTL table).
pub const TTL_DAYS: [u32; 4] = [1, 7, 30, 90];

impl Envelope {
    /// Check importance, confidence and tags; normalise tags (trimmed, de-duplicated, in order).
    pub fn validate(&mut self) -> Result<(), InputError> {
        if let Some(i) = self.importance
            && !importance_holds(i)
        {
            return Err(InputError::BadImportance { value: i64::from(i) });
        }
        if let Some(c) = self.confidence
            && !confidence_holds(c)
        {
            return Err(InputError::BadConfidence { value: f64::from(c) });
        }
        let mut tags = TextList::with_capacity(self.tags.len());
        for t in &self.tags {
            let t = t.trim();
            if t.is_empty() || t.chars().any(char::is_control) {
                return Err(InputError::BadTag { tag: t.to_string() });
            }
            if !tags.iter().any(|x| x == t) {
                tags.push(Text::from(t));
            }
        }
        self.tags = tags;
        if let Some(k) = &self.key {
            let n = crate::body::normalise_key(k);
            self.key = (!n.is_empty()).then(|| Text::from(n));
        }
        Ok(())
    }

    /// The default expiry of a record of `kind` whose time to live starts at `from`: by
    /// importance for the kinds of scoped memory (see [`Kind::has_ttl`]), permanent for the
    /// others and when the importance is 5 or unset.
    pub fn default_expiry(&self, kind: crate::kind::Kind, from: Timestamp) -> Option<Timestamp> {
        match self.importance {
            Some(i @ 1..=4) if kind.has_ttl() => TTL_DAYS.get(usize::from(i - 1)).map(|d| from.plus_days(*d)),
            _ => None,
        }
    }
}

/// One revision of a record: everything known about it, as recorded at `recorded_at`.
#[derive(Clone, PartialEq, Debug)]
pub struct Record {
    /// The namespace.
    pub namespace: Namespace,
    /// The id.
    pub id: RecordId,
    /// The revision number, from 0.
    pub rev: u32,
    /// Transaction time: when the database recorded this revision.
    pub recorded_at: Timestamp,
    /// Transaction time: when a later revision replaced it (filled by history and exports).
    pub replaced_at: Option<Timestamp>,
    /// What produced this revision.
    pub op: Op,
    /// Valid time start.
    pub valid_from: Timestamp,
    /// Valid time end (exclusive); `None` is open.
    pub valid_until: Option<Timestamp>,
    /// When its TTL runs out; `None` is never.
    pub expires_at: Option<Timestamp>,
    /// The record it replaced.
    pub supersedes: Option<RecordId>,
    /// The record that replaced it.
    pub superseded_by: Option<RecordId>,
    /// Shared fields.
    pub envelope: Envelope,
    /// The typed body.
    pub body: Body,
}

impl Record {
    /// The kind.
    pub fn kind(&self) -> Kind {
        self.body.kind()
    }

    /// The body as its typed struct, if it is of that kind.
    pub fn body_as<T: crate::body::KindBody>(&self) -> Option<&T> {
        T::from_body_ref(&self.body)
    }

    /// The interval in which the record is visible: `[valid_from, min(valid_until, expires_at))`,
    /// or `None` when that is empty.
    pub fn visible(&self) -> Option<Visible> {
        Visible::new(self.valid_from, self.valid_until, self.expires_at)
    }

    /// Whether the record is visible at valid time `v`.
    pub fn is_visible_at(&self, v: Timestamp) -> bool {
        self.visible().is_some_and(|vis| vis.contains(v))
    }

    /// The identity key: explicit, or the kind's default.
    pub fn identity(&self) -> Option<String> {
        self.envelope.key.as_ref().map(|k| k.to_string()).or_else(|| self.body.default_identity())
    }

    /// Whether the record holds its identity key: open-ended and not superseded.
    pub fn holds_identity(&self) -> bool {
        self.valid_until.is_none() && self.superseded_by.is_none()
    }

    /// The lifecycle status at valid time `v`.
    pub fn status_at(&self, v: Timestamp) -> Status {
        if v < self.valid_from {
            return Status::Pending;
        }
        if let Some(u) = self.valid_until
            && v >= u
        {
            return if self.superseded_by.is_some() { Status::Superseded } else { Status::Retired };
        }
        if let Some(e) = self.expires_at
            && v >= e
        {
            return Status::Expired;
        }
        Status::Active
    }
}

/// A non-empty half-open valid-time interval `[from, until)`; `until == Timestamp::MAX` is open.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Visible {
    /// Start (inclusive).
    pub from: Timestamp,
    /// End (exclusive).
    pub until: Timestamp,
}

impl Visible {
    /// The visible interval of the given fields, `None` if empty.
    pub fn new(from: Timestamp, until: Option<Timestamp>, expires: Option<Timestamp>) -> Option<Visible> {
        let u = until.unwrap_or(Timestamp::MAX);
        let e = expires.unwrap_or(Timestamp::MAX);
        let until = u.min(e);
        (from < until).then_some(Visible { from, until })
    }

    /// Whether `t` lies inside.
    pub fn contains(self, t: Timestamp) -> bool {
        self.from <= t && t < self.until
    }

    /// Whether the end is open.
    pub fn is_open(self) -> bool {
        self.until == Timestamp::MAX
    }
}

/// Whether an importance is one a record may have: 1 to 5.
fn importance_holds(i: u8) -> bool {
    (1..=5).contains(&i)
}

/// Whether a confidence is one a record may have: a number from 0 to 1.
fn confidence_holds(c: f32) -> bool {
    c.is_finite() && (0.0..=1.0).contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Decision;
    use crate::error::CodecError;

    fn sample() -> Record {
        Record {
            namespace: Namespace::new("ns").unwrap(),
            id: RecordId::new(),
            rev: 3,
            recorded_at: Timestamp::from_micros(10),
            replaced_at: None,
            op: Op::Revise,
            valid_from: Timestamp::from_micros(5),
            valid_until: Some(Timestamp::from_micros(50)),
            expires_at: None,
            supersedes: Some(RecordId::new()),
            superseded_by: None,
            envelope: Envelope {
                tags: crate::text_list!["a"],
                importance: Some(4),
                confidence: Some(0.5),
                source: Some("agent-1".into()),
                task: None,
                key: None,
                metadata: serde_json::json!({"k": [1, 2]}).into(),
            },
            body: Body::Decision(Decision { title: "t".into(), rationale: "r".into(), ..Default::default() }),
        }
    }

    #[test]
    fn revision_round_trips() -> Result<(), CodecError> {
        let r = sample();
        let bytes = encode_revision(&r)?;
        let back = decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &bytes)?;
        assert_eq!(back, r);
        let row = encode_current_row(&r)?.unwrap();
        assert_eq!(decode_current_row(&r.namespace, r.id, &row)?, r);
        assert_eq!(
            current_row_visible(&row, r.namespace.as_str(), r.id)?,
            (r.visible().unwrap(), r.kind().code())
        );
        // A row not visible at the asked time is skipped from its header, without decoding.
        let at =
            |t: i64| decode_current_row_at(&r.namespace, r.id, &row, Some(Timestamp::from_micros(t)), |x| x);
        assert_eq!(at(4)?, None);
        assert_eq!(at(5)?.as_ref(), Some(&r));
        assert_eq!(at(50)?, None);
        Ok(())
    }

    /// Any change to a sealed value's bytes is found: every bit of a revision and of a current
    /// row flipped in turn fails to decode (a checksum mismatch, or a version this build does
    /// not know when the version byte itself changed), where a version-1 value decoded a
    /// changed letter as the right one. Version-1 values still decode.
    #[test]
    fn damage_to_a_sealed_value_is_found() -> Result<(), CodecError> {
        let r = sample();
        let bytes = encode_revision(&r)?;
        let row = encode_current_row(&r)?.unwrap_or_default();
        assert_eq!((bytes[0], row[0]), (REVISION_CODEC_VERSION, CURRENT_ROW_VERSION));
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 1 << (i % 8);
            let e = decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &b);
            assert!(
                matches!(e, Err(CodecError::Checksum { .. } | CodecError::Version { .. })),
                "bit {i}: {e:?}"
            );
        }
        for i in 0..row.len() * 8 {
            let mut b = row.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(decode_current_row(&r.namespace, r.id, &b).is_err(), "bit {i}");
            assert!(current_row_visible(&b, r.namespace.as_str(), r.id).is_err(), "bit {i}");
        }
        for cut in [0, 1, 4, bytes.len() - 1] {
            assert!(decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &bytes[..cut]).is_err());
        }
        // Version 1: the same layout unsealed, inside a version-1 row too.
        let mut v1 = bytes[..bytes.len() - SEAL_BYTES].to_vec();
        v1[0] = REVISION_UNSEALED;
        assert_eq!(decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &v1)?, r);
        let mut row1 = row[..CURRENT_ROW_HEADER].to_vec();
        row1[0] = CURRENT_ROW_UNSEALED;
        row1.extend_from_slice(&v1);
        assert_eq!(decode_current_row(&r.namespace, r.id, &row1)?, r);
        for row in [&row, &row1] {
            assert_eq!(decode_checked_current_row(&r.namespace, r.id, row, |x| x)?, r);
        }
        // The upgrade's sealing makes the values this build writes.
        let (ns, key) = (r.namespace.as_str(), revision_key(r.id, r.recorded_at, r.rev));
        assert_eq!(sealed_revision(&v1, ns, &key), Some(bytes.clone()));
        assert_eq!(sealed_current_row(&row1, ns, r.id), Some(row.clone()));
        assert_eq!((sealed_revision(&bytes, ns, &key), sealed_current_row(&row, ns, r.id)), (None, None));
        // Read under another key (a changed id, time, revision or namespace), a sealed value
        // fails its checksum as a changed value does.
        let other = Namespace::new("nt").unwrap();
        let later = r.recorded_at.plus_micros(1);
        for (n, id, rev, at) in [
            (&other, r.id, r.rev, r.recorded_at),
            (&r.namespace, RecordId::new(), r.rev, r.recorded_at),
            (&r.namespace, r.id, r.rev + 1, r.recorded_at),
            (&r.namespace, r.id, r.rev, later),
        ] {
            let e = decode_revision(n, id, rev, at, &bytes);
            assert!(matches!(e, Err(CodecError::Checksum { .. })), "{e:?}");
        }
        assert!(matches!(decode_current_row(&other, r.id, &row), Err(CodecError::Checksum { .. })));
        assert!(matches!(
            decode_current_row(&r.namespace, RecordId::new(), &row),
            Err(CodecError::Checksum { .. })
        ));
        // A row made from a version-1 revision is the row made from its sealed form.
        assert_eq!(
            current_row(
                &r,
                r.visible().unwrap_or(Visible { from: r.valid_from, until: Timestamp::MAX }),
                &v1
            ),
            row
        );
        Ok(())
    }

    #[test]
    fn every_kind_round_trips_through_the_binary_layout() -> Result<(), Box<dyn std::error::Error>> {
        use serde_json::json;
        let id = RecordId::new().to_string();
        let samples = [
            (
                Kind::Decision,
                json!({"title": "t", "description": "d", "rationale": "r", "context": "c",
                "status": "deprecated", "alternatives": ["a", "b"], "consequences": ["x"],
                "related_decisions": [id], "related_tasks": [id]}),
            ),
            (
                Kind::Task,
                json!({"title": "t", "status": "blocked", "priority": "critical", "assignee": "ann",
                "due": "2024-05-07T10:00:00Z", "completed_at": null, "dependencies": [id], "blocked_by": "review",
                "related_decisions": [id], "status_history": [{"from": "backlog", "to": "blocked",
                "at": "2024-05-07T10:00:00Z", "reason": "waiting"}]}),
            ),
            (
                Kind::Entity,
                json!({"name": "Redis", "entity_type": "service", "description": "cache",
                "properties": {"port": 6379, "tls": true}, "related_entities": [id],
                "mentions": [{"context": "in chat", "at": "2024-05-07T10:00:00Z", "source": "conversation"}]}),
            ),
            (Kind::Relation, json!({"from": "a", "relation_type": "uses", "to": "b", "description": "d"})),
            (Kind::Observation, json!({"entity": "Redis", "content": "fast"})),
            (
                Kind::Pattern,
                json!({"title": "p", "description": "d", "category": "c", "example": "fn x() {}"}),
            ),
            (Kind::Gotcha, json!({"title": "g", "problem": "p", "solution": "s", "severity": "critical"})),
            (
                Kind::Learning,
                json!({"text": "l", "related_files": ["a.rs", "a very long path/that/is/not/inline.rs"]}),
            ),
            (Kind::ErrorFix, json!({"error": "e", "solution": "s", "context": "c"})),
            (
                Kind::Episode,
                json!({"episode_type": "error_fix", "content": "c", "summary": "s", "files": ["f"],
                "access_count": 123456789, "last_accessed_at": "1969-12-31T23:59:59Z"}),
            ),
            (Kind::Knowledge, json!({"category": "c", "content": "k", "last_used": "2024-05-07"})),
            (Kind::Preference, json!({"key": "indent", "value": [1, {"a": null}], "text": "spaces"})),
            (Kind::Brief, json!({"text": "b"})),
            (
                Kind::Conversation,
                json!({"title": "t", "summary": "s", "ended_at": "2024-05-07",
                "extracted_decisions": [id], "extracted_tasks": [], "extracted_entities": [id]}),
            ),
            (Kind::Message, json!({"conversation": id, "role": "tool", "content": "m"})),
            (
                Kind::Metrics,
                json!({"task": "t", "iterations": 4, "quality_gate_passed": true, "duration_ms": 99,
                "errors": ["x"]}),
            ),
        ];
        assert_eq!(samples.len(), Kind::ALL.len(), "a sample per kind");
        for (kind, value) in samples {
            let mut r = sample();
            r.body = Body::from_json(kind, value)?;
            let bytes = encode_revision(&r)?;
            let back = decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &bytes)?;
            assert_eq!(back, r, "{kind}");
            // Every strict prefix fails to decode rather than misreading.
            for n in [bytes.len() - 1, bytes.len() / 2, 3] {
                assert!(
                    decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &bytes[..n]).is_err(),
                    "{kind} prefix {n}"
                );
            }
            // The empty body of every kind round-trips too.
            r.body = Body::empty(kind);
            let bytes = encode_revision(&r)?;
            assert_eq!(decode_revision(&r.namespace, r.id, r.rev, r.recorded_at, &bytes)?, r);
        }
        Ok(())
    }

    #[test]
    fn visibility_and_status() {
        let mut r = sample();
        r.superseded_by = Some(RecordId::new());
        let t = Timestamp::from_micros;
        assert!(!r.is_visible_at(t(4)));
        assert!(r.is_visible_at(t(5)));
        assert!(r.is_visible_at(t(49)));
        assert!(!r.is_visible_at(t(50)));
        assert_eq!(r.status_at(t(4)), Status::Pending);
        assert_eq!(r.status_at(t(50)), Status::Superseded);
        r.expires_at = Some(t(20));
        assert_eq!(r.status_at(t(20)), Status::Expired);
        assert!(!r.is_visible_at(t(20)));
    }
}
