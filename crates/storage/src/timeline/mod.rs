//! The timeline index: "which records were visible at valid time V, as known at transaction
//! time K", at a cost that follows the live set, not the length of the history.
//!
//! # Model
//!
//! Each revision of a record has a visible interval on the valid-time axis
//! (`[valid_from, min(valid_until, expires_at))`) and is current during a transaction-time
//! interval `[recorded_at, next revision's recorded_at)`. At any transaction time K a record has
//! at most one current revision, hence at most one visible interval.
//!
//! * **Events** (`EVENTS`): for every edge of every visible interval ever believed, a key
//!   `(ns, t, id, edge)` whose value holds the *transaction-time spans* during which that edge
//!   was believed. A revision that moves an edge closes the old edge's span and opens the new
//!   one's; a revision that leaves the interval alone (a content correction) touches nothing.
//! * **Checkpoints** (`CHECKPOINTS` + `CHECKPOINT_ENTRIES`): at selected valid times C, the
//!   records visible at C, each with the transaction-time spans during which it was believed
//!   visible at C. Entries are exact for every K, so one checkpoint serves all of transaction
//!   time. A revision whose interval change covers C (only back-dated changes do, since
//!   checkpoints are only placed at or before the commit time) closes or opens that entry's
//!   span.
//!
//! # Query
//!
//! `live(V, K)`: take the checkpoint with the greatest C <= V; its entries believed at K are
//! the live set at C. Then read the events in (C, V]: per record, with `start` / `end` meaning
//! "a start / end edge in (C, V] believed at K",
//! `live_V = !end && (live_C || start)` (a record has one interval at K, so this is exact and
//! independent of event order).
//!
//! # Maintenance
//!
//! Each checkpoint row counts the events asserted in the gap after it. When a gap holds more
//! than `2 * N` events (N = max(minimum gap, live records at the checkpoint)), the commit that
//! noticed it walks the gap's events up to the commit time and places a new checkpoint every N
//! events, computing each one's entries with the same span algebra. Query cost is therefore
//! bounded by about `live + 2N` entries; storage by about one entry per event.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use redb::ReadableTable;

use crate::error::Error;
use crate::record::Visible;
use crate::tables::names;

mod spans;
mod writer;
pub(crate) use spans::*;
pub(crate) use writer::*;

/// Edge code of "stops being visible".
pub(crate) const EDGE_END: u8 = 0;
/// Edge code of "becomes visible".
pub(crate) const EDGE_START: u8 = 1;

/// Records visible at a time, `(id, kind)` in id order.
type LiveSet = Vec<(u128, u8)>;

fn apply_pending(live: &mut LiveSet, pending: &mut HashMap<u128, (u8, u8)>) {
    if pending.is_empty() {
        return;
    }
    let mut changes: Vec<(u128, u8, u8)> =
        pending.drain().map(|(id, (kind, flags))| (id, kind, flags)).collect();
    changes.sort_unstable_by_key(|c| c.0);
    let mut out = Vec::with_capacity(live.len() + changes.len());
    let mut rest = live.iter().copied().peekable();
    for (id, kind, flags) in changes {
        while let Some(entry) = rest.next_if(|e| e.0 < id) {
            out.push(entry);
        }
        let was = rest.next_if(|e| e.0 == id);
        // One interval per record as known now: an end in the gap hides it, otherwise a
        // start shows it, otherwise it stays as it was.
        if flags & 2 != 0 {
        } else if flags & 1 != 0 {
            out.push((id, kind));
        } else if let Some(entry) = was {
            out.push(entry);
        }
    }
    out.extend(rest);
    *live = out;
}

/// The first valid time after `after` at which a record of one of `kinds` (all when `None`)
/// starts or stops being visible in `ns`, as known at `k`.
pub(crate) fn next_event_after(
    events: &impl ReadableTable<EventKey<'static>, &'static [u8]>,
    ns: &str,
    after: i64,
    k: i64,
    kinds: Option<&[u8]>,
) -> Result<Option<i64>, Error> {
    for r in events.range((ns, after.saturating_add(1), 0u128, 0u8)..=(ns, i64::MAX, u128::MAX, u8::MAX))? {
        let (key, val) = r?;
        let (kind, believed) = spans_contain(names::EVENTS, val.value(), k)?;
        if believed && kinds.is_none_or(|ks| ks.contains(&kind)) {
            return Ok(Some(key.value().1));
        }
    }
    Ok(None)
}

pub(crate) fn live_at(
    events: &impl ReadableTable<EventKey<'static>, &'static [u8]>,
    checkpoints: &impl ReadableTable<CheckpointKey<'static>, &'static [u8]>,
    entries: &impl ReadableTable<EntryKey<'static>, &'static [u8]>,
    ns: &str,
    v: i64,
    k: i64,
    kinds: Option<&[u8]>,
) -> Result<Vec<(u128, u8)>, Error> {
    const AT_CHECKPOINT: u8 = 1;
    const STARTS: u8 = 2;
    const ENDS: u8 = 4;
    let keep = |kind: u8| kinds.is_none_or(|ks| ks.contains(&kind));
    // The latest checkpoint at or before `v` that was made at or before `k`.
    // Cursors rather than ranges: redb finds both ends of a range and compares every step with
    // its end (a tuple compare here); a cursor costs one descent, and the loops stop at the
    // edge themselves.
    let mut cp: Option<i64> = None;
    let mut before = checkpoints.upper_bound(Bound::Included((ns, v)))?;
    while let Some((key, val)) = before.prev()? {
        let (n, at) = key.value();
        if n != ns {
            break;
        }
        if decode_row(val.value())?.created_tx <= k {
            cp = Some(at);
            break;
        }
    }
    let Some(cp) = cp else { return Ok(Vec::new()) };
    // (id, kind, flag) for every entry and event believed at k; merged by id below.
    let mut marks: Vec<(u128, u8, u8)> = Vec::new();
    let mut rows = entries.lower_bound(Bound::Included((ns, cp, 0u128)))?;
    while let Some((key, val)) = rows.next()? {
        let (n, at, id) = key.value();
        if n != ns || at != cp {
            break;
        }
        let (kind, believed) = spans_contain(names::CHECKPOINT_ENTRIES, val.value(), k)?;
        if believed && keep(kind) {
            marks.push((id, kind, AT_CHECKPOINT));
        }
    }
    let entry_count = marks.len();
    if cp < v {
        let mut rows = events.lower_bound(Bound::Included((ns, cp + 1, 0u128, 0u8)))?;
        while let Some((key, val)) = rows.next()? {
            let (n, t, id, edge) = key.value();
            if n != ns || t > v {
                break;
            }
            let (kind, believed) = spans_contain(names::EVENTS, val.value(), k)?;
            if believed && keep(kind) {
                marks.push((id, kind, if edge == EDGE_START { STARTS } else { ENDS }));
            }
        }
    }
    if marks.len() > entry_count {
        // Entries come sorted by id, events do not: a stable sort finds the entries' run and
        // only sorts the events before merging the two (a third of the instructions of an
        // unstable sort of the whole, measured on the `past` listing).
        marks.sort_by_key(|m| m.0);
    }
    let mut out: Vec<(u128, u8)> = Vec::with_capacity(entry_count);
    let mut i = 0;
    while let Some(&(id, kind, _)) = marks.get(i) {
        let mut flags = 0u8;
        while let Some(&(other, _, f)) = marks.get(i) {
            if other != id {
                break;
            }
            flags |= f;
            i += 1;
        }
        if flags & ENDS == 0 && flags & (AT_CHECKPOINT | STARTS) != 0 {
            out.push((id, kind));
        }
    }
    Ok(out)
}

/// What a record was believed to be: each transaction-time span with the visible interval
/// believed during it.
pub(crate) type Belief = Vec<(Spans, Option<Visible>)>;

/// What the timeline should hold for one record, derived from its revisions: used by the
/// consistency check. `revisions` are `(recorded_at, visible)` in revision order.
pub(crate) fn expected_for_record(
    revisions: &[(i64, Option<Visible>)],
) -> (BTreeMap<(i64, u8), Spans>, Belief) {
    let mut events: BTreeMap<(i64, u8), Spans> = BTreeMap::new();
    let mut belief: Belief = Vec::new();
    for (i, (rec, vis)) in revisions.iter().enumerate() {
        let until = revisions.get(i + 1).map_or(i64::MAX, |n| n.0);
        let span = Spans::between(*rec, until);
        if span.is_empty() {
            continue;
        }
        for e in edges(*vis) {
            let slot = events.entry(e).or_default();
            *slot = slot.union(&span);
        }
        belief.push((span, *vis));
    }
    (events, belief)
}

/// The spans, from `created_tx` on, during which a record (described by `belief` from
/// [`expected_for_record`]) was believed visible at `c`: what a checkpoint at `c` made at
/// `created_tx` must hold.
pub(crate) fn expected_entry(belief: &[(Spans, Option<Visible>)], c: i64, created_tx: i64) -> Spans {
    let mut out = Spans::default();
    for (span, vis) in belief {
        if contains(*vis, c) {
            out = out.union(span);
        }
    }
    out.minus(&Spans::between(i64::MIN, created_tx))
}

#[cfg(test)]
mod tests {
    use crate::time::Timestamp;
    thread_local! {
        /// Gaps walked by `maybe_split` on this thread (a lone writer commits on its own).
        pub(super) static GAP_WALKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Records whose valid intervals end a little after they start, so that ends pass all the
    /// time: a gap short of events is walked again once enough of its future events have
    /// passed, not at every commit after the first of them (which walked the whole gap at
    /// every commit, 250 times slower writes with 150k records live).
    #[test]
    fn passing_ends_do_not_make_every_commit_walk_the_gap() {
        use std::sync::Arc;

        use crate::body::Learning;
        use crate::id::Namespace;
        use crate::read::{AsOf, ListQuery};
        use crate::store::{Store, StoreOptions};
        use crate::time::{Clock, ManualClock};
        use crate::write::{NewRecord, WriteOp};

        let dir = tempfile::tempdir().unwrap();
        let t0 = Timestamp::from_micros(1_700_000_000_000_000);
        let clock = Arc::new(ManualClock::new(t0));
        let options =
            StoreOptions { create: true, clock: clock.clone(), min_checkpoint_gap: 16, ..Default::default() };
        let store = Store::open(dir.path().join("w.redb"), options).unwrap();
        let ns = Namespace::new("w").unwrap();
        const LIFE: i64 = 2_000;
        let mut until = Vec::new();
        let before = GAP_WALKS.with(std::cell::Cell::get);
        for i in 0..1_000 {
            clock.advance(10);
            let mut r =
                NewRecord::new(ns.clone(), Learning { text: format!("note {i}"), ..Default::default() });
            r.valid_until = Some(clock.now().plus_micros(LIFE));
            let receipt = store.write(vec![WriteOp::Insert(r)]).unwrap();
            until.push((receipt.outcomes[0].id(), receipt.tx.plus_micros(LIFE)));
        }
        let walks = GAP_WALKS.with(std::cell::Cell::get) - before;
        // About 200 records live at a time, so a gap holds about 200 events before a split,
        // and ends pass at one per commit from the 200th on: a few dozen walks. Walking at
        // every commit once ends pass made 800.
        assert!(walks < 100, "{walks} gap walks for 1,000 commits");
        // And the listings are still exact, from the timeline (known before now) too.
        let snap = store.snapshot().unwrap();
        let now = clock.now();
        for back in [0, 500, 3_000, 7_777] {
            let v = now.plus_micros(-back);
            for k in [now, now.plus_micros(-back / 2)] {
                let q = ListQuery::new().as_of(AsOf::valid_at(v).known_at(k));
                let mut got: Vec<_> = snap.list(&ns, &q).unwrap().into_iter().map(|r| r.id).collect();
                got.sort();
                let mut want: Vec<_> = until
                    .iter()
                    .filter(|(_, u)| {
                        let from = u.plus_micros(-LIFE);
                        from <= v && v < *u && from <= k
                    })
                    .map(|(id, _)| *id)
                    .collect();
                want.sort();
                assert_eq!(got, want, "valid at {v}, known at {k}");
            }
        }
    }

    use super::*;

    #[test]
    fn span_algebra() {
        let a = Spans(vec![(0, 10), (20, 30)]);
        let b = Spans(vec![(5, 25)]);
        assert_eq!(a.union(&b), Spans(vec![(0, 30)]));
        assert_eq!(a.minus(&b), Spans(vec![(0, 5), (25, 30)]));
        assert_eq!(Spans::open_from(5).minus(&Spans::open_from(5)), Spans::default());
        let mut s = Spans::open_from(1);
        s = s.minus(&Spans::open_from(4));
        assert_eq!(s, Spans(vec![(1, 4)]));
        s = s.union(&Spans::open_from(4));
        assert_eq!(s, Spans::open_from(1));
        assert!(s.contains(1) && !s.contains(0));
    }

    #[test]
    fn symmetric_difference_segments() {
        let v = |a: i64, b: i64| {
            Some(Visible { from: Timestamp::from_micros(a), until: Timestamp::from_micros(b) })
        };
        assert_eq!(symmetric_difference(v(0, 10), v(0, 5)).to_vec(), vec![(5, 10)]);
        assert_eq!(symmetric_difference(None, v(3, 7)).to_vec(), vec![(3, 7)]);
        assert_eq!(symmetric_difference(v(0, 10), v(5, 15)).to_vec(), vec![(0, 5), (10, 15)]);
        assert_eq!(symmetric_difference(v(0, 10), v(0, 10)).to_vec(), vec![]);
    }
}
