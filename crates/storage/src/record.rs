//! Records: the envelope every kind shares, and the stored revision layout.

use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::codec::{self, CodecError};
use crate::error::InputError;
use crate::id::{Namespace, RecordId};
use crate::json::JsonText;
use crate::kind::Kind;
use crate::time::Timestamp;

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
    pub tags: Vec<String>,
    /// Importance 1..=5 (the default expiry follows it: 1d, 7d, 30d, 90d, permanent).
    #[serde(default)]
    pub importance: Option<u8>,
    /// Confidence 0..=1.
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The agent (or person) that recorded it.
    #[serde(default)]
    pub source: Option<String>,
    /// The task it belongs to.
    #[serde(default)]
    pub task: Option<String>,
    /// An explicit identity key (normalised), overriding the kind's default identity.
    #[serde(default)]
    pub key: Option<String>,
    /// Free JSON metadata.
    #[serde(default)]
    pub metadata: JsonText,
}

/// Days to live for importance 1..=4; importance 5 is permanent (the seeds' TTL table).
pub const TTL_DAYS: [u32; 4] = [1, 7, 30, 90];

impl Envelope {
    /// Check importance, confidence and tags; normalise tags (trimmed, de-duplicated, in order).
    pub fn validate(&mut self) -> Result<(), InputError> {
        if let Some(i) = self.importance {
            if !(1..=5).contains(&i) {
                return Err(InputError::BadImportance { value: i64::from(i) });
            }
        }
        if let Some(c) = self.confidence {
            if !c.is_finite() || !(0.0..=1.0).contains(&c) {
                return Err(InputError::BadConfidence { value: f64::from(c) });
            }
        }
        let mut tags: Vec<String> = Vec::with_capacity(self.tags.len());
        for t in &self.tags {
            let t = t.trim();
            if t.is_empty() || t.chars().any(char::is_control) {
                return Err(InputError::BadTag { tag: t.to_string() });
            }
            if !tags.iter().any(|x| x == t) {
                tags.push(t.to_string());
            }
        }
        self.tags = tags;
        if let Some(k) = &self.key {
            let n = crate::body::normalise_key(k);
            self.key = (!n.is_empty()).then_some(n);
        }
        Ok(())
    }

    /// The default expiry for a record valid from `from`: by importance, permanent if unset.
    pub fn default_expiry(&self, from: Timestamp) -> Option<Timestamp> {
        match self.importance {
            Some(i @ 1..=4) => TTL_DAYS.get(usize::from(i - 1)).map(|d| from.plus_days(*d)),
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
        self.envelope.key.clone().or_else(|| self.body.default_identity())
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
        if let Some(u) = self.valid_until {
            if v >= u {
                return if self.superseded_by.is_some() { Status::Superseded } else { Status::Retired };
            }
        }
        if let Some(e) = self.expires_at {
            if v >= e {
                return Status::Expired;
            }
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

/// The version byte of the revision layout.
pub(crate) const REVISION_CODEC_VERSION: u8 = 1;

/// Field order of the stored header (version 1). Keep [`HeaderRef`] and [`HeaderOwned`] in
/// the same order: the codec is positional.
#[derive(Serialize)]
struct HeaderRef<'a> {
    kind: u8,
    op: Op,
    valid_from: Timestamp,
    valid_until: Option<Timestamp>,
    expires_at: Option<Timestamp>,
    supersedes: Option<RecordId>,
    superseded_by: Option<RecordId>,
    envelope: &'a Envelope,
}

#[derive(Deserialize)]
struct HeaderOwned {
    kind: u8,
    op: Op,
    valid_from: Timestamp,
    valid_until: Option<Timestamp>,
    expires_at: Option<Timestamp>,
    supersedes: Option<RecordId>,
    superseded_by: Option<RecordId>,
    envelope: Envelope,
}

/// Encode the stored form of a revision: `[version][header][body]`. The namespace, id,
/// revision number and recorded time live in the key.
pub(crate) fn encode_revision(r: &Record) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(128);
    out.push(REVISION_CODEC_VERSION);
    let header = HeaderRef {
        kind: r.kind().code(),
        op: r.op,
        valid_from: r.valid_from,
        valid_until: r.valid_until,
        expires_at: r.expires_at,
        supersedes: r.supersedes,
        superseded_by: r.superseded_by,
        envelope: &r.envelope,
    };
    codec::encode_value(&header, &mut out)?;
    r.body.encode_into(&mut out)?;
    Ok(out)
}

/// Decode a stored revision, given the parts that live in its key.
pub(crate) fn decode_revision(
    namespace: &Namespace,
    id: RecordId,
    rev: u32,
    recorded_at: Timestamp,
    bytes: &[u8],
) -> Result<Record, CodecError> {
    let (version, rest) = codec::split_version("revision", bytes)?;
    if version != REVISION_CODEC_VERSION {
        return Err(CodecError::Version {
            what: "revision",
            found: version,
            expected: REVISION_CODEC_VERSION,
        });
    }
    let (h, used) = codec::decode_prefix::<HeaderOwned>("revision header", rest)?;
    let kind = Kind::from_code(h.kind).ok_or_else(|| CodecError::Decode {
        what: "revision header",
        reason: format!("unknown kind code {}", h.kind),
    })?;
    let body_bytes = rest.get(used..).unwrap_or_default();
    let body = Body::decode(kind, body_bytes)?;
    Ok(Record {
        namespace: namespace.clone(),
        id,
        rev,
        recorded_at,
        replaced_at: None,
        op: h.op,
        valid_from: h.valid_from,
        valid_until: h.valid_until,
        expires_at: h.expires_at,
        supersedes: h.supersedes,
        superseded_by: h.superseded_by,
        envelope: h.envelope,
        body,
    })
}

/// The version byte of the current-table row layout.
pub(crate) const CURRENT_ROW_VERSION: u8 = 1;

/// A `CURRENT` row: `[version][rev: u32 LE][recorded_at: i64 LE][stored revision]`, so the
/// fast path needs no second lookup for the parts that live in the revisions key.
pub(crate) fn encode_current_row(r: &Record) -> Result<Vec<u8>, CodecError> {
    let rev = encode_revision(r)?;
    let mut out = Vec::with_capacity(13 + rev.len());
    out.push(CURRENT_ROW_VERSION);
    out.extend_from_slice(&r.rev.to_le_bytes());
    out.extend_from_slice(&r.recorded_at.as_micros().to_le_bytes());
    out.extend_from_slice(&rev);
    Ok(out)
}

/// Decode a `CURRENT` row.
pub(crate) fn decode_current_row(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
) -> Result<Record, CodecError> {
    let bad = |reason: &str| CodecError::Decode { what: "current row", reason: reason.to_string() };
    let (version, rest) = codec::split_version("current row", bytes)?;
    if version != CURRENT_ROW_VERSION {
        return Err(CodecError::Version {
            what: "current row",
            found: version,
            expected: CURRENT_ROW_VERSION,
        });
    }
    let rev: [u8; 4] = rest.get(0..4).and_then(|b| b.try_into().ok()).ok_or_else(|| bad("truncated"))?;
    let rec: [u8; 8] = rest.get(4..12).and_then(|b| b.try_into().ok()).ok_or_else(|| bad("truncated"))?;
    let body = rest.get(12..).ok_or_else(|| bad("truncated"))?;
    decode_revision(
        namespace,
        id,
        u32::from_le_bytes(rev),
        Timestamp::from_micros(i64::from_le_bytes(rec)),
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Decision;

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
                tags: vec!["a".into()],
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
        let row = encode_current_row(&r)?;
        assert_eq!(decode_current_row(&r.namespace, r.id, &row)?, r);
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
