//! Embedding vectors: validation, normalisation and their stored form.
//!
//! A vector belongs to a record and a *vector space* (one per embedding model, named by the
//! model id, with a fixed dimension recorded on first use). It is normalised to unit length at
//! insert so that cosine similarity is a plain dot product, and stored behind a version byte
//! in the smaller of two layouts: dense (`[1]` then every component as little-endian `f32`),
//! or sparse (`[2][dimension u32][n u32]` then `n` times `[index u16][f32]`, indices
//! ascending) for vectors that are mostly zeros, as the hashing embedder's are (format 4).
//! Since format 17 both are sealed (versions `[7]` and `[8]`): the CRC-32 of every byte before
//! it follows, checked by every decode, so that a changed byte is an error, not another
//! ranking; versions 1 and 2 are still read, and the upgrade seals them. A vector attaches to the revision that was latest when it was
//! written and serves that revision and every later one until another vector is written (a
//! change of tags does not need a new embedding; a change of text does).

use crate::error::{CodecError, InputError};
use crate::time::Timestamp;

/// The version byte of a dense stored vector (formats 2 to 16).
const VECTOR_VERSION: u8 = 1;
/// The version byte of a sparse stored vector (formats 4 to 16).
const SPARSE_VERSION: u8 = 2;
/// Dense, then the CRC-32 of every byte before it (format 17). The sealed versions differ from
/// the unsealed ones in two bits at least, so that no single flipped bit of the version byte
/// turns a sealed vector into one read without its checksum.
const SEALED_VECTOR_VERSION: u8 = 7;
/// Sparse, then the CRC-32 of every byte before it (format 17).
const SEALED_SPARSE_VERSION: u8 = 8;
/// The version byte of a vector-space row.
const SPACE_VERSION: u8 = 1;
/// The largest dimension accepted.
pub const MAX_DIMENSION: usize = 65_536;

/// A vector space: the vectors of one embedding model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorSpace {
    /// The space's name: the embedding model id.
    pub name: String,
    /// The dimension of every vector in it.
    pub dimension: u32,
    /// When it was first used.
    pub created: Timestamp,
}

/// Check a space name: non-empty, at most 200 bytes, no control characters.
pub fn check_space_name(name: &str) -> Result<(), InputError> {
    let bad = |reason: &'static str| InputError::BadSpace { name: name.to_string(), reason };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.len() > 200 {
        return Err(bad("it is longer than 200 bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("it contains control characters"));
    }
    Ok(())
}

/// Validate a vector and scale it to unit length. Refuses an empty vector, one longer than
/// [`MAX_DIMENSION`], NaN or infinite components, and the zero vector (it has no direction).
pub fn normalise(v: &[f32]) -> Result<Vec<f32>, InputError> {
    let bad = |reason: String| InputError::BadVector { reason };
    if v.is_empty() {
        return Err(bad("it is empty".into()));
    }
    if v.len() > MAX_DIMENSION {
        return Err(bad(format!("its dimension {} is above the maximum {MAX_DIMENSION}", v.len())));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(bad(format!("component {i} is {} (components must be finite)", v[i])));
    }
    // Accumulate in f64: a sum of squares of large f32 components can overflow f32.
    let norm = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Err(bad("it is the zero vector (it has no direction)".into()));
    }
    #[allow(clippy::cast_possible_truncation)]
    let out: Vec<f32> = v.iter().map(|&x| (f64::from(x) / norm) as f32).collect();
    Ok(out)
}

/// The stored form: dense or sparse, whichever is smaller (see the module documentation),
/// sealed by a CRC-32 of its bytes (format 17), which every decode checks.
pub(crate) fn encode(v: &[f32]) -> Vec<u8> {
    let mut out = encode_unsealed(v);
    out[0] = if out[0] == SPARSE_VERSION { SEALED_SPARSE_VERSION } else { SEALED_VECTOR_VERSION };
    seal(&mut out);
    out
}

fn seal(out: &mut Vec<u8>) {
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// A stored vector of version 1 or 2 sealed (version 3 or 4), for the upgrade to format 17;
/// `None` if it is sealed already. A value that does not decode is an error.
pub(crate) fn seal_stored(bytes: &[u8]) -> Result<Option<Vec<u8>>, CodecError> {
    let sealed = match bytes.first() {
        Some(&VECTOR_VERSION) => SEALED_VECTOR_VERSION,
        Some(&SPARSE_VERSION) => SEALED_SPARSE_VERSION,
        _ => {
            decode_into(bytes, &mut Vec::new())?;
            return Ok(None);
        }
    };
    decode_into(bytes, &mut Vec::new())?;
    let mut out = bytes.to_vec();
    out[0] = sealed;
    seal(&mut out);
    Ok(Some(out))
}

/// The form of formats 2 to 16: no checksum.
fn encode_unsealed(v: &[f32]) -> Vec<u8> {
    let nonzero = v.iter().filter(|x| **x != 0.0).count();
    let sparse_len = 9 + 6 * nonzero;
    if v.len() <= MAX_DIMENSION
        && sparse_len < 1 + 4 * v.len()
        && let Ok(dim) = u32::try_from(v.len())
        && let Ok(n) = u32::try_from(nonzero)
    {
        let mut out = Vec::with_capacity(sparse_len);
        out.push(SPARSE_VERSION);
        out.extend_from_slice(&dim.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        for (i, x) in v.iter().enumerate() {
            if *x != 0.0
                && let Ok(i) = u16::try_from(i)
            {
                out.extend_from_slice(&i.to_le_bytes());
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        return out;
    }
    let mut out = Vec::with_capacity(1 + v.len() * 4);
    out.push(VECTOR_VERSION);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

fn truncated() -> CodecError {
    CodecError::Decode { what: "vector", reason: "truncated".into() }
}

fn le_u32(b: &[u8], at: usize) -> Result<u32, CodecError> {
    let a: [u8; 4] = b.get(at..at + 4).and_then(|s| s.try_into().ok()).ok_or_else(truncated)?;
    Ok(u32::from_le_bytes(a))
}

/// Decode a stored vector into `out` (cleared first); a sealed one whose checksum fails is an
/// error.
pub(crate) fn decode_into(bytes: &[u8], out: &mut Vec<f32>) -> Result<(), CodecError> {
    let (&version, rest) = bytes.split_first().ok_or_else(truncated)?;
    out.clear();
    let (version, rest) = match version {
        SEALED_VECTOR_VERSION | SEALED_SPARSE_VERSION => {
            let (body, crc) =
                bytes.split_at(bytes.len().checked_sub(4).filter(|n| *n >= 1).ok_or_else(truncated)?);
            if crc32fast::hash(body).to_le_bytes() != crc {
                return Err(CodecError::Decode { what: "vector", reason: "it fails its checksum".into() });
            }
            let plain = if version == SEALED_VECTOR_VERSION { VECTOR_VERSION } else { SPARSE_VERSION };
            (plain, &body[1..])
        }
        v => (v, rest),
    };
    match version {
        VECTOR_VERSION => {
            if rest.len() % 4 != 0 {
                return Err(truncated());
            }
            out.extend(rest.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        SPARSE_VERSION => {
            let dim = le_u32(rest, 0)? as usize;
            let n = le_u32(rest, 4)? as usize;
            let entries = &rest[8.min(rest.len())..];
            if dim > MAX_DIMENSION || entries.len() != n.saturating_mul(6) {
                return Err(truncated());
            }
            out.resize(dim, 0.0);
            for e in entries.chunks_exact(6) {
                let i = usize::from(u16::from_le_bytes([e[0], e[1]]));
                let slot = out.get_mut(i).ok_or_else(|| CodecError::Decode {
                    what: "vector",
                    reason: format!("component index {i} beyond the dimension {dim}"),
                })?;
                *slot = f32::from_le_bytes([e[2], e[3], e[4], e[5]]);
            }
        }
        found => return Err(CodecError::Version { what: "vector", found, expected: SEALED_SPARSE_VERSION }),
    }
    Ok(())
}

/// The number of components of a stored vector (without decoding it).
pub(crate) fn stored_dimension(bytes: &[u8]) -> usize {
    match bytes.first() {
        Some(&SPARSE_VERSION | &SEALED_SPARSE_VERSION) => le_u32(&bytes[1..], 0).map_or(0, |d| d as usize),
        Some(&SEALED_VECTOR_VERSION) => bytes.len().saturating_sub(5) / 4,
        _ => bytes.len().saturating_sub(1) / 4,
    }
}

pub(crate) fn encode_space(dimension: u32, created: Timestamp) -> Vec<u8> {
    let mut out = Vec::with_capacity(13);
    out.push(SPACE_VERSION);
    out.extend_from_slice(&dimension.to_le_bytes());
    out.extend_from_slice(&created.as_micros().to_le_bytes());
    out
}

pub(crate) fn decode_space(name: &str, bytes: &[u8]) -> Result<VectorSpace, CodecError> {
    let (&version, rest) = bytes
        .split_first()
        .ok_or_else(|| CodecError::Decode { what: "vector space", reason: "truncated".into() })?;
    if version != SPACE_VERSION {
        return Err(CodecError::Version { what: "vector space", found: version, expected: SPACE_VERSION });
    }
    let dim: [u8; 4] = rest
        .get(0..4)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| CodecError::Decode { what: "vector space", reason: "truncated".into() })?;
    let created: [u8; 8] = rest
        .get(4..12)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| CodecError::Decode { what: "vector space", reason: "truncated".into() })?;
    Ok(VectorSpace {
        name: name.to_string(),
        dimension: u32::from_le_bytes(dim),
        created: Timestamp::from_micros(i64::from_le_bytes(created)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_scales_to_unit_length() {
        let v = normalise(&[3.0, 4.0]).unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let big = normalise(&[3e38, 3e38]).unwrap();
        assert!((big[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    }

    #[test]
    fn bad_vectors_are_refused() {
        assert!(normalise(&[]).is_err());
        assert!(normalise(&[0.0, 0.0]).unwrap_err().to_string().contains("zero vector"));
        assert!(normalise(&[1.0, f32::NAN]).unwrap_err().to_string().contains("component 1 is NaN"));
        assert!(normalise(&[f32::INFINITY]).is_err());
        assert!(check_space_name("").is_err());
        assert!(check_space_name("a\nb").is_err());
        assert!(check_space_name("hash-384").is_ok());
    }

    #[test]
    fn stored_form_round_trips() {
        let v = vec![0.25f32, -1.5, 3.0];
        let bytes = encode(&v);
        assert_eq!(bytes.len(), 17);
        assert_eq!(stored_dimension(&bytes), 3);
        let mut out = Vec::new();
        decode_into(&bytes, &mut out).unwrap();
        assert_eq!(out, v);
        assert!(decode_into(&bytes[..16], &mut out).is_err());
        // Mostly zeros: the sparse layout, 9 + 6 bytes per non-zero component.
        let mut sparse = vec![0f32; 384];
        sparse[0] = 0.5;
        sparse[7] = -0.25;
        sparse[383] = 1.0;
        let bytes = encode(&sparse);
        assert_eq!(bytes.len(), 9 + 3 * 6 + 4);
        assert_eq!(stored_dimension(&bytes), 384);
        decode_into(&bytes, &mut out).unwrap();
        assert_eq!(out, sparse);
        assert!(decode_into(&bytes[..bytes.len() - 1], &mut out).is_err());
        let mut bad = encode_unsealed(&sparse);
        bad[1..5].copy_from_slice(&100u32.to_le_bytes());
        assert!(decode_into(&bad, &mut out).unwrap_err().to_string().contains("beyond the dimension"));
        let s = decode_space("m", &encode_space(384, Timestamp::from_micros(7))).unwrap();
        assert_eq!((s.dimension, s.created.as_micros()), (384, 7));
    }

    /// Every single-bit change of a sealed vector (dense or sparse) is an error, never another
    /// vector; the forms of formats 2 to 16 are read and sealed.
    #[test]
    fn a_changed_bit_of_a_stored_vector_is_found() {
        let mut sparse = vec![0f32; 64];
        sparse[3] = 0.6;
        sparse[9] = -0.8;
        for v in [vec![0.25f32, -1.5, 3.0, 0.5], sparse] {
            let bytes = encode(&v);
            for byte in 0..bytes.len() {
                for bit in 0..8 {
                    let mut bad = bytes.clone();
                    bad[byte] ^= 1 << bit;
                    let mut out = Vec::new();
                    assert!(decode_into(&bad, &mut out).is_err(), "byte {byte} bit {bit}");
                }
            }
            let old = encode_unsealed(&v);
            let mut out = Vec::new();
            decode_into(&old, &mut out).unwrap();
            assert_eq!(out, v);
            assert_eq!(seal_stored(&old).unwrap(), Some(bytes.clone()));
            assert_eq!(seal_stored(&bytes).unwrap(), None);
        }
    }
}
