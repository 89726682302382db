//! A job's operations as bytes, and back: what a replicated log carries (see
//! `Store::write_at`). Everything an operation holds is encoded as it is, before the store
//! validates it, so that a replica plans (and accepts or refuses) exactly what the node that
//! received the write asked for.
//!
//! ```text
//! [version = 1][operations: varint][operation...]
//! operation: [tag: u8][its fields, in the order of the enum's declaration]
//! ```
//! Fields use the codec of stored revisions (`codec.rs`): varints, zigzag varint times, an
//! option as a `0` byte or a `1` byte and the value, a string as a varint length and UTF-8, a
//! body as its kind's struct (`bin_struct!` in `body.rs`). A restored revision is its key's
//! parts followed by its stored form, checksum included.

use crate::body::Body;
use crate::codec::{Fail, Got, Reader, Writer};
use crate::error::CodecError;
use crate::id::{Namespace, RecordId};
use crate::kind::Kind;
use crate::record::{self, Envelope};
use crate::text::{Text, TextList};
use crate::time::Timestamp;

use super::{Expiry, NewRecord, OnConflict, Revise, WriteOp};

const JOB_VERSION: u8 = 1;

const INSERT: u8 = 1;
const REVISE: u8 = 2;
const RETIRE: u8 = 3;
const EXPIRE: u8 = 4;
const SUPERSEDE: u8 = 5;
const MERGE_INTO: u8 = 6;
const FORGET: u8 = 7;
const RESTORE: u8 = 8;
const PUT_VECTOR: u8 = 9;
const PUT_AUX: u8 = 10;
const MERGE_TEXTS: u8 = 11;
/// A vector for a named revision (`PutVector` with `rev`); without one it is `PUT_VECTOR`, as
/// before the field existed.
const PUT_VECTOR_AT: u8 = 12;

/// The bytes of a job's operations (see the module documentation).
pub fn encode_job(ops: &[WriteOp]) -> Result<Vec<u8>, CodecError> {
    let mut w = Writer::with_capacity(64 + ops.len() * 256);
    w.u8(JOB_VERSION);
    w.varint(ops.len() as u64);
    for op in ops {
        put_op(&mut w, op)?;
    }
    Ok(w.out)
}

/// The operations of a job from [`encode_job`]'s bytes.
pub fn decode_job(bytes: &[u8]) -> Result<Vec<WriteOp>, CodecError> {
    let mut r = Reader::new("log entry", bytes);
    let got = (|| -> Got<Vec<WriteOp>> {
        let r = &mut r;
        let version = r.u8()?;
        if version != JOB_VERSION {
            return Err(r.fail_with(CodecError::Version {
                what: "log entry",
                found: version,
                expected: JOB_VERSION,
            }));
        }
        let n = r.varint()?;
        // Each operation takes at least two bytes: a count beyond that is damage.
        if n > (r.rest().len() / 2) as u64 {
            return Err(r.err(&format!("{n} operations in {} bytes", r.rest().len())));
        }
        let mut ops = Vec::with_capacity(n as usize);
        for _ in 0..n {
            ops.push(get_op(r)?);
        }
        if !r.rest().is_empty() {
            return Err(r.err(&format!("{} trailing bytes", r.rest().len())));
        }
        Ok(ops)
    })();
    got.map_err(|Fail| r.error())
}

fn put_op(w: &mut Writer, op: &WriteOp) -> Result<(), CodecError> {
    match op {
        WriteOp::Insert(new) => {
            w.u8(INSERT);
            put_new(w, new);
        }
        WriteOp::Revise(rv) => {
            w.u8(REVISE);
            w.str(rv.namespace.as_str());
            w.u128(rv.id.as_u128());
            put_opt(w, rv.expected_rev.map(u64::from), Writer::varint);
            match &rv.body {
                None => w.u8(0),
                Some(b) => {
                    w.u8(1);
                    put_body(w, b);
                }
            }
            match &rv.envelope {
                None => w.u8(0),
                Some(e) => {
                    w.u8(1);
                    put_envelope(w, e);
                }
            }
            w.opt_i64(rv.valid_from.map(Timestamp::as_micros));
            put_change(w, rv.valid_until);
            put_change(w, rv.expires_at);
        }
        WriteOp::Retire { namespace, id, at } | WriteOp::Expire { namespace, id, at } => {
            w.u8(if matches!(op, WriteOp::Retire { .. }) { RETIRE } else { EXPIRE });
            w.str(namespace.as_str());
            w.u128(id.as_u128());
            w.opt_i64(at.map(Timestamp::as_micros));
        }
        WriteOp::Supersede { old, new } => {
            w.u8(SUPERSEDE);
            w.u128(old.as_u128());
            put_new(w, new);
        }
        WriteOp::MergeInto { namespace, absorbed, into, at } => {
            w.u8(MERGE_INTO);
            w.str(namespace.as_str());
            w.u128(absorbed.as_u128());
            w.u128(into.as_u128());
            w.opt_i64(at.map(Timestamp::as_micros));
        }
        WriteOp::Forget { namespace, id } => {
            w.u8(FORGET);
            w.str(namespace.as_str());
            w.u128(id.as_u128());
        }
        WriteOp::Restore(rec) => {
            w.u8(RESTORE);
            w.str(rec.namespace.as_str());
            w.u128(rec.id.as_u128());
            w.varint(u64::from(rec.rev));
            w.i64(rec.recorded_at.as_micros());
            w.opt_i64(rec.replaced_at.map(Timestamp::as_micros));
            let stored = record::encode_revision(rec)?;
            w.varint(stored.len() as u64);
            w.out.extend_from_slice(&stored);
        }
        WriteOp::PutVector { namespace, id, rev, space, vector } => {
            w.u8(if rev.is_some() { PUT_VECTOR_AT } else { PUT_VECTOR });
            w.str(namespace.as_str());
            w.u128(id.as_u128());
            if let Some(rev) = rev {
                w.varint(u64::from(*rev));
            }
            w.str(space);
            w.varint(vector.len() as u64);
            for x in vector {
                w.out.extend_from_slice(&x.to_le_bytes());
            }
        }
        WriteOp::PutAux { key, value } => {
            w.u8(PUT_AUX);
            w.str(key);
            match value {
                None => w.u8(0),
                Some(v) => {
                    w.u8(1);
                    w.varint(v.len() as u64);
                    w.out.extend_from_slice(v);
                }
            }
        }
        WriteOp::MergeTexts { namespace } => {
            w.u8(MERGE_TEXTS);
            w.str(namespace.as_str());
        }
    }
    Ok(())
}

fn get_op(r: &mut Reader<'_>) -> Got<WriteOp> {
    let tag = r.u8()?;
    Ok(match tag {
        INSERT => WriteOp::Insert(get_new(r)?),
        REVISE => {
            let namespace = get_ns(r)?;
            let id = get_id(r)?;
            let expected_rev = match r.tag()? {
                false => None,
                true => Some(u32::try_from(r.varint()?).map_err(|_| r.err("revision number too large"))?),
            };
            let body = match r.tag()? {
                false => None,
                true => Some(get_body(r)?),
            };
            let envelope = match r.tag()? {
                false => None,
                true => Some(get_envelope(r)?),
            };
            let valid_from = r.opt_i64()?.map(Timestamp::from_micros);
            let valid_until = get_change(r)?;
            let expires_at = get_change(r)?;
            WriteOp::Revise(Revise {
                namespace,
                id,
                expected_rev,
                body,
                envelope,
                valid_from,
                valid_until,
                expires_at,
            })
        }
        RETIRE | EXPIRE => {
            let (namespace, id) = (get_ns(r)?, get_id(r)?);
            let at = r.opt_i64()?.map(Timestamp::from_micros);
            if tag == RETIRE {
                WriteOp::Retire { namespace, id, at }
            } else {
                WriteOp::Expire { namespace, id, at }
            }
        }
        SUPERSEDE => {
            let old = get_id(r)?;
            WriteOp::Supersede { old, new: get_new(r)? }
        }
        MERGE_INTO => {
            let namespace = get_ns(r)?;
            let (absorbed, into) = (get_id(r)?, get_id(r)?);
            WriteOp::MergeInto { namespace, absorbed, into, at: r.opt_i64()?.map(Timestamp::from_micros) }
        }
        FORGET => WriteOp::Forget { namespace: get_ns(r)?, id: get_id(r)? },
        RESTORE => {
            let namespace = get_ns(r)?;
            let id = get_id(r)?;
            let rev = u32::try_from(r.varint()?).map_err(|_| r.err("revision number too large"))?;
            let recorded_at = Timestamp::from_micros(r.i64()?);
            let replaced_at = r.opt_i64()?.map(Timestamp::from_micros);
            let stored = get_bytes(r)?;
            let mut rec = record::decode_revision(&namespace, id, rev, recorded_at, stored)
                .map_err(|e| r.fail_with(e))?;
            rec.replaced_at = replaced_at;
            WriteOp::Restore(Box::new(rec))
        }
        PUT_VECTOR | PUT_VECTOR_AT => {
            let namespace = get_ns(r)?;
            let id = get_id(r)?;
            let rev = match tag {
                PUT_VECTOR_AT => {
                    Some(u32::try_from(r.varint()?).map_err(|_| r.err("revision number too large"))?)
                }
                _ => None,
            };
            let space = r.str()?.to_string();
            let n = r.varint()?;
            let len = usize::try_from(n.saturating_mul(4)).map_err(|_| r.err("vector too long"))?;
            let bytes = r.take(len)?;
            let vector =
                bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            WriteOp::PutVector { namespace, id, rev, space, vector }
        }
        PUT_AUX => {
            let key = r.str()?.to_string();
            let value = match r.tag()? {
                false => None,
                true => Some(get_bytes(r)?.to_vec()),
            };
            WriteOp::PutAux { key, value }
        }
        MERGE_TEXTS => WriteOp::MergeTexts { namespace: get_ns(r)? },
        other => return Err(r.err(&format!("unknown operation tag {other}"))),
    })
}

fn put_new(w: &mut Writer, new: &NewRecord) {
    w.str(new.namespace.as_str());
    w.u128(new.id.as_u128());
    put_body(w, &new.body);
    put_envelope(w, &new.envelope);
    w.opt_i64(new.valid_from.map(Timestamp::as_micros));
    w.opt_i64(new.valid_until.map(Timestamp::as_micros));
    match new.expiry {
        Expiry::Default => w.u8(0),
        Expiry::Never => w.u8(1),
        Expiry::At(t) => {
            w.u8(2);
            w.i64(t.as_micros());
        }
    }
    w.u8(match new.on_conflict {
        OnConflict::Error => 0,
        OnConflict::ReturnExisting => 1,
        OnConflict::Supersede => 2,
    });
}

fn get_new(r: &mut Reader<'_>) -> Got<NewRecord> {
    let namespace = get_ns(r)?;
    let id = get_id(r)?;
    let body = get_body(r)?;
    let envelope = get_envelope(r)?;
    let valid_from = r.opt_i64()?.map(Timestamp::from_micros);
    let valid_until = r.opt_i64()?.map(Timestamp::from_micros);
    let expiry = match r.u8()? {
        0 => Expiry::Default,
        1 => Expiry::Never,
        2 => Expiry::At(Timestamp::from_micros(r.i64()?)),
        other => return Err(r.err(&format!("unknown expiry tag {other}"))),
    };
    let on_conflict = match r.u8()? {
        0 => OnConflict::Error,
        1 => OnConflict::ReturnExisting,
        2 => OnConflict::Supersede,
        other => return Err(r.err(&format!("unknown conflict policy {other}"))),
    };
    Ok(NewRecord { namespace, id, body, envelope, valid_from, valid_until, expiry, on_conflict })
}

fn put_body(w: &mut Writer, body: &Body) {
    w.u8(body.kind().code());
    body.encode_into(w);
}

fn get_body(r: &mut Reader<'_>) -> Got<Body> {
    let code = r.u8()?;
    let Some(kind) = Kind::from_code(code) else { return Err(r.err(&format!("unknown kind code {code}"))) };
    Body::decode(kind, r)
}

/// An envelope as given (not yet validated: an importance of 0 stays one).
fn put_envelope(w: &mut Writer, e: &Envelope) {
    crate::codec::Bin::put(&e.tags, w);
    put_opt(w, e.importance.map(u64::from), Writer::varint);
    w.opt_f32(e.confidence);
    w.opt_str(e.source.as_deref());
    w.opt_str(e.task.as_deref());
    w.opt_str(e.key.as_deref());
    w.str(e.metadata.as_str());
}

fn get_envelope(r: &mut Reader<'_>) -> Got<Envelope> {
    let tags: TextList = crate::codec::Bin::get(r)?;
    let importance = match r.tag()? {
        false => None,
        true => Some(u8::try_from(r.varint()?).map_err(|_| r.err("importance out of range"))?),
    };
    let confidence = r.opt_f32()?;
    let source = r.opt_str()?.map(Text::from);
    let task = r.opt_str()?.map(Text::from);
    let key = r.opt_str()?.map(Text::from);
    let metadata = crate::json::JsonText::from_stored(r.str()?);
    Ok(Envelope { tags, importance, confidence, source, task, key, metadata })
}

fn put_opt<T>(w: &mut Writer, v: Option<T>, put: impl FnOnce(&mut Writer, T)) {
    match v {
        None => w.u8(0),
        Some(x) => {
            w.u8(1);
            put(w, x);
        }
    }
}

/// A field a revision may leave (`None`), clear (`Some(None)`) or set.
fn put_change(w: &mut Writer, v: Option<Option<Timestamp>>) {
    match v {
        None => w.u8(0),
        Some(None) => w.u8(1),
        Some(Some(t)) => {
            w.u8(2);
            w.i64(t.as_micros());
        }
    }
}

fn get_change(r: &mut Reader<'_>) -> Got<Option<Option<Timestamp>>> {
    Ok(match r.u8()? {
        0 => None,
        1 => Some(None),
        2 => Some(Some(Timestamp::from_micros(r.i64()?))),
        other => return Err(r.err(&format!("unknown change tag {other}"))),
    })
}

fn get_ns(r: &mut Reader<'_>) -> Got<Namespace> {
    let name = r.str()?;
    Namespace::new(name).map_err(|e| r.err(&e.to_string()))
}

fn get_id(r: &mut Reader<'_>) -> Got<RecordId> {
    Ok(RecordId::from_u128(r.u128()?))
}

fn get_bytes<'a>(r: &mut Reader<'a>) -> Got<&'a [u8]> {
    let n = r.varint()?;
    let len = usize::try_from(n).map_err(|_| r.err("length too large"))?;
    r.take(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{Decision, Task};
    use crate::record::Record;

    fn every_operation() -> Vec<WriteOp> {
        let ns = Namespace::new("project:wire").unwrap();
        let t = |s: &str| Timestamp::parse(s).unwrap();
        let envelope = Envelope {
            tags: ["a", "b c"].into_iter().map(Text::from).collect(),
            importance: Some(0),
            confidence: Some(0.25),
            source: Some("agent-7".into()),
            task: None,
            key: Some("Key".into()),
            metadata: crate::json::JsonText::from_stored(r#"{"x":[1,2]}"#),
        };
        let mut new = NewRecord::new(ns.clone(), Decision { title: "Use redb".into(), ..Default::default() });
        new.envelope = envelope.clone();
        new.valid_from = Some(t("2025-01-01"));
        new.expiry = Expiry::At(t("2027-01-01T00:00:00.000001Z"));
        new.on_conflict = OnConflict::Supersede;
        let mut other = NewRecord::new(ns.clone(), Task { title: "ship".into(), ..Default::default() });
        other.expiry = Expiry::Never;
        other.on_conflict = OnConflict::ReturnExisting;
        let id = RecordId::from_u128(u128::MAX - 3);
        let mut revise = Revise::new(ns.clone(), id);
        revise.expected_rev = Some(4);
        revise.body = Some(Body::from(Decision { title: "Use redb 4".into(), ..Default::default() }));
        revise.envelope = Some(envelope);
        revise.valid_until = Some(None);
        revise.expires_at = Some(Some(t("2026-06-01")));
        let restored = Record {
            namespace: ns.clone(),
            id,
            rev: 2,
            recorded_at: t("2024-05-05T05:05:05Z"),
            replaced_at: Some(t("2024-06-06")),
            op: crate::record::Op::Revise,
            valid_from: t("2024-01-01"),
            valid_until: None,
            expires_at: None,
            supersedes: Some(RecordId::from_u128(9)),
            superseded_by: None,
            envelope: Envelope::default(),
            body: Body::from(Task { title: "restored".into(), ..Default::default() }),
        };
        vec![
            WriteOp::Insert(new.clone()),
            WriteOp::Insert(other),
            WriteOp::Revise(revise),
            WriteOp::Revise(Revise::new(ns.clone(), id)),
            WriteOp::Retire { namespace: ns.clone(), id, at: Some(t("2026-01-01")) },
            WriteOp::Expire { namespace: ns.clone(), id, at: None },
            WriteOp::Supersede { old: id, new },
            WriteOp::MergeInto {
                namespace: ns.clone(),
                absorbed: id,
                into: RecordId::from_u128(1),
                at: None,
            },
            WriteOp::Forget { namespace: ns.clone(), id },
            WriteOp::Restore(Box::new(restored)),
            WriteOp::PutVector {
                namespace: ns.clone(),
                id,
                rev: None,
                space: "m".into(),
                vector: vec![0.5, -0.0, f32::MIN_POSITIVE],
            },
            WriteOp::PutVector {
                namespace: ns.clone(),
                id,
                rev: Some(7),
                space: "m".into(),
                vector: vec![1.0],
            },
            WriteOp::PutAux { key: "app/x".into(), value: Some(vec![0, 1, 255]) },
            WriteOp::PutAux { key: "index/y".into(), value: None },
            WriteOp::MergeTexts { namespace: ns },
        ]
    }

    #[test]
    fn every_operation_comes_back_as_it_went() {
        let ops = every_operation();
        let bytes = encode_job(&ops).unwrap();
        assert_eq!(decode_job(&bytes).unwrap(), ops);
        assert_eq!(decode_job(&encode_job(&[]).unwrap()).unwrap(), Vec::new());
    }

    #[test]
    fn damaged_entries_are_errors() {
        let bytes = encode_job(&every_operation()).unwrap();
        // Every cut, and every byte changed, is an error or another job: never a panic.
        for cut in 0..bytes.len() {
            assert!(decode_job(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            let _ = decode_job(&b);
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_job(&trailing).is_err());
        assert!(matches!(decode_job(&[9]), Err(CodecError::Version { found: 9, .. })));
        // A count the bytes cannot hold is refused before anything is reserved for it.
        assert!(decode_job(&[1, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    }
}
