//! Applying a planned job's changes to every table, and the commit log.

use crate::codec;
use crate::error::{Error, InputError};
use crate::record::{self, Record, Visible};
use crate::tables::names;
use crate::time::Timestamp;
use crate::vector;
use redb::{ReadableTable, Table};

use super::*;

impl WriteTables<'_> {
    /// Register a namespace on its first write (and give it its first checkpoint).
    fn register_namespace(&mut self, ns: &str, tx: i64) -> Result<(), Error> {
        if self.known_namespaces.contains(ns) {
            return Ok(());
        }
        if self.namespaces.get()?.get(ns)?.is_none() {
            let bytes = codec::encode_versioned(NAMESPACE_VERSION, &tx)
                .map_err(|e| Error::Codec { table: names::NAMESPACES, source: e })?;
            self.namespaces.get_mut()?.insert(ns, bytes.as_slice())?;
            self.timeline.ensure_namespace(ns)?;
        }
        self.known_namespaces.insert(ns.to_string());
        Ok(())
    }

    /// End of a commit at transaction time `now`: maintain the timeline and sweep the current
    /// table.
    pub(crate) fn finish(&mut self, now: i64) -> Result<(), Error> {
        self.lexical.flush()?;
        self.timeline.finish(now)?;
        self.sweep(now.max(self.swept_through))?;
        // The waiting inserts (see `Deferred`): the commit must not go without them.
        self.current.flush()?;
        self.current_ends.flush()?;
        self.counts.flush()?;
        Ok(())
    }

    fn remove_current(&mut self, rec: &Record) -> Result<(), Error> {
        let ns = rec.namespace.as_str();
        let kind = rec.kind().code();
        let id = rec.id.as_u128();
        if self.current.table()?.remove(crate::tables::current_key(ns, kind, id).as_slice())?.is_some() {
            self.counts.add(ns, kind, -1);
        }
        if let Some(v) = rec.visible()
            && !v.is_open()
        {
            self.current_ends.table()?.remove((v.until.as_micros(), ns, kind, id))?;
        }
        Ok(())
    }

    /// Remove the `ENDED` row of what was a record's latest revision, if it may have one: its
    /// visibility ended by `now` (rows with a later end are still current, never in `ENDED`).
    fn remove_ended(&mut self, rec: &Record, now: i64) -> Result<(), Error> {
        if let Some((level, until)) = crate::ended::key_of(rec)
            && until <= now
        {
            let key = crate::ended::key(rec.namespace.as_str(), level, until, rec.id.as_u128());
            self.ended.get_mut()?.remove(key.as_slice())?;
        }
        Ok(())
    }

    /// Free the identity key `key` (the record's, computed by the caller) if `rec` holds it.
    fn release_identity(&mut self, rec: &Record, key: Option<&str>) -> Result<(), Error> {
        if rec.holds_identity()
            && let Some(k) = key
        {
            let key = (rec.namespace.as_str(), rec.kind().code(), k);
            let holder = self.identity.get()?.get(key)?.map(|v| v.value());
            if holder == Some(rec.id.as_u128()) {
                self.identity.get_mut()?.remove(key)?;
            }
        }
        Ok(())
    }

    /// Apply one planned change. `commit_tx` is the transaction time its job was planned at
    /// (restored revisions carry older ones). Where a row goes (`CURRENT` or `ENDED`) is
    /// decided at the later of it and the time `CURRENT` has been swept through, which a job
    /// committed at a replicated log's time may precede (see `Store::write_at`).
    pub(crate) fn apply(&mut self, change: Change, commit_tx: i64) -> Result<Option<LoggedChange>, Error> {
        let placed_at = commit_tx.max(self.swept_through);
        match change {
            Change::Write { old, new, old_key, new_key } => {
                let ns = new.namespace.as_str();
                let id = new.id.as_u128();
                let kind = new.kind().code();
                let bytes = record::encode_revision(&new)
                    .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                let new_vis = new.visible();
                self.revisions.insert((ns, id, new.recorded_at.as_micros(), new.rev), bytes.as_slice())?;
                self.counts.add(ns, crate::tables::COUNTED_REVISIONS, 1);
                if let Some(max) = self.max_ids.get_mut().get_mut(ns) {
                    *max = (*max).max(id);
                }
                self.lexical.write(old.as_deref(), &new)?;
                if old.is_none() {
                    self.register_namespace(ns, commit_tx)?;
                }
                let old_vis: Option<Visible> = old.as_ref().and_then(|o| o.visible());
                self.timeline.change(
                    ns,
                    id,
                    kind,
                    old_vis,
                    new_vis,
                    new.recorded_at.as_micros(),
                    old.is_none(),
                )?;
                if let Some(o) = &old {
                    self.remove_current(o)?;
                    self.release_identity(o, old_key.as_deref())?;
                    self.remove_ended(o, placed_at)?;
                }
                if let Some(v) = new_vis
                    && v.until.as_micros() > placed_at
                {
                    let row = record::current_row(&new, v, &bytes);
                    self.current
                        .insert(crate::tables::current_key(ns, kind, id).as_slice(), row.as_slice())?;
                    // Any row of the record's was removed above: this one is new.
                    self.counts.add(ns, kind, 1);
                    if !v.is_open() {
                        self.current_ends.insert((v.until.as_micros(), ns, kind, id), ())?;
                    }
                } else if let Some((level, until, row)) = crate::ended::row_of(&new, &bytes) {
                    // Visible, but no longer by the end of this commit: straight to `ENDED` (a
                    // record with a later end gets there when the sweep takes its current row).
                    self.ended
                        .get_mut()?
                        .insert(crate::ended::key(ns, level, until, id).as_slice(), row.as_slice())?;
                }
                if new.holds_identity()
                    && let Some(k) = &new_key
                {
                    self.identity.get_mut()?.insert((ns, kind, k.as_str()), id)?;
                }
                Ok(Some(LoggedChange {
                    ns: ns.to_string(),
                    id,
                    kind,
                    what: new.op.code(),
                    rev: new.rev,
                    tx: new.recorded_at.as_micros(),
                }))
            }
            Change::Forget { namespace, id, tx } => {
                let ns = namespace.as_str();
                let key = id.as_u128();
                let mut all: Vec<Record> = Vec::new();
                let mut keys: Vec<(i64, u32)> = Vec::new();
                for r in self.revisions.range((ns, key, i64::MIN, 0u32)..=(ns, key, i64::MAX, u32::MAX))? {
                    let (k, v) = r?;
                    let (_, _, rec, rev) = k.value();
                    keys.push((rec, rev));
                    all.push(
                        record::decode_revision(&namespace, id, rev, Timestamp::from_micros(rec), v.value())
                            .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?,
                    );
                }
                for (rec, rev) in &keys {
                    self.revisions.remove((ns, key, *rec, *rev))?;
                }
                self.counts.add(
                    ns,
                    crate::tables::COUNTED_REVISIONS,
                    -i64::try_from(keys.len()).unwrap_or(i64::MAX),
                );
                let intervals: Vec<Visible> = all.iter().filter_map(Record::visible).collect();
                self.timeline.forget(ns, key, &intervals)?;
                if let Some(latest) = all.last() {
                    self.remove_current(latest)?;
                    self.release_identity(latest, latest.identity().as_deref())?;
                    self.remove_ended(latest, i64::MAX)?;
                }
                self.forget_vectors(ns, key)?;
                self.lexical.forget(ns, key, &all)?;
                let (kind, rev) = all.last().map_or((u8::MAX, 0), |r| (r.kind().code(), r.rev));
                Ok(Some(LoggedChange {
                    ns: ns.to_string(),
                    id: key,
                    kind,
                    what: LoggedChange::FORGET,
                    rev,
                    tx,
                }))
            }
            Change::Vector { namespace, id, kind, space, from_rev, vector } => {
                let bytes = vector::encode(&vector);
                let (ns, key) = (namespace.as_str(), id.as_u128());
                self.vectors.get_mut()?.insert((space.as_str(), ns, key, from_rev), bytes.as_slice())?;
                Ok(Some(LoggedChange {
                    ns: ns.to_string(),
                    id: key,
                    kind,
                    what: LoggedChange::VECTOR,
                    rev: from_rev,
                    tx: commit_tx,
                }))
            }
            Change::Space { name, dimension } => {
                let row = vector::encode_space(dimension, Timestamp::from_micros(commit_tx));
                self.vector_spaces.get_mut()?.insert(name.as_str(), row.as_slice())?;
                Ok(None)
            }
            Change::MergeTexts { namespace } => {
                self.lexical.request_merge(namespace.as_str());
                Ok(None)
            }
            Change::Aux { key, value } => {
                let table = if crate::tables::is_auth_key(&key) { &mut self.auth } else { &mut self.aux };
                match value {
                    Some(v) => table.get_mut()?.insert(key.as_str(), v.as_slice())?,
                    None => table.get_mut()?.remove(key.as_str())?,
                };
                Ok(None)
            }
        }
    }

    /// Erase every vector of a forgotten record, in every space.
    fn forget_vectors(&mut self, ns: &str, id: u128) -> Result<(), Error> {
        let mut spaces = Vec::new();
        for r in self.vector_spaces.get()?.iter()? {
            spaces.push(r?.0.value().to_string());
        }
        for space in &spaces {
            let mut revs = Vec::new();
            for r in self
                .vectors
                .get()?
                .range((space.as_str(), ns, id, 0u32)..=(space.as_str(), ns, id, u32::MAX))?
            {
                revs.push(r?.0.value().3);
            }
            for rev in revs {
                self.vectors.get_mut()?.remove((space.as_str(), ns, id, rev))?;
            }
        }
        Ok(())
    }

    /// Remove `CURRENT` rows whose visibility ended at or before `through`.
    fn sweep(&mut self, through: i64) -> Result<usize, Error> {
        let mut expired: Vec<(i64, String, u8, u128)> = Vec::new();
        let end = through.saturating_add(1);
        for r in self.current_ends.table()?.range((i64::MIN, "", 0u8, 0u128)..(end, "", 0u8, 0u128))? {
            let (k, _) = r?;
            let (t, ns, kind, id) = k.value();
            expired.push((t, ns.to_string(), kind, id));
        }
        for (t, ns, kind, id) in &expired {
            self.current_ends.table()?.remove((*t, ns.as_str(), *kind, *id))?;
            // The swept row moves to `ENDED`, where the past as known now finds it.
            let row = self.current.table()?.remove(crate::tables::current_key(ns, *kind, *id).as_slice())?;
            if let Some(row) = row {
                self.counts.add(ns, *kind, -1);
                let (key, value) = crate::ended::row_from_current(ns, *kind, *id, row.value())?;
                drop(row);
                self.ended.get_mut()?.insert(key.as_slice(), value.as_slice())?;
            }
        }
        Ok(expired.len())
    }
}

/// Auxiliary keys belong to named owners above storage.
pub(super) fn check_aux_key(key: &str) -> Result<(), InputError> {
    let bad = |reason| InputError::BadAuxKey { key: key.to_string(), reason };
    if !["index/", "embed/", "app/", "auth/", "replica/"].iter().any(|p| key.starts_with(p)) {
        return Err(bad("keys start with index/, embed/, app/, auth/ or replica/"));
    }
    if key.len() > 1024 {
        return Err(bad("it is longer than 1024 bytes"));
    }
    Ok(())
}

/// Append the commit log entry.
pub(crate) fn log_commit(
    log: &mut Table<u64, &'static [u8]>,
    seq: u64,
    tx: i64,
    changes: Vec<LoggedChange>,
) -> Result<(), Error> {
    let bytes = codec::encode_versioned(COMMIT_VERSION, &CommitEntry { tx, changes })
        .map_err(|e| Error::Codec { table: names::LOG, source: e })?;
    log.insert(seq, bytes.as_slice())?;
    Ok(())
}

/// The texts of the records a job creates (`(id, text)`: inserts and supersessions' new
/// records), which its caller can tokenize before queueing it (see
/// [`crate::lexical::prepare`]).
pub(crate) fn new_texts(ops: &[WriteOp]) -> impl Iterator<Item = (u128, String)> + '_ {
    ops.iter().filter_map(|op| match op {
        WriteOp::Insert(n) | WriteOp::Supersede { new: n, .. } => Some((n.id.as_u128(), n.body.text())),
        _ => None,
    })
}
