//! The lexical index: BM25 over the tokens of each record's text, kept in the same commits as
//! the records and answerable as of any (valid, known) time.
//!
//! A record's text is indexed when a revision changes it (or creates the record): one posting
//! `(ns, term, id, from_rev) -> [1][tf u32][doc length u32]` per distinct term, and a row
//! `(ns, id, from_rev) -> [1][doc length u32]` saying that revision `from_rev` starts a new
//! text. A posting serves revision `from_rev` and the later revisions until the next text
//! row: a search resolves each matching record to its revision visible at the asked time and
//! counts only the postings of the text serving that revision. `forget` removes all of them.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table};

use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::record::Record;
use crate::tokens::{is_stopword, tokenize};

const POSTING_VERSION: u8 = 1;
const STATS_VERSION: u8 = 1;

/// BM25 parameters (the usual ones).
const K1: f64 = 1.2;
const B: f64 = 0.75;

pub(crate) type PostingKey = (&'static str, &'static str, u128, u32);
pub(crate) type TextKey = (&'static str, u128, u32);

/// Term frequencies and length of a text.
pub(crate) fn term_counts(text: &str) -> (BTreeMap<String, u32>, u32) {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let tokens = tokenize(text);
    for t in &tokens {
        if t.len() <= 64 && !is_stopword(t) {
            *counts.entry(t.clone()).or_insert(0) += 1;
        }
    }
    (counts, u32::try_from(tokens.len()).unwrap_or(u32::MAX))
}

pub(crate) fn encode_posting(tf: u32, len: u32) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = POSTING_VERSION;
    out[1..5].copy_from_slice(&tf.to_le_bytes());
    out[5..9].copy_from_slice(&len.to_le_bytes());
    out
}

fn decode_posting(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() != 9 || b[0] != POSTING_VERSION {
        return None;
    }
    let tf = u32::from_le_bytes(b[1..5].try_into().ok()?);
    let len = u32::from_le_bytes(b[5..9].try_into().ok()?);
    Some((tf, len))
}

/// Namespace totals: texts indexed and their summed length.
pub(crate) fn encode_stats(docs: u64, total: u64) -> [u8; 17] {
    let mut out = [0u8; 17];
    out[0] = STATS_VERSION;
    out[1..9].copy_from_slice(&docs.to_le_bytes());
    out[9..17].copy_from_slice(&total.to_le_bytes());
    out
}

pub(crate) fn decode_stats(b: &[u8]) -> (u64, u64) {
    if b.len() != 17 || b[0] != STATS_VERSION {
        return (0, 0);
    }
    let d = u64::from_le_bytes(b[1..9].try_into().unwrap_or([0; 8]));
    let t = u64::from_le_bytes(b[9..17].try_into().unwrap_or([0; 8]));
    (d, t)
}

/// The write side, used by the commit that writes the revision.
pub(crate) struct LexicalWriter<'txn> {
    pub(crate) postings: Table<'txn, PostingKey, &'static [u8]>,
    pub(crate) texts: Table<'txn, TextKey, &'static [u8]>,
    pub(crate) stats: Table<'txn, &'static str, &'static [u8]>,
    /// Changes to the namespace totals, written once per commit by [`Self::flush`].
    pub(crate) pending: BTreeMap<String, (i64, i64)>,
}

impl LexicalWriter<'_> {
    fn bump(&mut self, ns: &str, docs: i64, len: i64) -> Result<(), Error> {
        let e = self.pending.entry(ns.to_string()).or_insert((0, 0));
        e.0 += docs;
        e.1 += len;
        Ok(())
    }

    /// Write the namespace totals changed by this commit.
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        for (ns, (docs, len)) in std::mem::take(&mut self.pending) {
            let (d, t) = self.stats.get(ns.as_str())?.map(|v| decode_stats(v.value())).unwrap_or((0, 0));
            let d = d.saturating_add_signed(docs);
            let t = t.saturating_add_signed(len);
            self.stats.insert(ns.as_str(), encode_stats(d, t).as_slice())?;
        }
        Ok(())
    }

    /// Index revision `new` if it changes the text of `old` (or creates the record).
    pub(crate) fn write(&mut self, old: Option<&Record>, new: &Record) -> Result<(), Error> {
        let text = new.body.text();
        if old.is_some_and(|o| o.body.text() == text) {
            return Ok(());
        }
        let (counts, len) = term_counts(&text);
        let (ns, id) = (new.namespace.as_str(), new.id.as_u128());
        for (term, tf) in &counts {
            self.postings.insert((ns, term.as_str(), id, new.rev), encode_posting(*tf, len).as_slice())?;
        }
        let row = encode_posting(0, len);
        self.texts.insert((ns, id, new.rev), &row[..])?;
        self.bump(ns, 1, i64::from(len))
    }

    /// Remove every indexed text of a forgotten record (`all`: its revisions, in order).
    pub(crate) fn forget(&mut self, ns: &str, id: u128, all: &[Record]) -> Result<(), Error> {
        let mut revs = Vec::new();
        for r in self.texts.range((ns, id, 0u32)..=(ns, id, u32::MAX))? {
            revs.push(r?.0.value().2);
        }
        let mut removed_len = 0i64;
        for rev in &revs {
            if let Some(rec) = all.iter().find(|r| r.rev == *rev) {
                let (counts, len) = term_counts(&rec.body.text());
                for term in counts.keys() {
                    self.postings.remove((ns, term.as_str(), id, *rev))?;
                }
                removed_len += i64::from(len);
            }
            self.texts.remove((ns, id, *rev))?;
        }
        if !revs.is_empty() {
            self.bump(ns, -i64::try_from(revs.len()).unwrap_or(0), -removed_len)?;
        }
        Ok(())
    }
}

/// A lexical hit.
#[derive(Clone, Debug)]
pub struct LexicalHit {
    /// The record as of the search's time.
    pub record: Record,
    /// Its BM25 score.
    pub score: f64,
}

/// Score the postings of `terms` in a namespace, resolve each record at `as_of` through
/// `resolve` (which applies the filters), and keep the best `k`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    texts: &impl ReadableTable<TextKey, &'static [u8]>,
    stats: (u64, u64),
    ns: &Namespace,
    query: &str,
    k: usize,
    resolve: &dyn Fn(RecordId) -> Result<Option<Record>, Error>,
) -> Result<Vec<LexicalHit>, Error> {
    let mut terms: Vec<String> = tokenize(query).into_iter().filter(|t| !is_stopword(t)).collect();
    terms.sort();
    terms.dedup();
    let (docs, total) = stats;
    let n = docs.max(1) as f64;
    let avgdl = if docs == 0 { 1.0 } else { total as f64 / docs as f64 };
    // (id, from_rev) -> score
    // Every posting's contribution, then summed per (record, text revision) by sorting: no
    // hashing in the loop.
    let mut contributions: Vec<(u128, u32, f64)> = Vec::new();
    for term in &terms {
        let start = contributions.len();
        let mut df = 0usize;
        let mut last: Option<u128> = None;
        for r in postings.range(
            (ns.as_str(), term.as_str(), 0u128, 0u32)..=(ns.as_str(), term.as_str(), u128::MAX, u32::MAX),
        )? {
            let (key, v) = r?;
            let (_, _, id, rev) = key.value();
            if let Some((tf, len)) = decode_posting(v.value()) {
                if last != Some(id) {
                    df += 1;
                    last = Some(id);
                }
                // The term's weight without its IDF (known once the list is read).
                let tf = f64::from(tf);
                contributions.push((
                    id,
                    rev,
                    tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * f64::from(len) / avgdl)),
                ));
            }
        }
        let df = df as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for c in &mut contributions[start..] {
            c.2 *= idf;
        }
    }
    contributions.sort_unstable_by_key(|c| (c.0, c.1));
    let mut scored: Vec<(u128, u32, f64)> = Vec::with_capacity(contributions.len());
    for (id, rev, s) in contributions {
        match scored.last_mut() {
            Some(l) if l.0 == id && l.1 == rev => l.2 += s,
            _ => scored.push((id, rev, s)),
        }
    }
    // Per record: its text revisions' scores (a run of `scored`) and the best of them, an
    // upper bound of the score it can have as of the asked time. Resolve records best-first
    // and stop once k are found and no bound can beat them.
    let mut runs: Vec<(f64, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < scored.len() {
        let mut j = i;
        let mut best = f64::MIN;
        while j < scored.len() && scored[j].0 == scored[i].0 {
            best = best.max(scored[j].2);
            j += 1;
        }
        runs.push((best, i, j));
        i = j;
    }
    runs.sort_by(|a, b| b.0.total_cmp(&a.0).then(scored[a.1].0.cmp(&scored[b.1].0)));
    let mut hits: Vec<LexicalHit> = Vec::new();
    for (bound, from, to) in runs {
        if hits.len() >= k && hits.iter().map(|h| h.score).fold(f64::MAX, f64::min) >= bound {
            break;
        }
        let id = scored[from].0;
        let Some(rec) = resolve(RecordId::from_u128(id))? else { continue };
        // The text serving the visible revision: the latest text row at or below it.
        let mut cursor = texts.range((ns.as_str(), id, 0u32)..=(ns.as_str(), id, rec.rev))?;
        let Some(row) = cursor.next_back() else { continue };
        let serving = row?.0.value().2;
        if let Some(&(_, _, s)) = scored[from..to].iter().find(|(_, r, _)| *r == serving) {
            hits.push(LexicalHit { record: rec, score: s });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.record.id.cmp(&b.record.id)));
    hits.truncate(k);
    Ok(hits)
}

/// What [`crate::Snapshot::lexical_search`] filters by, besides the time.
pub(crate) fn matches(rec: &Record, q: &crate::read::ListQuery) -> bool {
    (q.kinds.is_empty() || q.kinds.contains(&rec.kind()))
        && q.tags.iter().all(|t| rec.envelope.tags.iter().any(|x| x.as_str() == t))
        && q.source.as_ref().is_none_or(|s| rec.envelope.source.as_deref() == Some(s.as_str()))
        && q.task.as_ref().is_none_or(|s| rec.envelope.task.as_deref() == Some(s.as_str()))
}
