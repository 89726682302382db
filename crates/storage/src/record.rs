//! Records: the envelope every kind shares, and the stored revision layout.

use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::codec::{self, CodecError};
use crate::error::InputError;
use crate::id::{Namespace, RecordId};
use crate::json::JsonText;
use crate::kind::Kind;
use crate::text::{Text, TextList};
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

/// The version byte of the revision layout this build writes: version 1's layout, sealed
/// (format 13).
pub(crate) const REVISION_CODEC_VERSION: u8 = 2;
/// The version byte of revisions written before format 13: the same layout, with no checksum.
pub(crate) const REVISION_UNSEALED: u8 = 1;

/// Bytes of the checksum that ends a sealed value.
const SEAL_BYTES: usize = 4;

/// The key parts a revision is stored under besides its namespace: its id, recorded time and
/// number (little-endian), which its checksum covers.
pub(crate) fn revision_key(id: RecordId, recorded_at: Timestamp, rev: u32) -> [u8; 28] {
    let mut k = [0u8; 28];
    let (a, rest) = k.split_at_mut(16);
    let (b, c) = rest.split_at_mut(8);
    a.copy_from_slice(&id.as_u128().to_le_bytes());
    b.copy_from_slice(&recorded_at.as_micros().to_le_bytes());
    c.copy_from_slice(&rev.to_le_bytes());
    k
}

/// The key part a current row is stored under besides its namespace (and its kind, which the
/// row holds): the record's id, which its checksum covers.
pub(crate) fn row_key(id: RecordId) -> [u8; 16] {
    id.as_u128().to_le_bytes()
}

/// The CRC-32 (IEEE) of a value's bytes and of the key it is stored under (its namespace and
/// the key's other parts): a value read under a key that changed fails it as surely as a
/// changed value.
fn checksum(body: &[u8], ns: &str, key: &[u8]) -> [u8; SEAL_BYTES] {
    let mut h = crc32fast::Hasher::new();
    h.update(body);
    h.update(ns.as_bytes());
    h.update(key);
    h.finalize().to_le_bytes()
}

/// Seal a value stored under namespace `ns` and key parts `key`: append its checksum, so that
/// a read finds damage instead of decoding it (a changed letter in a text decodes as well as
/// the right one).
pub(crate) fn seal(out: &mut Vec<u8>, ns: &str, key: &[u8]) {
    let crc = checksum(out, ns, key);
    out.extend_from_slice(&crc);
}

/// A sealed value's bytes without its checksum, if the checksum matches them and the key they
/// were read under.
pub(crate) fn unseal<'a>(
    what: &'static str,
    bytes: &'a [u8],
    ns: &str,
    key: &[u8],
) -> Result<&'a [u8], CodecError> {
    let split = bytes.len().checked_sub(SEAL_BYTES).ok_or(CodecError::Checksum { what })?;
    let (body, crc) = bytes.split_at(split);
    if checksum(body, ns, key) != crc {
        return Err(CodecError::Checksum { what });
    }
    Ok(body)
}

impl Op {
    /// The stable one-byte code of an operation (part of the file format).
    const fn code(self) -> u8 {
        match self {
            Op::Insert => 0,
            Op::Revise => 1,
            Op::Retire => 2,
            Op::Expire => 3,
            Op::Supersede => 4,
            Op::Superseded => 5,
        }
    }

    const fn from_code(c: u8) -> Option<Op> {
        Some(match c {
            0 => Op::Insert,
            1 => Op::Revise,
            2 => Op::Retire,
            3 => Op::Expire,
            4 => Op::Supersede,
            5 => Op::Superseded,
            _ => return None,
        })
    }
}

/// Encode the stored form of a revision. The namespace, id, revision number and recorded time
/// live in the key. Layout (version 2; version 1 is the same without the checksum),
/// hand-written because every read decodes it:
///
/// ```text
/// [version = 2][kind: u8][op: u8][valid_from: zigzag varint]
/// [valid_until: option<zigzag>][expires_at: option<zigzag>]
/// [supersedes: option<u128 LE>][superseded_by: option<u128 LE>]
/// [tag count: varint][tags: string...][importance: u8, 0 = none][confidence: option<f32 LE>]
/// [source: option<string>][task: option<string>][key: option<string>][metadata: string]
/// [body: the kind's struct, fields as listed by its `bin_struct!` line in `body.rs`]
/// [CRC-32 of every byte before it: u32 LE]
/// ```
/// An option is a `0` byte, or a `1` byte and the value; a string is a varint length and UTF-8.
pub(crate) fn encode_revision(r: &Record) -> Result<Vec<u8>, CodecError> {
    let e = &r.envelope;
    let mut w = codec::Writer::with_capacity(160);
    w.u8(REVISION_CODEC_VERSION);
    w.u8(r.kind().code());
    w.u8(r.op.code());
    w.i64(r.valid_from.as_micros());
    w.opt_i64(r.valid_until.map(Timestamp::as_micros));
    w.opt_i64(r.expires_at.map(Timestamp::as_micros));
    w.opt_u128(r.supersedes.map(RecordId::as_u128));
    w.opt_u128(r.superseded_by.map(RecordId::as_u128));
    codec::Bin::put(&e.tags, &mut w);
    w.u8(e.importance.unwrap_or(0));
    w.opt_f32(e.confidence);
    w.opt_str(e.source.as_deref());
    w.opt_str(e.task.as_deref());
    w.opt_str(e.key.as_deref());
    w.str(e.metadata.as_str());
    r.body.encode_into(&mut w);
    let mut out = w.out;
    seal(&mut out, r.namespace.as_str(), &revision_key(r.id, r.recorded_at, r.rev));
    Ok(out)
}

/// Decode a stored revision, given the parts that live in its key.
#[inline]
pub(crate) fn decode_revision(
    namespace: &Namespace,
    id: RecordId,
    rev: u32,
    recorded_at: Timestamp,
    bytes: &[u8],
) -> Result<Record, CodecError> {
    decode_revision_with(namespace, id, rev, recorded_at, bytes, |r| r)
}

/// Decode a stored revision and hand it to `finish`. A listing passes `|r| out.push(r)`: once
/// inlined, the record is assembled where it is stored instead of being moved there through
/// two `Result`s (a record is about 550 bytes; the moves were 9% of a listing's instructions).
/// A sealed revision's checksum is checked first.
#[inline(always)]
pub(crate) fn decode_revision_with<T>(
    namespace: &Namespace,
    id: RecordId,
    rev: u32,
    recorded_at: Timestamp,
    bytes: &[u8],
    finish: impl FnOnce(Record) -> T,
) -> Result<T, CodecError> {
    let bytes = if bytes.first() == Some(&REVISION_CODEC_VERSION) {
        unseal("revision", bytes, namespace.as_str(), &revision_key(id, recorded_at, rev))?
    } else {
        bytes
    };
    parse_revision(namespace, id, rev, recorded_at, bytes, finish)
}

/// Decode a revision whose checksum, if it had one, was checked (or whose container's was):
/// the bytes of either version without a seal.
#[inline(always)]
fn parse_revision<T>(
    namespace: &Namespace,
    id: RecordId,
    rev: u32,
    recorded_at: Timestamp,
    bytes: &[u8],
    finish: impl FnOnce(Record) -> T,
) -> Result<T, CodecError> {
    let mut r = codec::Reader::new("revision", bytes);
    let got = (|| -> codec::Got<T> {
        let r = &mut r;
        let version = r.u8()?;
        if version != REVISION_CODEC_VERSION && version != REVISION_UNSEALED {
            return Err(r.fail_with(CodecError::Version {
                what: "revision",
                found: version,
                expected: REVISION_CODEC_VERSION,
            }));
        }
        let kind_code = r.u8()?;
        let Some(kind) = Kind::from_code(kind_code) else {
            return Err(r.err(&format!("unknown kind code {kind_code}")));
        };
        let op_code = r.u8()?;
        let Some(op) = Op::from_code(op_code) else {
            return Err(r.err(&format!("unknown operation code {op_code}")));
        };
        let valid_from = Timestamp::from_micros(r.i64()?);
        let valid_until = r.opt_i64()?.map(Timestamp::from_micros);
        let expires_at = r.opt_i64()?.map(Timestamp::from_micros);
        let supersedes = r.opt_u128()?.map(RecordId::from_u128);
        let superseded_by = r.opt_u128()?.map(RecordId::from_u128);
        let tags: TextList = codec::Bin::get(r)?;
        // What the encoder never writes (an importance above 5, a confidence outside 0 to 1
        // or not a number) is damage, not a record.
        let importance = match r.u8()? {
            0 => None,
            i if importance_holds(i) => Some(i),
            i => return Err(r.err(&format!("importance {i}"))),
        };
        let confidence = r.opt_f32()?;
        if let Some(c) = confidence.filter(|c| !confidence_holds(*c)) {
            return Err(r.err(&format!("confidence {c}")));
        }
        let source = r.opt_str()?.map(Text::from);
        let task = r.opt_str()?.map(Text::from);
        let key = r.opt_str()?.map(Text::from);
        let metadata = JsonText::from_stored(r.str()?);
        let body = Body::decode(kind, r)?;
        if !r.rest().is_empty() {
            return Err(r.err(&format!("{} trailing bytes", r.rest().len())));
        }
        Ok(finish(Record {
            namespace: namespace.clone(),
            id,
            rev,
            recorded_at,
            replaced_at: None,
            op,
            valid_from,
            valid_until,
            expires_at,
            supersedes,
            superseded_by,
            envelope: Envelope { tags, importance, confidence, source, task, key, metadata },
            body,
        }))
    })();
    got.map_err(|codec::Fail| r.error())
}

/// The version byte of the current-table row layout this build writes: sealed (format 13).
pub(crate) const CURRENT_ROW_VERSION: u8 = 2;
/// The version byte of current rows written before format 13: no checksum.
pub(crate) const CURRENT_ROW_UNSEALED: u8 = 1;

/// Bytes before the stored revision in a `CURRENT` row.
const CURRENT_ROW_HEADER: usize = 1 + 4 + 8 + 8 + 8;

/// A `CURRENT` row: `[version = 2][rev: u32 LE][recorded_at: i64 LE][visible_from: i64 LE]
/// [visible_until: i64 LE][the revision, version 2 without its seal][CRC-32 of every byte
/// before it: u32 LE]` (version 1: the same with a version-1 revision and no checksum): the
/// fast path needs no second lookup for the parts that live in the revisions key, and can skip
/// rows not visible at the queried time without decoding them. `revision` is an encoded
/// revision of either version.
pub(crate) fn current_row(r: &Record, vis: Visible, revision: &[u8]) -> Vec<u8> {
    let payload = match revision.first() {
        Some(&REVISION_CODEC_VERSION) => revision.get(1..revision.len().saturating_sub(SEAL_BYTES)),
        _ => revision.get(1..),
    };
    let payload = payload.unwrap_or_default();
    let mut out = Vec::with_capacity(CURRENT_ROW_HEADER + 1 + payload.len() + SEAL_BYTES);
    out.push(CURRENT_ROW_VERSION);
    out.extend_from_slice(&r.rev.to_le_bytes());
    out.extend_from_slice(&r.recorded_at.as_micros().to_le_bytes());
    out.extend_from_slice(&vis.from.as_micros().to_le_bytes());
    out.extend_from_slice(&vis.until.as_micros().to_le_bytes());
    out.push(REVISION_CODEC_VERSION);
    out.extend_from_slice(payload);
    seal(&mut out, r.namespace.as_str(), &row_key(r.id));
    out
}

/// A version-1 revision stored under `ns` and `key` ([`revision_key`]) sealed as version 2
/// (the upgrade to format 13); `None` if it is not version 1.
pub(crate) fn sealed_revision(bytes: &[u8], ns: &str, key: &[u8]) -> Option<Vec<u8>> {
    let mut out = bytes.to_vec();
    let version = out.first_mut().filter(|v| **v == REVISION_UNSEALED)?;
    *version = REVISION_CODEC_VERSION;
    seal(&mut out, ns, key);
    Some(out)
}

/// A version-1 `CURRENT` row (holding a version-1 revision) of record `id` in `ns` sealed as
/// version 2, the row [`current_row`] makes of the same record; `None` if it is not version 1.
pub(crate) fn sealed_current_row(bytes: &[u8], ns: &str, id: RecordId) -> Option<Vec<u8>> {
    let mut out = bytes.to_vec();
    let version = out.first_mut().filter(|v| **v == CURRENT_ROW_UNSEALED)?;
    *version = CURRENT_ROW_VERSION;
    if let Some(v) = out.get_mut(CURRENT_ROW_HEADER).filter(|v| **v == REVISION_UNSEALED) {
        *v = REVISION_CODEC_VERSION;
    }
    seal(&mut out, ns, &row_key(id));
    Some(out)
}

/// Encode a `CURRENT` row for a visible record.
pub(crate) fn encode_current_row(r: &Record) -> Result<Option<Vec<u8>>, CodecError> {
    match r.visible() {
        Some(vis) => Ok(Some(current_row(r, vis, &encode_revision(r)?))),
        None => Ok(None),
    }
}

fn le_i64(bytes: &[u8], at: usize) -> Option<i64> {
    bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map(i64::from_le_bytes)
}

/// A `CURRENT` row's bytes without its seal (its checksum checked against the record it is
/// stored under), of either version.
fn open_current_row<'a>(bytes: &'a [u8], ns: &str, id: RecordId) -> Result<&'a [u8], CodecError> {
    match bytes.first() {
        Some(&CURRENT_ROW_VERSION) => unseal("current row", bytes, ns, &row_key(id)),
        Some(&CURRENT_ROW_UNSEALED) => Ok(bytes),
        found => Err(CodecError::Version {
            what: "current row",
            found: found.copied().unwrap_or(0),
            expected: CURRENT_ROW_VERSION,
        }),
    }
}

/// The visible interval stored in the header of record `id`'s `CURRENT` row in `ns`, and the
/// code of the kind its revision holds (its checksum checked: a caller that knows the kind
/// from the row's key compares them).
pub(crate) fn current_row_visible(bytes: &[u8], ns: &str, id: RecordId) -> Result<(Visible, u8), CodecError> {
    let row = open_current_row(bytes, ns, id)?;
    let kind = row.get(CURRENT_ROW_HEADER + 1).copied();
    let kind =
        kind.ok_or_else(|| CodecError::Decode { what: "current row", reason: "no revision".to_string() })?;
    Ok((visible_of(row)?, kind))
}

/// The error of a row stored under one kind that holds a record of another (a changed key).
pub(crate) fn kind_mismatch(key: u8, held: u8) -> CodecError {
    CodecError::Decode { what: "current row", reason: format!("stored under kind {key}, holds kind {held}") }
}

/// The visible interval in the header of an opened `CURRENT` row.
fn visible_of(bytes: &[u8]) -> Result<Visible, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let from = le_i64(bytes, 13).ok_or_else(bad)?;
    let until = le_i64(bytes, 21).ok_or_else(bad)?;
    Ok(Visible { from: Timestamp::from_micros(from), until: Timestamp::from_micros(until) })
}

/// Decode a `CURRENT` row.
#[cfg(test)]
pub(crate) fn decode_current_row(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
) -> Result<Record, CodecError> {
    decode_current_row_at(namespace, id, bytes, None, |r| r)?
        .ok_or_else(|| CodecError::Decode { what: "current row", reason: "not decoded".to_string() })
}

/// Decode a `CURRENT` row and hand it to `finish` (see [`decode_revision_with`]), or return
/// `None` without decoding when the row is not visible at `at` (checked from the header).
#[inline(always)]
pub(crate) fn decode_current_row_at<T>(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
    at: Option<Timestamp>,
    finish: impl FnOnce(Record) -> T,
) -> Result<Option<T>, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let bytes = open_current_row(bytes, namespace.as_str(), id)?;
    let visible = visible_of(bytes)?;
    if at.is_some_and(|t| !visible.contains(t)) {
        return Ok(None);
    }
    let rev: [u8; 4] = bytes.get(1..5).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
    let rec = le_i64(bytes, 5).ok_or_else(bad)?;
    let body = bytes.get(CURRENT_ROW_HEADER..).ok_or_else(bad)?;
    parse_revision(namespace, id, u32::from_le_bytes(rev), Timestamp::from_micros(rec), body, finish)
        .map(Some)
}

/// [`decode_current_row_at`] with no time, of a row whose checksum the caller has checked on
/// these same bytes ([`current_row_visible`], as a listing does to pick its rows): one checksum
/// per row read, not two.
#[inline(always)]
pub(crate) fn decode_checked_current_row<T>(
    namespace: &Namespace,
    id: RecordId,
    bytes: &[u8],
    finish: impl FnOnce(Record) -> T,
) -> Result<T, CodecError> {
    let bad = || CodecError::Decode { what: "current row", reason: "truncated header".to_string() };
    let bytes = match bytes.first() {
        Some(&CURRENT_ROW_VERSION) => bytes.get(..bytes.len().saturating_sub(SEAL_BYTES)).ok_or_else(bad)?,
        _ => open_current_row(bytes, namespace.as_str(), id)?,
    };
    let rev: [u8; 4] = bytes.get(1..5).and_then(|b| b.try_into().ok()).ok_or_else(bad)?;
    let rec = le_i64(bytes, 5).ok_or_else(bad)?;
    let body = bytes.get(CURRENT_ROW_HEADER..).ok_or_else(bad)?;
    parse_revision(namespace, id, u32::from_le_bytes(rev), Timestamp::from_micros(rec), body, finish)
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
