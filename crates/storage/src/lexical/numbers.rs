//! A segment's text numbers (format 15): its postings name a text by a 32-bit number, the
//! text's place in the segment's list of text keys `(id, from_rev)`, in key order, so that
//! number order is key order. The list is stored in parts of [`PER_PART`] keys, a row `(ns,
//! segment, part) -> [2]([id u128][from_rev u32])*[crc u32]` each in `mnemon.segment_texts`
//! (the CRC-32 of the bytes before it, checked when a part is read: format 17; formats 15 and
//! 16 wrote version 1, without it): text `n` is entry `n % PER_PART` of part `n / PER_PART`.
//!
//! Forgetting a text takes its postings out and overwrites its entry (and any entries that
//! copied it) with the entry before it, or zeros for the first: the forgotten key is gone,
//! the list stays in non-decreasing order (a key is found by binary search: the first entry
//! holding it is the text's), and no posting names the overwritten entry. A merge numbers
//! its segment's texts again from the keys of its inputs, each once (zeros left out).

use redb::{ReadableTable, Table};

use super::posting::Key;
use crate::error::Error;

/// `(namespace, segment, part)`.
pub(crate) type NumberKey = (&'static str, u64, u32);

/// Text keys per part: a part of 16,001 bytes fits a 16 KiB page (a search reads a part per
/// text it keeps: small parts are cheap to read).
pub(super) const PER_PART: usize = 800;
/// Bytes of a key in a part.
const ENTRY: usize = 20;
/// Parts of formats 15 and 16: no checksum.
const PART_VERSION_1: u8 = 1;
/// Parts sealed by a CRC-32 at their end (format 17).
const PART_VERSION: u8 = 2;

/// Every part of a namespace's segments from `from` to below `to`.
pub(super) fn part_bounds(ns: &str, from: u64, to: u64) -> std::ops::Range<(&str, u64, u32)> {
    (ns, from, 0u32)..(ns, to, 0u32)
}

fn malformed(ns: &str, seg: u64, part: u32) -> Error {
    Error::Inconsistent {
        namespace: ns.to_string(),
        detail: format!(
            "part {part} of the text numbers of segment {} is malformed",
            super::codec::segment_name(seg)
        ),
    }
}

fn encode(keys: &[Key]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + keys.len() * ENTRY + 4);
    out.push(PART_VERSION);
    for (id, rev) in keys {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&rev.to_le_bytes());
    }
    super::codec::seal(&mut out);
    out
}

/// The keys of a part (`None` if malformed), its checksum not checked: for a part already
/// read through [`checked`].
fn entries(b: &[u8]) -> Option<&[[u8; ENTRY]]> {
    let (&version, rest) = b.split_first()?;
    let rest = match version {
        PART_VERSION_1 => rest,
        PART_VERSION => rest.get(..rest.len().checked_sub(4)?)?,
        _ => return None,
    };
    let (entries, tail) = rest.as_chunks::<ENTRY>();
    (tail.is_empty() && entries.len() <= PER_PART).then_some(entries)
}

/// The keys of a part as read from the table: its checksum checked (`None` if it fails, or
/// the part is malformed).
fn checked(b: &[u8]) -> Option<&[[u8; ENTRY]]> {
    if b.first() == Some(&PART_VERSION) && !super::codec::seal_holds(b) {
        return None;
    }
    entries(b)
}

/// Whether `b` is a part of the sealed version.
pub(crate) fn is_sealed_part(b: &[u8]) -> bool {
    b.first() == Some(&PART_VERSION)
}

/// A part of version 1 sealed (version 2), for the upgrade to format 17; `None` if it is not
/// a well-formed part of version 1.
pub(crate) fn seal_part(b: &[u8]) -> Option<Vec<u8>> {
    (b.first() == Some(&PART_VERSION_1)).then_some(())?;
    entries(b)?;
    let mut out = b.to_vec();
    out[0] = PART_VERSION;
    super::codec::seal(&mut out);
    Some(out)
}

fn key_of(e: &[u8; ENTRY]) -> Key {
    let (id, rev) = e.split_at(16);
    let id = id.first_chunk::<16>().map_or(0, |b| u128::from_le_bytes(*b));
    (id, rev.first_chunk::<4>().map_or(0, |b| u32::from_le_bytes(*b)))
}

/// Write a segment's text keys (in order), replacing any parts it had.
pub(super) fn write(
    table: &mut Table<'_, NumberKey, &'static [u8]>,
    ns: &str,
    seg: u64,
    keys: &[Key],
) -> Result<(), Error> {
    table.retain_in(part_bounds(ns, seg, seg + 1), |_, _| false)?;
    for (part, chunk) in keys.chunks(PER_PART).enumerate() {
        let part = u32::try_from(part).map_err(|_| Error::Inconsistent {
            namespace: ns.to_string(),
            detail: "a segment of more than 2^32 texts".to_string(),
        })?;
        table.insert((ns, seg, part), encode(chunk).as_slice())?;
    }
    Ok(())
}

/// Every key of a segment's list, in order (overwritten entries included).
pub(super) fn load(
    table: &impl ReadableTable<NumberKey, &'static [u8]>,
    ns: &str,
    seg: u64,
) -> Result<Vec<Key>, Error> {
    let mut out = Vec::new();
    for (want, r) in table.range(part_bounds(ns, seg, seg + 1))?.enumerate() {
        let (k, v) = r?;
        let part = k.value().2;
        let list = checked(v.value()).ok_or_else(|| malformed(ns, seg, part))?;
        // Parts are whole but the last, and none is missing.
        if u32::try_from(want).ok() != Some(part) || out.len() % PER_PART != 0 {
            return Err(malformed(ns, seg, part));
        }
        out.extend(list.iter().map(key_of));
    }
    Ok(out)
}

/// Reads a segment's numbers one part at a time, keeping the last part read.
pub(crate) struct Numbers<'t, T> {
    table: &'t T,
    ns: &'t str,
    seg: u64,
    part: Option<(u32, redb::AccessGuard<'t, &'static [u8]>)>,
}

impl<'t, T: ReadableTable<NumberKey, &'static [u8]>> Numbers<'t, T> {
    pub(crate) fn new(table: &'t T, ns: &'t str, seg: u64) -> Self {
        Numbers { table, ns, seg, part: None }
    }

    /// The key of text `n` (`None` past the end).
    pub(crate) fn key(&mut self, n: u32) -> Result<Option<Key>, Error> {
        let (part, at) = (n / PER_PART as u32, n as usize % PER_PART);
        if self.part.as_ref().is_none_or(|p| p.0 != part) {
            self.part = self.table.get((self.ns, self.seg, part))?.map(|g| (part, g));
            // Checked once, as it is read.
            if let Some((_, g)) = &self.part
                && checked(g.value()).is_none()
            {
                return Err(malformed(self.ns, self.seg, part));
            }
        }
        let Some((_, guard)) = &self.part else { return Ok(None) };
        let list = entries(guard.value()).ok_or_else(|| malformed(self.ns, self.seg, part))?;
        Ok(list.get(at).map(key_of))
    }

    /// How many entries the list has.
    pub(crate) fn len(&self) -> Result<u32, Error> {
        let last = self.table.range(part_bounds(self.ns, self.seg, self.seg + 1))?.next_back().transpose()?;
        let Some((k, v)) = last else { return Ok(0) };
        let part = k.value().2;
        let n = checked(v.value()).ok_or_else(|| malformed(self.ns, self.seg, part))?.len();
        Ok(part.saturating_mul(PER_PART as u32).saturating_add(n as u32))
    }

    /// The number of the text of `key` (`None` if the segment has none): the first entry
    /// holding it.
    pub(crate) fn find(&mut self, key: Key) -> Result<Option<u32>, Error> {
        let (mut lo, mut hi) = (0u32, self.len()?);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = self.key(mid)?.ok_or_else(|| malformed(self.ns, self.seg, mid / PER_PART as u32))?;
            if at < key { lo = mid + 1 } else { hi = mid }
        }
        Ok(self.key(lo)?.filter(|k| *k == key).map(|_| lo))
    }
}

/// Overwrite entry `n` of a segment's list (a forgotten text's), and the entries after it
/// that hold the same key, with the entry before it (zeros for the first).
pub(super) fn forget(
    table: &mut Table<'_, NumberKey, &'static [u8]>,
    ns: &str,
    seg: u64,
    n: u32,
) -> Result<(), Error> {
    let mut numbers = Numbers::new(&*table, ns, seg);
    let Some(old) = numbers.key(n)? else { return Ok(()) };
    let new = match n.checked_sub(1) {
        Some(before) => numbers.key(before)?.unwrap_or((0, 0)),
        None => (0, 0),
    };
    let mut end = n + 1;
    while numbers.key(end)? == Some(old) {
        end += 1;
    }
    drop(numbers);
    let per = PER_PART as u32;
    for part in n / per..=(end - 1) / per {
        let mut keys: Vec<Key> = match table.get((ns, seg, part))? {
            Some(g) => {
                checked(g.value()).ok_or_else(|| malformed(ns, seg, part))?.iter().map(key_of).collect()
            }
            None => return Err(malformed(ns, seg, part)),
        };
        for (i, k) in keys.iter_mut().enumerate() {
            let at = part * per + i as u32;
            if (n..end).contains(&at) {
                *k = new;
            }
        }
        table.insert((ns, seg, part), encode(&keys).as_slice())?;
    }
    Ok(())
}

/// Problems with a segment's list: entries out of order, or a posting's number that names
/// no text (past the end, zeros, or an overwritten entry).
pub(super) fn check(keys: &[Key], used: impl Iterator<Item = u32>) -> Option<String> {
    if keys.windows(2).any(|w| w[0] > w[1]) {
        return Some("its text numbers are out of order".to_string());
    }
    for n in used {
        let i = n as usize;
        let named = keys.get(i).is_some_and(|k| *k != (0, 0) && (i == 0 || keys[i - 1] != *k));
        if !named {
            return Some(format!("a posting names text {n}, which it does not hold"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: redb::TableDefinition<NumberKey, &[u8]> = redb::TableDefinition::new("t");

    #[test]
    fn a_changed_bit_of_a_sealed_part_is_found() {
        let part = super::encode(&[(1, 0), (2, 3), (u128::MAX, 7)]);
        assert_eq!(super::checked(&part).map(<[_]>::len), Some(3));
        for byte in 0..part.len() {
            for bit in 0..8 {
                let mut bad = part.clone();
                bad[byte] ^= 1 << bit;
                assert!(super::checked(&bad).is_none(), "byte {byte} bit {bit}");
            }
        }
        // A part of formats 15 and 16 is read as it is, and seals.
        let mut old = part[..part.len() - 4].to_vec();
        old[0] = 1;
        assert_eq!(super::checked(&old).map(<[_]>::len), Some(3));
        assert_eq!(super::seal_part(&old), Some(part.clone()));
        assert_eq!(super::seal_part(&part), None);
    }

    #[test]
    fn texts_are_found_by_key_and_number_and_forgotten_without_a_trace() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("n.redb")).unwrap();
        let keys: Vec<Key> = (0..2000u128).map(|i| (i * 7 + 3, (i % 3) as u32)).collect();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            write(&mut t, "n", 9, &[(1, 1); 900]).unwrap();
            write(&mut t, "n", 9, &keys).unwrap();
            write(&mut t, "n", 10, &[(5, 5)]).unwrap();
            assert_eq!(load(&t, "n", 9).unwrap(), keys);
            let mut numbers = Numbers::new(&t, "n", 9);
            assert_eq!(numbers.len().unwrap(), 2000);
            for (i, k) in keys.iter().enumerate().step_by(37) {
                assert_eq!(numbers.key(i as u32).unwrap(), Some(*k));
                assert_eq!(numbers.find(*k).unwrap(), Some(i as u32));
                assert_eq!(numbers.find((k.0 + 1, 0)).unwrap(), None);
            }
            assert_eq!(numbers.key(2000).unwrap(), None);
            assert_eq!(numbers.find((u128::MAX, 0)).unwrap(), None);
            drop(numbers);
            // Forget a text at a part's end, the one before it, the first, and the last.
            for n in [799u32, 798, 0, 1999] {
                forget(&mut t, "n", 9, n).unwrap();
            }
            let now = load(&t, "n", 9).unwrap();
            assert_eq!(now.len(), 2000);
            assert!(now.windows(2).all(|w| w[0] <= w[1]));
            for n in [799usize, 798, 0, 1999] {
                assert!(!now.contains(&keys[n]), "{n}");
            }
            assert_eq!((now[798], now[799], now[0], now[1999]), (keys[797], keys[797], (0, 0), keys[1998]));
            let mut numbers = Numbers::new(&t, "n", 9);
            for i in [1usize, 797, 800, 1998] {
                assert_eq!(numbers.find(keys[i]).unwrap(), Some(i as u32), "{i}");
            }
            assert_eq!(numbers.find(keys[799]).unwrap(), None);
            assert!(check(&now, [1, 797, 800].into_iter()).is_none());
            assert!(check(&now, [799].into_iter()).is_some());
            assert!(check(&now, [0].into_iter()).is_some());
            assert!(check(&now, [2000].into_iter()).is_some());
            assert!(check(&[(2, 0), (1, 0)], std::iter::empty()).is_some());
            assert_eq!(load(&t, "n", 10).unwrap(), vec![(5, 5)]);
        }
        txn.commit().unwrap();
    }
}
