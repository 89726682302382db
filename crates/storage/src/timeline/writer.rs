//! Writing the timeline: a write transaction's events, checkpoints and the gap counters that decide when a gap is split.

use crate::error::{CodecError, Error};
use crate::record::Visible;
use crate::tables::{Deferred, LazyTable, names};
use redb::{ReadableTable, Table};
use std::collections::{BTreeMap, HashMap, HashSet};

use super::*;

/// Events counted in gaps but not yet written to their checkpoint rows. The writer keeps them
/// across commits and writes a row only when its gap is split or has gathered
/// [`GAP_FLUSH`] new events, so most commits do not touch the checkpoints table. The counts
/// only decide when to split: losing some in a crash delays a split, nothing more.
#[derive(Debug, Default)]
pub(crate) struct GapHints {
    pending: HashMap<(String, i64), u64>,
}

/// New events a gap gathers in memory before its row is written.
pub(super) const GAP_FLUSH: u64 = 256;

/// The timeline tables of a write transaction, plus the gap counters of the commit.
pub(crate) struct TimelineWriter<'txn, 'h> {
    pub(crate) events: Deferred<'txn, EventKey<'static>, &'static [u8]>,
    pub(crate) checkpoints: Table<'txn, CheckpointKey<'static>, &'static [u8]>,
    pub(crate) entries: LazyTable<'txn, EntryKey<'static>, &'static [u8]>,
    hints: &'h mut GapHints,
    touched_namespaces: HashSet<String>,
    /// The latest checkpoint of each namespace seen in this commit (checkpoints are only
    /// created in `finish`, so it stays valid until then).
    last_checkpoint: HashMap<String, i64>,
    min_gap: u64,
    /// Events counted into one gap in a row, `(ns, gap, count)`, added to `hints` when another
    /// gap is counted into and by `finish`: a commit's new records all count into the same
    /// gap, and counting each one into the map would copy the namespace each time.
    run: Option<(String, i64, u64)>,
    /// The value of an event believed from `tx` on, for `(kind, tx)`: the same for every
    /// new record of a kind in a job.
    open_value: Option<(u8, i64, Vec<u8>)>,
}

impl<'txn, 'h> TimelineWriter<'txn, 'h> {
    pub(crate) fn new(
        events: Deferred<'txn, EventKey<'static>, &'static [u8]>,
        checkpoints: Table<'txn, CheckpointKey<'static>, &'static [u8]>,
        entries: LazyTable<'txn, EntryKey<'static>, &'static [u8]>,
        hints: &'h mut GapHints,
        min_gap: u64,
    ) -> Self {
        TimelineWriter {
            events,
            checkpoints,
            entries,
            hints,
            touched_namespaces: HashSet::new(),
            last_checkpoint: HashMap::new(),
            min_gap: min_gap.max(1),
            run: None,
            open_value: None,
        }
    }

    /// Count an event into the gap after checkpoint `gap` (see [`Self::run`]).
    fn count_event(&mut self, ns: &str, gap: i64) {
        if let Some((n, g, count)) = &mut self.run
            && n == ns
            && *g == gap
        {
            *count += 1;
            return;
        }
        self.flush_run();
        self.run = Some((ns.to_string(), gap, 1));
    }

    fn flush_run(&mut self) {
        if let Some((ns, gap, count)) = self.run.take() {
            *self.hints.pending.entry((ns, gap)).or_insert(0) += count;
        }
    }

    fn new_row(&self, created_tx: i64, entries: u64, events: u64) -> CheckpointRow {
        let n = self.min_gap.max(entries);
        CheckpointRow { created_tx, events, entries, recheck_events: events.max(n) + n, recheck_tx: i64::MAX }
    }

    /// Make sure the namespace has its first checkpoint (at the beginning of time, empty).
    pub(crate) fn ensure_namespace(&mut self, ns: &str) -> Result<(), Error> {
        if self.checkpoints.get((ns, i64::MIN))?.is_none() {
            let row = self.new_row(i64::MIN, 0, 0);
            self.checkpoints.insert((ns, i64::MIN), encode_row(&row)?.as_slice())?;
        }
        Ok(())
    }

    /// The latest checkpoint of a namespace (cached for the commit).
    fn last_checkpoint(&mut self, ns: &str) -> Result<i64, Error> {
        if let Some(c) = self.last_checkpoint.get(ns) {
            return Ok(*c);
        }
        let found = self.checkpoints.range((ns, i64::MIN)..=(ns, i64::MAX))?.next_back();
        let c = match found {
            Some(r) => r?.0.value().1,
            None => i64::MIN,
        };
        self.last_checkpoint.insert(ns.to_string(), c);
        Ok(c)
    }

    /// Record that a record's visible interval changed from `old` to `new` at transaction time
    /// `tx` (a new record, or a revision of one that was hidden, has `old = None`; a revision
    /// that hides it has `new = None`). `first` says the record had no revision before: it
    /// then has no events either.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn change(
        &mut self,
        ns: &str,
        id: u128,
        kind: u8,
        old: Option<Visible>,
        new: Option<Visible>,
        tx: i64,
        first: bool,
    ) -> Result<(), Error> {
        if old == new {
            return Ok(());
        }
        if !self.touched_namespaces.contains(ns) {
            self.touched_namespaces.insert(ns.to_string());
        }
        let old_edges = edges(old);
        let new_edges = edges(new);
        for &(t, edge) in &old_edges {
            if !new_edges.contains(&(t, edge)) {
                self.retract_event(ns, t, id, edge, kind, tx)?;
            }
        }
        let last = self.last_checkpoint(ns)?;
        for &(t, edge) in &new_edges {
            if old_edges.contains(&(t, edge)) {
                continue;
            }
            let added = if first {
                // A record without revisions has no events (`forget` erases them all): a plain
                // insert, which waits to go in with the commit's others. (A revision of a hidden
                // record also has no visible interval before it, but its earlier edges are
                // stored, with the spans during which they were believed: those merge.)
                if !matches!(&self.open_value, Some((k, x, _)) if *k == kind && *x == tx) {
                    self.open_value = Some((kind, tx, encode_spans(kind, &Spans::open_from(tx))?));
                }
                let value = self.open_value.as_ref().map_or(&[][..], |v| v.2.as_slice());
                self.events.insert((ns, t, id, edge), value)?;
                true
            } else {
                self.assert_event(ns, t, id, edge, kind, tx)?
            };
            if added {
                let gap = if t > last { last } else { self.gap_of(ns, t)? };
                self.count_event(ns, gap);
            }
        }
        for (a, b) in symmetric_difference(old, new) {
            if a > last {
                // No checkpoint at or after `a`: nothing to correct (the common case of a
                // change at the present).
                continue;
            }
            let cps: Vec<i64> = self
                .checkpoints
                .range((ns, a)..(ns, b))?
                .map(|r| r.map(|(k, _)| k.value().1))
                .collect::<Result<_, _>>()?;
            for c in cps {
                let (was, is) = (contains(old, c), contains(new, c));
                if was && !is {
                    self.update_entry(ns, c, id, kind, |s| s.minus(&Spans::open_from(tx)))?;
                } else if is && !was {
                    self.update_entry(ns, c, id, kind, |s| s.union(&Spans::open_from(tx)))?;
                }
            }
        }
        Ok(())
    }

    /// Erase every trace of a record, given the visible intervals of all its revisions.
    pub(crate) fn forget(&mut self, ns: &str, id: u128, intervals: &[Visible]) -> Result<(), Error> {
        let mut edge_keys: Vec<(i64, u8)> = intervals.iter().flat_map(|v| edges(Some(*v))).collect();
        edge_keys.sort_unstable();
        edge_keys.dedup();
        for (t, edge) in edge_keys {
            self.events.table()?.remove((ns, t, id, edge))?;
        }
        let mut ranges: Vec<(i64, i64)> =
            intervals.iter().map(|v| (v.from.as_micros(), v.until.as_micros())).collect();
        ranges.sort_unstable();
        let merged = Spans(Vec::new()).union(&Spans(ranges));
        for &(a, b) in &merged.0 {
            let cps: Vec<i64> = self
                .checkpoints
                .range((ns, a)..(ns, b))?
                .map(|r| r.map(|(k, _)| k.value().1))
                .collect::<Result<_, _>>()?;
            for c in cps {
                let removed = self.entries.get_mut()?.remove((ns, c, id))?.is_some();
                if removed {
                    self.adjust_entry_count(ns, c, -1)?;
                }
            }
        }
        Ok(())
    }

    /// The checkpoint whose gap holds an event at `t` (the greatest C < t).
    fn gap_of(&self, ns: &str, t: i64) -> Result<i64, Error> {
        let found = self.checkpoints.range((ns, i64::MIN)..(ns, t))?.next_back();
        match found {
            Some(r) => Ok(r?.0.value().1),
            None => Ok(i64::MIN),
        }
    }

    /// Open a span `[tx, +inf)` on an event; returns whether it started a new span.
    fn assert_event(
        &mut self,
        ns: &str,
        t: i64,
        id: u128,
        edge: u8,
        kind: u8,
        tx: i64,
    ) -> Result<bool, Error> {
        let fresh = Spans::open_from(tx);
        let bytes = encode_spans(kind, &fresh)?;
        // Most events are new: one insert; merge only if one was there.
        let previous = match self.events.table()?.insert((ns, t, id, edge), bytes.as_slice())? {
            Some(old) => Some(decode_spans(names::EVENTS, old.value())?.1),
            None => None,
        };
        match previous {
            None => Ok(true),
            Some(before) => {
                let after = before.union(&fresh);
                if after != fresh {
                    self.events.table()?.insert((ns, t, id, edge), encode_spans(kind, &after)?.as_slice())?;
                }
                Ok(after.len() > before.len())
            }
        }
    }

    /// Close an event's spans at `tx` (the edge stops being believed).
    fn retract_event(
        &mut self,
        ns: &str,
        t: i64,
        id: u128,
        edge: u8,
        kind: u8,
        tx: i64,
    ) -> Result<(), Error> {
        let before = match self.events.table()?.get((ns, t, id, edge))? {
            Some(v) => decode_spans(names::EVENTS, v.value())?.1,
            None => return Ok(()),
        };
        let after = before.minus(&Spans::open_from(tx));
        if after.is_empty() {
            self.events.table()?.remove((ns, t, id, edge))?;
        } else if after != before {
            self.events.table()?.insert((ns, t, id, edge), encode_spans(kind, &after)?.as_slice())?;
        }
        Ok(())
    }

    fn update_entry(
        &mut self,
        ns: &str,
        c: i64,
        id: u128,
        kind: u8,
        f: impl Fn(&Spans) -> Spans,
    ) -> Result<(), Error> {
        let before = match self.entries.get()?.get((ns, c, id))? {
            Some(v) => Some(decode_spans(names::CHECKPOINT_ENTRIES, v.value())?.1),
            None => None,
        };
        let after = f(&before.clone().unwrap_or_default());
        if after.is_empty() {
            if before.is_some() {
                self.entries.get_mut()?.remove((ns, c, id))?;
                self.adjust_entry_count(ns, c, -1)?;
            }
        } else {
            self.entries.get_mut()?.insert((ns, c, id), encode_spans(kind, &after)?.as_slice())?;
            if before.is_none() {
                self.adjust_entry_count(ns, c, 1)?;
            }
        }
        Ok(())
    }

    fn adjust_entry_count(&mut self, ns: &str, c: i64, delta: i64) -> Result<(), Error> {
        let row = match self.checkpoints.get((ns, c))? {
            Some(v) => decode_row(v.value())?,
            None => return Ok(()),
        };
        let row = CheckpointRow { entries: row.entries.saturating_add_signed(delta), ..row };
        self.checkpoints.insert((ns, c), encode_row(&row)?.as_slice())?;
        Ok(())
    }

    /// End of a commit at transaction time `now`: check the gaps that gathered events (and the
    /// latest gap of each namespace written to) and split those that grew too large, placing
    /// checkpoints no later than `now`.
    pub(crate) fn finish(&mut self, now: i64) -> Result<(), Error> {
        self.flush_run();
        let mut to_check: Vec<(String, i64)> = self
            .hints
            .pending
            .keys()
            .filter(|(ns, _)| self.touched_namespaces.contains(ns))
            .cloned()
            .collect();
        let namespaces: Vec<String> = self.touched_namespaces.drain().collect();
        for ns in namespaces {
            let c = self.last_checkpoint(&ns)?;
            to_check.push((ns, c));
        }
        to_check.sort();
        to_check.dedup();
        for (ns, c) in to_check {
            self.maybe_split(&ns, c, now)?;
        }
        self.last_checkpoint.clear();
        // The waiting event rows (see `Deferred`): the commit must not go without them.
        self.events.flush()?;
        Ok(())
    }

    /// Split the gap after checkpoint `ca` if it has grown too large: walk its events up to
    /// `now` and place a checkpoint every `n` events. A new checkpoint serves transaction
    /// times from `now` on, so its entries are the records believed visible at it now, each
    /// with the span `[now, +inf)`: the live set, never the history of beliefs.
    fn maybe_split(&mut self, ns: &str, ca: i64, now: i64) -> Result<(), Error> {
        let key = (ns.to_string(), ca);
        let pending = self.hints.pending.get(&key).copied().unwrap_or(0);
        let row = match self.checkpoints.get((ns, ca))? {
            Some(v) => decode_row(v.value())?,
            None => {
                self.hints.pending.remove(&key);
                return Ok(());
            }
        };
        let row = CheckpointRow { events: row.events.saturating_add(pending), ..row };
        if row.events < row.recheck_events && now < row.recheck_tx {
            if pending >= GAP_FLUSH {
                self.checkpoints.insert((ns, ca), encode_row(&row)?.as_slice())?;
                self.hints.pending.remove(&key);
            }
            return Ok(());
        }
        self.hints.pending.remove(&key);
        #[cfg(test)]
        tests::GAP_WALKS.with(|w| w.set(w.get() + 1));
        let next = match self.checkpoints.range((ns, ca.saturating_add(1))..=(ns, i64::MAX))?.next() {
            Some(r) => Some(r?.0.value().1),
            None => None,
        };
        let hi = match next {
            Some(cb) => (cb - 1).min(now),
            None => now,
        };
        // The records visible at `ca` as known now.
        // In id order (the entries' key order), so that applying a gap's changes is one merge
        // and a new checkpoint's set one copy: a split of a large live set spent most of its
        // time building and cloning a `BTreeMap`.
        let mut live: LiveSet = Vec::with_capacity(usize::try_from(row.entries).unwrap_or(0));
        for r in self.entries.get()?.range((ns, ca, 0u128)..=(ns, ca, u128::MAX))? {
            let (k, v) = r?;
            let (kind, believed) = spans_contain(names::CHECKPOINT_ENTRIES, v.value(), now)?;
            if believed {
                live.push((k.value().2, kind));
            }
        }
        let n = self.min_gap.max(live.len() as u64);
        // Walk the gap's events up to `hi`, placing a checkpoint every `n` events; per record,
        // bit 0 = a start believed now, bit 1 = an end believed now.
        let mut pending: HashMap<u128, (u8, u8)> = HashMap::new();
        let mut emitted: Vec<(i64, u64, LiveSet)> = Vec::new();
        let mut count: u64 = 0;
        let mut walked: u64 = 0;
        let mut last_t: Option<i64> = None;
        if hi > ca {
            for r in self
                .events
                .table()?
                .range((ns, ca.saturating_add(1), 0u128, 0u8)..=(ns, hi, u128::MAX, u8::MAX))?
            {
                let (k, v) = r?;
                let (_, t, id, edge) = k.value();
                if count >= n
                    && last_t.is_some_and(|lt| t > lt)
                    && let Some(lt) = last_t
                {
                    apply_pending(&mut live, &mut pending);
                    emitted.push((lt, count, live.clone()));
                    count = 0;
                }
                let (kind, believed) = spans_contain(names::EVENTS, v.value(), now)?;
                if believed {
                    let slot = pending.entry(id).or_insert((kind, 0));
                    slot.1 |= if edge == EDGE_START { 1 } else { 2 };
                }
                count += 1;
                walked += 1;
                last_t = Some(t);
            }
        }
        // When to look again if future events (valid times after `hi`, such as the ends of
        // records that expire later) are what the gap lacks: once enough of them have become
        // past to fill the last gap. Not at the first of them: where ends pass continuously
        // (expiring records), that is the next commit, and every commit would walk the whole
        // gap again only to find it still too short.
        let upper = next.map_or(i64::MAX, |cb| cb - 1);
        let (last_need, last_have) = match emitted.last() {
            None => (n, count),
            Some((_, _, set)) => (self.min_gap.max(set.len() as u64), count),
        };
        let recheck_tx = if hi < upper {
            self.nth_event_after(ns, hi, upper, last_need.saturating_sub(last_have).saturating_add(1))?
        } else {
            None
        };
        if emitted.is_empty() {
            let row = CheckpointRow {
                recheck_events: row.events.saturating_add(n),
                recheck_tx: recheck_tx.unwrap_or(i64::MAX),
                ..row
            };
            self.checkpoints.insert((ns, ca), encode_row(&row)?.as_slice())?;
            return Ok(());
        }
        let unwalked = row.events.saturating_sub(walked);
        let mut gap_counts: Vec<u64> = emitted.iter().map(|e| e.1).collect();
        // The gap before the first new checkpoint stays with `ca`.
        let first_count = gap_counts.first().copied().unwrap_or(0);
        let head =
            CheckpointRow { events: first_count, ..self.new_row(row.created_tx, row.entries, first_count) };
        self.checkpoints.insert((ns, ca), encode_row(&head)?.as_slice())?;
        gap_counts.remove(0);
        gap_counts.push(count + unwalked);
        let last_index = emitted.len() - 1;
        // Every entry of a new checkpoint is believed from now on: its value differs only in
        // the kind byte. The entries go in in key order (checkpoint times ascending, ids
        // ascending within each), so they fill leaves as one run through a cursor instead of
        // one descent each: a split writes as many entries as records live.
        let believed_now = encode_spans(0, &Spans::open_from(now))?;
        let mut values: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
        for &(_, kind) in emitted.iter().flat_map(|e| e.2.iter()) {
            values.entry(kind).or_insert_with(|| {
                let mut value = believed_now.clone();
                if let Some(k) = value.get_mut(1) {
                    *k = kind;
                }
                value
            });
        }
        let mut rows = Vec::with_capacity(emitted.iter().map(|e| e.2.len()).sum());
        for (c, _, set) in &emitted {
            for &(id, kind) in set {
                let value = values.get(&kind).ok_or_else(|| Error::Codec {
                    table: names::CHECKPOINT_ENTRIES,
                    source: CodecError::Decode {
                        what: "checkpoint entry",
                        reason: format!("no value for kind {kind}"),
                    },
                })?;
                rows.push(((ns, *c, id), value.as_slice()));
            }
        }
        crate::tables::insert_sorted(self.entries.get_mut()?, rows.into_iter())?;
        for (i, (c, _, set)) in emitted.into_iter().enumerate() {
            let events = gap_counts.get(i).copied().unwrap_or(0);
            let mut r = self.new_row(now, set.len() as u64, events);
            if i == last_index {
                r.recheck_tx = recheck_tx.unwrap_or(i64::MAX);
            }
            self.checkpoints.insert((ns, c), encode_row(&r)?.as_slice())?;
        }
        Ok(())
    }
    /// The valid time of the `nth` (from 1) event row in `(after, upper]` of a namespace, if
    /// there are that many.
    fn nth_event_after(&mut self, ns: &str, after: i64, upper: i64, nth: u64) -> Result<Option<i64>, Error> {
        let mut seen = 0u64;
        for r in self
            .events
            .table()?
            .range((ns, after.saturating_add(1), 0u128, 0u8)..=(ns, upper, u128::MAX, u8::MAX))?
        {
            let (key, _) = r?;
            seen += 1;
            if seen >= nth {
                return Ok(Some(key.value().1));
            }
        }
        Ok(None)
    }
}
