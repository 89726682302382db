//! Model-based property test: random sequences of operations (with reopen, and in half the
//! cases two handles writing one file in the multi-writer mode) against a naive in-memory
//! reference: listings, gets and histories at commit boundaries and one microsecond either
//! side on both time axes, lexical search (the records matching each word, as of past
//! times), and the vector serving each revision. `PROPTEST_CASES` sets the number of cases
//! (default 256, of up to 200 steps).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mnemon_storage::body::{Decision, Entity, Learning};
use mnemon_storage::*;
use proptest::prelude::*;

const UNIT: i64 = 1_000; // one "tick" of the generated times, in microseconds
const T0: i64 = 1_700_000_000_000_000;

#[derive(Clone, Debug)]
enum TOp {
    Insert {
        ns: u8,
        kind: u8,
        name: u8,
        from: Option<i8>,
        until: Option<i8>,
        expiry: Option<i8>,
        tag: u8,
    },
    Revise {
        pick: u8,
        title: u8,
        from: Option<i8>,
        until: Option<Option<i8>>,
    },
    Retire {
        pick: u8,
        at: Option<i8>,
    },
    Expire {
        pick: u8,
        at: Option<i8>,
    },
    Supersede {
        pick: u8,
        at: Option<i8>,
        name: u8,
    },
    Forget {
        pick: u8,
    },
    /// `guard`: none, or the revision named (the latest the model knows before the job, or
    /// one off it): a stale one fails the job.
    Vector {
        pick: u8,
        dir: u8,
        guard: Option<i8>,
    },
}

#[derive(Clone, Debug)]
enum Step {
    /// A job, through the second handle if `true` (and there is one).
    Job(Vec<TOp>, bool),
    Advance(u8),
    Reopen,
}

fn top() -> impl Strategy<Value = TOp> {
    let off = || proptest::option::of(-30i8..10);
    prop_oneof![
        4 => (0u8..2, 0u8..3, 0u8..6, off(), off(), proptest::option::weighted(0.2, -5i8..20), 0u8..3)
            .prop_map(|(ns, kind, name, from, until, expiry, tag)| TOp::Insert { ns, kind, name, from, until, expiry, tag }),
        2 => (any::<u8>(), 0u8..4, proptest::option::weighted(0.3, -30i8..10), proptest::option::weighted(0.3, proptest::option::of(-20i8..20)))
            .prop_map(|(pick, title, from, until)| TOp::Revise { pick, title, from, until }),
        2 => (any::<u8>(), off()).prop_map(|(pick, at)| TOp::Retire { pick, at }),
        1 => (any::<u8>(), off()).prop_map(|(pick, at)| TOp::Expire { pick, at }),
        2 => (any::<u8>(), off(), 0u8..6).prop_map(|(pick, at, name)| TOp::Supersede { pick, at, name }),
        1 => any::<u8>().prop_map(|pick| TOp::Forget { pick }),
        1 => (any::<u8>(), 0u8..4, proptest::option::of(prop_oneof![3 => Just(0i8), 1 => Just(-1i8), 1 => Just(1i8)]))
            .prop_map(|(pick, dir, guard)| TOp::Vector { pick, dir, guard }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (proptest::collection::vec(top(), 1..4), any::<bool>()).prop_map(|(ops, other)| Step::Job(ops, other)),
        3 => (1u8..40).prop_map(Step::Advance),
        1 => Just(Step::Reopen),
    ]
}

#[derive(Clone, Debug, PartialEq)]
struct MRev {
    rev: u32,
    recorded_at: i64,
    valid_from: i64,
    valid_until: Option<i64>,
    expires_at: Option<i64>,
    supersedes: Option<RecordId>,
    superseded_by: Option<RecordId>,
    title: String,
}

impl MRev {
    fn visible(&self, v: i64) -> bool {
        v >= self.valid_from
            && self.valid_until.is_none_or(|u| v < u)
            && self.expires_at.is_none_or(|e| v < e)
    }
}

/// A vector attached to a record: the revision it starts serving, and the vector.
type Attached = (u32, Vec<f32>);

#[derive(Default)]
struct Model {
    recs: BTreeMap<(String, RecordId), Vec<MRev>>,
    /// Each record's vectors: the revision each starts serving, and the vector (normalised).
    vectors: BTreeMap<(String, RecordId), Vec<Attached>>,
    kinds: BTreeMap<RecordId, Kind>,
    ids: Vec<(String, RecordId)>,
    commits: Vec<i64>,
}

impl Model {
    fn at(&self, ns: &str, id: RecordId, k: i64) -> Option<&MRev> {
        self.recs.get(&(ns.to_string(), id))?.iter().rev().find(|r| r.recorded_at <= k)
    }

    fn latest(&self, ns: &str, id: RecordId) -> Option<&MRev> {
        self.recs.get(&(ns.to_string(), id))?.last()
    }

    fn list(&self, ns: &str, v: i64, k: i64) -> BTreeSet<(RecordId, u32)> {
        self.recs
            .keys()
            .filter(|(n, _)| n == ns)
            .filter_map(|(n, id)| self.at(n, *id, k).filter(|r| r.visible(v)).map(|r| (*id, r.rev)))
            .collect()
    }

    /// The records whose text holds `word`, visible at valid time `v` as known at `k`.
    fn matching(&self, ns: &str, word: &str, v: i64, k: i64) -> BTreeSet<(RecordId, u32)> {
        self.recs
            .keys()
            .filter(|(n, _)| n == ns)
            .filter_map(|(n, id)| self.at(n, *id, k).filter(|r| r.visible(v)).map(|r| (*id, r)))
            .filter(|(_, r)| r.title.split(|c: char| !c.is_alphanumeric()).any(|w| w == word))
            .map(|(id, r)| (id, r.rev))
            .collect()
    }

    fn boundaries(&self) -> Vec<i64> {
        let mut out: BTreeSet<i64> = BTreeSet::new();
        for revs in self.recs.values() {
            for r in revs {
                out.insert(r.valid_from);
                out.extend(r.valid_until);
                out.extend(r.expires_at);
            }
        }
        out.into_iter().collect()
    }
}

fn ns_name(n: u8) -> String {
    format!("ns{n}")
}

/// The words of the texts: a record's name, and a revision's title word.
const NAMES: [&str; 6] = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
const TITLES: [&str; 10] =
    ["red", "green", "blue", "amber", "white", "black", "grey", "pink", "gold", "teal"];

fn body_for(kind: u8, name: u8, title: u8) -> Body {
    let (name, title) = (NAMES[usize::from(name) % 6], TITLES[usize::from(title) % 10]);
    match kind {
        0 => Decision { title: format!("decision {name} {title}"), ..Default::default() }.into(),
        1 => Entity { name: format!("entity {name}"), description: title.to_string(), ..Default::default() }
            .into(),
        _ => Learning { text: format!("learning {name} {title}"), ..Default::default() }.into(),
    }
}

fn vector_for(dir: u8) -> Vec<f32> {
    let v = [1.0, f32::from(dir), 2.0 - f32::from(dir)];
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn title_of(b: &Body) -> String {
    b.text()
}

struct Harness {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    /// A second handle on the same file (multi-writer mode), when `shared`.
    other: Option<Store>,
    shared: bool,
    model: Model,
}

impl Harness {
    fn new(shared: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(Timestamp::from_micros(T0)));
        let mut h = Harness { dir, clock, store: None, other: None, shared, model: Model::default() };
        h.open(true);
        h
    }

    fn open(&mut self, create: bool) {
        self.store = None;
        self.other = None;
        let opts = || StoreOptions {
            create,
            clock: self.clock.clone(),
            min_checkpoint_gap: 2,
            shared: self.shared,
            ..Default::default()
        };
        self.store = Some(Store::open(self.dir.path().join("db.redb"), opts()).unwrap());
        if self.shared {
            self.other = Some(Store::open(self.dir.path().join("db.redb"), opts()).unwrap());
        }
    }

    fn store(&self) -> &Store {
        self.store.as_ref().unwrap()
    }

    fn now(&self) -> i64 {
        self.clock.now().as_micros()
    }

    /// A time `off` ticks from now, on a grid of whole ticks: operations a few steps apart
    /// then often name the same instant (an edge moved away and back, edges that coincide).
    fn t(&self, off: i8) -> Timestamp {
        let now = self.now();
        Timestamp::from_micros(now - now.rem_euclid(UNIT) + i64::from(off) * UNIT)
    }

    fn pick(&self, p: u8) -> Option<(String, RecordId)> {
        if self.model.ids.is_empty() {
            return None;
        }
        self.model.ids.get(usize::from(p) % self.model.ids.len()).cloned()
    }

    fn to_write_op(&self, op: &TOp) -> Option<WriteOp> {
        Some(match op {
            TOp::Insert { ns, kind, name, from, until, expiry, tag } => {
                let mut n = NewRecord::new(Namespace::new(ns_name(*ns)).unwrap(), body_for(*kind, *name, 0));
                n.valid_from = from.map(|o| self.t(o));
                n.valid_until = until.map(|o| self.t(o));
                n.expiry = match expiry {
                    Some(o) => Expiry::At(self.t(*o)),
                    None => Expiry::Never,
                };
                n.envelope.tags = mnemon_storage::text_list![format!("t{tag}")];
                WriteOp::Insert(n)
            }
            TOp::Revise { pick, title, from, until } => {
                let (ns, id) = self.pick(*pick)?;
                let kind = *self.model.kinds.get(&id)?;
                let kcode = match kind {
                    Kind::Decision => 0,
                    Kind::Entity => 1,
                    _ => 2,
                };
                let mut r = Revise::new(Namespace::new(ns).unwrap(), id);
                r.body = Some(body_for(kcode, (id.as_u128() % 6) as u8, *title));
                r.valid_from = from.map(|o| self.t(o));
                r.valid_until = until.map(|u| u.map(|o| self.t(o)));
                WriteOp::Revise(r)
            }
            TOp::Retire { pick, at } => {
                let (ns, id) = self.pick(*pick)?;
                WriteOp::Retire { namespace: Namespace::new(ns).unwrap(), id, at: at.map(|o| self.t(o)) }
            }
            TOp::Expire { pick, at } => {
                let (ns, id) = self.pick(*pick)?;
                WriteOp::Expire { namespace: Namespace::new(ns).unwrap(), id, at: at.map(|o| self.t(o)) }
            }
            TOp::Supersede { pick, at, name } => {
                let (ns, id) = self.pick(*pick)?;
                let kind = *self.model.kinds.get(&id)?;
                let kcode = match kind {
                    Kind::Decision => 0,
                    Kind::Entity => 1,
                    _ => 2,
                };
                let mut n = NewRecord::new(Namespace::new(ns).unwrap(), body_for(kcode, *name, 9));
                n.valid_from = at.map(|o| self.t(o));
                n.expiry = Expiry::Never;
                WriteOp::Supersede { old: id, new: n }
            }
            TOp::Forget { pick } => {
                let (ns, id) = self.pick(*pick)?;
                WriteOp::Forget { namespace: Namespace::new(ns).unwrap(), id }
            }
            TOp::Vector { pick, dir, guard } => {
                let (ns, id) = self.pick(*pick)?;
                let rev = guard.map(|g| {
                    let latest = self.model.latest(&ns, id).map_or(0, |r| r.rev);
                    latest.saturating_add_signed(i32::from(g))
                });
                WriteOp::PutVector {
                    namespace: Namespace::new(ns).unwrap(),
                    id,
                    rev,
                    space: "m".into(),
                    vector: vector_for(*dir),
                }
            }
        })
    }

    /// Apply a successful job to the model.
    fn model_apply(&mut self, ops: &[WriteOp], receipt: &Receipt) {
        let tx = receipt.tx.as_micros();
        self.model.commits.push(tx);
        for (op, outcome) in ops.iter().zip(&receipt.outcomes) {
            match (op, outcome) {
                (WriteOp::Insert(n), Outcome::Written { id, rev: 0 }) => {
                    let r = MRev {
                        rev: 0,
                        recorded_at: tx,
                        valid_from: n.valid_from.map_or(tx, |t| t.as_micros()),
                        valid_until: n.valid_until.map(|t| t.as_micros()),
                        expires_at: match n.expiry {
                            Expiry::At(t) => Some(t.as_micros()),
                            _ => None,
                        },
                        supersedes: None,
                        superseded_by: None,
                        title: title_of(&n.body),
                    };
                    let key = (n.namespace.to_string(), *id);
                    self.model.kinds.insert(*id, n.body.kind());
                    self.model.recs.insert(key.clone(), vec![r]);
                    self.model.ids.push(key);
                }
                (WriteOp::Revise(r), Outcome::Written { id, rev }) => {
                    let key = (r.namespace.to_string(), *id);
                    let mut next = self.model.latest(&key.0, *id).unwrap().clone();
                    next.rev = *rev;
                    next.recorded_at = tx;
                    if let Some(b) = &r.body {
                        next.title = title_of(b);
                    }
                    if let Some(f) = r.valid_from {
                        next.valid_from = f.as_micros();
                    }
                    if let Some(u) = r.valid_until {
                        next.valid_until = u.map(|t| t.as_micros());
                    }
                    self.model.recs.get_mut(&key).unwrap().push(next);
                }
                (WriteOp::Retire { namespace, at, .. }, Outcome::Written { id, rev }) => {
                    let key = (namespace.to_string(), *id);
                    let mut next = self.model.latest(&key.0, *id).unwrap().clone();
                    next.rev = *rev;
                    next.recorded_at = tx;
                    next.valid_until = Some(at.map_or(tx, |t| t.as_micros()));
                    self.model.recs.get_mut(&key).unwrap().push(next);
                }
                (WriteOp::Expire { namespace, at, .. }, Outcome::Written { id, rev }) => {
                    let key = (namespace.to_string(), *id);
                    let mut next = self.model.latest(&key.0, *id).unwrap().clone();
                    next.rev = *rev;
                    next.recorded_at = tx;
                    next.expires_at = Some(at.map_or(tx, |t| t.as_micros()));
                    self.model.recs.get_mut(&key).unwrap().push(next);
                }
                (WriteOp::Supersede { new, .. }, Outcome::Superseded { old, new: new_id }) => {
                    let ns = new.namespace.to_string();
                    let at = new.valid_from.map_or(tx, |t| t.as_micros());
                    let mut prev = self.model.latest(&ns, *old).unwrap().clone();
                    prev.rev += 1;
                    prev.recorded_at = tx;
                    prev.valid_until = Some(at);
                    prev.superseded_by = Some(*new_id);
                    self.model.recs.get_mut(&(ns.clone(), *old)).unwrap().push(prev);
                    let r = MRev {
                        rev: 0,
                        recorded_at: tx,
                        valid_from: at,
                        valid_until: None,
                        expires_at: None,
                        supersedes: Some(*old),
                        superseded_by: None,
                        title: title_of(&new.body),
                    };
                    self.model.kinds.insert(*new_id, new.body.kind());
                    self.model.recs.insert((ns.clone(), *new_id), vec![r]);
                    self.model.ids.push((ns, *new_id));
                }
                (WriteOp::Forget { namespace, .. }, Outcome::Forgotten { id, revisions }) => {
                    let key = (namespace.to_string(), *id);
                    let had = self.model.recs.remove(&key).map_or(0, |v| v.len());
                    self.model.vectors.remove(&key);
                    assert_eq!(had as u32, *revisions);
                }
                (
                    WriteOp::PutVector { namespace, vector, rev: guard, .. },
                    Outcome::VectorStored { id, rev },
                ) => {
                    let key = (namespace.to_string(), *id);
                    if let Some(g) = guard {
                        assert_eq!(g, rev, "a guarded vector attaches to the revision it names");
                    }
                    assert_eq!(
                        Some(*rev),
                        self.model.latest(&key.0, *id).map(|r| r.rev),
                        "a vector attaches to the latest revision"
                    );
                    let list = self.model.vectors.entry(key).or_default();
                    list.retain(|(from, _)| from != rev);
                    list.push((*rev, vector.clone()));
                }
                other => panic!("unexpected outcome pairing {other:?}"),
            }
        }
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Advance(n) => self.clock.advance(i64::from(*n) * UNIT / 4),
            Step::Reopen => {
                self.open(false);
                self.check_with(Depth::Sample);
            }
            Step::Job(ops, other) => {
                let ops: Vec<WriteOp> = ops.iter().filter_map(|o| self.to_write_op(o)).collect();
                if ops.is_empty() {
                    return;
                }
                let before = self.store().snapshot().unwrap().meta();
                let writer = if *other { self.other.as_ref().unwrap_or(self.store()) } else { self.store() };
                match writer.write(ops.clone()) {
                    Ok(receipt) => {
                        self.model_apply(&ops, &receipt);
                        self.check_with(Depth::Light);
                    }
                    Err(e) => {
                        assert!(
                            !matches!(
                                e,
                                Error::Database { .. }
                                    | Error::Codec { .. }
                                    | Error::Inconsistent { .. }
                                    | Error::CommitFailed { .. }
                            ),
                            "storage failure: {e}"
                        );
                        // A rejected job leaves no trace.
                        let after = self.store().snapshot().unwrap().meta();
                        assert_eq!(before.commit_seq, after.commit_seq, "a rejected job committed: {e}");
                    }
                }
            }
        }
    }

    /// Compare listings, gets, histories, lexical search and vectors with the model, at the
    /// times `depth` asks for (see [`Depth`]).
    fn check_with(&self, depth: Depth) {
        let exhaustive = depth == Depth::Full;
        let snap = self.store().snapshot().unwrap();
        // Transaction times: commit boundaries and one microsecond either side, plus now.
        let mut ks: BTreeSet<i64> = BTreeSet::new();
        let commits = &self.model.commits;
        let sample: Vec<i64> = if exhaustive || (commits.len() <= 10 && depth == Depth::Sample) {
            // At most `FULL` commits, evenly spaced, the first and last among them.
            let step = commits.len().div_ceil(FULL).max(1);
            commits.iter().step_by(step).chain(commits.last()).copied().collect()
        } else if depth == Depth::Light {
            // The newest commit, and one older one picked by the number of commits.
            commits
                .iter()
                .rev()
                .take(1)
                .chain(commits.get(commits.len() * 7 / 13 % commits.len()))
                .copied()
                .collect()
        } else {
            let step = commits.len() / 6;
            commits
                .iter()
                .step_by(step.max(1))
                .copied()
                .chain(commits.iter().rev().take(3).copied())
                .collect()
        };
        for k in sample {
            ks.extend([k - 1, k, k + 1]);
        }
        ks.insert(i64::MAX - 1);
        // Valid times: every boundary and one microsecond either side, plus now.
        let mut vs: BTreeSet<i64> = BTreeSet::new();
        let bounds = self.model.boundaries();
        let stride = match depth {
            Depth::Full => bounds.len().div_ceil(FULL).max(1),
            Depth::Sample => (bounds.len() / 8).max(1),
            Depth::Light => (bounds.len() / 2).max(1),
        };
        for b in bounds.iter().step_by(stride) {
            vs.extend([b - 1, *b, b + 1]);
        }
        vs.insert(self.now());
        for ns in ["ns0", "ns1"] {
            let nsv = Namespace::new(ns).unwrap();
            // Read in pages too, at one pair of times in seven (pages of three cost a query each).
            let mut pair = 0usize;
            for &k in &ks {
                for &v in &vs {
                    pair += 1;
                    let q = ListQuery::new().as_of(AsOf {
                        valid: Some(Timestamp::from_micros(v)),
                        known: Some(Timestamp::from_micros(k)),
                    });
                    let (got, path) = snap.list_explain(&nsv, &q).unwrap();
                    let got: BTreeSet<(RecordId, u32)> = got.iter().map(|r| (r.id, r.rev)).collect();
                    let want = self.model.list(ns, v, k);
                    assert_eq!(got, want, "list {ns} at valid {v} known {k} via {path:?}");
                    if depth != Depth::Light && pair % 7 == 1 {
                        assert_eq!(paged(&snap, &nsv, &q), want, "paged list {ns} at valid {v} known {k}");
                    }
                }
            }
            // Default as-of uses the fast path and agrees with the model.
            // "Now" is the clock, but never before the last commit.
            let now = snap.now().as_micros();
            assert_eq!(now, self.now().max(snap.meta().last_tx.as_micros()));
            let (got, path) = snap.list_explain(&nsv, &ListQuery::new()).unwrap();
            if now >= snap.meta().swept_through.as_micros() {
                assert_eq!(path, ListPath::Current);
            }
            let got: BTreeSet<(RecordId, u32)> = got.iter().map(|r| (r.id, r.rev)).collect();
            assert_eq!(got, self.model.list(ns, now, i64::MAX - 1), "default list of {ns}");
            assert_eq!(paged(&snap, &nsv, &ListQuery::new()), got, "default list of {ns} in pages");
        }
        // get and history of every known record (after a job: the newest few and a sample).
        let n = self.model.ids.len();
        let picked = self
            .model
            .ids
            .iter()
            .enumerate()
            .filter(|(i, _)| depth != Depth::Light || i + 4 >= n || i % 11 == n % 11);
        for (_, (ns, id)) in picked {
            let nsv = Namespace::new(ns.as_str()).unwrap();
            let hist = snap.history(&nsv, *id).unwrap();
            match self.model.recs.get(&(ns.clone(), *id)) {
                None => assert!(hist.is_empty(), "forgotten record {id} still has history"),
                Some(revs) => {
                    assert_eq!(hist.len(), revs.len());
                    for (i, (h, m)) in hist.iter().zip(revs).enumerate() {
                        assert_eq!(h.rev, m.rev);
                        assert_eq!(h.recorded_at.as_micros(), m.recorded_at);
                        assert_eq!(h.valid_from.as_micros(), m.valid_from);
                        assert_eq!(h.valid_until.map(|t| t.as_micros()), m.valid_until);
                        assert_eq!(h.expires_at.map(|t| t.as_micros()), m.expires_at);
                        assert_eq!(h.supersedes, m.supersedes);
                        assert_eq!(h.superseded_by, m.superseded_by);
                        assert_eq!(title_of(&h.body), m.title);
                        assert_eq!(
                            h.replaced_at.map(|t| t.as_micros()),
                            revs.get(i + 1).map(|n| n.recorded_at)
                        );
                    }
                }
            }
            for &k in ks.iter().rev().take(3) {
                for &v in vs.iter().take(4) {
                    let got = snap
                        .get(
                            &nsv,
                            *id,
                            AsOf {
                                valid: Some(Timestamp::from_micros(v)),
                                known: Some(Timestamp::from_micros(k)),
                            },
                        )
                        .unwrap();
                    let want = self.model.at(ns, *id, k).filter(|r| r.visible(v));
                    assert_eq!(got.map(|r| r.rev), want.map(|r| r.rev), "get {id} at {v}/{k}");
                }
            }
        }
        let times: Vec<(i64, i64)> = match depth {
            // The newest time on both axes, and the model's oldest boundary as known now.
            Depth::Light => {
                vec![(self.now(), i64::MAX - 1), (vs.first().copied().unwrap_or(T0), i64::MAX - 1)]
            }
            _ => ks.iter().rev().step_by(3).zip(vs.iter().rev().step_by(2)).map(|(k, v)| (*v, *k)).collect(),
        };
        self.check_search(&snap, &times);
        self.check_vectors(&snap);
        if depth != Depth::Light || commits.len().is_multiple_of(8) {
            let problems = snap.verify().unwrap();
            assert!(problems.is_empty(), "verify: {problems:?}");
        }
    }

    /// Lexical search for each word, as of some of the times checked: exactly the visible
    /// records whose text holds it, best first; its best three are the first three of all.
    fn check_search(&self, snap: &Snapshot, times: &[(i64, i64)]) {
        for ns in ["ns0", "ns1"] {
            let nsv = Namespace::new(ns).unwrap();
            for &(v, k) in times {
                let q = ListQuery::new().as_of(AsOf {
                    valid: Some(Timestamp::from_micros(v)),
                    known: Some(Timestamp::from_micros(k)),
                });
                for word in NAMES.iter().chain(&TITLES[..3]) {
                    let all = snap.lexical_search(&nsv, word, &q, 10_000).unwrap();
                    let got: BTreeSet<(RecordId, u32)> =
                        all.iter().map(|h| (h.record.id, h.record.rev)).collect();
                    assert_eq!(
                        got,
                        self.model.matching(ns, word, v, k),
                        "search {word:?} in {ns} at valid {v} known {k}"
                    );
                    assert!(
                        all.windows(2).all(|w| w[0].score >= w[1].score),
                        "search {word:?}: not best first"
                    );
                    let top: Vec<RecordId> =
                        snap.lexical_search(&nsv, word, &q, 3).unwrap().iter().map(|h| h.record.id).collect();
                    let first: Vec<RecordId> = all.iter().take(3).map(|h| h.record.id).collect();
                    assert_eq!(top, first, "search {word:?} in {ns} at valid {v} known {k}: the best three");
                }
            }
        }
    }

    /// The vector serving each revision of each record: the latest attached at or before it.
    fn check_vectors(&self, snap: &Snapshot) {
        for ((ns, id), revs) in &self.model.recs {
            let nsv = Namespace::new(ns.as_str()).unwrap();
            let list = self.model.vectors.get(&(ns.clone(), *id));
            for r in revs {
                let want = list
                    .and_then(|l| l.iter().filter(|(from, _)| *from <= r.rev).max_by_key(|(from, _)| *from));
                let got = snap.vector_for("m", &nsv, *id, r.rev).unwrap();
                match (got, want) {
                    (None, None) => {}
                    (Some((from, v)), Some((want_from, want_v))) => {
                        assert_eq!(from, *want_from, "vector of {id} rev {}", r.rev);
                        assert!(
                            v.iter().zip(want_v).all(|(a, b)| (a - b).abs() < 1e-6),
                            "vector of {id} rev {}",
                            r.rev
                        );
                    }
                    (got, want) => panic!("vector of {id} rev {}: {got:?}, want {want:?}", r.rev),
                }
            }
        }
    }
}

/// The most commits, and valid-time boundaries, a full check visits (each with one
/// microsecond either side): all of them in a case of up to this many.
const FULL: usize = 24;

/// How much a check compares: a light sample after each job, more after a reopen, and every
/// boundary (up to [`FULL`], evenly spaced) at the end of a case.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Depth {
    Light,
    Sample,
    Full,
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        max_shrink_iters: 2000,
        .. ProptestConfig::default()
    })]

    #[test]
    fn storage_matches_the_naive_model(shared in any::<bool>(), steps in proptest::collection::vec(step(), 1..200)) {
        let mut h = Harness::new(shared);
        for s in &steps {
            h.run(s);
        }
        h.check_with(Depth::Full);
        h.open(false);
        h.check_with(Depth::Full);
    }
}

/// A listing read in pages of 3 records, each before the last id of the page before: the ids
/// strictly descending across pages, and the whole as a set.
fn paged(snap: &Snapshot, ns: &Namespace, q: &ListQuery) -> BTreeSet<(RecordId, u32)> {
    let mut out: Vec<(RecordId, u32)> = Vec::new();
    let mut page = q.clone().limit(3);
    loop {
        let got = snap.list(ns, &page).unwrap();
        out.extend(got.iter().map(|r| (r.id, r.rev)));
        match got.last() {
            Some(last) => page = page.before(last.id),
            None => break,
        }
    }
    assert!(out.windows(2).all(|w| w[0].0 > w[1].0), "pages in descending id order: {out:?}");
    out.into_iter().collect()
}
