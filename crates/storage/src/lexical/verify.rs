//! The lexical index checked against the revisions: every text's terms where they should
//! be, and nothing else.

use std::collections::BTreeMap;

use redb::ReadableTable;

use super::codec::*;
use super::layout::*;
use super::segments::*;
use crate::analyzer::Analyzer;
use crate::error::Error;
use crate::record::Record;

/// The rows of a namespace in a table whose keys start with it.
pub(super) fn count_rows<K: redb::Key + 'static>(
    table: &impl ReadableTable<K, &'static [u8]>,
    start: K::SelfType<'_>,
    of_ns: impl Fn(&K::SelfType<'_>) -> bool,
) -> Result<u64, Error> {
    let mut n = 0;
    for r in table.range(start..)? {
        let (k, _) = r?;
        if !of_ns(&k.value()) {
            break;
        }
        n += 1;
    }
    Ok(n)
}

/// The lexical tables [`verify`] compares.
pub(crate) struct Stored<'a, P, T, F> {
    pub(crate) postings: &'a P,
    pub(crate) segments: &'a Segments,
    pub(crate) texts: &'a T,
    pub(crate) fresh: Option<&'a F>,
    pub(crate) stats: LexStats,
    /// The analysis the file's texts were indexed with.
    pub(crate) analyzer: Analyzer,
}

/// Recompute a namespace's lexical index from its records' revisions (`by_record`: each
/// record's revisions in order) and compare it with the stored one: every text (a record's
/// first revision and each revision that changed its text) has a fresh row or a merged
/// `texts` row, not both, with its terms in the fresh row or one posting per term in the
/// posting lists or a segment; no row is left that no text accounts for; and the namespace
/// totals agree. For files of format 6 and later (earlier ones kept a `texts` row for fresh
/// texts too).
pub(crate) fn verify<P, T, F>(
    ns: &str,
    by_record: &BTreeMap<u128, Vec<Record>>,
    stored: &Stored<'_, P, T, F>,
    problems: &mut Vec<String>,
) -> Result<(), Error>
where
    P: ReadableTable<PostingKey, &'static [u8]>,
    T: ReadableTable<TextKey, &'static [u8]>,
    F: ReadableTable<TextKey, &'static [u8]>,
{
    let (segments, in_segments) = stored.segments.all(ns, problems)?;
    let (mut docs, mut total, mut fresh_texts, mut merged_texts, mut postings) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for (&id, list) in by_record {
        let mut previous: Option<String> = None;
        for rec in list {
            let text = rec.body.text();
            if previous.as_deref() == Some(text.as_str()) {
                continue;
            }
            let (counts, len) = term_counts_by(stored.analyzer, &text);
            previous = Some(text);
            docs += 1;
            total += u64::from(len);
            let key = (ns, id, rec.rev);
            let fresh = match stored.fresh {
                Some(t) => t.get(key)?.map(|v| v.value().to_vec()),
                None => None,
            };
            let what = format!("{ns}: the text of {id:032x} from revision {}", rec.rev);
            let merged = match stored.texts.get(key)? {
                Some(row) => {
                    if decode_posting(row.value()).is_none() {
                        problems.push(format!("{what}: its text row is malformed or fails its checksum"));
                    }
                    true
                }
                None => false,
            };
            match (fresh, merged) {
                (Some(bytes), false) => {
                    fresh_texts += 1;
                    let (stored_len, terms) = decode_fresh_row(ns, id, rec.rev, &bytes)?;
                    let want: Vec<(&str, u32)> = counts.iter().map(|(t, c)| (t.as_str(), *c)).collect();
                    if stored_len != len || terms != want {
                        problems.push(format!("{what}: its fresh row holds other terms"));
                    }
                }
                (None, true) => {
                    merged_texts += 1;
                    for (term, tf) in &counts {
                        let mut found = stored
                            .postings
                            .get((ns, term.as_str(), id, rec.rev))?
                            .map(|v| decode_posting(v.value()) == Some((*tf, len)));
                        if found.is_none() {
                            found = segments.get(&(term.clone(), id, rec.rev)).map(|p| *p == (*tf, len));
                        }
                        match found {
                            Some(right) => {
                                postings += 1;
                                if !right {
                                    problems
                                        .push(format!("{what}: the posting of \"{term}\" has a wrong count"));
                                }
                            }
                            None => problems.push(format!("{what}: no posting of \"{term}\"")),
                        }
                    }
                }
                (Some(_), true) => problems.push(format!("{what} is both fresh and merged")),
                (None, false) => problems.push(format!("{what} is not indexed")),
            }
        }
    }
    let stored_postings = count_rows(stored.postings, (ns, "", 0u128, 0u32), |k| k.0 == ns)? + in_segments;
    let stored_fresh = match stored.fresh {
        Some(t) => count_rows(t, (ns, 0u128, 0u32), |k| k.0 == ns)?,
        None => 0,
    };
    let rows = [
        ("postings", stored_postings, postings),
        ("merged texts", count_rows(stored.texts, (ns, 0u128, 0u32), |k| k.0 == ns)?, merged_texts),
        ("fresh texts", stored_fresh, fresh_texts),
    ];
    for (what, found, expected) in rows {
        if found != expected {
            problems.push(format!("{ns}: {found} {what} stored, {expected} expected"));
        }
    }
    let want = LexStats { docs, total, fresh: fresh_texts };
    if stored.stats != want {
        problems.push(format!("{ns}: the lexical totals are {:?}, expected {want:?}", stored.stats));
    }
    Ok(())
}
