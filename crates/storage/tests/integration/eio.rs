//! I/O errors injected under redb (through [`IoHook`]): the `n`-th read, write, growth or
//! sync of a workload fails with EIO, once (a transient fault) or from then on (a disk that
//! died), for `n` over the whole workload. Whatever fails must fail with an error, not a
//! panic; a read that succeeds must be right; and the file, opened again without faults,
//! must hold every acknowledged batch whole, no batch in part, pass both integrity checks and
//! take new writes. `MNEMON_EIO_STRIDE` (default: about 150 points per mode) sets the step
//! between the `n` tried.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mnemon_storage::*;

const BATCH: usize = 4;

/// Counts the operations under redb and fails the `fail_at`-th (and, if `persistent`, every
/// later one) with EIO.
#[derive(Debug)]
struct Faults {
    done: AtomicU64,
    fail_at: u64,
    persistent: bool,
}

impl Faults {
    fn new(fail_at: u64, persistent: bool) -> Arc<Self> {
        Arc::new(Faults { done: AtomicU64::new(0), fail_at, persistent })
    }

    fn step(&self) -> std::io::Result<()> {
        let n = self.done.fetch_add(1, Ordering::SeqCst);
        if n == self.fail_at || (self.persistent && n > self.fail_at) {
            return Err(std::io::Error::from_raw_os_error(5));
        }
        Ok(())
    }
}

impl IoHook for Faults {
    fn read(&self, _: u64, _: usize) -> std::io::Result<()> {
        self.step()
    }
    fn write(&self, _: u64, _: &[u8]) -> std::io::Result<()> {
        self.step()
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        self.step()
    }
    fn sync(&self) -> std::io::Result<()> {
        self.step()
    }
}

/// The workload under faults: open, 12 batches (every third eventual), a listing and a
/// search after each. Returns the batches acknowledged (`Err` if the open failed). An
/// eventual batch is on the disk once a later durable one is acknowledged.
fn workload(path: &std::path::Path, hook: Option<Arc<dyn IoHook>>, what: &str) -> Result<Vec<usize>, Error> {
    let store = Store::open(path, StoreOptions { io_hook: hook, ..Default::default() })?;
    let ns = Namespace::new("eio").unwrap();
    let mut acked = Vec::new();
    for k in 10..22 {
        let how = if k % 3 == 0 { Durability::Eventual } else { Durability::Immediate };
        match store.write_with(super::batches::batch(&ns, k, BATCH, "what a failing disk may leave"), how) {
            Ok(_) => acked.push(k),
            Err(e) if std::env::var("EIO_DEBUG").is_ok() => eprintln!("{what}: batch {k}: {e}"),
            Err(_) => {}
        }
        // A read that answers answers right: whole batches, every acknowledged one.
        if let Ok(snap) = store.snapshot() {
            if let Ok(list) = snap.list(&ns, &ListQuery::new()) {
                let held = super::batches::held(&list);
                assert!(held.values().all(|n| *n == BATCH), "{what}: a listing shows a partial batch");
                for a in &acked {
                    assert!(held.contains_key(a), "{what}: a listing misses acknowledged batch {a}");
                }
            }
            // A search that answers finds only written batches: the base, the acknowledged,
            // and this one (whose commit may have reached the file though its write failed).
            if let Ok(hits) = snap.lexical_search(&ns, "failing disk", &ListQuery::new(), 100) {
                let found = super::batches::held(&hits.into_iter().map(|h| h.record).collect::<Vec<_>>());
                for b in found.keys() {
                    assert!(
                        *b < 10 || *b == k || acked.contains(b),
                        "{what}: search finds batch {b}, never written"
                    );
                }
            }
        }
    }
    Ok(acked)
}

fn faults(persistent: bool) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.redb");
    let ns = Namespace::new("eio").unwrap();
    {
        let store = Store::open(&base, StoreOptions { create: true, ..Default::default() }).unwrap();
        for k in 0..10 {
            store.write(super::batches::batch(&ns, k, BATCH, "what a failing disk may leave")).unwrap();
        }
    }
    // How many operations the workload does without faults.
    let count = Faults::new(u64::MAX, false);
    let probe = dir.path().join("probe.redb");
    std::fs::copy(&base, &probe).unwrap();
    workload(&probe, Some(count.clone()), "no faults").unwrap();
    let total = count.done.load(Ordering::SeqCst);
    let stride: u64 =
        std::env::var("MNEMON_EIO_STRIDE").ok().and_then(|v| v.parse().ok()).unwrap_or((total / 150).max(1));
    let mut tried = 0;
    let mut failed_writes = 0;
    let mut went_on = 0;
    for n in (0..total).step_by(usize::try_from(stride).unwrap()) {
        let what = format!("persistent {persistent}, EIO at operation {n} of {total}");
        let path = dir.path().join(format!("eio-{n}.redb"));
        std::fs::copy(&base, &path).unwrap();
        let acked = workload(&path, Some(Faults::new(n, persistent)), &what).unwrap_or_default();
        failed_writes += 12 - acked.len();
        // The same store wrote again after a write failed, without being opened again.
        let first_failed = (10..22).find(|k| !acked.contains(k));
        if first_failed.is_some_and(|f| acked.iter().any(|a| *a > f)) {
            went_on += 1;
        }
        let store = Store::open(&path, StoreOptions::default())
            .unwrap_or_else(|e| panic!("{what}: does not open: {e}"));
        let snap = store.snapshot().unwrap();
        let held = super::batches::held(&snap.list(&ns, &ListQuery::new()).unwrap());
        for (k, size) in &held {
            assert_eq!(*size, BATCH, "{what}: batch {k} is partial");
        }
        let last_durable = acked.iter().copied().filter(|k| k % 3 != 0).max().unwrap_or(0);
        for k in (0..10).chain(acked.iter().copied().filter(|k| k % 3 != 0 || *k < last_durable)) {
            assert!(held.contains_key(&k), "{what}: acknowledged batch {k} is missing");
        }
        let problems = snap.verify().unwrap();
        assert!(problems.is_empty(), "{what}: {problems:?}");
        store
            .write(super::batches::batch(&ns, 99, BATCH, "what a failing disk may leave"))
            .unwrap_or_else(|e| panic!("{what}: takes no write: {e}"));
        drop((snap, store));
        assert!(Store::check_integrity(&path).unwrap(), "{what}: redb's integrity check fails");
        std::fs::remove_file(&path).unwrap();
        tried += 1;
    }
    assert!(failed_writes > 0, "no fault reached a write");
    if persistent {
        assert_eq!(went_on, 0, "a write succeeded on a dead disk");
    } else {
        assert!(
            went_on > tried / 4,
            "a store wrote again after a transient fault only {went_on} times in {tried}"
        );
    }
    eprintln!(
        "EIO (persistent {persistent}): {tried} fault points over {total} operations, {failed_writes} writes refused, \
         {went_on} stores wrote again after a refused write"
    );
}

#[test]
fn a_transient_io_error_anywhere_loses_nothing_acknowledged() {
    faults(false);
}

#[test]
fn a_disk_that_dies_anywhere_loses_nothing_acknowledged() {
    faults(true);
}
