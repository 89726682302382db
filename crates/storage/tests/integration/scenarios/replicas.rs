//! Replicas: the same jobs committed at the same transaction times (`Store::write_at`, as a
//! replicated log's entries are applied) give the same history on every store, whatever each
//! store's clock says and whatever maintenance it commits between entries.

use mnemon_storage::body::{Decision, Learning};
use mnemon_storage::*;

use super::*;

/// A log of jobs with their times: inserts (some back-dated, some scoped memory that expires
/// a day or a week after its commit), revisions (one expecting a revision it will not find),
/// retirements, supersessions, vectors, forgets, an identity conflict, and times that repeat.
fn log() -> Vec<(Timestamp, Vec<WriteOp>)> {
    let n = ns("project:replicas");
    let t0 = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
    let mut next = lcg(11);
    let mut out: Vec<(Timestamp, Vec<WriteOp>)> = Vec::new();
    let mut ids: Vec<RecordId> = Vec::new();
    let mut at = t0;
    for i in 0..240u32 {
        // Entries' times as a log's server stamps them: mostly seconds to hours apart, sometimes
        // the same; the caller makes them strictly increasing, as the cluster does.
        let step = match next() % 5 {
            0 => 0,
            1 => 1,
            _ => 1_000_000 * (next() % 7200) as i64,
        };
        at = Timestamp::from_micros(at.as_micros() + step);
        let ops = match (i, next() % 8) {
            (0..=20, _) | (_, 0 | 1) => {
                let mut r = NewRecord::new(
                    n.clone(),
                    Learning { text: format!("learning {i} about redb"), ..Default::default() },
                );
                r.envelope.importance = Some(1 + (next() % 5) as u8);
                if next().is_multiple_of(3) {
                    r.valid_from = Some(Timestamp::from_micros(at.as_micros() - 86_400_000_000));
                }
                ids.push(r.id);
                vec![WriteOp::Insert(r)]
            }
            (_, 2) => {
                let mut r = NewRecord::new(
                    n.clone(),
                    Decision { title: format!("decision {}", i % 7), ..Default::default() },
                );
                r.on_conflict = if i % 2 == 0 { OnConflict::Supersede } else { OnConflict::Error };
                ids.push(r.id);
                vec![WriteOp::Insert(r)]
            }
            (_, 3) => {
                let id = ids[(next() as usize) % ids.len()];
                let mut rv = Revise::new(n.clone(), id);
                rv.body = Some(Learning { text: format!("corrected at {i}"), ..Default::default() }.into());
                rv.expected_rev = next().is_multiple_of(4).then_some(7);
                vec![WriteOp::Revise(rv)]
            }
            (_, 4) => {
                let id = ids[(next() as usize) % ids.len()];
                vec![WriteOp::Retire { namespace: n.clone(), id, at: None }]
            }
            (_, 5) => {
                let old = ids[(next() as usize) % ids.len()];
                let new = NewRecord::new(
                    n.clone(),
                    Learning { text: format!("instead, {i}"), ..Default::default() },
                );
                ids.push(new.id);
                vec![WriteOp::Supersede { old, new }]
            }
            (_, 6) => {
                let id = ids[(next() as usize) % ids.len()];
                let v = (0..4).map(|j| ((i + j) % 5) as f32 - 2.0).collect();
                vec![WriteOp::PutVector { namespace: n.clone(), id, rev: None, space: "m".into(), vector: v }]
            }
            _ => {
                let id = ids[(next() as usize) % ids.len()];
                vec![WriteOp::Forget { namespace: n.clone(), id }]
            }
        };
        out.push((at, ops));
    }
    out
}

/// Apply `log` to a store on a clock at `clock_at`, the entries' times made strictly
/// increasing; `maintain` commits local rows (an index manifest, a merge of texts) between
/// entries, at the store's own clock. Returns each entry's outcome and every revision.
fn replay(
    log: &[(Timestamp, Vec<WriteOp>)],
    clock_at: &str,
    maintain: bool,
) -> (Vec<String>, Vec<Record>, Vec<Problem>) {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = open_with_clock(&dir, Timestamp::parse(clock_at).unwrap());
    let n = ns("project:replicas");
    let mut outcomes = Vec::new();
    let mut last = Timestamp::MIN;
    for (i, (at, ops)) in log.iter().enumerate() {
        let at = (*at).max(Timestamp::from_micros(last.as_micros() + 1));
        last = at;
        // The replica's encoded entry, as it travels.
        let ops = decode_job(&encode_job(ops).unwrap()).unwrap();
        let got = store.write_at(vec![ops], at, Durability::Eventual).remove(0);
        outcomes.push(match got {
            Ok(r) => format!("{:?} at {}", r.outcomes, r.tx),
            Err(e) => format!("error: {e}"),
        });
        if maintain && i % 3 == 0 {
            clock.advance(3_600_000_000);
            let key = format!("index/manifest/{i}");
            store.write(vec![WriteOp::PutAux { key, value: Some(vec![1]) }]).unwrap();
            store.write(vec![WriteOp::MergeTexts { namespace: n.clone() }]).unwrap();
        }
    }
    let snap = store.snapshot().unwrap();
    let mut revisions = Vec::new();
    snap.for_each_revision(Some(&n), |r| {
        revisions.push(r);
        Ok(())
    })
    .unwrap();
    (outcomes, revisions, snap.verify().unwrap())
}

#[test]
fn the_same_log_gives_the_same_history_on_every_replica() {
    // One replica's clock is years ahead of the log and it commits maintenance between
    // entries (which sweeps its current rows far ahead); the other's is years behind.
    let log = log();
    let (a_out, a_revs, a_problems) = replay(&log, "2031-01-01", true);
    let (b_out, b_revs, b_problems) = replay(&log, "2001-01-01", false);
    assert!(a_problems.is_empty(), "{a_problems:?}");
    assert!(b_problems.is_empty(), "{b_problems:?}");
    let first_difference = a_out.iter().zip(&b_out).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "{:?}", first_difference.map(|i| (&a_out[i], &b_out[i])));
    assert_eq!(a_revs.len(), b_revs.len());
    let first_difference = a_revs.iter().zip(&b_revs).position(|(a, b)| a != b);
    assert_eq!(first_difference, None, "{:?}", first_difference.map(|i| (&a_revs[i], &b_revs[i])));
    // The log did write, refuse and forget things.
    assert!(a_out.iter().any(|o| o.starts_with("error: ")), "{a_out:?}");
    assert!(a_revs.len() > 100, "{}", a_revs.len());
    // Every revision was recorded at its entry's time, none at a clock's.
    let first = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
    assert!(a_revs.iter().all(
        |r| r.recorded_at >= first && r.recorded_at.as_micros() < first.as_micros() + 86_400_000_000 * 30
    ));
}

#[test]
fn a_job_at_a_time_before_the_last_revision_is_refused_and_maintenance_does_not_move_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _clock) = open_with_clock(&dir, Timestamp::parse("2030-01-01").unwrap());
    let n = ns("project:replicas");
    let t = |s: &str| Timestamp::parse(s).unwrap();
    let insert =
        || WriteOp::Insert(NewRecord::new(n.clone(), Learning { text: "x".into(), ..Default::default() }));
    let r = store.write_at(vec![vec![insert()]], t("2026-01-01"), Durability::Eventual).remove(0).unwrap();
    assert_eq!(r.tx, t("2026-01-01"));
    // A commit of the store's own at its clock (2030) records no revision: the log's next
    // entry, far before the clock, still goes in.
    store.write(vec![WriteOp::PutAux { key: "index/m".into(), value: None }]).unwrap();
    assert_eq!(store.snapshot().unwrap().meta().last_tx, t("2026-01-01"));
    let r = store.write_at(vec![vec![insert()], vec![insert()]], t("2026-01-02"), Durability::Eventual);
    // Two jobs at one time: the first records a revision at it, so the second comes too late.
    assert_eq!(r[0].as_ref().unwrap().tx, t("2026-01-02"));
    assert!(matches!(r[1], Err(Error::TimeOrder { .. })), "{:?}", r[1]);
    let late =
        store.write_at(vec![vec![insert()]], t("2026-01-01T12:00:00Z"), Durability::Eventual).remove(0);
    assert!(matches!(late, Err(Error::TimeOrder { .. })), "{late:?}");
    // A job without revisions may share the time (a replica's applied-sequence marker after a
    // refused entry).
    let aux = WriteOp::PutAux { key: "app/applied".into(), value: Some(vec![2]) };
    assert!(store.write_at(vec![vec![aux]], t("2026-01-02"), Durability::Eventual).remove(0).is_ok());
    // A plain write after them comes after them, at the clock.
    let r = store.write(vec![insert()]).unwrap();
    assert_eq!(r.tx, t("2030-01-01"));
    assert!(store.snapshot().unwrap().verify().unwrap().is_empty());
}
