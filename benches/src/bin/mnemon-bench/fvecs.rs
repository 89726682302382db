//! The TEXMEX vector formats (`.fvecs`, `.ivecs`): each vector is a little-endian `i32`
//! dimension followed by that many little-endian `f32` (or `i32`) components.

use std::path::Path;

use anyhow::{Context, Result, anyhow};

fn parse<T>(path: &Path, bytes: &[u8], conv: fn([u8; 4]) -> T) -> Result<(usize, Vec<Vec<T>>)> {
    let bad = |reason: String| anyhow!("{}: {reason}", path.display());
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut dim0: Option<usize> = None;
    while at < bytes.len() {
        let head: [u8; 4] = bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad(format!("truncated at byte {at}")))?;
        let d = i32::from_le_bytes(head);
        let d = usize::try_from(d)
            .ok()
            .filter(|d| *d > 0 && *d <= 65_536)
            .ok_or_else(|| bad(format!("vector {} has dimension {d} (not a TEXMEX file?)", out.len())))?;
        if let Some(d0) = dim0
            && d0 != d
        {
            return Err(bad(format!("vector {} has dimension {d}, the first had {d0}", out.len())));
        }
        dim0 = Some(d);
        let body = bytes
            .get(at + 4..at + 4 + 4 * d)
            .ok_or_else(|| bad(format!("vector {} is truncated", out.len())))?;
        out.push(body.chunks_exact(4).map(|c| conv([c[0], c[1], c[2], c[3]])).collect());
        at += 4 + 4 * d;
    }
    Ok((dim0.unwrap_or(0), out))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Read an `.fvecs` file: (dimension, vectors).
pub fn read_fvecs(path: &Path) -> Result<(usize, Vec<Vec<f32>>)> {
    parse(path, &read(path)?, f32::from_le_bytes)
}

/// Read an `.ivecs` file: (dimension, vectors).
pub fn read_ivecs(path: &Path) -> Result<(usize, Vec<Vec<i32>>)> {
    parse(path, &read(path)?, i32::from_le_bytes)
}

fn encode<T: Copy>(vectors: &[Vec<T>], le: fn(T) -> [u8; 4]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in vectors {
        out.extend_from_slice(&i32::try_from(v.len()).unwrap_or(i32::MAX).to_le_bytes());
        for x in v {
            out.extend_from_slice(&le(*x));
        }
    }
    out
}

/// Encode vectors as `.fvecs`.
pub fn encode_fvecs(vectors: &[Vec<f32>]) -> Vec<u8> {
    encode(vectors, f32::to_le_bytes)
}

/// Encode vectors as `.ivecs`.
pub fn encode_ivecs(vectors: &[Vec<i32>]) -> Vec<u8> {
    encode(vectors, i32::to_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.fvecs");
        let v = vec![vec![1.0f32, 2.0], vec![3.0, 4.5]];
        std::fs::write(&p, encode_fvecs(&v)).unwrap();
        assert_eq!(read_fvecs(&p).unwrap(), (2, v));
        let i = dir.path().join("a.ivecs");
        std::fs::write(&i, encode_ivecs(&[vec![7, 8, 9]])).unwrap();
        assert_eq!(read_ivecs(&i).unwrap(), (3, vec![vec![7, 8, 9]]));
        std::fs::write(&p, [1u8, 0, 0]).unwrap();
        assert!(read_fvecs(&p).unwrap_err().to_string().contains("truncated"));
        std::fs::write(&p, encode_ivecs(&[vec![1], vec![1, 2]])).unwrap();
        assert!(read_fvecs(&p).unwrap_err().to_string().contains("dimension 2, the first had 1"));
    }
}
