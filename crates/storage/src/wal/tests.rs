//! The log file against what appends, crashes and damage leave.

use super::*;

/// Space written ahead in these tests (the entries cross it many times).
const AHEAD: u64 = 8 << 10;

fn payload(seq: u64) -> Vec<u8> {
    // Sizes from a byte to 20 KB: most small, every tenth larger than the space written ahead.
    let n = 1 + (seq as usize * 7919) % (if seq.is_multiple_of(10) { 20_000 } else { 300 });
    (0..n).map(|i| (i as u64 ^ seq) as u8).collect()
}

fn open(path: &Path, base: u64) -> Result<(Wal, Vec<Entry>), WalError> {
    Wal::open_growing(path, base, AHEAD)
}

fn write(path: &Path, base: u64, count: u64) -> Wal {
    let (mut wal, found) = open(path, base).unwrap();
    assert_eq!(found.len() as u64, wal.next_seq() - wal.base() - 1);
    let first = wal.next_seq();
    for seq in first..first + count {
        wal.append(seq, &payload(seq)).unwrap();
    }
    wal.sync().unwrap();
    wal
}

/// The log at `path` has base `base` and the entries `base + 1 ..= last`.
fn expect(path: &Path, base: u64, last: u64) {
    let (wal, found) = open(path, 0).unwrap();
    assert_eq!(wal.base(), base);
    let want: Vec<Entry> = (base + 1..=last).map(|seq| Entry { seq, payload: payload(seq) }).collect();
    assert_eq!(found.len(), want.len());
    assert!(found == want, "entries up to {last}");
    assert_eq!(wal.next_seq(), last + 1);
}

#[test]
fn entries_come_back_in_order_and_the_log_goes_on_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.wal");
    let wal = write(&path, 41, 120);
    assert!(wal.len() > 10 * AHEAD, "the entries crossed the space written ahead");
    assert_eq!(std::fs::metadata(&path).unwrap().len() % AHEAD, 0);
    drop(wal);
    expect(&path, 41, 161);
    drop(write(&path, 0, 5));
    expect(&path, 41, 166);
    // A number out of turn is refused, and so is an empty entry.
    let (mut wal, _) = open(&path, 0).unwrap();
    assert!(matches!(wal.append(170, b"x"), Err(WalError::Damaged { .. })));
    assert!(wal.append(167, b"").is_err());
}

/// Started again after a checkpoint, the log reads only the new round, however much of the
/// old one is still on the file.
#[test]
fn a_new_round_hides_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.wal");
    let mut wal = write(&path, 0, 50);
    wal.start_again(50).unwrap();
    drop(wal);
    expect(&path, 50, 50);
    drop(write(&path, 0, 3));
    expect(&path, 50, 53);
}

/// A cut of the last entry (what a crash during its append leaves: part of it written, the
/// rest as it was) loses that entry alone, and the log goes on from there.
#[test]
fn a_torn_last_entry_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.wal");
    drop(write(&path, 0, 9));
    let (wal, _) = open(&path, 0).unwrap();
    let at = HEADER + wal.len();
    let last = encode_entry(10, &payload(10));
    drop(wal);
    let clean = std::fs::read(&path).unwrap();
    // Every cut in the entry's head and the first bytes of its payload, then one in 61.
    for cut in (0..64).chain((64..last.len()).step_by(61)) {
        let mut bytes = clean.clone();
        // The space it needed was written ahead before it was appended.
        let needed = (at as usize + last.len()).div_ceil(AHEAD as usize) * AHEAD as usize;
        bytes.resize(bytes.len().max(needed), 0);
        bytes[at as usize..at as usize + cut].copy_from_slice(&last[..cut]);
        std::fs::write(&path, &bytes).unwrap();
        expect(&path, 0, 9);
        // The next append takes its place.
        drop(write(&path, 0, 1));
        expect(&path, 0, 10);
    }
}

/// A changed bit in the last entry cuts it (a crash can leave that); in an earlier one, whose
/// successor stands whole, it is damage.
#[test]
fn a_changed_bit_is_a_cut_at_the_end_and_damage_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.wal");
    drop(write(&path, 0, 4));
    let clean = std::fs::read(&path).unwrap();
    let (wal, found) = open(&path, 0).unwrap();
    let end = (HEADER + wal.len()) as usize;
    let last_len = ENTRY_HEAD + found[3].payload.len();
    let second = HEADER as usize + ENTRY_HEAD + found[0].payload.len();
    let second_len = ENTRY_HEAD + found[1].payload.len();
    drop(wal);
    for bit in 0..last_len * 8 {
        let mut bytes = clean.clone();
        bytes[end - last_len + bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&path, &bytes).unwrap();
        let (_, found) = open(&path, 0).unwrap();
        assert_eq!(found.len(), 3, "bit {bit} of the last entry");
    }
    // Past the length field (a changed length may hide where the successor starts).
    for bit in 32..second_len * 8 {
        let mut bytes = clean.clone();
        bytes[second + bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&path, &bytes).unwrap();
        let e = open(&path, 0).unwrap_err();
        assert!(e.to_string().contains("entry 2 is not whole but entry 3"), "bit {bit}: {e}");
    }
    for bit in 0..(HEADER as usize - 8) * 8 {
        let mut bytes = clean.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(open(&path, 0), Err(WalError::Damaged { .. })), "header bit {bit}");
    }
}
