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
