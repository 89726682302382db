//! The lexical index: BM25 ranking, identifiers, time travel, filters, forgetting.

use std::sync::Arc;

use mnemon_storage::analyzer::Analyzer;
use mnemon_storage::body::{Decision, Learning};
use mnemon_storage::*;

fn learning(t: &str) -> Body {
    Learning { text: t.into(), ..Default::default() }.into()
}

fn ids(hits: &[LexicalHit]) -> Vec<RecordId> {
    hits.iter().map(|h| h.record.id).collect()
}

#[test]
fn bm25_identifiers_time_travel_filters_and_forget() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-01").unwrap()));
    let store = Store::open(
        dir.path().join("l.redb"),
        StoreOptions { create: true, clock: clock.clone(), ..Default::default() },
    )
    .unwrap();
    let ns = Namespace::new("lex").unwrap();
    let put = |body: Body, tags: &[&str]| -> RecordId {
        let mut n = NewRecord::new(ns.clone(), body);
        n.envelope.tags = tags.iter().map(|t| (*t).into()).collect();
        let id = n.id;
        store.write(vec![WriteOp::Insert(n)]).unwrap();
        id
    };
    let retry = put(learning("Retry with exponential backoff; backoff caps at 30 seconds"), &["net"]);
    let parse = put(learning("parseHTTPResponse fails on chunked bodies"), &[]);
    let queue = put(learning("Bounded queues prevent memory blowups"), &["net"]);
    let decision =
        put(Decision { title: "Use backoff in the client".into(), ..Default::default() }.into(), &[]);
    clock.advance(1_000_000);
    let q = ListQuery::new();
    let snap = store.snapshot().unwrap();

    // Ranking: the text that says "backoff" twice, in fewer words, first.
    let hits = snap.lexical_search(&ns, "backoff", &q, 10).unwrap();
    assert_eq!(ids(&hits), vec![retry, decision]);
    assert!(hits[0].score > hits[1].score && hits[1].score > 0.0);
    // Identifier parts and the whole identifier; case and punctuation do not matter.
    assert_eq!(ids(&snap.lexical_search(&ns, "response", &q, 10).unwrap()), vec![parse]);
    assert_eq!(ids(&snap.lexical_search(&ns, "PARSEHTTPRESPONSE!", &q, 10).unwrap()), vec![parse]);
    assert!(snap.lexical_search(&ns, "nothing-here", &q, 10).unwrap().is_empty());
    // Filters: kinds and tags.
    let only_decisions = ListQuery::new().kinds([Kind::Decision]);
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &only_decisions, 10).unwrap()), vec![decision]);
    let net = ListQuery::new().tag("net");
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff queues", &net, 10).unwrap()).len(), 2);
    // Another namespace sees nothing.
    let other = Namespace::new("other").unwrap();
    assert!(snap.lexical_search(&other, "backoff", &q, 10).unwrap().is_empty());

    // Revising the text: the new words match now, the old ones only in the past.
    let before = clock.now();
    clock.advance(1_000_000);
    let mut r = Revise::new(ns.clone(), queue);
    r.body = Some(learning("Bounded channels prevent overload"));
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    // A revision that only changes tags keeps the text (and its postings).
    let mut r = Revise::new(ns.clone(), retry);
    let mut env = store.snapshot().unwrap().latest(&ns, retry).unwrap().unwrap().envelope;
    env.tags.push("http".into());
    r.envelope = Some(env);
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    clock.advance(1_000_000);
    let snap = store.snapshot().unwrap();
    assert!(snap.lexical_search(&ns, "queues", &q, 10).unwrap().is_empty());
    assert_eq!(ids(&snap.lexical_search(&ns, "channels", &q, 10).unwrap()), vec![queue]);
    let past = ListQuery::new().as_of(AsOf::valid_at(before).known_at(before));
    assert_eq!(ids(&snap.lexical_search(&ns, "queues", &past, 10).unwrap()), vec![queue]);
    assert!(snap.lexical_search(&ns, "channels", &past, 10).unwrap().is_empty());
    assert_eq!(ids(&snap.lexical_search(&ns, "exponential", &q, 10).unwrap()), vec![retry]);

    // Retired records are not found now; forgotten ones never.
    store.write(vec![WriteOp::Retire { namespace: ns.clone(), id: decision, at: None }]).unwrap();
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: parse }]).unwrap();
    clock.advance(1_000_000);
    let snap = store.snapshot().unwrap();
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &q, 10).unwrap()), vec![retry]);
    assert_eq!(ids(&snap.lexical_search(&ns, "backoff", &past, 10).unwrap()), vec![retry, decision]);
    assert!(snap.lexical_search(&ns, "response", &past, 10).unwrap().is_empty());
    assert!(snap.verify().unwrap().is_empty());
}

/// BM25 as the index defines it, computed naively: every indexed text (each revision that
/// changed a record's text) counts toward the totals, a term's document frequency is the
/// number of those texts holding it, and a record scores by the text serving its latest
/// revision.
fn naive_bm25(
    texts: &[(RecordId, String)],
    current: &[(RecordId, String)],
    query: &str,
    analyzer: Analyzer,
) -> Vec<(RecordId, f64)> {
    let (k1, b) = (0.9, 0.4);
    let terms_of = |t: &str| -> Vec<String> {
        let mut v = Vec::new();
        analyzer.terms(t, |w| v.push(w.into_owned()));
        v
    };
    let len_of = |t: &str| f64::from(analyzer.terms(t, |_| {}));
    let docs = texts.len() as f64;
    let avgdl = texts.iter().map(|(_, t)| len_of(t)).sum::<f64>() / docs;
    let all_terms: Vec<(RecordId, Vec<String>)> = texts.iter().map(|(i, t)| (*i, terms_of(t))).collect();
    let mut q: Vec<String> = terms_of(query);
    q.sort();
    q.dedup();
    // Each query term's document frequency, once: the texts holding it.
    let df_of: Vec<f64> =
        q.iter().map(|term| all_terms.iter().filter(|(_, t)| t.contains(term)).count() as f64).collect();
    let mut out = Vec::new();
    for (id, text) in current {
        let words = terms_of(text);
        let len = len_of(text);
        let mut score = 0.0;
        let mut matched = false;
        for (term, df) in q.iter().zip(&df_of) {
            let tf = words.iter().filter(|w| *w == term).count() as f64;
            if tf == 0.0 {
                continue;
            }
            matched = true;
            let df = *df;
            let idf = ((docs - df + 0.5) / (df + 0.5) + 1.0).ln();
            score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avgdl));
        }
        if matched {
            out.push((*id, score));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[test]
fn fresh_texts_and_merged_postings_rank_alike() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("f.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("fresh").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text =
        |i: usize| format!("{} {} {} note {i}", words[i % 8], words[(i / 8) % 8], words[(i * 7 + 3) % 8]);
    // Every text ever indexed, and the text serving each live record.
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    let queries = ["alpha", "beta gamma", "omega note", "kappa theta sigma", "note 17"];
    let check = |indexed: &[(RecordId, String)], live: &[(RecordId, String)], when: &str| {
        let snap = store.snapshot().unwrap();
        let fresh = snap.table_sizes().unwrap()["fresh texts"];
        assert!(fresh < FRESH_LIMIT, "{when}: {fresh} fresh texts");
        for q in queries {
            let want = naive_bm25(indexed, live, q, Analyzer::Stemmed);
            let got = snap.lexical_search(&ns, q, &ListQuery::new(), want.len() + 5).unwrap();
            assert_eq!(got.len(), want.len(), "{when}: {q}");
            for (g, (id, score)) in got.iter().zip(&want) {
                assert!((g.score - score).abs() < 1e-9, "{when}: {q}: {} vs {score}", g.score);
                // Ties may come in either order; the scores say they are ties.
                if g.record.id != *id {
                    assert!(want.iter().any(|(i, s)| *i == g.record.id && (s - score).abs() < 1e-9));
                }
            }
        }
    };
    // One commit per record, across several merges.
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    for i in 0..(2 * limit + 40) {
        let rec = NewRecord::new(ns.clone(), learning(&text(i)));
        indexed.push((rec.id, text(i)));
        live.push((rec.id, text(i)));
        store.write(vec![WriteOp::Insert(rec)]).unwrap();
        if i % 97 == 0 || i + 1 == limit || i == limit {
            check(&indexed, &live, &format!("after insert {i}"));
        }
    }
    // Revise merged and fresh records; forget both kinds; a batch that forgets a text it
    // indexes itself.
    for (k, i) in [3usize, 300, 2 * limit + 30].into_iter().enumerate() {
        revise_text(&store, &ns, &mut indexed, &mut live, i, format!("revised omega text {k}"));
    }
    check(&indexed, &live, "after revisions");
    for i in [5usize, 2 * limit + 35] {
        let (id, _) = live[i].clone();
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id }]).unwrap();
        indexed.retain(|(x, _)| *x != id);
        live.retain(|(x, _)| *x != id);
    }
    let rec = NewRecord::new(ns.clone(), learning("alpha written and forgotten at once"));
    let gone = rec.id;
    store.write(vec![WriteOp::Insert(rec), WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
    check(&indexed, &live, "after forgets");
    // An explicit merge at a quiet moment: no fresh text left, the same ranking; one with a
    // new text in the same job merges that too.
    assert!(store.snapshot().unwrap().fresh_texts(&ns).unwrap() > 0);
    let r = store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    assert_eq!(r.outcomes, vec![Outcome::TextsMerged]);
    assert_eq!(store.snapshot().unwrap().fresh_texts(&ns).unwrap(), 0);
    check(&indexed, &live, "after an explicit merge");
    let rec = NewRecord::new(ns.clone(), learning("sigma merged at once"));
    indexed.push((rec.id, "sigma merged at once".into()));
    live.push((rec.id, "sigma merged at once".into()));
    store.write(vec![WriteOp::Insert(rec), WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    assert_eq!(store.snapshot().unwrap().table_sizes().unwrap()["fresh texts"], 0);
    check(&indexed, &live, "after a merge with a new text");
    // Nothing to merge, or no such namespace: a no-op that succeeds.
    let empty = Namespace::new("nothing-here").unwrap();
    for n in [&ns, &empty] {
        let r = store.write(vec![WriteOp::MergeTexts { namespace: n.clone() }]).unwrap();
        assert_eq!(r.outcomes, vec![Outcome::TextsMerged]);
    }
    assert_eq!(store.snapshot().unwrap().fresh_texts(&empty).unwrap(), 0);
    check(&indexed, &live, "after merges with nothing to merge");
    // A bulk batch bigger than the limit goes straight to the posting lists.
    let mut batch = Vec::new();
    for i in 0..(limit + 10) {
        let rec = NewRecord::new(ns.clone(), learning(&text(10_000 + i)));
        indexed.push((rec.id, text(10_000 + i)));
        live.push((rec.id, text(10_000 + i)));
        batch.push(WriteOp::Insert(rec));
    }
    store.write(batch).unwrap();
    assert_eq!(store.snapshot().unwrap().table_sizes().unwrap()["fresh texts"], 0);
    check(&indexed, &live, "after a bulk batch");
    drop(store);
    let store = Store::open(dir.path().join("f.redb"), StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.lexical_search(&ns, "revised omega", &ListQuery::new(), 3).unwrap().len(), 3);
}

/// Merges write segments of level 0; a level's [`SEGMENT_FANOUT`] segments become one of the
/// next level, in cascade, and a bulk commit's segment starts at the level of its size: the
/// segment count stays the sum of the digits of the texts' count in base 8 (in units of
/// [`FRESH_LIMIT`]), the posting lists stay empty until a merge asked for, and the ranking
/// stays that of naive BM25 throughout. Revisions and erasures reach texts in segments of any
/// level and in the posting lists alike.
#[test]
fn segments_tier_up_without_changing_the_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Store::open(dir.path().join("s.redb"), StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("seg").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "iota", "zeta"];
    let text =
        |i: usize| format!("{} {} {} item {i}", words[i % 10], words[(i / 10) % 10], words[(i * 7 + 3) % 10]);
    let queries = ["alpha", "beta gamma", "omega item", "kappa theta zeta", "item 4097", "revised"];
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let fanout = SEGMENT_FANOUT;
    assert_eq!(fanout, 8, "the expected counts below are in base 8");
    let sizes = |store: &Store| store.snapshot().unwrap().table_sizes().unwrap();
    let digit_sum = |mut n: usize| {
        let mut sum = 0;
        while n > 0 {
            sum += n % fanout;
            n /= fanout;
        }
        sum as u64
    };
    let mut i = 0;
    // Commits of `FRESH_LIMIT` texts (each a merge into a level-0 segment), then bulk commits
    // of `FRESH_LIMIT * SEGMENT_FANOUT` (level 1 at once), then small ones again until level 0
    // and level 1 fill together and cascade into one segment of level 2.
    let plan: Vec<usize> = [vec![1; 17], vec![fanout; 5], vec![1; 7]].concat();
    let checked = [1, 7, 8, 9, 17, 22, 28, 29];
    for (n, units) in plan.iter().enumerate() {
        insert_texts(&store, &ns, (i..i + units * limit).map(text), &mut indexed, &mut live);
        i += units * limit;
        let s = sizes(&store);
        assert_eq!(s["segments"], digit_sum(i / limit), "commit {}: {s:?}", n + 1);
        assert_eq!(s["postings"], 0, "commit {}", n + 1);
        if checked.contains(&(n + 1)) {
            check_naive(
                &store.snapshot().unwrap(),
                &ns,
                &indexed,
                &live,
                &queries,
                &format!("commit {}", n + 1),
            );
        }
    }
    // One segment of level 2 holds every text.
    assert_eq!(i, limit * fanout * fanout);
    assert_eq!(sizes(&store)["segments"], 1);
    // One more merge: a segment of level 0 beside it.
    insert_texts(&store, &ns, (i..i + limit).map(text), &mut indexed, &mut live);
    assert_eq!(sizes(&store)["segments"], 2);
    for (k, at) in [3usize, i + 5].into_iter().enumerate() {
        revise_text(&store, &ns, &mut indexed, &mut live, at, format!("revised text {k}"));
    }
    for at in [7usize, i + 9] {
        let (id, _) = live[at].clone();
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id }]).unwrap();
        indexed.retain(|(x, _)| *x != id);
        live.retain(|(x, _)| *x != id);
    }
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "after revisions and forgets");
    assert!(store.snapshot().unwrap().verify().unwrap().is_empty());
    let segments = |store: &Store| sizes(store)["segment postings"];
    // (A posting left behind by a forgotten record would count in its terms' document
    // frequencies, and the scores above would differ from naive BM25.) An explicit merge
    // moves every segment into the posting lists.
    let postings = |store: &Store| {
        let sizes = store.snapshot().unwrap().table_sizes().unwrap();
        sizes["postings"] + sizes["segment postings"]
    };
    let before = postings(&store);
    store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    assert_eq!(segments(&store), 0);
    // It moves the segments' postings and adds those of the two fresh texts (the revisions':
    // "revised", "text" and a digit each).
    assert_eq!(postings(&store), before + 6);
    assert_eq!(store.snapshot().unwrap().fresh_texts(&ns).unwrap(), 0);
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "after an explicit merge");
    assert!(store.snapshot().unwrap().verify().unwrap().is_empty());
}

/// `verify` recomputes the lexical index: a posting missing from a segment or from the posting
/// lists, a fresh row with other terms, and a row no text accounts for are all reported.
#[test]
fn verify_finds_what_the_lexical_index_lost_or_gained() {
    type Seg = (&'static str, u64, &'static str, u32);
    type Post = (&'static str, &'static str, u128, u32);
    type Text = (&'static str, u128, u32);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.redb");
    let ns = Namespace::new("v").unwrap();
    {
        let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
        let limit = usize::try_from(FRESH_LIMIT).unwrap();
        // The posting lists (an explicit merge), a segment, then fresh texts.
        for batch in 0..3 {
            let ops: Vec<WriteOp> = (0..if batch < 2 { limit } else { 10 })
                .map(|i| {
                    WriteOp::Insert(NewRecord::new(
                        ns.clone(),
                        learning(&format!("alpha beta note {batch} {i}")),
                    ))
                })
                .collect();
            store.write(ops).unwrap();
            if batch == 0 {
                store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
            }
        }
        let sizes = store.snapshot().unwrap().table_sizes().unwrap();
        assert!(
            sizes["postings"] > 0 && sizes["segment postings"] > 0 && sizes["fresh texts"] == 10,
            "{sizes:?}"
        );
        assert_eq!(store.snapshot().unwrap().verify().unwrap(), Vec::<String>::new());
    }
    // Damage one table at a time through redb, and check what `verify` says.
    let damage = |f: &dyn Fn(&redb::WriteTransaction)| {
        let copy = dir.path().join("d.redb");
        std::fs::copy(&path, &copy).unwrap();
        {
            let db = redb::Database::open(&copy).unwrap();
            let txn = db.begin_write().unwrap();
            f(&txn);
            txn.commit().unwrap();
        }
        let store = Store::open(&copy, StoreOptions::default()).unwrap();
        let problems = store.snapshot().unwrap().verify().unwrap();
        drop(store);
        std::fs::remove_file(&copy).unwrap();
        problems
    };
    let segments = redb::TableDefinition::<Seg, &[u8]>::new("mnemon.segment_blocks");
    let postings = redb::TableDefinition::<Post, &[u8]>::new("mnemon.postings");
    let fresh = redb::TableDefinition::<Text, &[u8]>::new("mnemon.fresh");
    // A segment's blocks hold its postings: drop the last block.
    let problems = damage(&|txn| {
        txn.open_table(segments).unwrap().pop_last().unwrap().unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("no posting of")), "{problems:?}");
    // A block whose postings are cut short.
    let problems = damage(&|txn| {
        let mut t = txn.open_table(segments).unwrap();
        let (n, seg, term, part, v) = {
            let (k, v) = t.pop_first().unwrap().unwrap();
            let (n, seg, term, part) = k.value();
            (n.to_string(), seg, term.to_string(), part, v.value().to_vec())
        };
        t.insert((n.as_str(), seg, term.as_str(), part), &v[..v.len() - 28]).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("malformed block of segment 0/")), "{problems:?}");
    // A block keyed above its first term.
    let problems = damage(&|txn| {
        let mut t = txn.open_table(segments).unwrap();
        let (n, seg, v) = {
            let (k, v) = t.pop_first().unwrap().unwrap();
            let (n, seg, _, _) = k.value();
            (n.to_string(), seg, v.value().to_vec())
        };
        t.insert((n.as_str(), seg, "zzzz", 7), v.as_slice()).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("keyed above its first term")), "{problems:?}");
    let problems = damage(&|txn| {
        txn.open_table(postings).unwrap().pop_last().unwrap().unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("no posting of")), "{problems:?}");
    let problems = damage(&|txn| {
        // A posting no text accounts for.
        txn.open_table(postings)
            .unwrap()
            .insert(("v", "ghost", 7u128, 0u32), [1u8, 1, 0, 0, 0, 3, 0, 0, 0].as_slice())
            .unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("postings stored")), "{problems:?}");
    assert!(!problems.iter().any(|p| p.contains("no posting of")), "{problems:?}");
    let problems = damage(&|txn| {
        let mut t = txn.open_table(fresh).unwrap();
        let (n, id, rev) = {
            let (k, _) = t.pop_first().unwrap().unwrap();
            let (n, id, rev) = k.value();
            (n.to_string(), id, rev)
        };
        t.insert(
            (n.as_str(), id, rev),
            [1u8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, b'o', b't', b'h', b'e', b'r'].as_slice(),
        )
        .unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("its fresh row holds other terms")), "{problems:?}");
}

/// Insert the texts as learnings in one commit, and note them in `indexed` and `live`.
fn insert_texts(
    store: &Store,
    ns: &Namespace,
    texts: impl IntoIterator<Item = String>,
    indexed: &mut Vec<(RecordId, String)>,
    live: &mut Vec<(RecordId, String)>,
) {
    let mut ops = Vec::new();
    for text in texts {
        let rec = NewRecord::new(ns.clone(), learning(&text));
        indexed.push((rec.id, text.clone()));
        live.push((rec.id, text));
        ops.push(WriteOp::Insert(rec));
    }
    store.write(ops).unwrap();
}

/// Give live record `at` a new text, and note it in `indexed` and `live`.
fn revise_text(
    store: &Store,
    ns: &Namespace,
    indexed: &mut Vec<(RecordId, String)>,
    live: &mut [(RecordId, String)],
    at: usize,
    text: String,
) {
    let (id, _) = live[at].clone();
    store
        .write(vec![WriteOp::Revise(Revise { body: Some(learning(&text)), ..Revise::new(ns.clone(), id) })])
        .unwrap();
    indexed.push((id, text.clone()));
    live[at].1 = text;
}

/// The format version a closed file records.
pub(super) fn file_version(path: &std::path::Path) -> u32 {
    let db = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
    let v = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
    u32::from_le_bytes(v.value().try_into().unwrap())
}

/// Every query of `queries` against the naive BM25 of `indexed` and `live`, now.
fn check_naive(
    snap: &Snapshot,
    ns: &Namespace,
    indexed: &[(RecordId, String)],
    live: &[(RecordId, String)],
    queries: &[&str],
    when: &str,
) {
    // A read-only handle on an older file analyses queries the old way.
    let analyzer = if when.contains("read-only") { Analyzer::Words } else { Analyzer::Stemmed };
    for q in queries {
        let want = naive_bm25(indexed, live, q, analyzer);
        let got = snap.lexical_search(ns, q, &ListQuery::new(), want.len() + 5).unwrap();
        assert_eq!(got.len(), want.len(), "{when}: {q}");
        for (g, (_, score)) in got.iter().zip(&want) {
            assert!((g.score - score).abs() < 1e-9, "{when}: {q}: {} vs {score}", g.score);
            assert!(want.iter().any(|(i, s)| *i == g.record.id && (s - score).abs() < 1e-9), "{when}: {q}");
        }
    }
}

/// Formats 2 to 5 wrote a `texts` row for every text at once, fresh ones included; format 6
/// writes it when the text is merged. A format-5 file (its fresh texts with both rows) reads
/// the same, read-only and upgraded, and later revisions, forgets and merges keep it right.
#[test]
fn a_format_5_file_reads_alike_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f5.redb");
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-01").unwrap()));
    let options = || StoreOptions { clock: clock.clone(), ..Default::default() };
    let store = Store::open(&path, StoreOptions { create: true, ..options() }).unwrap();
    let ns = Namespace::new("f5").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text = |i: usize| format!("{} {} note {i}", words[i % 8], words[(i / 8) % 8]);
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    // Merged texts (a bulk batch), then fresh ones, one commit each.
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let mut batch = Vec::new();
    for i in 0..limit + 4 {
        let rec = NewRecord::new(ns.clone(), learning(&text(i)));
        indexed.push((rec.id, text(i)));
        live.push((rec.id, text(i)));
        batch.push(WriteOp::Insert(rec));
    }
    store.write(batch).unwrap();
    for i in 1000..1020 {
        clock.advance(1_000);
        let rec = NewRecord::new(ns.clone(), learning(&text(i)));
        indexed.push((rec.id, text(i)));
        live.push((rec.id, text(i)));
        store.write(vec![WriteOp::Insert(rec)]).unwrap();
    }
    // A merged record and a fresh one get fresh second texts; the past still sees the first.
    clock.advance(1_000);
    let past = AsOf::valid_at(clock.now()).known_at(clock.now());
    for (k, i) in [2usize, limit + 10].into_iter().enumerate() {
        clock.advance(1_000);
        let new_text = format!("epsilon kappa {k}");
        let r = Revise { body: Some(learning(&new_text)), ..Revise::new(ns.clone(), live[i].0) };
        store.write(vec![WriteOp::Revise(r)]).unwrap();
        indexed.push((live[i].0, new_text.clone()));
        live[i].1 = new_text;
    }
    clock.advance(1_000);
    // Words that both analyses index alike (no stopwords, unchanged by stemming): the
    // read-only checks analyse queries the old way.
    let queries = ["alpha", "kappa", "beta note", "epsilon", "note 1003"];
    let snap = store.snapshot().unwrap();
    let fresh = snap.fresh_texts(&ns).unwrap();
    assert_eq!(fresh, 22);
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 6");
    let past_query = ListQuery::new().as_of(past);
    let in_the_past = ids(&snap.lexical_search(&ns, "epsilon", &past_query, 10).unwrap());
    assert!(in_the_past.is_empty());
    let kappa_then = snap.lexical_search(&ns, "kappa", &past_query, 500).unwrap();
    let kappa_then: Vec<(RecordId, u64)> =
        kappa_then.iter().map(|h| (h.record.id, h.score.to_bits())).collect();
    let merged_rows = snap.table_sizes().unwrap()["merged texts"];
    assert_eq!(merged_rows, limit as u64 + 4, "fresh texts have no row in mnemon.texts");
    drop((snap, store));

    // Make it a format-5 file: a `texts` row beside every fresh row.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let fresh_rows = txn
                .open_table(redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.fresh"))
                .unwrap();
            let mut texts = txn
                .open_table(redb::TableDefinition::<(&str, u128, u32), &[u8]>::new("mnemon.texts"))
                .unwrap();
            let mut n = 0;
            for r in redb::ReadableTable::iter(&fresh_rows).unwrap() {
                let (k, v) = r.unwrap();
                let (ns, id, rev) = k.value();
                let mut row = vec![1u8, 0, 0, 0, 0];
                row.extend_from_slice(&v.value()[1..5]);
                texts.insert((ns, id, rev), row.as_slice()).unwrap();
                n += 1;
            }
            assert_eq!(n, fresh);
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 5u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    assert_eq!(file_version(&path), 5);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..options() }).unwrap();
    let snap = ro.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 5, read-only");
    let again = snap.lexical_search(&ns, "kappa", &past_query, 500).unwrap();
    assert_eq!(again.iter().map(|h| (h.record.id, h.score.to_bits())).collect::<Vec<_>>(), kappa_then);
    drop((snap, ro));

    // Upgraded: the same answers; then a fresh text with both rows forgotten, another
    // revised, and a merge.
    drop(Store::open(&path, options()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let store = Store::open(&path, options()).unwrap();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded");
    let gone = live[limit + 11].0;
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
    indexed.retain(|(x, _)| *x != gone);
    live.retain(|(x, _)| *x != gone);
    let i = limit + 12;
    let r = Revise { body: Some(learning("epsilon alpha zeta")), ..Revise::new(ns.clone(), live[i].0) };
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    indexed.push((live[i].0, "epsilon alpha zeta".into()));
    live[i].1 = "epsilon alpha zeta".into();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded, written");
    store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.fresh_texts(&ns).unwrap(), 0);
    check_naive(&snap, &ns, &indexed, &live, &queries, "upgraded, merged");
    assert_eq!(snap.table_sizes().unwrap()["merged texts"], indexed.len() as u64);
}

/// The postings of a segment block (version 2, format 12, docs/file-format.md), by term:
/// `[2][entries u32]`, per entry the ends of its term, its postings and its bounds, the
/// terms, the bounds (8 bytes per 64 postings: the greatest tf, the least length; checked
/// here), the 28-byte postings.
fn decode_block(b: &[u8]) -> Vec<(String, Vec<[u8; 28]>)> {
    assert_eq!(b[0], 2, "block version");
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as usize;
    let n = u32_at(1);
    let end = |e: usize, field: usize| u32_at(5 + 12 * e + 4 * field);
    let terms = 5 + 12 * n;
    let bounds = terms + if n == 0 { 0 } else { end(n - 1, 0) };
    let postings = bounds + 8 * if n == 0 { 0 } else { end(n - 1, 2) };
    let (mut t0, mut p0, mut b0) = (0, 0, 0);
    let mut out = Vec::new();
    for e in 0..n {
        let (t1, p1, b1) = (end(e, 0), end(e, 1), end(e, 2));
        let term = std::str::from_utf8(&b[terms + t0..terms + t1]).unwrap().to_string();
        let list: Vec<[u8; 28]> =
            (p0..p1).map(|p| b[postings + 28 * p..postings + 28 * (p + 1)].try_into().unwrap()).collect();
        assert_eq!(b1 - b0, list.len().div_ceil(64), "pieces of {term}");
        for (j, piece) in list.chunks(64).enumerate() {
            let field =
                |p: &[u8; 28], at: usize| u32::from_le_bytes(p[at..at + 4].try_into().unwrap()) as usize;
            let tf = piece.iter().map(|p| field(p, 20)).max().unwrap();
            let len = piece.iter().map(|p| field(p, 24)).min().unwrap();
            assert_eq!(
                (u32_at(bounds + 8 * (b0 + j)), u32_at(bounds + 8 * (b0 + j) + 4)),
                (tf, len),
                "{term}"
            );
        }
        out.push((term, list));
        (t0, p0, b0) = (t1, p1, b1);
    }
    assert_eq!(b.len(), postings + 28 * p0, "block length");
    out
}

/// Files of formats 8 (one row per segment posting in `mnemon.segments`) and 9 (one row per
/// term and segment in `mnemon.segment_terms`): opened read-only they are searched and
/// verified where they are; opened for writing their segments become format 10's blocks, with
/// the same answers, and later merges go on from there.
#[test]
fn format_8_and_9_files_read_alike_and_upgrade() {
    type Rows = (&'static str, u64, &'static str, u32);
    type Postings = (&'static str, u64, &'static str, u128, u32);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f10.redb");
    let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("f8").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text = |i: usize| format!("{} {} note {i}", words[i % 8], words[(i / 8) % 8]);
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let mut i = 0;
    let write = |store: &Store, i: &mut usize, n: usize, indexed: &mut Vec<_>, live: &mut Vec<_>| {
        insert_texts(store, &ns, (*i..*i + n).map(text), indexed, live);
        *i += n;
    };
    // Three segments (the first one large: "note" in more than 512 texts, a format-9 row in
    // several parts), and fresh texts.
    write(&store, &mut i, 3 * limit, &mut indexed, &mut live);
    write(&store, &mut i, limit, &mut indexed, &mut live);
    write(&store, &mut i, limit, &mut indexed, &mut live);
    write(&store, &mut i, 7, &mut indexed, &mut live);
    revise_text(&store, &ns, &mut indexed, &mut live, 5, "epsilon kappa".into());
    let queries = ["alpha", "kappa", "beta note", "epsilon", "note 1003", "note 700"];
    let sizes = store.snapshot().unwrap().table_sizes().unwrap();
    let in_segments = sizes["segment postings"];
    assert!(in_segments > 0 && sizes["fresh texts"] == 8 && sizes["segments"] == 3, "{sizes:?}");
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "format 10");
    drop(store);

    let blocks = redb::TableDefinition::<Rows, &[u8]>::new("mnemon.segment_blocks");
    let rows = redb::TableDefinition::<Rows, &[u8]>::new("mnemon.segment_terms");
    let postings = redb::TableDefinition::<Postings, &[u8]>::new("mnemon.segments");
    let version = |path: &std::path::Path| {
        let db = redb::Database::open(path).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
        let v = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
        let tables: Vec<String> =
            txn.list_tables().unwrap().map(|t| redb::TableHandle::name(&t).to_string()).collect();
        (u32::from_le_bytes(v.value().try_into().unwrap()), tables)
    };
    for format in [9u32, 8] {
        let (mut indexed, mut live, mut i) = (indexed.clone(), live.clone(), i);
        let old = dir.path().join(format!("f{format}.redb"));
        std::fs::copy(&path, &old).unwrap();
        {
            // Every segment's postings by term, from its blocks.
            let db = redb::Database::open(&old).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut by_term: std::collections::BTreeMap<(String, u64, String), Vec<[u8; 28]>> =
                    Default::default();
                for r in redb::ReadableTable::iter(&txn.open_table(blocks).unwrap()).unwrap() {
                    let (k, v) = r.unwrap();
                    let (n, seg, _, _) = k.value();
                    assert!(seg < 3, "level 0");
                    for (term, list) in decode_block(v.value()) {
                        by_term.entry((n.to_string(), seg, term)).or_default().extend(list);
                    }
                }
                let mut parts = 0;
                let mut stored = 0;
                let mut to_rows = txn.open_table(rows).unwrap();
                let mut to_postings = txn.open_table(postings).unwrap();
                for ((n, seg, term), list) in &by_term {
                    stored += list.len() as u64;
                    if format == 9 {
                        for (part, chunk) in list.chunks(512).enumerate() {
                            parts += u32::from(part > 0);
                            let mut row = vec![1u8];
                            row.extend(chunk.iter().flatten());
                            to_rows
                                .insert((n.as_str(), *seg, term.as_str(), part as u32), row.as_slice())
                                .unwrap();
                        }
                    } else {
                        for p in list {
                            let id = u128::from_le_bytes(p[..16].try_into().unwrap());
                            let rev = u32::from_le_bytes(p[16..20].try_into().unwrap());
                            let mut value = vec![1u8];
                            value.extend_from_slice(&p[20..28]);
                            to_postings
                                .insert((n.as_str(), *seg, term.as_str(), id, rev), value.as_slice())
                                .unwrap();
                        }
                    }
                }
                assert_eq!(stored, in_segments);
                assert!(format == 8 || parts > 0, "a term with more than one part");
                let mut meta =
                    txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
                meta.insert("format_version", format.to_le_bytes().as_slice()).unwrap();
            }
            txn.delete_table(blocks).unwrap();
            if format == 9 {
                txn.delete_table(postings).unwrap();
            } else {
                txn.delete_table(rows).unwrap();
            }
            txn.commit().unwrap();
        }
        assert_eq!(version(&old).0, format);
        let what = |s: &str| format!("format {format}, {s}");
        let ro = Store::open(&old, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let snap = ro.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("read-only"));
        assert_eq!(snap.table_sizes().unwrap()["segment postings"], in_segments);
        assert_eq!(snap.table_sizes().unwrap()["segments"], 3);
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        drop((snap, ro));

        // Upgraded: the index made again (as blocks), the old table gone, the answers the same.
        drop(Store::open(&old, StoreOptions::default()).unwrap());
        let (v, tables) = version(&old);
        assert_eq!(v, FORMAT_VERSION);
        assert!(
            tables.contains(&"mnemon.segment_blocks".to_string())
                && !tables.contains(&"mnemon.segment_terms".to_string())
                && !tables.contains(&"mnemon.segments".to_string()),
            "{tables:?}"
        );
        let store = Store::open(&old, StoreOptions::default()).unwrap();
        let snap = store.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("upgraded"));
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
        // The upgrade indexed every text again in one commit: one segment, of its size's level.
        assert_eq!(snap.table_sizes().unwrap()["segments"], 1);
        // Forget a text in the upgraded segment; merge more texts beside it.
        let gone = live[limit + 3].0;
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
        indexed.retain(|(x, _)| *x != gone);
        live.retain(|(x, _)| *x != gone);
        check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, &what("upgraded, forgotten"));
        for _ in 0..SEGMENT_FANOUT - 3 {
            write(&store, &mut i, limit, &mut indexed, &mut live);
        }
        let snap = store.snapshot().unwrap();
        check_naive(&snap, &ns, &indexed, &live, &queries, &what("upgraded, merged up"));
        assert_eq!(snap.table_sizes().unwrap()["segments"] as usize, 1 + SEGMENT_FANOUT - 3);
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    }
}

/// A file written by the previous release (format 10, unstemmed terms; made by the `mnemon`
/// of commit 35373e9: three records in namespace `fixture`, one revised, then `compact`):
/// read-only it answers as that release did; opened for writing it is re-indexed with
/// stemmed terms, and its old and new texts answer as of their times.
#[test]
fn a_format_10_file_is_reindexed_with_stemmed_terms() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f10.redb");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/format10.redb"), &path).unwrap();
    let ns = Namespace::new("fixture").unwrap();
    let texts = |snap: &Snapshot, q: &str| -> Vec<String> {
        snap.lexical_search(&ns, q, &ListQuery::new(), 10)
            .unwrap()
            .iter()
            .map(|h| h.record.body.text())
            .collect()
    };
    assert_eq!(file_version(&path), 10);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let snap = ro.snapshot().unwrap();
    assert_eq!(texts(&snap, "painting"), ["She was painting sunrises at the lake"]);
    assert!(texts(&snap, "paint").is_empty(), "format 10 did not stem");
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    drop((snap, ro));

    drop(Store::open(&path, StoreOptions::default()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(texts(&snap, "paint"), ["She was painting sunrises at the lake"]);
    assert_eq!(texts(&snap, "sunrise painted"), ["She was painting sunrises at the lake"]);
    assert_eq!(texts(&snap, "adopting"), ["Adopted redb for storage\nembedded and fast"]);
    // The revised record: its new text now, its old text only as of before the revision.
    assert_eq!(texts(&snap, "flush"), ["The caches are flushed hourly now"]);
    assert!(texts(&snap, "often").is_empty());
    let revised = snap.lexical_search(&ns, "flush", &ListQuery::new(), 1).unwrap()[0].record.clone();
    let before = ListQuery::new()
        .as_of(AsOf::valid_at(revised.valid_from).known_at(revised.recorded_at.plus_micros(-1)));
    let then = snap.lexical_search(&ns, "often", &before, 10).unwrap();
    assert_eq!(
        then.iter().map(|h| h.record.body.text()).collect::<Vec<_>>(),
        ["The caches were flushing too often"]
    );
    assert!(snap.verify().unwrap().is_empty());
}

/// The first byte (the block version) of every segment block of the file at `path`.
fn block_versions(path: &std::path::Path) -> Vec<u8> {
    let db = redb::Database::open(path).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let blocks = txn
        .open_table(redb::TableDefinition::<(&str, u64, &str, u32), &[u8]>::new("mnemon.segment_blocks"))
        .unwrap();
    redb::ReadableTable::iter(&blocks).unwrap().map(|r| r.unwrap().1.value()[0]).collect()
}

/// A file written by the previous release (format 11, blocks without bounds; made by the
/// `mnemon` of commit 5e3ff78: three records in namespace `fixture`, 300 more imported in one
/// commit, which made a segment, one record revised, then `compact`): read-only it is read
/// as it is; opened for writing its blocks are written again with their bounds, and every
/// search answers as before.
#[test]
fn a_format_11_file_gets_bounded_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f11.redb");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/format11.redb"), &path).unwrap();
    let ns = Namespace::new("fixture").unwrap();
    let queries = ["lake", "stone river", "painting", "note 17", "flush", "often", "tokens stone stone"];
    let answers = |snap: &Snapshot| -> Vec<Vec<(String, u64)>> {
        queries
            .iter()
            .map(|q| {
                let hits = snap.lexical_search(&ns, q, &ListQuery::new(), 20).unwrap();
                hits.iter().map(|h| (h.record.body.text(), h.score.to_bits())).collect()
            })
            .collect()
    };
    assert_eq!(file_version(&path), 11);
    let versions = block_versions(&path);
    assert!(!versions.is_empty() && versions.iter().all(|&v| v == 1), "{versions:?}");
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let snap = ro.snapshot().unwrap();
    let before = answers(&snap);
    assert_eq!(before[0].len(), 20);
    assert_eq!(before[2][0].0, "She was painting sunrises at the lake");
    assert_eq!(before[4][0].0, "The caches are flushed hourly now");
    assert!(before[5].is_empty());
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    drop((snap, ro));

    drop(Store::open(&path, StoreOptions::default()).unwrap());
    assert_eq!(file_version(&path), FORMAT_VERSION);
    let versions = block_versions(&path);
    assert!(!versions.is_empty() && versions.iter().all(|&v| v == 2), "{versions:?}");
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(answers(&snap), before);
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
}

/// The pruned search (the best `k`) answers exactly what scoring every record answers, cut to
/// `k`, whatever hides records from it: filters that keep few, a time when most did not
/// exist, revised texts that score less than the old ones (a record's best text is not the
/// one it shows). Hundreds of records over a small vocabulary, so that every term is common.
#[test]
fn the_best_k_are_the_first_k_of_all() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-01").unwrap()));
    let store = Store::open(
        dir.path().join("k.redb"),
        StoreOptions { create: true, clock: clock.clone(), ..Default::default() },
    )
    .unwrap();
    let ns = Namespace::new("k").unwrap();
    let words = [
        "cache", "retry", "queue", "deploy", "schema", "index", "token", "batch", "shard", "lease", "merge",
        "crash", "timer", "route", "quota", "audit",
    ];
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let text = |next: &mut dyn FnMut() -> usize| {
        let n = 3 + next() % 10;
        (0..n).map(|_| words[(next() % 16) * (next() % 16) / 16]).collect::<Vec<_>>().join(" ")
    };
    let mut ids = Vec::new();
    let mut middle = None;
    for round in 0..6 {
        let mut ops = Vec::new();
        for i in 0..150 {
            let mut n = NewRecord::new(ns.clone(), learning(&text(&mut next)));
            if i % 9 == 0 {
                n.envelope.tags.push("rare".into());
            }
            ids.push(n.id);
            ops.push(WriteOp::Insert(n));
        }
        store.write(ops).unwrap();
        clock.advance(1_000_000);
        if round == 2 {
            middle = Some(clock.now());
        }
    }
    // Revise a fifth of them to short texts of one common word.
    for (i, id) in ids.iter().enumerate().filter(|(i, _)| i % 5 == 0) {
        let body = learning(words[i % 3]);
        store
            .write(vec![WriteOp::Revise(Revise { body: Some(body), ..Revise::new(ns.clone(), *id) })])
            .unwrap();
    }
    let snap = store.snapshot().unwrap();
    let filters = [
        ListQuery::new(),
        ListQuery::new().tag("rare"),
        ListQuery::new().as_of(AsOf::valid_at(middle.unwrap())),
        ListQuery::new().tag("rare").as_of(AsOf::valid_at(middle.unwrap())),
    ];
    for query in ["cache retry", "audit quota route", "cache", "deploy timer crash lease", "merge index"] {
        for (f, filter) in filters.iter().enumerate() {
            let all = snap.lexical_search(&ns, query, filter, 100_000).unwrap();
            assert!(all.len() > 3, "{query}, filter {f}: {}", all.len());
            for k in [1, 3, 10, 40] {
                let got = snap.lexical_search(&ns, query, filter, k).unwrap();
                let want = &all[..k.min(all.len())];
                let pairs = |h: &[LexicalHit]| h.iter().map(|h| (h.record.id, h.score)).collect::<Vec<_>>();
                assert_eq!(pairs(&got), pairs(want), "{query}, filter {f}, k {k}");
            }
        }
    }
}
