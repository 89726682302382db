//! The value codec: the only module that knows about bincode.
//!
//! Every stored value starts with a version byte naming the layout that follows, so a value
//! written by a newer build is refused instead of misread, and a future layout can be decoded
//! alongside the old one. Cold values (meta scalars, checkpoint rows, the commit log) are
//! bincode 2 (standard configuration: little-endian, variable-length integers) over serde.
//! The revision (header and body), which every read decodes, has a hand-written layout
//! ([`Writer`], [`Reader`], [`Bin`]): about twice as fast to decode, measured on listings.

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::error::CodecError;

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// The most memory decoding one cold value may claim: a length prefix is trusted only this
/// far, so a damaged or hostile one (a string "of 2.6 GB" in ten bytes, found by the fuzz
/// target `commit_entry`) is an error instead of an allocation the process cannot make. The
/// largest values, the commit log's entries, claim about 70 bytes per record a commit
/// changed: 256 MiB is some 3.5 million records in one commit.
const DECODE_LIMIT: usize = 256 << 20;

fn decode_config() -> bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<DECODE_LIMIT>,
> {
    config().with_limit::<DECODE_LIMIT>()
}

/// Append the bincode encoding of `value` to `out` (no version byte).
fn encode_value<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    bincode::serde::encode_into_std_write(value, out, config())
        .map(|_| ())
        .map_err(|e| CodecError::Encode(e.to_string()))
}

/// Decode one value from the start of `bytes`, returning it and the bytes it used.
pub(crate) fn decode_prefix<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<(T, usize), CodecError> {
    bincode::serde::decode_from_slice(bytes, decode_config())
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

    /// A length prefix no stored value could have (a string of 2^40 bytes, a list of 2^40
    /// pairs, in a few bytes) is refused, not allocated.
    #[test]
    fn huge_lengths_are_refused_not_allocated() {
        // Version 1, then a u32 7, then a varint length of 2^40 (0xFD: u64 follows).
        let mut bytes = vec![1, 7, 0xFD];
        bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(decode_versioned::<(u32, String)>("pair", 1, &bytes).is_err());
        assert!(decode_versioned::<(u32, Vec<(String, u128)>)>("list", 1, &bytes).is_err());
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

/// A failed read. The error itself is kept in the [`Reader`] ([`Reader::error`]), so that
/// the hot path passes a zero-sized error: every field of every listed record goes through a
/// `?`, and a `Result` carrying a `CodecError` is six words wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail;

/// What a [`Reader`] read, or [`Fail`].
pub(crate) type Got<T> = Result<T, Fail>;

/// The reader matching [`Writer`]. Every read checks bounds; a failed one returns [`Fail`]
/// and leaves the decode error in the reader.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
    failure: Option<CodecError>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Reader { bytes, what, failure: None }
    }

    /// Fail with a decode error of `reason`.
    #[cold]
    #[inline(never)]
    pub(crate) fn err(&mut self, reason: &str) -> Fail {
        self.failure = Some(CodecError::Decode { what: self.what, reason: reason.to_string() });
        Fail
    }

    /// Fail with `error`.
    #[cold]
    #[inline(never)]
    pub(crate) fn fail_with(&mut self, error: CodecError) -> Fail {
        self.failure = Some(error);
        Fail
    }

    /// The error of the read that failed.
    #[cold]
    pub(crate) fn error(&mut self) -> CodecError {
        self.failure
            .take()
            .unwrap_or_else(|| CodecError::Decode { what: self.what, reason: "unknown failure".to_string() })
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub(crate) fn u8(&mut self) -> Got<u8> {
        match self.bytes.split_first() {
            Some((b, rest)) => {
                self.bytes = rest;
                Ok(*b)
            }
            None => Err(self.err("truncated")),
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> Got<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(self.err("truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Got<u64> {
        // One pass over at most ten bytes of the slice, without a bounds check per byte (most
        // varints are string lengths below 128: one byte).
        let mut v: u64 = 0;
        for (i, &b) in self.bytes.iter().take(10).enumerate() {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.bytes = self.bytes.get(i + 1..).unwrap_or_default();
                return Ok(v);
            }
        }
        Err(self.err(if self.bytes.len() >= 10 { "varint too long" } else { "truncated" }))
    }

    pub(crate) fn i64(&mut self) -> Got<i64> {
        let z = self.varint()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    #[inline]
    pub(crate) fn tag(&mut self) -> Got<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.err("invalid option tag")),
        }
    }

    pub(crate) fn opt_i64(&mut self) -> Got<Option<i64>> {
        if self.tag()? { self.i64().map(Some) } else { Ok(None) }
    }

    pub(crate) fn u128(&mut self) -> Got<u128> {
        let b = self.take(16)?;
        let arr: [u8; 16] = b.try_into().map_err(|_| self.err("truncated"))?;
        Ok(u128::from_le_bytes(arr))
    }

    pub(crate) fn opt_u128(&mut self) -> Got<Option<u128>> {
        if self.tag()? { self.u128().map(Some) } else { Ok(None) }
    }

    pub(crate) fn str(&mut self) -> Got<&'a str> {
        let n = usize::try_from(self.varint()?).map_err(|_| self.err("length overflow"))?;
        let b = self.take(n)?;
        if b.is_ascii() {
            // Decoding records is most of a listing, and most stored strings are short ASCII,
            // where `from_utf8`'s setup costs more than the check (measured: docs/benchmarks.md).
            #[allow(unsafe_code)]
            // SAFETY: every byte is below 0x80, and a sequence of ASCII bytes is valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(b) });
        }
        std::str::from_utf8(b).map_err(|_| self.err("invalid UTF-8"))
    }

    pub(crate) fn opt_str(&mut self) -> Got<Option<&'a str>> {
        if self.tag()? { self.str().map(Some) } else { Ok(None) }
    }

    pub(crate) fn opt_f32(&mut self) -> Got<Option<f32>> {
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

    /// ASCII takes the fast path, anything else is validated: invalid UTF-8 (a stray
    /// continuation byte, an overlong form, a lone surrogate) is refused, never misread.
    #[test]
    fn strings_are_valid_utf8_or_refused() {
        for ok in ["", "plain ascii", "héllo", "ВОДА", "日本語", "\u{1F600}"] {
            let mut w = Writer::default();
            w.str(ok);
            assert_eq!(Reader::new("test", &w.out).str().ok(), Some(ok));
        }
        for bad in [&[0x80u8][..], &[b'a', 0xff], &[0xc0, 0xaf], &[0xed, 0xa0, 0x80], &[b'x', 0xe2, 0x82]] {
            let mut bytes = vec![u8::try_from(bad.len()).unwrap_or(0)];
            bytes.extend_from_slice(bad);
            let mut r = Reader::new("test", &bytes);
            assert_eq!(r.str(), Err(Fail), "{bad:?}");
            let e = r.error().to_string();
            assert!(e.contains("invalid UTF-8"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn primitives_round_trip_and_refuse_truncation() -> Got<()> {
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
            let mut r = Reader::new("test", prefix);
            assert!(r.str().is_err(), "prefix of {n} bytes decoded");
            assert_eq!(r.error().to_string(), "cannot decode test: truncated");
        }
        // Invalid UTF-8, bad option tags and overlong varints are refused, each with its reason
        // kept by the reader.
        let refusals: [(&[u8], &str); 3] = [
            (&[2, 0xff, 0xfe], "invalid UTF-8"),
            (&[7], "invalid option tag"),
            (&[0xff; 11], "varint too long"),
        ];
        for (bytes, reason) in refusals {
            let mut r = Reader::new("test", bytes);
            let failed = if bytes.len() == 1 { r.opt_i64().map(|_| ()) } else { r.str().map(|_| ()) };
            assert_eq!(failed, Err(Fail));
            assert_eq!(r.error().to_string(), format!("cannot decode test: {reason}"));
        }
        Ok(())
    }
}

/// Values with a hand-written binary layout (the record bodies, read on every listing). The
/// layout of a struct is its fields in the order its `bin_struct!` line lists them; an enum
/// is one byte per variant, as its `bin_enum!` line numbers them.
pub(crate) trait Bin: Sized {
    fn put(&self, w: &mut Writer);
    fn get(r: &mut Reader<'_>) -> Got<Self>;
}

impl Bin for String {
    fn put(&self, w: &mut Writer) {
        w.str(self);
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.str().map(str::to_string)
    }
}

impl Bin for crate::text::Text {
    fn put(&self, w: &mut Writer) {
        w.str(self);
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.str().map(crate::text::Text::from)
    }
}

impl Bin for u32 {
    fn put(&self, w: &mut Writer) {
        w.varint(u64::from(*self));
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        u32::try_from(r.varint()?).map_err(|_| r.err("u32 out of range"))
    }
}

impl Bin for u64 {
    fn put(&self, w: &mut Writer) {
        w.varint(*self);
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.varint()
    }
}

impl Bin for bool {
    fn put(&self, w: &mut Writer) {
        w.u8(u8::from(*self));
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        match r.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(r.err("invalid boolean")),
        }
    }
}

impl Bin for crate::time::Timestamp {
    fn put(&self, w: &mut Writer) {
        w.i64(self.as_micros());
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.i64().map(crate::time::Timestamp::from_micros)
    }
}

impl Bin for crate::id::RecordId {
    fn put(&self, w: &mut Writer) {
        w.u128(self.as_u128());
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.u128().map(crate::id::RecordId::from_u128)
    }
}

impl Bin for crate::json::JsonText {
    fn put(&self, w: &mut Writer) {
        w.str(self.as_str());
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        r.str().map(crate::json::JsonText::from_stored)
    }
}

impl<T: Bin> Bin for Option<T> {
    fn put(&self, w: &mut Writer) {
        match self {
            None => w.u8(0),
            Some(v) => {
                w.u8(1);
                v.put(w);
            }
        }
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        if r.tag()? { T::get(r).map(Some) } else { Ok(None) }
    }
}

/// A list's layout, shared by `Vec` and `SmallVec` (so either reads back what the other wrote):
/// its length, then its elements.
fn put_list<T: Bin>(items: &[T], w: &mut Writer) {
    w.varint(items.len() as u64);
    for v in items {
        v.put(w);
    }
}

/// Read a list into the collection `make(length)` returns, adding each element with `push`.
#[inline]
fn get_list<T: Bin, C>(
    r: &mut Reader<'_>,
    make: impl FnOnce(usize) -> C,
    push: impl Fn(&mut C, T),
) -> Got<C> {
    let n = usize::try_from(r.varint()?).map_err(|_| r.err("length overflow"))?;
    // Every element takes at least one byte: a count beyond the input is corrupt.
    if n > r.rest().len() {
        return Err(r.err("list longer than its bytes"));
    }
    let mut out = make(n);
    for _ in 0..n {
        push(&mut out, T::get(r)?);
    }
    Ok(out)
}

impl<T: Bin> Bin for Vec<T> {
    fn put(&self, w: &mut Writer) {
        put_list(self, w);
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        get_list(r, Vec::with_capacity, Vec::push)
    }
}

/// The same layout as a `Vec`: a small inline list reads back from, and as, any stored list.
impl<A: smallvec::Array> Bin for smallvec::SmallVec<A>
where
    A::Item: Bin,
{
    fn put(&self, w: &mut Writer) {
        put_list(self, w);
    }
    fn get(r: &mut Reader<'_>) -> Got<Self> {
        get_list(r, smallvec::SmallVec::with_capacity, smallvec::SmallVec::push)
    }
}

/// The binary layout of a struct: its fields, in this order.
macro_rules! bin_struct {
    ($t:ident { $($f:ident),* $(,)? }) => {
        impl $crate::codec::Bin for $t {
            fn put(&self, w: &mut $crate::codec::Writer) {
                $( $crate::codec::Bin::put(&self.$f, w); )*
            }
            fn get(r: &mut $crate::codec::Reader<'_>) -> $crate::codec::Got<Self> {
                Ok($t { $( $f: $crate::codec::Bin::get(r)?, )* })
            }
        }
    };
}

/// The binary layout of a field-less enum: one byte per variant.
macro_rules! bin_enum {
    ($t:ident { $($v:ident = $code:literal),* $(,)? }) => {
        impl $crate::codec::Bin for $t {
            fn put(&self, w: &mut $crate::codec::Writer) {
                w.u8(match self { $( $t::$v => $code, )* });
            }
            fn get(r: &mut $crate::codec::Reader<'_>) -> $crate::codec::Got<Self> {
                match r.u8()? {
                    $( $code => Ok($t::$v), )*
                    other => Err(r.fail_with($crate::codec::CodecError::Decode {
                        what: stringify!($t),
                        reason: format!("unknown variant code {other}"),
                    })),
                }
            }
        }
    };
}

pub(crate) use {bin_enum, bin_struct};
