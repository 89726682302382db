//! Lexical search, top 10, side by side on the same texts and queries: mnemon's BM25 index
//! (through `Ns::search` in lexical mode, as users call it), SQLite's FTS5 (`bm25()`
//! ranking, the query's words joined by OR, as mnemon matches any of them) and tantivy (an
//! index in RAM, one segment after a merge, the query parser's default OR, BM25 top 10), the
//! latter alone (document addresses) and with the 10 documents read from its store; mnemon
//! also through one snapshot held across queries, as tantivy's searcher is.
//!
//! Texts of 30 words from a vocabulary of 5,000 with a Zipf-like law (`realistic_text`),
//! 100,000 of them (`MNEMON_BENCH_LEXICAL_N` sets another number), loaded in bulk commits but
//! for the newest 200, added one at a time (fresh texts, as a live memory's newest are);
//! queries of three words drawn the same way. `cargo bench -p mnemon-bench --bench lexical`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use mnemon::body::Learning;
use mnemon::{Db, NewRecord, TextMode, WriteOp};
use mnemon_bench::realistic_text;

fn lexical(c: &mut Criterion) {
    let n: u64 = std::env::var("MNEMON_BENCH_LEXICAL_N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let texts: Vec<String> = (0..n).map(|i| realistic_text(i, 30)).collect();
    let queries: Vec<String> = (0..200).map(|q| realistic_text(10_000_000 + q, 3)).collect();
    let dir = tempfile::tempdir().unwrap();

    let db = Db::builder(dir.path().join("lexical.redb")).create(true).open().unwrap();
    let ns = db.ns("bench").unwrap();
    // The newest 200 texts added one at a time, as a live memory's are: they stay fresh (fewer
    // than `FRESH_LIMIT`), and every search reads their rows beside the segments.
    let fresh = texts.len().saturating_sub(200);
    for chunk in texts[..fresh].chunks(10_000) {
        let ops = chunk
            .iter()
            .map(|t| {
                WriteOp::Insert(NewRecord::new(
                    ns.name().clone(),
                    Learning { text: t.clone(), ..Default::default() },
                ))
            })
            .collect();
        db.store().write(ops).unwrap();
    }
    for t in &texts[fresh..] {
        db.store()
            .write(vec![WriteOp::Insert(NewRecord::new(
                ns.name().clone(),
                Learning { text: t.clone(), ..Default::default() },
            ))])
            .unwrap();
    }

    let sqlite = rusqlite::Connection::open(dir.path().join("lexical.sqlite")).unwrap();
    sqlite.execute_batch("CREATE VIRTUAL TABLE texts USING fts5(body); BEGIN").unwrap();
    {
        let mut insert = sqlite.prepare("INSERT INTO texts (body) VALUES (?1)").unwrap();
        for t in &texts {
            insert.execute([t]).unwrap();
        }
    }
    sqlite.execute_batch("COMMIT").unwrap();
    let fts_queries: Vec<String> =
        queries.iter().map(|q| q.split(' ').collect::<Vec<_>>().join(" OR ")).collect();

    // Both engines find results for the queries (a sanity check, not timed).
    let hits = ns.search(&queries[0]).mode(TextMode::Lexical).run().unwrap();
    assert_eq!(hits.len(), 10);

    let mut g = c.benchmark_group(format!("lexical_top10_{n}"));
    g.sample_size(30);
    let mut i = 0;
    g.bench_function("mnemon", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            ns.search(&queries[i]).mode(TextMode::Lexical).limit(10).run().unwrap()
        })
    });
    // The same search through one snapshot held across queries, as tantivy's searcher is
    // held below (`Ns::search` opens a read transaction per query).
    let snap = db.store().snapshot().unwrap();
    let mut h = 0;
    g.bench_function("mnemon_held_snapshot", |b| {
        b.iter(|| {
            h = (h + 1) % queries.len();
            snap.lexical_search(ns.name(), &queries[h], &mnemon_storage::ListQuery::new(), 10).unwrap()
        })
    });
    let mut stmt =
        sqlite.prepare("SELECT rowid FROM texts WHERE texts MATCH ?1 ORDER BY rank LIMIT 10").unwrap();
    let mut j = 0;
    g.bench_function("sqlite_fts5", |b| {
        b.iter(|| {
            j = (j + 1) % fts_queries.len();
            stmt.query_map([&fts_queries[j]], |r| r.get::<_, i64>(0)).unwrap().count()
        })
    });
    let mut schema = tantivy::schema::Schema::builder();
    let body = schema.add_text_field("body", tantivy::schema::TEXT | tantivy::schema::STORED);
    let index = tantivy::Index::create_in_ram(schema.build());
    {
        let mut writer: tantivy::IndexWriter = index.writer(200_000_000).unwrap();
        for t in &texts {
            writer.add_document(tantivy::doc!(body => t.as_str())).unwrap();
        }
        writer.commit().unwrap();
        let segments = index.searchable_segment_ids().unwrap();
        if segments.len() > 1 {
            writer.merge(&segments).wait().unwrap();
        }
        writer.wait_merging_threads().unwrap();
    }
    let reader = index.reader().unwrap();
    let searcher = reader.searcher();
    let parser = tantivy::query::QueryParser::for_index(&index, vec![body]);
    let parsed: Vec<Box<dyn tantivy::query::Query>> =
        queries.iter().map(|q| parser.parse_query(q).unwrap()).collect();
    let mut k = 0;
    g.bench_function("tantivy", |b| {
        b.iter(|| {
            k = (k + 1) % parsed.len();
            searcher.search(&parsed[k], &tantivy::collector::TopDocs::with_limit(10)).unwrap().len()
        })
    });
    // The same search with its documents read from tantivy's store, as mnemon's answer holds
    // the records (the store uncompressed: this build has no compression features).
    let mut l = 0;
    g.bench_function("tantivy_with_documents", |b| {
        b.iter(|| {
            l = (l + 1) % parsed.len();
            let top = searcher.search(&parsed[l], &tantivy::collector::TopDocs::with_limit(10)).unwrap();
            top.iter()
                .map(|(_, addr)| searcher.doc::<tantivy::TantivyDocument>(*addr).unwrap())
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

criterion_group!(benches, lexical);
criterion_main!(benches);
