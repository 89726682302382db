//! Reading vectors and searching texts in a snapshot.

use crate::error::Error;
use crate::id::{Namespace, RecordId};
use crate::record::Record;
use crate::tables::{self, names};
use crate::vector::{self, VectorSpace};
use redb::ReadableTable;

use super::*;

impl Snapshot {
    /// The vector spaces, by name.
    pub fn vector_spaces(&self) -> Result<Vec<VectorSpace>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTOR_SPACES)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for r in t.iter()? {
                let (k, v) = r?;
                out.push(
                    vector::decode_space(k.value(), v.value())
                        .map_err(|e| Error::Codec { table: names::VECTOR_SPACES, source: e })?,
                );
            }
            Ok(out)
        })())
    }

    /// One vector space.
    pub fn vector_space(&self, name: &str) -> Result<Option<VectorSpace>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTOR_SPACES)? else { return Ok(None) };
            t.get(name)?
                .map(|v| vector::decode_space(name, v.value()))
                .transpose()
                .map_err(|e| Error::Codec { table: names::VECTOR_SPACES, source: e })
        })())
    }

    /// Every vector of a record in a space, as `(from_rev, vector)` in revision order.
    pub fn vectors_of(
        &self,
        space: &str,
        ns: &Namespace,
        id: RecordId,
    ) -> Result<Vec<(u32, Vec<f32>)>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(Vec::new()) };
            let key = id.as_u128();
            let mut out = Vec::new();
            for r in t.range((space, ns.as_str(), key, 0u32)..=(space, ns.as_str(), key, u32::MAX))? {
                let (k, v) = r?;
                let mut vec = Vec::new();
                vector::decode_into(v.value(), &mut vec)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                out.push((k.value().3, vec));
            }
            Ok(out)
        })())
    }

    /// The vector serving revision `rev` of a record: the one written at the greatest
    /// `from_rev <= rev`. Returns `(from_rev, vector)`.
    pub fn vector_for(
        &self,
        space: &str,
        ns: &Namespace,
        id: RecordId,
        rev: u32,
    ) -> Result<Option<(u32, Vec<f32>)>, Error> {
        Ok(self.vectors_for(space, ns, &[(id, rev)])?.pop().flatten())
    }

    /// The vectors of many records, as [`Self::vector_for`] finds each (`None` where a
    /// record has none): the table is opened once, where a call per record opens it each
    /// time.
    pub fn vectors_for(
        &self,
        space: &str,
        ns: &Namespace,
        records: &[(RecordId, u32)],
    ) -> Result<Vec<Option<StoredVector>>, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(vec![None; records.len()]) };
            let mut out = Vec::with_capacity(records.len());
            for &(id, rev) in records {
                let key = id.as_u128();
                let mut cursor = t.range((space, ns.as_str(), key, 0u32)..=(space, ns.as_str(), key, rev))?;
                let Some(r) = cursor.next_back() else {
                    out.push(None);
                    continue;
                };
                let (k, v) = r?;
                let mut vec = Vec::new();
                vector::decode_into(v.value(), &mut vec)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                out.push(Some((k.value().3, vec)));
            }
            Ok(out)
        })())
    }

    /// Visit every vector of a space (in one namespace, or all) in key order: by namespace,
    /// record id, then `from_rev`. The slice is only valid during the call.
    pub fn for_each_vector(
        &self,
        space: &str,
        ns: Option<&Namespace>,
        mut f: impl FnMut(&Namespace, RecordId, u32, &[f32]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::VECTORS)? else { return Ok(()) };
            let iter = match ns {
                Some(n) => {
                    t.range((space, n.as_str(), 0u128, 0u32)..=(space, n.as_str(), u128::MAX, u32::MAX))?
                }
                None => t.range((space, "", 0u128, 0u32)..=(space, "\u{10FFFF}", u128::MAX, u32::MAX))?,
            };
            let mut ns_cache: Option<Namespace> = None;
            let mut buf = Vec::new();
            for r in iter {
                let (k, v) = r?;
                let (sp, n, id, from_rev) = k.value();
                if sp != space {
                    continue;
                }
                if ns_cache.as_ref().is_none_or(|c| c.as_str() != n) {
                    ns_cache = Some(Namespace::new(n).map_err(|e| Error::Inconsistent {
                        namespace: n.to_string(),
                        detail: format!("stored vector under a bad namespace: {e}"),
                    })?);
                }
                vector::decode_into(v.value(), &mut buf)
                    .map_err(|e| Error::Codec { table: names::VECTORS, source: e })?;
                if let Some(n) = &ns_cache {
                    f(n, RecordId::from_u128(id), from_rev, &buf)?;
                }
            }
            Ok(())
        })())
    }

    /// How many of the namespace's texts are fresh (not yet merged into the posting lists; see
    /// [`crate::WriteOp::MergeTexts`]).
    pub fn fresh_texts(&self, ns: &Namespace) -> Result<u64, Error> {
        self.ctx((|| {
            let Some(t) = self.open_optional(tables::LEXSTATS)? else { return Ok(0) };
            Ok(crate::lexical::stats_row(ns.as_str(), t.get(ns.as_str())?.as_ref().map(|v| v.value()))?.fresh)
        })())
    }

    /// The `k` records whose text best matches `query` by BM25, among those the list query
    /// selects (kinds, tags, agent, task) as of its time. Records are matched by the text of
    /// the revision visible then; forgotten records are gone from the index.
    pub fn lexical_search(
        &self,
        ns: &Namespace,
        query: &str,
        filter: &ListQuery,
        k: usize,
    ) -> Result<Vec<crate::lexical::LexicalHit>, Error> {
        self.ctx((|| {
            let (Some(postings), Some(texts)) =
                (self.open_optional(tables::POSTINGS)?, self.open_optional(tables::TEXTS)?)
            else {
                return Ok(Vec::new());
            };
            let stats = match self.open_optional(tables::LEXSTATS)? {
                Some(t) => {
                    crate::lexical::stats_row(ns.as_str(), t.get(ns.as_str())?.as_ref().map(|v| v.value()))?
                }
                None => crate::lexical::LexStats::default(),
            };
            let fresh = self.open_optional(tables::FRESH)?;
            let records = self.records_at(filter.as_of)?;
            let resolve = |id: RecordId| -> Result<Option<Record>, Error> {
                Ok(records.get(ns, id)?.filter(|r| filter.matches(r)))
            };
            let segments = self.segments()?;
            crate::lexical::search(
                &postings,
                &segments,
                &texts,
                fresh.as_ref(),
                stats,
                ns,
                query,
                crate::format::analyzer_for(self.format),
                k,
                &resolve,
            )
        })())
    }
}
