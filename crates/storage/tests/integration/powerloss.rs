//! Power-loss test: every write, growth and sync under redb is recorded (through
//! [`IoHook`]) while a store commits batches, then the file is rebuilt as a power cut could
//! have left it at each sync: everything before that sync on the disk, and of the writes
//! after it none, all, a random subset, or a random subset in another order with some cut
//! short at a page boundary (the disk wrote part of them). Each image must open (recovering
//! what the cut left), pass redb's integrity check and mnemon's index check, hold every batch
//! acknowledged by a durable commit that the cut came after, hold no batch in part, and take
//! new writes.
//!
//! `MNEMON_POWERLOSS_VARIANTS` (default 2) sets how many random images are built per sync
//! besides the two fixed ones (none, all); `MNEMON_POWERLOSS_SEED` the seed.

use std::sync::{Arc, Mutex};

use mnemon_storage::*;

const BATCH: usize = 6;
const BATCHES: usize = 60;
const PAGE: usize = 4096;

#[derive(Debug)]
enum Event {
    Write(u64, Vec<u8>),
    SetLen(u64),
    Sync,
}

/// Records every operation under redb, in order.
#[derive(Debug, Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    fn syncs(&self) -> usize {
        self.events.lock().unwrap().iter().filter(|e| matches!(e, Event::Sync)).count()
    }
}

impl IoHook for Recorder {
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.events.lock().unwrap().push(Event::Write(offset, data.to_vec()));
        Ok(())
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.events.lock().unwrap().push(Event::SetLen(len));
        Ok(())
    }
    fn sync(&self) -> std::io::Result<()> {
        self.events.lock().unwrap().push(Event::Sync);
        Ok(())
    }
}

/// A small deterministic generator (no dependency for a test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

fn write(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let at = usize::try_from(offset).unwrap();
    if image.len() < at + data.len() {
        image.resize(at + data.len(), 0);
    }
    image[at..at + data.len()].copy_from_slice(data);
}

/// The file as a power cut right after sync `cut` (0: before the first) could leave it:
/// `variant` 0 drops every later write, 1 keeps them all (up to the next sync), others keep a
/// random subset, from 3 on in a random order and some cut short at a page boundary.
fn image(base: &[u8], events: &[Event], cut: usize, variant: usize, rng: &mut Lcg) -> Vec<u8> {
    let mut out = base.to_vec();
    let mut synced = 0;
    let mut rest = events;
    while synced < cut {
        let Some((e, tail)) = rest.split_first() else { break };
        rest = tail;
        match e {
            Event::Write(o, d) => write(&mut out, *o, d),
            Event::SetLen(l) => out.resize(usize::try_from(*l).unwrap(), 0),
            Event::Sync => synced += 1,
        }
    }
    let pending: Vec<&Event> = rest.iter().take_while(|e| !matches!(e, Event::Sync)).collect();
    let mut kept: Vec<&Event> = match variant {
        0 => Vec::new(),
        1 => pending,
        _ => pending.into_iter().filter(|_| rng.chance(2)).collect(),
    };
    if variant >= 3 {
        for i in (1..kept.len()).rev() {
            let j = usize::try_from(rng.next()).unwrap() % (i + 1);
            kept.swap(i, j);
        }
    }
    for e in kept {
        match e {
            Event::Write(o, d) if variant >= 3 && d.len() > PAGE && rng.chance(3) => {
                let pages = d.len().div_ceil(PAGE);
                let keep = usize::try_from(rng.next()).unwrap() % pages;
                write(&mut out, *o, &d[..keep * PAGE]);
            }
            Event::Write(o, d) => write(&mut out, *o, d),
            Event::SetLen(l) => out.resize(usize::try_from(*l).unwrap(), 0),
            Event::Sync => {}
        }
    }
    out
}

fn power_cuts(shared: bool) {
    let variants: usize =
        std::env::var("MNEMON_POWERLOSS_VARIANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let seed: u64 = std::env::var("MNEMON_POWERLOSS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.redb");
    let options = |hook: Option<Arc<dyn IoHook>>| StoreOptions {
        create: true,
        shared,
        io_hook: hook,
        ..Default::default()
    };
    drop(Store::open(&path, options(None)).unwrap());
    let base = std::fs::read(&path).unwrap();
    let ns = Namespace::new("power").unwrap();
    let recorder = Arc::new(Recorder::default());
    // Per batch: the syncs done when its commit was acknowledged, and whether it was durable.
    let mut acked: Vec<(usize, bool)> = Vec::new();
    {
        let store = Store::open(&path, options(Some(recorder.clone()))).unwrap();
        for k in 0..BATCHES {
            let durable = !k.is_multiple_of(5);
            let how = if durable { Durability::Immediate } else { Durability::Eventual };
            store
                .write_with(
                    super::batches::batch(&ns, k, BATCH, "what a power cut may leave of a commit"),
                    how,
                )
                .unwrap();
            acked.push((recorder.syncs(), durable));
        }
    }
    let events = std::mem::take(&mut *recorder.events.lock().unwrap());
    let syncs = events.iter().filter(|e| matches!(e, Event::Sync)).count();
    assert!(syncs >= BATCHES * 4 / 5, "{syncs} syncs for {BATCHES} commits");
    let mut rng = Lcg(seed);
    let mut images = 0;
    for cut in 0..=syncs {
        // Every batch up to the last durable one acknowledged by this sync must be there.
        let must = acked.iter().rposition(|&(at, durable)| durable && at <= cut).map_or(0, |k| k + 1);
        for variant in 0..2 + variants {
            let bytes = image(&base, &events, cut, variant, &mut rng);
            let at = dir.path().join(format!("cut-{cut}-{variant}.redb"));
            std::fs::write(&at, &bytes).unwrap();
            let what = format!("shared {shared}, cut after sync {cut} of {syncs}, variant {variant}");
            let store = Store::open(&at, StoreOptions { shared, ..Default::default() })
                .unwrap_or_else(|e| panic!("{what}: does not open: {e}"));
            let held = super::batches::held(&store.snapshot().unwrap().list(&ns, &ListQuery::new()).unwrap());
            for (k, n) in &held {
                assert_eq!(*n, BATCH, "{what}: batch {k} is partial");
            }
            for k in 0..must {
                assert!(held.contains_key(&k), "{what}: acknowledged batch {k} is missing");
            }
            // What a cut keeps is a prefix of the commits.
            let held_k: Vec<usize> = held.keys().copied().collect();
            assert_eq!(held_k, (0..held_k.len()).collect::<Vec<_>>(), "{what}: not a prefix");
            let problems = store.snapshot().unwrap().verify().unwrap();
            assert!(problems.is_empty(), "{what}: {problems:?}");
            store
                .write(super::batches::batch(&ns, BATCHES, BATCH, "what a power cut may leave of a commit"))
                .unwrap_or_else(|e| panic!("{what}: takes no write: {e}"));
            drop(store);
            assert!(Store::check_integrity(&at).unwrap(), "{what}: redb's integrity check fails");
            std::fs::remove_file(&at).unwrap();
            images += 1;
        }
    }
    eprintln!("power cuts (shared {shared}): {syncs} syncs, {images} images, all recovered");
}

/// The default mode: one process owns the file.
#[test]
fn power_cuts_at_every_sync_lose_nothing_acknowledged() {
    power_cuts(false);
}

/// The multi-writer mode: two-phase durable commits.
#[test]
fn power_cuts_at_every_sync_lose_nothing_acknowledged_shared() {
    power_cuts(true);
}
