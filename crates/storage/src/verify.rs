//! The integrity check of derived indexes: every index recomputed from the revisions and
//! compared ([`Snapshot::verify`]).

use std::collections::{BTreeMap, HashSet};

use redb::ReadableTable;

use crate::error::Error;
use crate::id::RecordId;
use crate::read::{Problem, Snapshot};
use crate::record::{self, Record, Visible};
use crate::tables::{self, names};
use crate::time::Timestamp;
use crate::timeline::{self, Spans};
use crate::vector;

impl Snapshot {
    /// Recompute every derived index from the revisions and compare: the timeline's events and
    /// checkpoint entries, the current and ended rows, identity keys and counters, the lexical
    /// index (format 6 and later) and the vectors. Costs a full scan;
    /// returns the problems found (none on a healthy database).
    pub fn verify(&self) -> Result<Vec<Problem>, Error> {
        self.ctx(self.verify_inner())
    }

    fn verify_inner(&self) -> Result<Vec<Problem>, Error> {
        let mut problems: Vec<Problem> = Vec::new();
        let revs = self.txn.open_table(tables::REVISIONS)?;
        let events = self.txn.open_table(tables::EVENTS)?;
        let cps = self.txn.open_table(tables::CHECKPOINTS)?;
        let entries = self.txn.open_table(tables::CHECKPOINT_ENTRIES)?;
        let identity = self.txn.open_table(tables::IDENTITY)?;
        let ended = self.ended_table()?;
        // The lexical index, from format 6 on (earlier formats also kept a `texts` row for each
        // fresh text).
        let lexical = if self.format >= crate::format::FormatVersion::FreshOnly.number() {
            match (self.open_optional(tables::POSTINGS)?, self.open_optional(tables::TEXTS)?) {
                (Some(p), Some(t)) => Some((
                    p,
                    t,
                    self.segments()?,
                    self.open_optional(tables::FRESH)?,
                    self.open_optional(tables::LEXSTATS)?,
                )),
                _ => None,
            }
        } else {
            None
        };
        for ns in self.namespaces()? {
            let n = ns.as_str();
            // Group the revisions by record.
            let mut by_record: BTreeMap<u128, Vec<Record>> = BTreeMap::new();
            for r in revs.range((n, 0u128, i64::MIN, 0u32)..=(n, u128::MAX, i64::MAX, u32::MAX))? {
                let (k, v) = r?;
                let (_, id, rec, rev) = k.value();
                let record = record::decode_revision(
                    &ns,
                    RecordId::from_u128(id),
                    rev,
                    Timestamp::from_micros(rec),
                    v.value(),
                )
                .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                by_record.entry(id).or_default().push(record);
            }
            if let Some((postings, texts, segments, fresh, stats)) = &lexical {
                let stats = match stats {
                    Some(t) => crate::lexical::stats_row(n, t.get(n)?.as_ref().map(|v| v.value()))?,
                    None => crate::lexical::LexStats::default(),
                };
                let stored = crate::lexical::Stored {
                    postings,
                    segments,
                    texts,
                    fresh: fresh.as_ref(),
                    stats,
                    analyzer: crate::format::analyzer_for(self.format),
                };
                crate::lexical::verify(n, &by_record, &stored, &mut problems)?;
            }
            // Expected events and beliefs.
            let mut expected_events: BTreeMap<(i64, u128, u8), (u8, Spans)> = BTreeMap::new();
            let mut beliefs: BTreeMap<u128, (u8, timeline::Belief)> = BTreeMap::new();
            for (id, list) in &by_record {
                for w in list.windows(2) {
                    if let [a, b] = w
                        && (b.rev != a.rev + 1 || b.recorded_at < a.recorded_at)
                    {
                        problems
                            .push(format!("{n}/{}: revisions {} and {} out of order", a.id, a.rev, b.rev));
                    }
                }
                let kind = list.first().map_or(0, |r| r.kind().code());
                let input: Vec<(i64, Option<Visible>)> =
                    list.iter().map(|r| (r.recorded_at.as_micros(), r.visible())).collect();
                let (ev, belief) = timeline::expected_for_record(&input);
                for ((t, edge), spans) in ev {
                    expected_events.insert((t, *id, edge), (kind, spans));
                }
                beliefs.insert(*id, (kind, belief));
            }
            let mut actual_events: BTreeMap<(i64, u128, u8), (u8, Spans)> = BTreeMap::new();
            for r in events.range((n, i64::MIN, 0u128, 0u8)..=(n, i64::MAX, u128::MAX, u8::MAX))? {
                let (k, v) = r?;
                let (_, t, id, edge) = k.value();
                actual_events.insert((t, id, edge), timeline::decode_spans(names::EVENTS, v.value())?);
            }
            if actual_events != expected_events {
                let missing =
                    expected_events.keys().filter(|k| actual_events.get(k) != expected_events.get(k)).count();
                let extra = actual_events.keys().filter(|k| !expected_events.contains_key(k)).count();
                problems.push(format!(
                    "{n}: event log differs from the revisions ({missing} wrong or missing, {extra} extra)"
                ));
            }
            // Checkpoint entries.
            let mut checkpoints: Vec<(i64, i64)> = Vec::new();
            for r in cps.range((n, i64::MIN)..=(n, i64::MAX))? {
                let (k, v) = r?;
                checkpoints.push((k.value().1, timeline::decode_row(v.value())?.created_tx));
            }
            if checkpoints.first() != Some(&(i64::MIN, i64::MIN)) {
                problems.push(format!("{n}: the checkpoint at the beginning of time is missing"));
            }
            for (c, created) in checkpoints {
                let mut actual: BTreeMap<u128, (u8, Spans)> = BTreeMap::new();
                for r in entries.range((n, c, 0u128)..=(n, c, u128::MAX))? {
                    let (k, v) = r?;
                    actual.insert(k.value().2, timeline::decode_spans(names::CHECKPOINT_ENTRIES, v.value())?);
                }
                let mut expected: BTreeMap<u128, (u8, Spans)> = BTreeMap::new();
                for (id, (kind, belief)) in &beliefs {
                    let s = timeline::expected_entry(belief, c, created);
                    if !s.is_empty() {
                        expected.insert(*id, (*kind, s));
                    }
                }
                if actual != expected {
                    problems.push(format!(
                        "{n}: checkpoint at {} holds {} entries, expected {}{}",
                        Timestamp::from_micros(c),
                        actual.len(),
                        expected.len(),
                        if actual.len() == expected.len() { " (spans differ)" } else { "" }
                    ));
                }
            }
            // Current rows and identity keys.
            let mut expected_current: BTreeMap<(u8, u128), Vec<u8>> = BTreeMap::new();
            let mut expected_identity: BTreeMap<(u8, String), u128> = BTreeMap::new();
            for (id, list) in &by_record {
                let Some(latest) = list.last() else { continue };
                if latest.visible().is_some_and(|v| v.until > self.meta.swept_through) {
                    let bytes = record::encode_current_row(latest)
                        .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?
                        .unwrap_or_default();
                    expected_current.insert((latest.kind().code(), *id), bytes);
                }
                if latest.holds_identity()
                    && let Some(k) = latest.identity()
                {
                    expected_identity.insert((latest.kind().code(), k), *id);
                }
            }
            let mut actual_current: BTreeMap<(u8, u128), Vec<u8>> = BTreeMap::new();
            // A file of a format before 13 (read-only) holds unsealed rows: compared sealed.
            self.for_each_current_row(n, |kind, id, row| {
                let row = record::sealed_current_row(row, n, RecordId::from_u128(id))
                    .unwrap_or_else(|| row.to_vec());
                actual_current.insert((kind, id), row);
            })?;
            if actual_current != expected_current {
                problems.push(format!(
                    "{n}: current table has {} rows, expected {}",
                    actual_current.len(),
                    expected_current.len()
                ));
            }
            if let Some(ended) = &ended {
                let mut expected: BTreeMap<(u8, i64, u128), Vec<u8>> = BTreeMap::new();
                for (id, list) in &by_record {
                    let Some(latest) = list.last() else { continue };
                    let bytes = record::encode_revision(latest)
                        .map_err(|e| Error::Codec { table: names::REVISIONS, source: e })?;
                    if let Some((level, until, row)) = crate::ended::row_of(latest, &bytes)
                        && until <= self.meta.swept_through.as_micros()
                    {
                        expected.insert((level, until, *id), row);
                    }
                }
                let mut actual: BTreeMap<(u8, i64, u128), Vec<u8>> = BTreeMap::new();
                let (lo, hi) = tables::namespace_range(n);
                for r in ended.range(lo.as_slice()..hi.as_slice())? {
                    let (k, v) = r?;
                    let Some(key) = crate::ended::parse_key(k.value(), n.len()) else {
                        problems.push(format!("{n}: malformed key in the ended table"));
                        continue;
                    };
                    let (kind, row) = v.value().split_at(v.value().len().min(1));
                    let row = record::sealed_current_row(row, n, RecordId::from_u128(key.2))
                        .unwrap_or_else(|| row.to_vec());
                    actual.insert(key, [kind, row.as_slice()].concat());
                }
                if actual != expected {
                    let wrong = expected.iter().filter(|(k, v)| actual.get(*k) != Some(*v)).count();
                    let extra = actual.keys().filter(|k| !expected.contains_key(k)).count();
                    problems.push(format!(
                        "{n}: ended table differs from the revisions ({wrong} wrong or missing, {extra} extra)"
                    ));
                }
            }
            let mut actual_identity: BTreeMap<(u8, String), u128> = BTreeMap::new();
            for r in identity.range((n, 0u8, "")..(n, u8::MAX, ""))? {
                let (k, v) = r?;
                let (_, kind, key) = k.value();
                actual_identity.insert((kind, key.to_string()), v.value());
            }
            if actual_identity != expected_identity {
                problems.push(format!(
                    "{n}: identity index has {} keys, expected {}",
                    actual_identity.len(),
                    expected_identity.len()
                ));
            }
        }
        self.verify_vectors(&revs, &mut problems)?;
        self.verify_counts(&mut problems)?;
        Ok(problems)
    }

    /// Every vector belongs to a stored revision and has its space's dimension.
    fn verify_vectors(
        &self,
        revs: &redb::ReadOnlyTable<(&'static str, u128, i64, u32), &'static [u8]>,
        problems: &mut Vec<Problem>,
    ) -> Result<(), Error> {
        let Some(vectors) = self.open_optional(tables::VECTORS)? else { return Ok(()) };
        let spaces: BTreeMap<String, u32> =
            self.vector_spaces()?.into_iter().map(|s| (s.name, s.dimension)).collect();
        let mut revisions_of: BTreeMap<(String, u128), HashSet<u32>> = BTreeMap::new();
        for r in vectors.iter()? {
            let (k, v) = r?;
            let (space, ns, id, from_rev) = k.value();
            match spaces.get(space) {
                None => problems.push(format!("vector of {ns}/{id:x} is in unknown space {space:?}")),
                Some(&d) if d as usize != vector::stored_dimension(v.value()) => problems.push(format!(
                    "vector of {ns}/{id:x} has dimension {}, its space {space:?} has {d}",
                    vector::stored_dimension(v.value())
                )),
                Some(_) => {}
            }
            let key = (ns.to_string(), id);
            if !revisions_of.contains_key(&key) {
                let mut set = HashSet::new();
                for r in revs.range((ns, id, i64::MIN, 0u32)..=(ns, id, i64::MAX, u32::MAX))? {
                    set.insert(r?.0.value().3);
                }
                revisions_of.insert(key.clone(), set);
            }
            if !revisions_of.get(&key).is_some_and(|s| s.contains(&from_rev)) {
                problems.push(format!(
                    "vector of {ns}/{id:x} attaches to revision {from_rev}, which is not stored"
                ));
            }
        }
        Ok(())
    }
}

impl Snapshot {
    /// Compare `mnemon.counts` (format 14) with the rows it counts.
    fn verify_counts(&self, problems: &mut Vec<Problem>) -> Result<(), Error> {
        let Some(stored) = self.open_optional(tables::COUNTS)? else { return Ok(()) };
        if self.format < crate::format::FormatVersion::Counted.number() {
            return Ok(());
        }
        let mut held: BTreeMap<(String, u8), u64> = BTreeMap::new();
        for r in stored.range::<(&str, u8)>(..)? {
            let (k, v) = r?;
            let (ns, what) = k.value();
            held.insert((ns.to_string(), what), v.value());
        }
        let found = crate::counts::count(&self.txn)?;
        for key in held.keys().chain(found.keys()).collect::<std::collections::BTreeSet<_>>() {
            let (h, f) = (held.get(key).copied().unwrap_or(0), found.get(key).copied().unwrap_or(0));
            if h != f {
                let what = crate::counts::what_name(key.1);
                problems.push(format!("{}: mnemon.counts holds {h} {what}, the file {f}", key.0));
            }
        }
        Ok(())
    }
}
