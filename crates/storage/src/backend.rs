//! The file under redb: redb's own [`FileBackend`], plus zeros written ahead of the data into
//! the parts of the file that have never held any (Linux, a file opened exclusively).
//!
//! redb grows its file with `set_len`, doubling it, so most of a growing file's tail is a
//! hole: blocks the file system has not allocated. A durable commit that writes its new pages
//! there (a group commit of 16 records writes about 3.6 such pages; a commit of one record
//! about 0.2) makes ext4 allocate blocks and commit its journal within the commit's
//! `fdatasync`, which costs more than writing over allocated blocks. [`FileStorage`] keeps a
//! list of the ranges known to be holes: the ranges `set_len` added in this process, and the
//! holes the file has when it is opened (found with `SEEK_HOLE` and `SEEK_DATA`; redb keeps
//! its allocator state at the end of the file, so a grown file's big hole lies between its
//! data and those last pages). When redb writes into one, the range from the write (or from
//! the hole's start, when that is near) to [`ahead`] bytes past it is first filled with
//! zeros, so that later commits write over allocated blocks; the commit that fills pays for
//! flushing those zeros once (about 0.6 ms per MiB here). Zeros over a hole change nothing a
//! reader can see, so no crash can expose a state that was not there before; a fill that
//! fails (a full disk) only turns the filling off.
//!
//! The holes are looked for through a clone of redb's file handle, after redb has locked the
//! file (at the first write or growth): the clone shares the open file description, whose
//! locks (redb takes open-file-description locks) closing the clone leaves in place.
//!
//! Measured (docs/benchmarks.md, "Group commit at 56d5d72"): commits of 16 jobs on a growing
//! file of 100k records took 10 % less time (`profile many 16`), criterion's 16 writers ran
//! 8 % faster, one writer unchanged.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// How far past a write into a hole the zeros reach: an eighth of the file, between 256 KiB
/// and 8 MiB (a small file is not made to take much more disk than its data).
fn ahead(len: u64) -> u64 {
    (len / 8).clamp(256 << 10, 8 << 20)
}

/// Watches, and may fail, the file operations under redb: what fault-injection and power-loss
/// tests install ([`crate::StoreOptions::io_hook`]). Each method is called before its
/// operation; an error fails the operation, which then does nothing. The default methods
/// let everything through.
pub trait IoHook: std::fmt::Debug + Send + Sync {
    /// Before reading `len` bytes at `offset`.
    fn read(&self, _offset: u64, _len: usize) -> io::Result<()> {
        Ok(())
    }
    /// Before writing `data` at `offset`.
    fn write(&self, _offset: u64, _data: &[u8]) -> io::Result<()> {
        Ok(())
    }
    /// Before setting the file's length.
    fn set_len(&self, _len: u64) -> io::Result<()> {
        Ok(())
    }
    /// Before flushing the written data to the disk (`fdatasync`).
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

/// redb's file backend, filling holes ahead of the writes into them (see the module
/// documentation), and calling an [`IoHook`] if given one.
#[derive(Debug)]
pub(crate) struct FileStorage {
    inner: FileBackend,
    /// `None`: no filling (a shared file, other platforms, or turned off).
    holes: Option<Mutex<Holes>>,
    hook: Option<std::sync::Arc<dyn IoHook>>,
}

#[derive(Debug)]
struct Holes {
    /// Ranges `[start, end)` known to hold no data, disjoint, by start.
    ranges: BTreeMap<u64, u64>,
    /// A handle on the file (the same open file description as redb's) to look for the
    /// file's holes before the first write, once redb holds its locks; `None` once looked.
    probe: Option<File>,
}

impl FileStorage {
    /// Over `file`; `fill`: write zeros ahead into holes (only where this module knows how:
    /// Linux).
    pub(crate) fn new(
        file: File,
        fill: bool,
        hook: Option<std::sync::Arc<dyn IoHook>>,
    ) -> Result<Self, redb::DatabaseError> {
        let probe = if fill && cfg!(target_os = "linux") { file.try_clone().ok() } else { None };
        let holes = probe.map(|p| Mutex::new(Holes { ranges: BTreeMap::new(), probe: Some(p) }));
        Ok(FileStorage { inner: FileBackend::new(file)?, holes, hook })
    }

    fn holes(&self) -> Option<std::sync::MutexGuard<'_, Holes>> {
        self.holes.as_ref().map(|h| h.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Before redb writes `[offset, end)`: fill the holes it falls into, from the write (or
    /// the hole's start, when that is near) to [`ahead`] bytes past it.
    fn fill_before(&self, holes: &mut Holes, offset: u64, end: u64) {
        self.look_for_holes(holes);
        let hit: Vec<(u64, u64)> = holes
            .ranges
            .range(..end)
            .rev()
            .take_while(|&(_, &hole_end)| hole_end > offset)
            .map(|(&s, &e)| (s, e))
            .collect();
        if hit.is_empty() {
            return;
        }
        let reach = match self.inner.len() {
            Ok(len) => ahead(len),
            Err(_) => return holes.ranges.clear(),
        };
        for (start, stop) in hit {
            let from = if offset > start && offset - start <= reach { start } else { offset.max(start) };
            let to = stop.min(end.saturating_add(reach));
            if write_zeros(&self.inner, from, to).is_err() {
                // Only an optimisation: stop filling (the zeros already written are harmless).
                holes.ranges.clear();
                return;
            }
            holes.ranges.remove(&start);
            if start < from {
                holes.ranges.insert(start, from);
            }
            if to < stop {
                holes.ranges.insert(to, stop);
            }
        }
    }

    /// Once, before the first write or growth: the holes the file has.
    fn look_for_holes(&self, holes: &mut Holes) {
        let Some(file) = holes.probe.take() else { return };
        let Ok(len) = self.inner.len() else { return };
        for (start, end) in file_holes(&file, len) {
            add_range(&mut holes.ranges, start, end);
        }
    }
}

/// Record `[start, end)` as a hole, joined to a hole that ends at `start`.
fn add_range(ranges: &mut BTreeMap<u64, u64>, start: u64, end: u64) {
    if start >= end {
        return;
    }
    let joined = ranges.range(..start).next_back().filter(|&(_, &e)| e == start).map(|(&s, _)| s);
    match joined {
        Some(s) => {
            ranges.insert(s, end);
        }
        None => {
            ranges.insert(start, end);
        }
    }
}

/// Forget every hole at or past `len` (the file was cut there).
fn cut_ranges(ranges: &mut BTreeMap<u64, u64>, len: u64) {
    let _ = ranges.split_off(&len);
    if let Some((_, end)) = ranges.range_mut(..len).next_back() {
        *end = (*end).min(len);
    }
}

fn write_zeros(inner: &FileBackend, from: u64, to: u64) -> io::Result<()> {
    const PIECE: u64 = 1 << 20;
    if from >= to {
        return Ok(());
    }
    let zeros = vec![0u8; usize::try_from((to - from).min(PIECE)).unwrap_or(1 << 20)];
    let mut at = from;
    while at < to {
        let n = usize::try_from((to - at).min(PIECE)).unwrap_or(zeros.len()).min(zeros.len());
        inner.write(at, &zeros[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// The holes of a file of `len` bytes, in order, at most [`MAX_HOLES`] of them (none where the
/// file system cannot tell: `SEEK_HOLE` then finds only the end of the file).
#[cfg(target_os = "linux")]
fn file_holes(file: &File, len: u64) -> Vec<(u64, u64)> {
    use rustix::fs::{SeekFrom, seek};
    let mut out = Vec::new();
    let mut at = 0;
    while at < len && out.len() < MAX_HOLES {
        let Ok(start) = seek(file, SeekFrom::Hole(at)) else { break };
        if start >= len {
            break;
        }
        let end = match seek(file, SeekFrom::Data(start)) {
            Ok(end) => end.min(len),
            // No data after it: the hole runs to the end of the file.
            Err(rustix::io::Errno::NXIO) => len,
            Err(_) => break,
        };
        if end <= start {
            break;
        }
        out.push((start, end));
        at = end;
    }
    out
}

/// Holes looked for when a file opens: a file redb has written for long has few (the tails
/// of its growth), and a fragmented one need not have them all filled.
#[cfg(target_os = "linux")]
const MAX_HOLES: usize = 4096;

#[cfg(not(target_os = "linux"))]
fn file_holes(_file: &File, _len: u64) -> Vec<(u64, u64)> {
    Vec::new()
}

impl StorageBackend for FileStorage {
    fn len(&self) -> Result<u64, io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        if let Some(hook) = &self.hook {
            hook.read(offset, out.len())?;
        }
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        if let Some(hook) = &self.hook {
            hook.set_len(len)?;
        }
        let Some(mut holes) = self.holes() else { return self.inner.set_len(len) };
        self.look_for_holes(&mut holes);
        let old = self.inner.len()?;
        self.inner.set_len(len)?;
        if len > old {
            // Growing makes a hole of the new bytes.
            add_range(&mut holes.ranges, old, len);
        } else {
            cut_ranges(&mut holes.ranges, len);
        }
        Ok(())
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        if let Some(hook) = &self.hook {
            hook.sync()?;
        }
        self.inner.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        if let Some(hook) = &self.hook {
            hook.write(offset, data)?;
        }
        if let Some(mut holes) = self.holes() {
            let end = offset.saturating_add(data.len() as u64);
            self.fill_before(&mut holes, offset, end);
            // Written under the lock, so that no fill by another thread can follow it.
            return self.inner.write(offset, data);
        }
        self.inner.write(offset, data)
    }

    fn close(&self) -> Result<(), io::Error> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

/// Open the redb database in the existing file at `path` for writing (`fill`: see
/// [`FileStorage`]). Like [`redb::Builder::open`], but through [`FileStorage`]; the caller has
/// checked that the file is a redb file (an empty one would be initialised).
pub(crate) fn open(
    builder: &redb::Builder,
    path: &Path,
    fill: bool,
    hook: Option<&std::sync::Arc<dyn IoHook>>,
) -> Result<redb::Database, redb::DatabaseError> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    builder.create_with_backend(FileStorage::new(file, fill, hook.cloned())?)
}

/// Create a redb database in a new (or empty) file at `path`, as [`redb::Builder::create`]
/// does, through [`FileStorage`].
pub(crate) fn create(
    builder: &redb::Builder,
    path: &Path,
    fill: bool,
) -> Result<redb::Database, redb::DatabaseError> {
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
    builder.create_with_backend(FileStorage::new(file, fill, None)?)
}

// The tests look at the blocks a file takes (`st_blocks`), a Unix notion.
#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::fs::OpenOptions;
    use std::os::unix::fs::MetadataExt;

    use proptest::prelude::*;

    use super::*;

    fn storage(path: &Path, fill: bool) -> FileStorage {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).unwrap();
        FileStorage::new(file, fill, None).unwrap()
    }

    /// Bytes the file system has given the file.
    fn allocated(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    fn read_all(s: &FileStorage) -> Vec<u8> {
        let mut out = vec![0u8; usize::try_from(s.len().unwrap()).unwrap()];
        s.read(0, &mut out).unwrap();
        out
    }

    /// Whether this file system leaves the space `set_len` adds unallocated (the fill has
    /// nothing to do where it does not).
    fn sparse_files(dir: &Path) -> bool {
        let probe = dir.join("sparse-probe");
        let f = File::create(&probe).unwrap();
        f.set_len(16 << 20).unwrap();
        let sparse = allocated(&probe) < 1 << 20;
        drop(f);
        std::fs::remove_file(&probe).unwrap();
        sparse
    }

    #[test]
    fn a_write_into_grown_space_fills_ahead_of_it() {
        let dir = tempfile::tempdir().unwrap();
        if !sparse_files(dir.path()) || !cfg!(target_os = "linux") {
            return;
        }
        for fill in [false, true] {
            let path = dir.path().join(format!("grown-{fill}"));
            let s = storage(&path, fill);
            s.set_len(64 << 20).unwrap();
            s.write(1 << 20, &[7u8; 4096]).unwrap();
            let got = allocated(&path);
            if fill {
                // From the hole's start (within reach) to 8 MiB past the write.
                assert!(got >= 9 << 20, "{got} bytes allocated");
            } else {
                assert!(got < 1 << 20, "{got} bytes allocated");
            }
            let all = read_all(&s);
            assert!(all[..1 << 20].iter().all(|&b| b == 0));
            assert!(all[1 << 20..(1 << 20) + 4096].iter().all(|&b| b == 7));
            assert!(all[(1 << 20) + 4096..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn the_holes_of_a_file_are_found_when_it_opens() {
        let dir = tempfile::tempdir().unwrap();
        if !sparse_files(dir.path()) || !cfg!(target_os = "linux") {
            return;
        }
        let path = dir.path().join("holes");
        {
            // As redb leaves a grown file: data, a hole, and its allocator state at the end.
            let f = File::create(&path).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, &[3u8; 1 << 20], 0).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, &[4u8; 1 << 20], 31 << 20).unwrap();
            f.sync_all().unwrap();
        }
        let before = allocated(&path);
        let s = storage(&path, true);
        // Far into the hole: filled from there, not from the hole's start.
        s.write(20 << 20, &[9u8; 4096]).unwrap();
        let after = allocated(&path);
        assert!(after - before >= 4 << 20, "{before} -> {after}");
        assert!(after < 16 << 20, "{after}: filled from the hole's start");
        let all = read_all(&s);
        assert!(all[..1 << 20].iter().all(|&b| b == 3));
        assert!(all[1 << 20..20 << 20].iter().all(|&b| b == 0));
        assert!(all[20 << 20..(20 << 20) + 4096].iter().all(|&b| b == 9));
        assert!(all[(20 << 20) + 4096..31 << 20].iter().all(|&b| b == 0));
        assert!(all[31 << 20..].iter().all(|&b| b == 4));
        // A write just past the data fills from there, where the data ends.
        s.write(1 << 20, &[5u8; 4096]).unwrap();
        assert!(read_all(&s)[..1 << 20].iter().all(|&b| b == 3));
    }

    #[test]
    fn ranges_join_and_are_cut() {
        let mut r = BTreeMap::new();
        add_range(&mut r, 0, 10);
        add_range(&mut r, 10, 20);
        add_range(&mut r, 30, 40);
        assert_eq!(r.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(), vec![(0, 20), (30, 40)]);
        cut_ranges(&mut r, 35);
        assert_eq!(r.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(), vec![(0, 20), (30, 35)]);
        cut_ranges(&mut r, 15);
        assert_eq!(r.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(), vec![(0, 15)]);
        add_range(&mut r, 15, 15);
        assert_eq!(r.len(), 1);
    }

    #[derive(Clone, Debug)]
    enum Op {
        SetLen(u64),
        Write(u64, usize, u8),
        Reopen,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            1 => (0u64..(4 << 20)).prop_map(Op::SetLen),
            6 => (0u64..(4 << 20), 1usize..20_000, any::<u8>()).prop_map(|(o, n, b)| Op::Write(o, n, b)),
            1 => Just(Op::Reopen),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Whatever redb does to its file (grow it, cut it, write anywhere in it, open it
        /// again), the zeros never land on data: the file reads as a plain file would.
        #[test]
        fn the_file_reads_as_if_nothing_were_filled(
            start in 1u64..(4 << 20),
            ops in proptest::collection::vec(op(), 1..40),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("model");
            let mut s = storage(&path, true);
            let mut model: Vec<u8> = Vec::new();
            for op in std::iter::once(Op::SetLen(start)).chain(ops) {
                match op {
                    Op::SetLen(len) => {
                        s.set_len(len).unwrap();
                        model.resize(usize::try_from(len).unwrap(), 0);
                    }
                    Op::Write(offset, n, byte) => {
                        let len = model.len() as u64;
                        if len == 0 {
                            continue;
                        }
                        let offset = offset % len;
                        let n = n.min(usize::try_from(len - offset).unwrap());
                        s.write(offset, &vec![byte; n]).unwrap();
                        let at = usize::try_from(offset).unwrap();
                        model[at..at + n].fill(byte);
                    }
                    Op::Reopen => {
                        s.close().unwrap();
                        drop(s);
                        s = storage(&path, true);
                    }
                }
                prop_assert_eq!(s.len().unwrap(), model.len() as u64);
                prop_assert!(read_all(&s) == model, "the file differs from the model");
            }
        }
    }
}
