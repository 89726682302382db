//! BM25 search over a namespace's posting lists, segments and fresh rows, as of any time.

use redb::ReadableTable;

use super::codec::*;
use super::layout::*;
use super::posting::{Chunk, Key, number_lists};
use super::segments::*;
use crate::analyzer::Analyzer;
use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::record::Record;

/// BM25 parameters, chosen on the LoCoMo development split (docs/search.md): Anserini's
/// defaults, where the textbook 1.2 / 0.75 ranked conversation turns lower.
pub(super) const K1: f64 = 0.9;
pub(super) const B: f64 = 0.4;

/// A lexical hit.
#[derive(Clone, Debug)]
pub struct LexicalHit {
    /// The record as of the search's time.
    pub record: Record,
    /// Its BM25 score.
    pub score: f64,
    /// Its BM25 score as a share of the greatest score a text could have for this query (one
    /// holding every query term many times): in (0, 1], and comparable across queries, where
    /// BM25 scores grow with the number and rarity of the query's terms.
    pub relevance: f64,
}

/// What a search takes from the fresh rows: see [`fresh_hits`].
pub(super) type FreshHits = (Vec<(u128, u32)>, Vec<Vec<SegmentPosting>>);

/// The keys `(id, from_rev)` of a namespace's fresh texts, and their postings of a search's
/// `terms`: per term, `(id, from_rev, tf, doc length)`, both in key order. A search reads
/// every fresh row of the namespace (up to [`FRESH_LIMIT`]), so each is scanned where redb
/// holds it, its terms compared with the query's as bytes, without copying the row or
/// decoding it into a list (a 30-word row cost about 0.8 µs that way). Bounds and the version
/// byte are checked as the row is read; the integrity check ([`verify`](super::verify::verify)) decodes every row in
/// full.
pub(super) fn fresh_hits(
    fresh: &impl ReadableTable<TextKey, &'static [u8]>,
    ns: &str,
    terms: &[String],
) -> Result<FreshHits, Error> {
    let mut keys = Vec::new();
    let mut hits: Vec<Vec<SegmentPosting>> = vec![Vec::new(); terms.len()];
    if terms.is_empty() {
        return Ok((keys, hits));
    }
    for r in fresh.range((ns, 0u128, 0u32)..=(ns, u128::MAX, u32::MAX))? {
        let (k, v) = r?;
        let (_, id, rev) = k.value();
        keys.push((id, rev));
        let scanned = scan_fresh(v.value(), terms, |i, tf, len| {
            if let Some(list) = hits.get_mut(i) {
                list.push((id, rev, tf, len));
            }
        });
        if scanned.is_none() {
            return Err(malformed_fresh(ns, id, rev));
        }
    }
    Ok((keys, hits))
}

/// Call `hit(i, tf, doc length)` for every term of fresh row `b` equal to `terms[i]` (terms
/// distinct); `None` if the row is malformed. A row's terms are compared by length first, so
/// most cost one comparison of two integers per query term.
pub(super) fn scan_fresh(b: &[u8], terms: &[String], mut hit: impl FnMut(usize, u32, u32)) -> Option<()> {
    let row = FreshTerms::new(b)?;
    let len = row.len;
    for term in row {
        let (term, tf) = term?;
        if let Some(i) = terms.iter().position(|t| t.len() == term.len() && t.as_bytes() == term) {
            hit(i, tf, len);
        }
    }
    Some(())
}

/// Score the posting lists, segments and fresh rows of the query's terms in a namespace,
/// resolve each record at `as_of` through `resolve` (which applies the filters), and keep the
/// best `k`.
///
/// Each term's postings become one list per place that holds texts (the posting lists, each
/// segment, the fresh rows) in `(id, from_rev)` order, weighted by BM25 (its IDF counts the
/// texts holding it), and [`super::maxscore::top`] finds the best texts, pruning those that
/// cannot be among them. Their records are then resolved, best first: a record may be hidden
/// at the asked time or by the filters, or its visible revision served by another text. The
/// answer is exact once the `k`-th visible score beats every text the pruning left out;
/// otherwise the search asks again for eight times as many candidates, and at last for all
/// of them (filters that hide most records).
#[allow(clippy::too_many_arguments)]
pub(crate) fn search(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    segments: &Segments,
    texts: &impl ReadableTable<TextKey, &'static [u8]>,
    fresh: Option<&impl ReadableTable<TextKey, &'static [u8]>>,
    stats: LexStats,
    ns: &Namespace,
    query: &str,
    analyzer: Analyzer,
    k: usize,
    resolve: &dyn Fn(RecordId) -> Result<Option<Record>, Error>,
) -> Result<Vec<LexicalHit>, Error> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let terms = analyzer.query_terms(query);
    // The fresh rows' terms that the query asks for: per query term, (id, rev, tf, len).
    let (fresh, fresh_hits) = match fresh {
        Some(t) => fresh_hits(t, ns.as_str(), &terms)?,
        None => (Vec::new(), vec![Vec::new(); terms.len()]),
    };
    // What the lists read in place: per term, its posting-list rows (decoded) and its
    // blocks in each segment.
    let segs = segments.list(ns.as_str())?;
    let mut held: Vec<(Vec<SegmentPosting>, Vec<Held<'_>>)> = Vec::with_capacity(terms.len());
    for term in &terms {
        let listed = listed_postings(postings, ns, term)?;
        let in_segments =
            segs.iter().map(|&seg| segments.hold(ns.as_str(), seg, term)).collect::<Result<_, _>>()?;
        held.push((listed, in_segments));
    }
    // Per place (the posting lists, the fresh rows, each segment), per term: its postings by
    // number. The places that hold keys (and segments of older formats) are numbered here.
    let keyed = |lists: &[&[SegmentPosting]]| number_lists(lists);
    let listed = keyed(&held.iter().map(|h| h.0.as_slice()).collect::<Vec<_>>());
    let fresh_numbered = keyed(&fresh_hits.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let segs_numbered: Vec<Option<Numbered>> = (0..segs.len())
        .map(|s| {
            let decoded: Option<Vec<&[SegmentPosting]>> = held
                .iter()
                .map(|h| match h.1.get(s) {
                    Some(Held::Decoded(p)) => Some(p.as_slice()),
                    _ => None,
                })
                .collect();
            decoded.map(|d| keyed(&d))
        })
        .collect();
    let mut runs: Vec<Vec<Vec<Chunk<'_>>>> = Vec::with_capacity(2 + segs.len());
    for numbered in [&listed, &fresh_numbered] {
        runs.push(numbered.1.iter().map(|list| vec![list.chunk()]).collect());
    }
    for (s, numbered) in segs_numbered.iter().enumerate() {
        runs.push(match numbered {
            Some((_, lists)) => lists.iter().map(|list| vec![list.chunk()]).collect(),
            None => {
                let mut per_term = Vec::with_capacity(terms.len());
                for (term, (_, in_segments)) in terms.iter().zip(&held) {
                    let malformed = || super::codec::malformed_segment(ns.as_str(), segs[s], term);
                    let h = in_segments.get(s).ok_or_else(malformed)?;
                    per_term.push(h.chunks(ns.as_str(), term)?.ok_or_else(malformed)?);
                }
                per_term
            }
        });
    }
    let n = stats.docs.max(1) as f64;
    let avgdl = if stats.docs == 0 { 1.0 } else { stats.total as f64 / stats.docs as f64 };
    // BM25's length norm `K1 * (1 - B + B * len / avgdl)` as `base + per_token * len`: one
    // division per posting instead of two.
    let (base, per_token) = (K1 * (1.0 - B), K1 * B / avgdl);
    let weight = |tf: u32, len: u32| {
        let tf = f64::from(tf);
        tf * (K1 + 1.0) / (tf + (base + per_token * f64::from(len)))
    };
    // The greatest score a text can have: every query term, as often as can be (a term no
    // text holds counts with the IDF of a document frequency of zero).
    let mut ceiling = 0.0;
    let mut idfs = Vec::with_capacity(terms.len());
    for t in 0..terms.len() {
        // The texts holding the term, for its document frequency (the namespace's totals
        // count texts too).
        let df = runs.iter().filter_map(|place| place.get(t)).flatten().map(Chunk::len).sum::<usize>() as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        ceiling += idf * (K1 + 1.0);
        idfs.push(idf);
    }
    // Where each place finds a text's key from its number.
    let mut keys: Vec<KeyOf<'_>> = vec![local_keys(&listed.0, ns), local_keys(&fresh_numbered.0, ns)];
    for (s, numbered) in segs_numbered.iter().enumerate() {
        keys.push(match numbered {
            Some((k, _)) => local_keys(k, ns),
            None => {
                let seg = segs[s];
                let mut numbers = segments.numbers(ns.as_str(), seg).ok_or_else(|| Error::Inconsistent {
                    namespace: ns.as_str().to_string(),
                    detail: "a numbered segment without its text numbers".to_string(),
                })?;
                Box::new(move |n| numbers.key(n)?.ok_or_else(|| missing_text(ns, n)))
            }
        });
    }
    let mut places: Vec<super::maxscore::Place<'_, '_>> = runs
        .into_iter()
        .zip(keys)
        .map(|(per_term, keys)| {
            let lists = per_term
                .into_iter()
                .zip(&idfs)
                .map(|(run, &idf)| {
                    // No posting weighs more than the greatest frequency in the shortest text
                    // would.
                    let (tf, len) = run
                        .iter()
                        .map(Chunk::extremes)
                        .fold((0, u32::MAX), |a, b| (a.0.max(b.0), a.1.min(b.1)));
                    let max = if tf == 0 { 0.0 } else { weight(tf, len) * idf };
                    super::maxscore::TermList::new(run, idf, max)
                })
                .collect();
            super::maxscore::Place { lists, keys }
        })
        .collect();
    let place = TextPlace { texts, fresh: &fresh, ns };
    // Records found hidden, not resolved again when the search asks for more.
    let mut hidden = std::collections::HashSet::new();
    let mut want = k;
    loop {
        let top = super::maxscore::top(&mut places, want, weight)?;
        let mut hits: Vec<LexicalHit> = Vec::new();
        // Records resolved whose text at hand does not serve them: the text that does, and
        // the record, for when that text comes (a record has one hit at most).
        let mut waiting: std::collections::HashMap<u128, (u32, Record)> = std::collections::HashMap::new();
        for c in &top.best {
            // Candidates come best first: once `k` are found, the rest cannot enter.
            if hits.len() >= k {
                break;
            }
            if hidden.contains(&c.id) {
                continue;
            }
            let rec = match waiting.remove(&c.id) {
                Some((serving, rec)) if serving == c.rev => rec,
                Some(w) => {
                    waiting.insert(c.id, w);
                    continue;
                }
                None => {
                    let Some(rec) = resolve(RecordId::from_u128(c.id))? else {
                        hidden.insert(c.id);
                        continue;
                    };
                    // The candidate's text starts at `c.rev`: the record's visible revision
                    // is served by it when it is that revision (most records: one text), else
                    // by the latest text starting at or below it.
                    let serving =
                        if rec.rev == c.rev { Some(c.rev) } else { place.serving(c.id, rec.rev)? };
                    match serving {
                        Some(serving) if serving == c.rev => rec,
                        Some(serving) => {
                            waiting.insert(c.id, (serving, rec));
                            continue;
                        }
                        None => {
                            hidden.insert(c.id);
                            continue;
                        }
                    }
                }
            };
            hits.push(LexicalHit { record: rec, score: c.score, relevance: c.score / ceiling });
        }
        // A text left out scores at most the threshold, and if it reaches it, it comes after
        // every candidate of that score (by id): it cannot rank above the `k`-th hit if that
        // one scores more, or as much.
        let exact = top.threshold.is_none_or(|t| hits.get(k - 1).is_some_and(|h| h.score >= t));
        if exact || want == usize::MAX {
            return Ok(hits);
        }
        want = if want >= k.saturating_mul(8) { usize::MAX } else { want.saturating_mul(8) };
    }
}

/// Keys and numbered lists of a place (see [`number_lists`]).
type Numbered = (Vec<Key>, Vec<super::posting::Columns>);

/// How a place finds a text's key from its number.
type KeyOf<'k> = Box<dyn FnMut(u32) -> Result<Key, Error> + 'k>;

/// The keys of a place numbered by the search.
fn local_keys<'k>(keys: &'k [Key], ns: &'k Namespace) -> KeyOf<'k> {
    Box::new(move |n| keys.get(n as usize).copied().ok_or_else(|| missing_text(ns, n)))
}

/// A posting that names a text its place does not hold.
fn missing_text(ns: &Namespace, n: u32) -> Error {
    Error::Inconsistent {
        namespace: ns.as_str().to_string(),
        detail: format!("a lexical posting names text {n}, which its segment does not hold"),
    }
}

/// The postings of `term` in the namespace's posting lists, in `(id, from_rev)` order.
pub(super) fn listed_postings(
    postings: &impl ReadableTable<PostingKey, &'static [u8]>,
    ns: &Namespace,
    term: &str,
) -> Result<Vec<SegmentPosting>, Error> {
    let mut out = Vec::new();
    for r in postings.range((ns.as_str(), term, 0u128, 0u32)..=(ns.as_str(), term, u128::MAX, u32::MAX))? {
        let (key, v) = r?;
        let (_, _, id, rev) = key.value();
        let (tf, len) =
            decode_posting(v.value()).ok_or_else(|| malformed_posting(ns.as_str(), term, id, rev))?;
        out.push((id, rev, tf, len));
    }
    Ok(out)
}

/// Where a namespace's texts start (see [`TextPlace::serving`]).
pub(super) struct TextPlace<'a, T> {
    texts: &'a T,
    /// The fresh texts' keys, in key order.
    fresh: &'a [(u128, u32)],
    ns: &'a Namespace,
}

impl<T: ReadableTable<TextKey, &'static [u8]>> TextPlace<'_, T> {
    /// The text serving revision `rev` of record `id`: the latest text starting at or below
    /// it, merged or fresh.
    fn serving(&self, id: u128, rev: u32) -> Result<Option<u32>, Error> {
        let ns = self.ns.as_str();
        let mut cursor = self.texts.range((ns, id, 0u32)..=(ns, id, rev))?;
        let merged = cursor.next_back().transpose()?.map(|row| row.0.value().2);
        let at = self.fresh.partition_point(|&(i, r)| (i, r) <= (id, rev));
        let fresh = at.checked_sub(1).and_then(|i| self.fresh.get(i)).filter(|f| f.0 == id).map(|f| f.1);
        Ok(merged.max(fresh))
    }
}
