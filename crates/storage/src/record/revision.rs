//! The stored revision: its keys, its layout, and the checksum that seals it and its key.

use crate::body::Body;
use crate::codec::{self, CodecError};
use crate::id::{Namespace, RecordId};
use crate::json::JsonText;
use crate::kind::Kind;
use crate::text::{Text, TextList};
use crate::time::Timestamp;

use super::*;

/// The version byte of the revision layout this build writes: version 1's layout, sealed
/// (format 13).
pub(crate) const REVISION_CODEC_VERSION: u8 = 2;
/// The version byte of revisions written before format 13: the same layout, with no checksum.
pub(crate) const REVISION_UNSEALED: u8 = 1;

/// Bytes of the checksum that ends a sealed value.
pub(super) const SEAL_BYTES: usize = 4;

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
pub(super) fn checksum(body: &[u8], ns: &str, key: &[u8]) -> [u8; SEAL_BYTES] {
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
    pub(crate) const fn code(self) -> u8 {
        match self {
            Op::Insert => 0,
            Op::Revise => 1,
            Op::Retire => 2,
            Op::Expire => 3,
            Op::Supersede => 4,
            Op::Superseded => 5,
        }
    }

    pub(crate) const fn from_code(c: u8) -> Option<Op> {
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
pub(super) fn parse_revision<T>(
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
