//! The lexical index: BM25 ranking, identifiers, time travel, filters, forgetting.

use std::sync::Arc;

use mnemon_storage::analyzer::Analyzer;
use mnemon_storage::body::{Decision, Learning};
use mnemon_storage::*;

mod sealed_rows;
mod upgrades;
pub(crate) use upgrades::*;

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
    // A segment's text numbers (format 15): two keys swapped, or the list cut short.
    let numbers = redb::TableDefinition::<(&str, u64, u32), &[u8]>::new("mnemon.segment_texts");
    let problems = damage(&|txn| {
        let mut t = txn.open_table(numbers).unwrap();
        let (n, seg, part, mut v) = {
            let (k, v) = t.pop_first().unwrap().unwrap();
            let (n, seg, part) = k.value();
            (n.to_string(), seg, part, v.value().to_vec())
        };
        let (first, second) = v[1..41].split_at_mut(20);
        first.swap_with_slice(second);
        t.insert((n.as_str(), seg, part), v.as_slice()).unwrap();
    });
    // The part's checksum (format 17) finds the change.
    assert!(
        problems.iter().any(|p| p.contains("part 0 of the text numbers of segment 0/0 is malformed")),
        "{problems:?}"
    );
    // Sealed again (as a bug writing them would), the order is checked.
    let reseal = |v: &mut Vec<u8>| {
        v.truncate(v.len() - 4);
        let crc = crc32fast::hash(v);
        v.extend_from_slice(&crc.to_le_bytes());
    };
    let problems = damage(&|txn| {
        let mut t = txn.open_table(numbers).unwrap();
        let (n, seg, part, mut v) = {
            let (k, v) = t.pop_first().unwrap().unwrap();
            let (n, seg, part) = k.value();
            (n.to_string(), seg, part, v.value().to_vec())
        };
        let (first, second) = v[1..41].split_at_mut(20);
        first.swap_with_slice(second);
        reseal(&mut v);
        t.insert((n.as_str(), seg, part), v.as_slice()).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("text numbers are out of order")), "{problems:?}");
    let problems = damage(&|txn| {
        let mut t = txn.open_table(numbers).unwrap();
        let (n, seg, part, v) = {
            let (k, v) = t.pop_first().unwrap().unwrap();
            let (n, seg, part) = k.value();
            (n.to_string(), seg, part, v.value().to_vec())
        };
        let mut cut = v[..v.len() - 200].to_vec();
        reseal(&mut cut);
        t.insert((n.as_str(), seg, part), cut.as_slice()).unwrap();
    });
    assert!(problems.iter().any(|p| p.contains("which it does not hold")), "{problems:?}");
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
