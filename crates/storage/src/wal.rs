//! The write-ahead log's file: numbered entries appended in place, each checksummed, read back
//! in order up to the last whole one.
//!
//! The log is meant to stand in front of the B-trees (issue 56's design): a group commit's
//! jobs are appended as one entry, numbered by the commit's `commit_seq`, and synced, and the
//! B-trees are committed without a sync of their own; a durable commit of the B-trees
//! (a checkpoint) lets the log start again. This module is the file alone; the store does not
//! use it yet.
//!
//! Layout: a 32-byte header (`MNEMONWL`, the version, the **base**: the `commit_seq` the
//! B-trees had durably when the log last started again, and a CRC-32 of those), then entries
//! `[len: u32][crc: u32][seq: u64][payload: len bytes]`, the CRC-32 over `len`, `seq` and the
//! payload. Entries are numbered `base + 1, base + 2, …` without a gap. The file's space is
//! written ahead with zeros ([`GROWTH`] at a time, synced once), so that syncing an entry
//! changes neither the file's size nor its extents: an `fdatasync` then writes the entry's
//! pages alone (on this machine's disk 260 µs per lone durable insert against 315 µs with a
//! growing file; `cargo bench -p mnemon-bench --bench storage -- insert_durable_single`).
//!
//! Reading stops at the first entry that is not whole (its length beyond the file, its CRC
//! wrong, its number not the next): what a crash in the middle of an append leaves, or the
//! zeros written ahead, or an entry of an earlier round that the current one has not
//! overwritten yet. One thing a crash cannot leave is told apart: a bad entry followed by the
//! next number, whole, which is damage ([`WalError::Damaged`]), never cut silently.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The header's first bytes.
const MAGIC: &[u8; 8] = b"MNEMONWL";
/// The layout's version.
const VERSION: u32 = 1;
/// The header's size (its fields, then zeros).
const HEADER: u64 = 32;
/// An entry's bytes before its payload.
const ENTRY_HEAD: usize = 16;
/// How much space is written ahead at a time.
pub(crate) const GROWTH: u64 = 4 << 20;
/// The largest payload an entry may have (a group commit's jobs).
pub(crate) const MAX_ENTRY: usize = 1 << 30;

/// Why the log cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WalError {
    /// The file could not be read or written.
    #[error("write-ahead log {path}: {source}")]
    Io {
        /// The log file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The file holds something a crash cannot leave.
    #[error("write-ahead log {path} is damaged: {reason}")]
    Damaged {
        /// The log file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// One entry read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its number.
    pub(crate) seq: u64,
    /// What was appended.
    pub(crate) payload: Vec<u8>,
}

/// An open log (see the module documentation).
#[derive(Debug)]
pub(crate) struct Wal {
    file: File,
    path: PathBuf,
    base: u64,
    /// Where the next entry goes.
    end: u64,
    /// The number the next entry must have.
    next: u64,
    /// The bytes written ahead (the file's length).
    capacity: u64,
    /// How much is written ahead at a time ([`GROWTH`]; less in tests).
    growth: u64,
}

impl Wal {
    /// Open the log at `path`, creating it (with `base`) if it does not exist, and read its
    /// entries.
    pub(crate) fn open(path: &Path, base: u64) -> Result<(Wal, Vec<Entry>), WalError> {
        Wal::open_growing(path, base, GROWTH)
    }

    /// [`Wal::open`], writing `growth` bytes ahead at a time.
    pub(crate) fn open_growing(path: &Path, base: u64, growth: u64) -> Result<(Wal, Vec<Entry>), WalError> {
        let io = |source| WalError::Io { path: path.to_path_buf(), source };
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        let capacity = file.metadata().map_err(io)?.len();
        let growth = growth.max(HEADER);
        let mut wal =
            Wal { file, path: path.to_path_buf(), base, end: HEADER, next: base + 1, capacity, growth };
        if capacity < HEADER {
            wal.start_again(base)?;
            return Ok((wal, Vec::new()));
        }
        let mut header = [0u8; HEADER as usize];
        wal.file.read_exact_at(&mut header, 0).map_err(io)?;
        wal.base = wal.parse_header(&header)?;
        wal.next = wal.base + 1;
        let entries = wal.scan()?;
        Ok((wal, entries))
    }

    /// The `commit_seq` the log started after.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The number the next entry must have.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next
    }

    /// The bytes of entries since the log started again.
    pub(crate) fn len(&self) -> u64 {
        self.end - HEADER
    }

    /// Append entry `seq` (which must be [`Wal::next_seq`]); not synced ([`Wal::sync`]).
    pub(crate) fn append(&mut self, seq: u64, payload: &[u8]) -> Result<(), WalError> {
        if seq != self.next {
            return Err(self.damaged(format!("entry {seq} appended where {} was due", self.next)));
        }
        if payload.is_empty() {
            return Err(self.damaged(format!("entry {seq} is empty")));
        }
        if payload.len() > MAX_ENTRY {
            return Err(self.damaged(format!("an entry of {} bytes is over the limit", payload.len())));
        }
        let bytes = encode_entry(seq, payload);
        let needed = self.end + bytes.len() as u64;
        if needed > self.capacity {
            self.grow(needed)?;
        }
        self.file.write_all_at(&bytes, self.end).map_err(|e| self.io(e))?;
        self.end = needed;
        self.next += 1;
        Ok(())
    }

    /// Make every appended entry durable (`fdatasync`).
    pub(crate) fn sync(&self) -> Result<(), WalError> {
        self.file.sync_data().map_err(|e| self.io(e))
    }

    /// Start again after `base` (the B-trees hold every entry up to it durably): the header
    /// rewritten and synced; the old entries are overwritten as new ones come, and never read
    /// again (their numbers are not the next).
    pub(crate) fn start_again(&mut self, base: u64) -> Result<(), WalError> {
        if self.capacity < HEADER + self.growth {
            self.grow(HEADER + self.growth)?;
        }
        let mut header = [0u8; HEADER as usize];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..20].copy_from_slice(&base.to_le_bytes());
        let crc = crc32fast::hash(&header[..20]);
        header[20..24].copy_from_slice(&crc.to_le_bytes());
        self.file.write_all_at(&header, 0).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        (self.base, self.end, self.next) = (base, HEADER, base + 1);
        Ok(())
    }

    /// Write zeros ahead up to at least `needed` bytes (in steps of `growth`) and sync the
    /// file's new length once.
    fn grow(&mut self, needed: u64) -> Result<(), WalError> {
        let target = needed.div_ceil(self.growth) * self.growth;
        let zeros = vec![0u8; 1 << 20];
        let mut at = self.capacity;
        while at < target {
            let n = (target - at).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], at).map_err(|e| self.io(e))?;
            at += n as u64;
        }
        self.file.sync_all().map_err(|e| self.io(e))?;
        self.capacity = target;
        Ok(())
    }

    fn parse_header(&self, h: &[u8; HEADER as usize]) -> Result<u64, WalError> {
        if &h[..8] != MAGIC {
            return Err(self.damaged("it does not start as a mnemon log".into()));
        }
        if crc32fast::hash(&h[..20]).to_le_bytes() != h[20..24] {
            return Err(self.damaged("its header's checksum is wrong".into()));
        }
        let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if version != VERSION {
            return Err(self.damaged(format!("layout version {version}, this build reads {VERSION}")));
        }
        let mut base = [0u8; 8];
        base.copy_from_slice(&h[12..20]);
        Ok(u64::from_le_bytes(base))
    }

    /// Read the entries from the start, leaving `end` and `next` after the last whole one.
    fn scan(&mut self) -> Result<Vec<Entry>, WalError> {
        let mut out = Vec::new();
        while let Some((entry, len)) = self.read_at(self.end, self.next)? {
            out.push(entry);
            self.end += len;
            self.next += 1;
        }
        // Not whole: a crash's cut, unless the next entry stands whole behind it.
        if let Some(len) = self.claimed_len(self.end)?
            && let Some((after, _)) = self.read_at(self.end + len, self.next + 1)?
        {
            return Err(
                self.damaged(format!("entry {} is not whole but entry {} after it is", self.next, after.seq))
            );
        }
        Ok(out)
    }

    /// The length an entry at `at` claims, if it fits in the file.
    fn claimed_len(&self, at: u64) -> Result<Option<u64>, WalError> {
        if at + ENTRY_HEAD as u64 > self.capacity {
            return Ok(None);
        }
        let mut len = [0u8; 4];
        self.file.read_exact_at(&mut len, at).map_err(|e| self.io(e))?;
        let total = ENTRY_HEAD as u64 + u64::from(u32::from_le_bytes(len));
        Ok((at + total <= self.capacity && total > ENTRY_HEAD as u64).then_some(total))
    }

    /// The whole entry numbered `seq` at `at`, and its length in the file.
    fn read_at(&self, at: u64, seq: u64) -> Result<Option<(Entry, u64)>, WalError> {
        let Some(total) = self.claimed_len(at)? else { return Ok(None) };
        let mut bytes = vec![0u8; total as usize];
        self.file.read_exact_at(&mut bytes, at).map_err(|e| self.io(e))?;
        Ok(decode_entry(&bytes).filter(|e| e.seq == seq).map(|e| (e, total)))
    }

    fn io(&self, source: io::Error) -> WalError {
        WalError::Io { path: self.path.clone(), source }
    }

    fn damaged(&self, reason: String) -> WalError {
        WalError::Damaged { path: self.path.clone(), reason }
    }
}

/// An entry's bytes.
fn encode_entry(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENTRY_HEAD + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    let mut h = crc32fast::Hasher::new();
    h.update(&out[..4]);
    h.update(&out[8..]);
    out[4..8].copy_from_slice(&h.finalize().to_le_bytes());
    out
}

/// The entry in `bytes` (exactly one), if whole.
fn decode_entry(bytes: &[u8]) -> Option<Entry> {
    if bytes.len() < ENTRY_HEAD {
        return None;
    }
    let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    if bytes.len() != ENTRY_HEAD + len || len == 0 {
        return None;
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..4]);
    h.update(&bytes[8..]);
    if h.finalize().to_le_bytes() != bytes[4..8] {
        return None;
    }
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&bytes[8..16]);
    Some(Entry { seq: u64::from_le_bytes(seq), payload: bytes[ENTRY_HEAD..].to_vec() })
}

#[cfg(test)]
mod tests;
