//! The value codec: the only module that knows about bincode.
//!
//! Every stored value starts with a version byte naming the layout that follows, so a value
//! written by a newer build is refused instead of misread, and a future layout can be decoded
//! alongside the old one. The layouts are bincode 2 (standard configuration: little-endian,
//! variable-length integers) over serde, positional: see `body.rs` for the rules on evolving
//! structs.

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::error::CodecError;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Append the bincode encoding of `value` to `out` (no version byte).
pub(crate) fn encode_value<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    bincode::serde::encode_into_std_write(value, out, config())
        .map(|_| ())
        .map_err(|e| CodecError::Encode(e.to_string()))
}

/// Decode exactly one value spanning all of `bytes` (no version byte).
pub(crate) fn decode_value<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (v, used) = decode_prefix::<T>("value", bytes)?;
    if used != bytes.len() {
        return Err(CodecError::Decode {
            what: "value",
            reason: format!("{} trailing bytes", bytes.len() - used),
        });
    }
    Ok(v)
}

/// Decode one value from the start of `bytes`, returning it and the bytes it used.
pub(crate) fn decode_prefix<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<(T, usize), CodecError> {
    bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| CodecError::Decode { what, reason: e.to_string() })
}

/// `[version][value]`.
pub(crate) fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(64);
    out.push(version);
    encode_value(value, &mut out)?;
    Ok(out)
}

/// Decode `[version][value]`, refusing any other version.
pub(crate) fn decode_versioned<T: DeserializeOwned>(
    what: &'static str,
    version: u8,
    bytes: &[u8],
) -> Result<T, CodecError> {
    let (found, rest) = split_version(what, bytes)?;
    if found != version {
        return Err(CodecError::Version { what, found, expected: version });
    }
    let (v, used) = decode_prefix::<T>(what, rest)?;
    if used != rest.len() {
        return Err(CodecError::Decode { what, reason: format!("{} trailing bytes", rest.len() - used) });
    }
    Ok(v)
}

/// Split off the version byte.
pub(crate) fn split_version<'a>(what: &'static str, bytes: &'a [u8]) -> Result<(u8, &'a [u8]), CodecError> {
    match bytes.split_first() {
        Some((v, rest)) => Ok((*v, rest)),
        None => Err(CodecError::Decode { what, reason: "empty value".to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_values_refuse_other_versions() -> Result<(), CodecError> {
        let bytes = encode_versioned(1, &(7u32, "x".to_string()))?;
        let back: (u32, String) = decode_versioned("pair", 1, &bytes)?;
        assert_eq!(back, (7, "x".to_string()));
        assert!(matches!(
            decode_versioned::<(u32, String)>("pair", 2, &bytes),
            Err(CodecError::Version { found: 1, expected: 2, .. })
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_versioned::<(u32, String)>("pair", 1, &longer).is_err());
        assert!(decode_versioned::<(u32, String)>("pair", 1, &[]).is_err());
        Ok(())
    }
}

/// A hand-written little writer for hot, fixed layouts (the revision header): LEB128 varints,
/// zigzag for signed values, length-prefixed strings, one tag byte per option.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) out: Vec<u8>,
}

impl Writer {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Writer { out: Vec::with_capacity(n) }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    pub(crate) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    pub(crate) fn i64(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub(crate) fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.i64(x);
            }
        }
    }

    pub(crate) fn u128(&mut self, v: u128) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn opt_u128(&mut self, v: Option<u128>) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.u128(x);
            }
        }
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.out.extend_from_slice(s.as_bytes());
    }

    pub(crate) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.str(x);
            }
        }
    }

    pub(crate) fn opt_f32(&mut self, v: Option<f32>) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.out.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

/// The reader matching [`Writer`]. Every read checks bounds and fails with a decode error.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Reader { bytes, what }
    }

    fn err(&self, reason: &str) -> CodecError {
        CodecError::Decode { what: self.what, reason: reason.to_string() }
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    pub(crate) fn u8(&mut self) -> Result<u8, CodecError> {
        match self.bytes.split_first() {
            Some((b, rest)) => {
                self.bytes = rest;
                Ok(*b)
            }
            None => Err(self.err("truncated")),
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.bytes.len() < n {
            return Err(self.err("truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err("varint too long"))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, CodecError> {
        let z = self.varint()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    fn tag(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.err("invalid option tag")),
        }
    }

    pub(crate) fn opt_i64(&mut self) -> Result<Option<i64>, CodecError> {
        if self.tag()? { self.i64().map(Some) } else { Ok(None) }
    }

    pub(crate) fn u128(&mut self) -> Result<u128, CodecError> {
        let b = self.take(16)?;
        let arr: [u8; 16] = b.try_into().map_err(|_| self.err("truncated"))?;
        Ok(u128::from_le_bytes(arr))
    }

    pub(crate) fn opt_u128(&mut self) -> Result<Option<u128>, CodecError> {
        if self.tag()? { self.u128().map(Some) } else { Ok(None) }
    }

    pub(crate) fn str(&mut self) -> Result<&'a str, CodecError> {
        let n = usize::try_from(self.varint()?).map_err(|_| self.err("length overflow"))?;
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| self.err("invalid UTF-8"))
    }

    pub(crate) fn opt_str(&mut self) -> Result<Option<&'a str>, CodecError> {
        if self.tag()? { self.str().map(Some) } else { Ok(None) }
    }

    pub(crate) fn opt_f32(&mut self) -> Result<Option<f32>, CodecError> {
        if self.tag()? {
            let b = self.take(4)?;
            let arr: [u8; 4] = b.try_into().map_err(|_| self.err("truncated"))?;
            Ok(Some(f32::from_le_bytes(arr)))
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod reader_tests {
    use super::*;

    #[test]
    fn primitives_round_trip_and_refuse_truncation() -> Result<(), CodecError> {
        let mut w = Writer::default();
        for v in [0i64, 1, -1, i64::MIN, i64::MAX, 1_700_000_000_000_000] {
            w.i64(v);
        }
        w.opt_str(Some("héllo"));
        w.opt_str(None);
        w.opt_u128(Some(u128::MAX));
        w.opt_f32(Some(0.25));
        let mut r = Reader::new("test", &w.out);
        for v in [0i64, 1, -1, i64::MIN, i64::MAX, 1_700_000_000_000_000] {
            assert_eq!(r.i64()?, v);
        }
        assert_eq!(r.opt_str()?, Some("héllo"));
        assert_eq!(r.opt_str()?, None);
        assert_eq!(r.opt_u128()?, Some(u128::MAX));
        assert_eq!(r.opt_f32()?, Some(0.25));
        assert!(r.rest().is_empty());
        // Every strict prefix of an encoded string fails to decode instead of misreading.
        let mut w = Writer::default();
        w.str("a string");
        for n in 0..w.out.len() {
            let prefix = w.out.get(..n).unwrap_or_default();
            assert!(Reader::new("test", prefix).str().is_err(), "prefix of {n} bytes decoded");
        }
        // Invalid UTF-8 and bad option tags are refused.
        assert!(Reader::new("test", &[2, 0xff, 0xfe]).str().is_err());
        assert!(Reader::new("test", &[7]).opt_i64().is_err());
        Ok(())
    }
}
