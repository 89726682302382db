//! Shared workloads for mnemon's benchmarks, and the SQLite baseline.
//!
//! The baseline keeps the same revisions in one versioned SQLite table (WAL,
//! `synchronous=FULL`) with composite indexes, and answers the same questions, decoding rows
//! into the same [`Record`] type: the comparison is output for output.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "benchmark harness")]

use std::path::Path;
use std::sync::Arc;

use mnemon::body::Learning;
use mnemon::{
    Body, Db, Durability, Envelope, Expiry, Kind, ListQuery, ManualClock, Namespace, NewRecord, Record,
    RecordId, Revise, Timestamp, WriteOp,
};
use rusqlite::{Connection, params};

/// One step of a generated history.
#[derive(Clone, Debug)]
pub enum Event {
    /// A new record valid from `t`.
    Insert { id: RecordId, t: i64, text: String },
    /// A correction of a record's text at `t`.
    Revise { id: RecordId, t: i64, text: String },
    /// The record stops being valid at `t`.
    Retire { id: RecordId, t: i64 },
}

impl Event {
    pub fn time(&self) -> i64 {
        match self {
            Event::Insert { t, .. } | Event::Revise { t, .. } | Event::Retire { t, .. } => *t,
        }
    }
}

/// The simulated start of history: 2020-01-01.
pub const START: i64 = 1_577_836_800_000_000;
/// Simulated time between events: one minute.
pub const STEP: i64 = 60_000_000;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// A history of `revisions` revisions in which about `live` records are valid at any time:
/// records are created, corrected a few times, and retired, one event a simulated minute.
pub fn history(revisions: usize, live: usize, seed: u64) -> Vec<Event> {
    let mut rng = Lcg(seed);
    let mut alive: Vec<RecordId> = Vec::with_capacity(live * 2);
    let mut out = Vec::with_capacity(revisions);
    let mut t = START;
    let words =
        ["redb", "agent", "memory", "cache", "index", "timeline", "vector", "decision", "task", "schema"];
    let text = |rng: &mut Lcg, n: usize| -> String {
        let mut s = format!("learning {n}:");
        for _ in 0..12 {
            s.push(' ');
            s.push_str(words[(rng.next() % words.len() as u64) as usize]);
        }
        s
    };
    while out.len() < revisions {
        t += STEP;
        let r = rng.next() % 100;
        if alive.len() < live || (r < 25 && alive.len() < live * 11 / 10) {
            let id = RecordId::from_u128((u128::from(rng.next()) << 64) | out.len() as u128);
            alive.push(id);
            out.push(Event::Insert { id, t, text: text(&mut rng, out.len()) });
        } else if r < 70 {
            let id = alive[(rng.next() as usize) % alive.len()];
            out.push(Event::Revise { id, t, text: text(&mut rng, out.len()) });
        } else {
            let i = (rng.next() as usize) % alive.len();
            let id = alive.swap_remove(i);
            out.push(Event::Retire { id, t });
        }
    }
    out
}

pub fn namespace() -> Namespace {
    Namespace::new("bench").unwrap()
}

fn learning(text: &str) -> Body {
    Learning { text: text.to_string(), related_files: mnemon::text_list!["src/lib.rs"] }.into()
}

fn envelope() -> Envelope {
    Envelope {
        tags: mnemon::text_list!["bench", "history"],
        importance: Some(3),
        confidence: Some(0.8),
        source: Some("agent-7".into()),
        task: None,
        key: None,
        metadata: serde_json::json!({"origin": "benchmark"}).into(),
    }
}

pub fn to_op(e: &Event) -> WriteOp {
    let ns = namespace();
    match e {
        Event::Insert { id, t, text } => {
            let mut n = NewRecord::new(ns, learning(text));
            n.id = *id;
            n.envelope = envelope();
            n.valid_from = Some(Timestamp::from_micros(*t));
            n.expiry = Expiry::Never;
            WriteOp::Insert(n)
        }
        Event::Revise { id, text, .. } => {
            let mut r = Revise::new(ns, *id);
            r.body = Some(learning(text));
            WriteOp::Revise(r)
        }
        Event::Retire { id, t } => {
            WriteOp::Retire { namespace: ns, id: *id, at: Some(Timestamp::from_micros(*t)) }
        }
    }
}

/// Load a history into a new mnemon database (one commit per `batch` events, each recorded at
/// the simulated time of its last event). Returns the database and its clock.
pub fn load_mnemon(path: &Path, events: &[Event], batch: usize) -> (Db, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_micros(START)));
    let db = Db::builder(path).create(true).clock(clock.clone()).open().unwrap();
    for chunk in events.chunks(batch) {
        let last = chunk.last().map_or(START, Event::time);
        clock.set(Timestamp::from_micros(last));
        let ops: Vec<WriteOp> = chunk.iter().map(to_op).collect();
        db.store().write_with(ops, Durability::Eventual).unwrap();
    }
    db.sync().unwrap();
    (db, clock)
}

/// The SQLite baseline: one versioned table, composite indexes, WAL, `synchronous=FULL`.
pub struct Sqlite {
    pub conn: Connection,
}

/// "Open" in integer columns (so range conditions can use the indexes).
const OPEN: i64 = i64::MAX;

impl Sqlite {
    pub fn open(path: &Path) -> Sqlite {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=FULL;
             PRAGMA busy_timeout=60000;
             CREATE TABLE IF NOT EXISTS revisions (
                 ns TEXT NOT NULL,
                 id BLOB NOT NULL,
                 rev INTEGER NOT NULL,
                 kind INTEGER NOT NULL,
                 recorded_at INTEGER NOT NULL,
                 replaced_at INTEGER NOT NULL,
                 valid_from INTEGER NOT NULL,
                 valid_until INTEGER NOT NULL,
                 record TEXT NOT NULL,
                 PRIMARY KEY (ns, id, rev)
             );
             CREATE INDEX IF NOT EXISTS rev_known_valid ON revisions (ns, replaced_at, valid_until, valid_from);
             CREATE INDEX IF NOT EXISTS rev_valid ON revisions (ns, valid_from, valid_until);",
        )
        .unwrap();
        Sqlite { conn }
    }

    /// Insert one record in its own durable transaction (autocommit).
    pub fn insert_one(&self, r: &Record) {
        self.insert_row(r, OPEN);
    }

    /// Add a full-text index (FTS5) of the records' text, the counterpart of mnemon's
    /// lexical index, for a fair write comparison.
    pub fn enable_fts(&self) {
        self.conn
            .execute_batch("CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(id UNINDEXED, body)")
            .unwrap();
    }

    /// Insert one record and its text into the FTS5 index (one transaction unless inside one).
    pub fn insert_one_fts(&self, r: &Record) {
        self.conn.execute_batch("SAVEPOINT one").unwrap();
        self.insert_row(r, OPEN);
        self.conn
            .prepare_cached("INSERT INTO texts (id, body) VALUES (?1, ?2)")
            .unwrap()
            .execute(params![r.id.as_u128().to_be_bytes().as_slice(), r.body.text()])
            .unwrap();
        self.conn.execute_batch("RELEASE one").unwrap();
    }

    fn insert_row(&self, r: &Record, replaced_at: i64) {
        let json = serde_json::to_string(&mnemon::json::RecordJson::from_record(r)).unwrap();
        self.conn
            .prepare_cached(
                "INSERT INTO revisions (ns, id, rev, kind, recorded_at, replaced_at, valid_from, valid_until, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .unwrap()
            .execute(params![
                r.namespace.as_str(),
                r.id.as_u128().to_be_bytes().as_slice(),
                r.rev,
                r.kind().code(),
                r.recorded_at.as_micros(),
                replaced_at,
                r.valid_from.as_micros(),
                r.valid_until.map_or(OPEN, Timestamp::as_micros),
                json
            ])
            .unwrap();
    }

    /// Apply a history: each event closes the previous revision and writes the next, as an
    /// application keeping versions in SQLite would. One transaction per `batch` events.
    pub fn load(&mut self, events: &[Event], batch: usize) {
        let ns = namespace();
        let mut latest: std::collections::HashMap<RecordId, Record> = std::collections::HashMap::new();
        for chunk in events.chunks(batch) {
            let tx_time = chunk.last().map_or(START, Event::time);
            let txn = self.conn.transaction().unwrap();
            for e in chunk {
                let next = match e {
                    Event::Insert { id, t, text } => Record {
                        namespace: ns.clone(),
                        id: *id,
                        rev: 0,
                        recorded_at: Timestamp::from_micros(tx_time),
                        replaced_at: None,
                        op: mnemon::Op::Insert,
                        valid_from: Timestamp::from_micros(*t),
                        valid_until: None,
                        expires_at: None,
                        supersedes: None,
                        superseded_by: None,
                        envelope: envelope(),
                        body: learning(text),
                    },
                    Event::Revise { id, text, .. } => {
                        let prev = &latest[id];
                        Record {
                            rev: prev.rev + 1,
                            recorded_at: Timestamp::from_micros(tx_time),
                            op: mnemon::Op::Revise,
                            body: learning(text),
                            ..prev.clone()
                        }
                    }
                    Event::Retire { id, t } => {
                        let prev = &latest[id];
                        Record {
                            rev: prev.rev + 1,
                            recorded_at: Timestamp::from_micros(tx_time),
                            op: mnemon::Op::Retire,
                            valid_until: Some(Timestamp::from_micros(*t)),
                            ..prev.clone()
                        }
                    }
                };
                if next.rev > 0 {
                    txn.prepare_cached(
                        "UPDATE revisions SET replaced_at = ?1 WHERE ns = ?2 AND id = ?3 AND rev = ?4",
                    )
                    .unwrap()
                    .execute(params![
                        tx_time,
                        ns.as_str(),
                        next.id.as_u128().to_be_bytes().as_slice(),
                        next.rev - 1
                    ])
                    .unwrap();
                }
                let json = serde_json::to_string(&mnemon::json::RecordJson::from_record(&next)).unwrap();
                txn.prepare_cached(
                    "INSERT INTO revisions (ns, id, rev, kind, recorded_at, replaced_at, valid_from, valid_until, record)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .unwrap()
                .execute(params![
                    ns.as_str(),
                    next.id.as_u128().to_be_bytes().as_slice(),
                    next.rev,
                    Kind::Learning.code(),
                    tx_time,
                    OPEN,
                    next.valid_from.as_micros(),
                    next.valid_until.map_or(OPEN, Timestamp::as_micros),
                    json
                ])
                .unwrap();
                latest.insert(next.id, next);
            }
            txn.commit().unwrap();
        }
    }

    /// Everything valid at `v` as known now, decoded into records, newest first.
    pub fn valid_at(&self, ns: &str, v: i64) -> Vec<Record> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT record FROM revisions
                 WHERE ns = ?1 AND replaced_at = ?2 AND valid_until > ?3 AND valid_from <= ?3",
            )
            .unwrap();
        let mut out: Vec<Record> = stmt
            .query_map(params![ns, OPEN, v], |row| row.get::<_, String>(0))
            .unwrap()
            .map(|s| {
                let j: mnemon::json::RecordJson = serde_json::from_str(&s.unwrap()).unwrap();
                j.into_record().unwrap()
            })
            .collect();
        out.sort_unstable_by_key(|r| std::cmp::Reverse(r.id));
        out
    }

    /// The current revision of a record.
    pub fn get(&self, ns: &str, id: RecordId) -> Option<Record> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT record FROM revisions WHERE ns = ?1 AND id = ?2 ORDER BY rev DESC LIMIT 1",
            )
            .unwrap();
        let s: Option<String> =
            stmt.query_row(params![ns, id.as_u128().to_be_bytes().as_slice()], |row| row.get(0)).ok();
        s.map(|s| serde_json::from_str::<mnemon::json::RecordJson>(&s).unwrap().into_record().unwrap())
    }
}

/// Everything valid at `v` in mnemon, newest first.
pub fn mnemon_valid_at(db: &Db, v: i64) -> Vec<Record> {
    db.snapshot().unwrap().list(&namespace(), &ListQuery::new().as_of(Timestamp::from_micros(v))).unwrap()
}

/// A small learning record for insert benchmarks.
/// `threads` threads each writing `per_thread` records of [`small_record`], one durable write
/// per record, numbered from `counter`; returns when all are acknowledged. The workload of the
/// group-commit benchmark and of `examples/profile.rs ratio`.
pub fn durable_writes(db: &Db, threads: usize, per_thread: u64, counter: &std::sync::atomic::AtomicU64) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            let db = db.clone();
            s.spawn(move || {
                for _ in 0..per_thread {
                    let r = small_record(counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                    db.store().write_with(vec![WriteOp::Insert(r)], Durability::Immediate).unwrap();
                }
            });
        }
    });
}

pub fn small_record(i: u64) -> NewRecord {
    let text = match text_words() {
        0 => format!("insert benchmark record {i}"),
        words => realistic_text(i, words),
    };
    let mut n = NewRecord::new(namespace(), learning(&text));
    n.envelope = envelope();
    n
}

/// `MNEMON_BENCH_WORDS=N`: the write benchmarks' records carry texts of N words drawn from a
/// vocabulary of 5,000 with a Zipf-like law (a few words common, most rare), as agents' notes
/// are, instead of four tokens one of which is the record's own number.
fn text_words() -> usize {
    static WORDS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WORDS.get_or_init(|| std::env::var("MNEMON_BENCH_WORDS").ok().and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// A text of `words` words for record `i`: word `k` is `w{r}` with `r = 5000^u - 1` for a
/// pseudo-random `u` in [0, 1) (log-uniform ranks: the frequency of rank `r` falls as `1/r`).
pub fn realistic_text(i: u64, words: usize) -> String {
    let mut out = String::with_capacity(words * 6);
    let mut state = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for k in 0..words {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let u = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        let rank = (5000f64.powf(u) - 1.0) as u64;
        if k > 0 {
            out.push(' ');
        }
        out.push_str(&format!("w{rank}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_engines_answer_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let events = history(6_000, 200, 42);
        let (db, _) = load_mnemon(&dir.path().join("m.redb"), &events, 500);
        let mut sql = Sqlite::open(&dir.path().join("s.sqlite"));
        sql.load(&events, 500);
        let end = events.last().unwrap().time();
        for v in [START + STEP * 10, (START + end) / 2, end - STEP * 3, end + 1] {
            let a: Vec<(RecordId, u32, String)> =
                mnemon_valid_at(&db, v).iter().map(|r| (r.id, r.rev, r.body.text())).collect();
            let b: Vec<(RecordId, u32, String)> =
                sql.valid_at("bench", v).iter().map(|r| (r.id, r.rev, r.body.text())).collect();
            assert_eq!(a.len(), b.len(), "at {v}");
            assert_eq!(a, b, "at {v}");
            assert!(!a.is_empty());
        }
        let some = match &events[100] {
            Event::Insert { id, .. } | Event::Revise { id, .. } | Event::Retire { id, .. } => *id,
        };
        let snap = db.snapshot().unwrap();
        assert_eq!(
            snap.latest(&namespace(), some).unwrap().map(|r| r.rev),
            sql.get("bench", some).map(|r| r.rev)
        );
    }
}
