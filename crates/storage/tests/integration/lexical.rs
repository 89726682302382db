//! The lexical index: BM25 ranking, identifiers, time travel, filters, forgetting.

use std::sync::Arc;

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
/// number of records with a text holding it, and a record scores by the text serving its
/// latest revision.
fn naive_bm25(
    texts: &[(RecordId, String)],
    current: &[(RecordId, String)],
    query: &str,
) -> Vec<(RecordId, f64)> {
    let (k1, b) = (1.2, 0.75);
    let terms_of = |t: &str| -> Vec<String> {
        tokens::tokenize(t).into_iter().filter(|w| w.len() <= 64 && !tokens::is_stopword(w)).collect()
    };
    let docs = texts.len() as f64;
    let avgdl = texts.iter().map(|(_, t)| tokens::tokenize(t).len() as f64).sum::<f64>() / docs;
    let all_terms: Vec<(RecordId, Vec<String>)> = texts.iter().map(|(i, t)| (*i, terms_of(t))).collect();
    let mut q: Vec<String> = terms_of(query);
    q.sort();
    q.dedup();
    // Each query term's document frequency, once.
    let df_of: Vec<f64> = q
        .iter()
        .map(|term| {
            let holders: std::collections::BTreeSet<RecordId> =
                all_terms.iter().filter(|(_, t)| t.contains(term)).map(|(i, _)| *i).collect();
            holders.len() as f64
        })
        .collect();
    let mut out = Vec::new();
    for (id, text) in current {
        let words = terms_of(text);
        let len = tokens::tokenize(text).len() as f64;
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
            let want = naive_bm25(indexed, live, q);
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

/// Merges fill segments until one finds [`SEGMENT_LIMIT`] of them less one and moves them all,
/// with its own texts, into the posting lists: the ranking stays that of naive BM25 throughout,
/// and revisions and erasures reach texts in segments and in the posting lists alike.
#[test]
fn segments_move_into_the_posting_lists_without_changing_the_ranking() {
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
    let segments = |store: &Store| store.snapshot().unwrap().table_sizes().unwrap()["segment postings"];
    let mut i = 0;
    for commit in 0..SEGMENT_LIMIT + 1 {
        // A commit of `FRESH_LIMIT` texts: each is a merge.
        insert_texts(&store, &ns, (i..i + limit).map(text), &mut indexed, &mut live);
        i += limit;
        let in_segments = segments(&store);
        if commit + 1 < SEGMENT_LIMIT {
            assert!(in_segments > 0, "merge {commit}: nothing in segments");
        } else if commit + 1 == SEGMENT_LIMIT {
            assert_eq!(in_segments, 0, "merge {commit} moves the segments");
        }
        if [0, 1, SEGMENT_LIMIT - 2, SEGMENT_LIMIT - 1, SEGMENT_LIMIT].contains(&commit) {
            check_naive(
                &store.snapshot().unwrap(),
                &ns,
                &indexed,
                &live,
                &queries,
                &format!("merge {commit}"),
            );
        }
    }
    // Now the first 16 merges' texts are in the posting lists, the 17th's in a segment.
    assert!(segments(&store) > 0);
    for (k, at) in [3usize, limit * (SEGMENT_LIMIT as usize) + 5].into_iter().enumerate() {
        revise_text(&store, &ns, &mut indexed, &mut live, at, format!("revised text {k}"));
    }
    for at in [7usize, limit * (SEGMENT_LIMIT as usize) + 9] {
        let (id, _) = live[at].clone();
        store.write(vec![WriteOp::Forget { namespace: ns.clone(), id }]).unwrap();
        indexed.retain(|(x, _)| *x != id);
        live.retain(|(x, _)| *x != id);
    }
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "after revisions and forgets");
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
    use redb::ReadableTable as _;
    let segments = redb::TableDefinition::<Seg, &[u8]>::new("mnemon.segment_terms");
    let postings = redb::TableDefinition::<Post, &[u8]>::new("mnemon.postings");
    let fresh = redb::TableDefinition::<Text, &[u8]>::new("mnemon.fresh");
    // A segment row holds a term's postings: take the last posting out of the longest row.
    let problems = damage(&|txn| {
        let mut t = txn.open_table(segments).unwrap();
        let (n, seg, term, part, row) = t
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                let (n, seg, term, part) = k.value();
                (n.to_string(), seg, term.to_string(), part, v.value().to_vec())
            })
            .max_by_key(|r| r.4.len())
            .unwrap();
        assert!(row.len() > 1 + 2 * 28, "a row of several postings");
        t.insert((n.as_str(), seg, term.as_str(), part), &row[..row.len() - 28]).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("no posting of")), "{problems:?}");
    let problems = damage(&|txn| {
        txn.open_table(segments).unwrap().insert(("v", 0u64, "ghost", 0u32), [1u8, 2, 3].as_slice()).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("malformed row of segment 0")), "{problems:?}");
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

/// Every query of `queries` against the naive BM25 of `indexed` and `live`, now.
fn check_naive(
    snap: &Snapshot,
    ns: &Namespace,
    indexed: &[(RecordId, String)],
    live: &[(RecordId, String)],
    queries: &[&str],
    when: &str,
) {
    for q in queries {
        let want = naive_bm25(indexed, live, q);
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
        let new_text = format!("revised kappa {k}");
        let r = Revise { body: Some(learning(&new_text)), ..Revise::new(ns.clone(), live[i].0) };
        store.write(vec![WriteOp::Revise(r)]).unwrap();
        indexed.push((live[i].0, new_text.clone()));
        live[i].1 = new_text;
    }
    clock.advance(1_000);
    let queries = ["alpha", "kappa", "beta note", "revised", "note 1003"];
    let snap = store.snapshot().unwrap();
    let fresh = snap.fresh_texts(&ns).unwrap();
    assert_eq!(fresh, 22);
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 6");
    let past_query = ListQuery::new().as_of(past);
    let in_the_past = ids(&snap.lexical_search(&ns, "revised", &past_query, 10).unwrap());
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
    let version = |path: &std::path::Path| {
        let db = redb::Database::open(path).unwrap();
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
        let v = redb::ReadableTable::get(&meta, "format_version").unwrap().unwrap();
        u32::from_le_bytes(v.value().try_into().unwrap())
    };
    assert_eq!(version(&path), 5);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..options() }).unwrap();
    let snap = ro.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 5, read-only");
    let again = snap.lexical_search(&ns, "kappa", &past_query, 500).unwrap();
    assert_eq!(again.iter().map(|h| (h.record.id, h.score.to_bits())).collect::<Vec<_>>(), kappa_then);
    drop((snap, ro));

    // Upgraded: the same answers; then a fresh text with both rows forgotten, another
    // revised, and a merge.
    drop(Store::open(&path, options()).unwrap());
    assert_eq!(version(&path), FORMAT_VERSION);
    let store = Store::open(&path, options()).unwrap();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded");
    let gone = live[limit + 11].0;
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
    indexed.retain(|(x, _)| *x != gone);
    live.retain(|(x, _)| *x != gone);
    let i = limit + 12;
    let r = Revise { body: Some(learning("revised alpha again")), ..Revise::new(ns.clone(), live[i].0) };
    store.write(vec![WriteOp::Revise(r)]).unwrap();
    indexed.push((live[i].0, "revised alpha again".into()));
    live[i].1 = "revised alpha again".into();
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded, written");
    store.write(vec![WriteOp::MergeTexts { namespace: ns.clone() }]).unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.fresh_texts(&ns).unwrap(), 0);
    check_naive(&snap, &ns, &indexed, &live, &queries, "upgraded, merged");
    assert_eq!(snap.table_sizes().unwrap()["merged texts"], indexed.len() as u64);
}

/// A format-8 file keeps one row per segment posting in `mnemon.segments`: opened read-only it
/// is searched and verified where it is; opened for writing it moves them to format 9's rows
/// of `mnemon.segment_terms`, with the same answers, and later merges and moves go on from there.
#[test]
fn a_format_8_file_reads_alike_and_upgrades() {
    type Rows = (&'static str, u64, &'static str, u32);
    type Postings = (&'static str, u64, &'static str, u128, u32);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f8.redb");
    let store = Store::open(&path, StoreOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("f8").unwrap();
    let words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"];
    let text = |i: usize| format!("{} {} note {i}", words[i % 8], words[(i / 8) % 8]);
    let mut indexed: Vec<(RecordId, String)> = Vec::new();
    let mut live: Vec<(RecordId, String)> = Vec::new();
    let limit = usize::try_from(FRESH_LIMIT).unwrap();
    let mut i = 0;
    let mut write = |store: &Store, n: usize, indexed: &mut Vec<_>, live: &mut Vec<_>| {
        insert_texts(store, &ns, (i..i + n).map(text), indexed, live);
        i += n;
    };
    // Three segments (the first one large, with rows in several parts), and fresh texts.
    write(&store, 3 * limit, &mut indexed, &mut live);
    write(&store, limit, &mut indexed, &mut live);
    write(&store, limit, &mut indexed, &mut live);
    write(&store, 7, &mut indexed, &mut live);
    revise_text(&store, &ns, &mut indexed, &mut live, 5, "revised kappa".into());
    let queries = ["alpha", "kappa", "beta note", "revised", "note 1003", "note 700"];
    let sizes = store.snapshot().unwrap().table_sizes().unwrap();
    let in_segments = sizes["segment postings"];
    assert!(in_segments > 0 && sizes["fresh texts"] == 8, "{sizes:?}");
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "format 9");
    drop(store);

    // Make it a format-8 file: every posting of a segment in a row of its own.
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
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let from = txn.open_table(rows).unwrap();
            let mut to = txn.open_table(postings).unwrap();
            let mut parts = 0;
            for r in redb::ReadableTable::iter(&from).unwrap() {
                let (k, v) = r.unwrap();
                let (n, seg, term, part) = k.value();
                parts += u32::from(part > 0);
                for p in v.value()[1..].chunks(28) {
                    let id = u128::from_le_bytes(p[..16].try_into().unwrap());
                    let rev = u32::from_le_bytes(p[16..20].try_into().unwrap());
                    let mut value = vec![1u8];
                    value.extend_from_slice(&p[20..28]);
                    to.insert((n, seg, term, id, rev), value.as_slice()).unwrap();
                }
            }
            assert!(parts > 0, "a term with more than one part");
            assert_eq!(redb::ReadableTableMetadata::len(&to).unwrap(), in_segments);
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            meta.insert("format_version", 8u32.to_le_bytes().as_slice()).unwrap();
        }
        txn.delete_table(rows).unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(version(&path).0, 8);
    let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
    let snap = ro.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "format 8, read-only");
    assert_eq!(snap.table_sizes().unwrap()["segment postings"], in_segments);
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    drop((snap, ro));

    // Upgraded: the rows are back, the old table gone, the answers the same.
    drop(Store::open(&path, StoreOptions::default()).unwrap());
    let (v, tables) = version(&path);
    assert_eq!(v, FORMAT_VERSION);
    assert!(
        tables.contains(&"mnemon.segment_terms".to_string())
            && !tables.contains(&"mnemon.segments".to_string())
    );
    let store = Store::open(&path, StoreOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "upgraded");
    assert_eq!(snap.table_sizes().unwrap()["segment postings"], in_segments);
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
    // Forget a text in an upgraded segment; merge until the segments move.
    let gone = live[limit + 3].0;
    store.write(vec![WriteOp::Forget { namespace: ns.clone(), id: gone }]).unwrap();
    indexed.retain(|(x, _)| *x != gone);
    live.retain(|(x, _)| *x != gone);
    check_naive(&store.snapshot().unwrap(), &ns, &indexed, &live, &queries, "upgraded, forgotten");
    for _ in 0..SEGMENT_LIMIT {
        write(&store, limit, &mut indexed, &mut live);
    }
    let snap = store.snapshot().unwrap();
    check_naive(&snap, &ns, &indexed, &live, &queries, "upgraded, moved");
    assert!(snap.table_sizes().unwrap()["segment postings"] < in_segments);
    assert_eq!(snap.verify().unwrap(), Vec::<String>::new());
}
