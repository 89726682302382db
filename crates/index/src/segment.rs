//! One (vector space, namespace): its vectors in memory, which are live now, and its graph.
//!
//! Every vector ever stored for the namespace (and not forgotten) has a *slot*: its record,
//! the revision it was written at, its components in one contiguous array, and a state.
//! Slots are never renumbered, so a graph, a persisted points file and the in-memory arrays
//! agree on them. A slot is `LIVE` when it serves the latest revision of a record that has
//! not ended (checked again against the snapshot for every hit), `DEAD` when it only serves
//! the past (time travel reaches it through the timeline), `GONE` when its record was
//! forgotten or its vector replaced: a `GONE` slot is never returned.

use std::collections::HashMap;
use std::sync::Arc;

use mnemon_storage::{ListQuery, Namespace, Record, RecordId, RecordsAt, Snapshot, Timestamp};

use crate::error::IndexError;
use crate::graph::{Rows, VectorIndex};

/// Serves the past only.
pub(crate) const DEAD: u8 = 0;
/// Serves a record's latest revision, not ended.
pub(crate) const LIVE: u8 = 1;
/// Forgotten or replaced: never returned.
pub(crate) const GONE: u8 = 2;
/// Known from a persisted points file, its vector not yet read from the database.
pub(crate) const PENDING: u8 = 3;

/// Which record revision a slot holds the vector of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) id: RecordId,
    pub(crate) from_rev: u32,
}

/// The in-memory state of one (space, namespace).
pub(crate) struct Segment {
    pub(crate) space: String,
    pub(crate) ns: Namespace,
    pub(crate) dim: usize,
    pub(crate) slots: Vec<Slot>,
    pub(crate) data: Vec<f32>,
    pub(crate) state: Vec<u8>,
    pub(crate) in_graph: Vec<bool>,
    /// Per record: `(from_rev, slot)` sorted by `from_rev`.
    pub(crate) by_record: HashMap<RecordId, Vec<(u32, u32)>>,
    pub(crate) live: usize,
    /// Shared, so that a publish writes it out without holding the segment's lock.
    pub(crate) graph: Option<Arc<dyn VectorIndex>>,
    /// Slots in the graph.
    pub(crate) graph_points: usize,
    /// The commit the arrays reflect.
    pub(crate) covered_seq: u64,
    /// The published generation (0: none).
    pub(crate) generation: u64,
    /// Changed since the last publish.
    pub(crate) dirty: bool,
    /// Why a persisted index was not used, if it was not.
    pub(crate) load_note: Option<String>,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("space", &self.space)
            .field("ns", &self.ns)
            .field("slots", &self.slots.len())
            .field("live", &self.live)
            .field("graph_points", &self.graph_points)
            .finish()
    }
}

/// Whether a revision is still or will still be visible after `now`.
pub(crate) fn not_ended(rec: &Record, now: Timestamp) -> bool {
    rec.visible().is_some_and(|v| v.until > now)
}

/// A segment serves its graph the exact vectors of its slots (the graph keeps only codes).
impl Rows for Segment {
    fn row(&self, slot: u32) -> Option<&[f32]> {
        Some(Segment::row(self, slot)).filter(|r| !r.is_empty())
    }
}

impl Segment {
    pub(crate) fn new(space: &str, ns: &Namespace, dim: usize) -> Segment {
        Segment {
            space: space.to_string(),
            ns: ns.clone(),
            dim,
            slots: Vec::new(),
            data: Vec::new(),
            state: Vec::new(),
            in_graph: Vec::new(),
            by_record: HashMap::new(),
            live: 0,
            graph: None,
            graph_points: 0,
            covered_seq: 0,
            generation: 0,
            dirty: false,
            load_note: None,
        }
    }

    pub(crate) fn row(&self, slot: u32) -> &[f32] {
        let s = slot as usize * self.dim;
        self.data.get(s..s + self.dim).unwrap_or(&[])
    }

    /// Whether the slot holds its vector (not one left out, or still to be read).
    pub(crate) fn has_vector(&self, slot: u32) -> bool {
        matches!(self.state.get(slot as usize), Some(&st) if st != GONE && st != PENDING)
    }

    fn set_state(&mut self, slot: u32, st: u8) {
        let Some(cur) = self.state.get_mut(slot as usize) else { return };
        if *cur == st || *cur == GONE {
            return;
        }
        if *cur == LIVE {
            self.live -= 1;
        }
        if st == LIVE {
            self.live += 1;
        }
        *cur = st;
        self.dirty = true;
    }

    /// Append a slot (state `DEAD`), or return the existing one if it holds the same vector.
    /// A different vector for the same revision replaces the slot (the old one becomes `GONE`).
    pub(crate) fn add(&mut self, id: RecordId, from_rev: u32, v: &[f32]) -> u32 {
        if let Some(list) = self.by_record.get(&id)
            && let Some(&(_, slot)) = list.iter().find(|(r, _)| *r == from_rev)
        {
            if self.state.get(slot as usize) == Some(&PENDING) && v.len() == self.dim {
                let start = slot as usize * self.dim;
                if let Some(row) = self.data.get_mut(start..start + self.dim) {
                    row.copy_from_slice(v);
                }
                self.state[slot as usize] = DEAD;
                return slot;
            }
            if self.row(slot) == v {
                return slot;
            }
            self.set_state(slot, GONE);
            if let Some(list) = self.by_record.get_mut(&id) {
                list.retain(|(r, _)| *r != from_rev);
            }
        }
        let slot = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot { id, from_rev });
        self.data.extend_from_slice(v);
        self.state.push(DEAD);
        self.in_graph.push(false);
        let list = self.by_record.entry(id).or_default();
        let at = list.partition_point(|(r, _)| *r < from_rev);
        list.insert(at, (from_rev, slot));
        self.dirty = true;
        slot
    }

    /// The slot serving revision `rev` of a record.
    pub(crate) fn serving(&self, id: RecordId, rev: u32) -> Option<u32> {
        let list = self.by_record.get(&id)?;
        let at = list.partition_point(|(r, _)| *r <= rev);
        at.checked_sub(1).and_then(|i| list.get(i)).map(|(_, s)| *s)
    }

    /// Make `live_rev`'s slot the record's only live one (`None`: none live).
    pub(crate) fn set_live(&mut self, id: RecordId, live_rev: Option<u32>) {
        let live_slot = live_rev.and_then(|r| self.serving(id, r));
        let slots: Vec<u32> =
            self.by_record.get(&id).map(|l| l.iter().map(|(_, s)| *s).collect()).unwrap_or_default();
        for s in slots {
            self.set_state(s, if Some(s) == live_slot { LIVE } else { DEAD });
        }
    }

    /// Erase a record: its slots become `GONE` and their components are zeroed.
    pub(crate) fn forget(&mut self, id: RecordId) {
        let Some(list) = self.by_record.remove(&id) else { return };
        for (_, s) in list {
            self.set_state(s, GONE);
            let start = s as usize * self.dim;
            if let Some(row) = self.data.get_mut(start..start + self.dim) {
                row.fill(0.0);
            }
        }
        self.dirty = true;
    }

    /// Bring one record up to date with the snapshot.
    pub(crate) fn refresh(
        &mut self,
        snap: &Snapshot,
        id: RecordId,
        now: Timestamp,
    ) -> Result<(), IndexError> {
        let vectors = snap.vectors_of(&self.space, &self.ns, id)?;
        if vectors.is_empty() {
            self.forget(id);
            return Ok(());
        }
        // Slots of revisions whose vector row disappeared (not possible short of forget).
        for (from_rev, v) in &vectors {
            if v.len() == self.dim {
                self.add(id, *from_rev, v);
            }
        }
        let latest = snap.latest(&self.ns, id)?;
        self.set_live(id, latest.filter(|r| not_ended(r, now)).map(|r| r.rev));
        Ok(())
    }

    /// Load every vector of the segment from the snapshot and mark the live ones.
    pub(crate) fn load_from(&mut self, snap: &Snapshot) -> Result<(), IndexError> {
        let (space, ns) = (self.space.clone(), self.ns.clone());
        let dim = self.dim;
        snap.for_each_vector(&space, Some(&ns), |_, id, from_rev, v| {
            if v.len() == dim {
                self.add(id, from_rev, v);
            }
            Ok(())
        })?;
        // Slots known from a persisted points file whose vectors are gone: forgotten since.
        let stale: Vec<RecordId> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| self.state.get(*i) == Some(&PENDING))
            .map(|(_, s)| s.id)
            .collect();
        for id in stale {
            self.forget(id);
        }
        self.mark_live(snap)?;
        self.covered_seq = snap.meta().commit_seq;
        Ok(())
    }

    /// Recompute every live flag from the records valid now (the current table).
    pub(crate) fn mark_live(&mut self, snap: &Snapshot) -> Result<(), IndexError> {
        let now = snap.now();
        let mut live_slots = vec![false; self.slots.len()];
        // Current and future-dated records: the latest revision of every record with a vector.
        let ids: Vec<RecordId> = self.by_record.keys().copied().collect();
        let current = snap.list(&self.ns, &ListQuery::new())?;
        let mut latest_rev: HashMap<RecordId, u32> = current.into_iter().map(|r| (r.id, r.rev)).collect();
        if latest_rev.len() < ids.len() {
            // Records not valid now may become valid later (future-dated): ask each.
            for id in &ids {
                if latest_rev.contains_key(id) {
                    continue;
                }
                if let Some(r) = snap.latest(&self.ns, *id)?
                    && not_ended(&r, now)
                {
                    latest_rev.insert(*id, r.rev);
                }
            }
        }
        for id in ids {
            if let Some(&rev) = latest_rev.get(&id)
                && let Some(s) = self.serving(id, rev)
                && let Some(f) = live_slots.get_mut(s as usize)
            {
                *f = true;
            }
        }
        for (s, live) in live_slots.into_iter().enumerate() {
            let s = u32::try_from(s).unwrap_or(u32::MAX);
            if self.state.get(s as usize) != Some(&GONE) {
                self.set_state(s, if live { LIVE } else { DEAD });
            }
        }
        Ok(())
    }

    /// Take the slots of a persisted points file (their vectors are read afterwards).
    pub(crate) fn seed(&mut self, slots: Vec<Slot>, in_graph: Vec<bool>) {
        self.data = vec![0.0; slots.len() * self.dim];
        self.state = vec![PENDING; slots.len()];
        self.graph_points = in_graph.iter().filter(|g| **g).count();
        self.in_graph = in_graph;
        self.by_record.clear();
        for (i, s) in slots.iter().enumerate() {
            let slot = u32::try_from(i).unwrap_or(u32::MAX);
            let list = self.by_record.entry(s.id).or_default();
            let at = list.partition_point(|(r, _)| *r < s.from_rev);
            list.insert(at, (s.from_rev, slot));
        }
        self.slots = slots;
        self.live = 0;
    }

    /// Live slots not in the graph.
    pub(crate) fn tail(&self) -> Vec<u32> {
        (0..self.slots.len())
            .filter(|&i| self.state[i] == LIVE && !self.in_graph[i])
            .filter_map(|i| u32::try_from(i).ok())
            .collect()
    }

    /// Graph slots that are no longer live (the graph cannot delete them).
    pub(crate) fn tombstones(&self) -> usize {
        (0..self.slots.len()).filter(|&i| self.in_graph[i] && self.state[i] != LIVE).count()
    }

    /// Whether a hit from a "now" search is still what the snapshot holds now; returns the
    /// record if so.
    pub(crate) fn verify_now(&self, now: &RecordsAt<'_>, slot: u32) -> Result<Option<Record>, IndexError> {
        let Some(s) = self.slots.get(slot as usize) else { return Ok(None) };
        let Some(rec) = now.get(&self.ns, s.id)? else { return Ok(None) };
        Ok((self.serving(s.id, rec.rev) == Some(slot)).then_some(rec))
    }
}
