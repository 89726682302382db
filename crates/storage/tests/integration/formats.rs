//! Files written by every earlier format, by the `mnemon` of the commit that last wrote it
//! (`scripts/make-format-fixture.sh N COMMIT`; the commits are listed below): each opens
//! read-only and reads as it was written, is upgraded when a writer opens it, then reads
//! alike, passes the integrity check, finds its texts and takes new writes. The workload, in
//! namespace `fixture`: a decision "Use redb" (revised: "embedded, one file, ACID
//! transactions"), a learning, and a task "Write the importer", retired.

use mnemon_storage::*;

use super::lexical::file_version;

/// Format and the commit whose `mnemon` wrote its fixture.
const FIXTURES: [(u32, &str); 9] = [
    (1, "a4c915f"),
    (2, "d5b3ba6"),
    (3, "dad5657"),
    (4, "51e5e0b"),
    (5, "109eb55"),
    (6, "97edb8e"),
    (7, "be6b7b0"),
    (8, "fe3cab8"),
    (9, "5757a01"),
];

/// What a snapshot holds of the workload: the current records (kind and text, newest first),
/// and every record's revisions (rev and text) in id order.
fn contents(snap: &Snapshot) -> (Vec<String>, Vec<String>) {
    let ns = Namespace::new("fixture").unwrap();
    let current: Vec<String> = snap
        .list(&ns, &ListQuery::new())
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r.kind(), r.body.title()))
        .collect();
    let mut ids = Vec::new();
    snap.for_each_revision(Some(&ns), |r| {
        if !ids.contains(&r.id) {
            ids.push(r.id);
        }
        Ok(())
    })
    .unwrap();
    ids.sort();
    let mut revisions = Vec::new();
    for id in ids {
        for r in snap.history(&ns, id).unwrap() {
            let rationale = match &r.body {
                Body::Decision(d) => d.rationale.clone(),
                _ => String::new(),
            };
            revisions.push(format!(
                "{} r{} {} {rationale} open:{}",
                r.kind(),
                r.rev,
                r.body.title(),
                r.valid_until.is_none()
            ));
        }
    }
    (current, revisions)
}

#[test]
fn every_earlier_format_opens_upgrades_and_reads_back() {
    for (version, commit) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("f{version}.redb"));
        let fixture = format!("{}/tests/data/format{version}.redb", env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(&fixture, &path).unwrap();
        assert_eq!(file_version(&path), version, "the fixture of {commit}");

        let ro = Store::open(&path, StoreOptions { read_only: true, ..Default::default() }).unwrap();
        let before = contents(&ro.snapshot().unwrap());
        drop(ro);
        let (current, revisions) = &before;
        assert_eq!(
            current,
            &["learning bounded queues need backpressure", "decision Use redb"],
            "format {version}"
        );
        assert_eq!(revisions.len(), 5, "format {version}: {revisions:?}");
        assert!(
            revisions.contains(
                &"decision r1 Use redb embedded, one file, ACID transactions open:true".to_string()
            ),
            "format {version}: {revisions:?}"
        );
        assert!(
            revisions
                .iter()
                .any(|r| r.starts_with("task r1 Write the importer") && r.ends_with("open:false")),
            "format {version}: {revisions:?}"
        );

        drop(Store::open(&path, StoreOptions::default()).unwrap());
        assert_eq!(file_version(&path), FORMAT_VERSION, "format {version} upgraded");
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        let snap = store.snapshot().unwrap();
        assert_eq!(contents(&snap), before, "format {version} reads alike after its upgrade");
        assert_eq!(snap.verify().unwrap(), Vec::<String>::new(), "format {version}");
        let ns = Namespace::new("fixture").unwrap();
        let hits = snap.lexical_search(&ns, "redb transactions", &ListQuery::new(), 5).unwrap();
        assert_eq!(hits.len(), 1, "format {version}: the revised decision's text is indexed");
        let rec = NewRecord::new(
            ns.clone(),
            Body::Learning(body::Learning { text: "written after the upgrade".into(), ..Default::default() }),
        );
        let id = rec.id;
        store.write(vec![WriteOp::Insert(rec)]).unwrap();
        assert_eq!(store.snapshot().unwrap().list(&ns, &ListQuery::new()).unwrap().len(), 3);
        // The older commit log entries still read (they say which record, not what happened);
        // the new one says what it did.
        let log = store.snapshot().unwrap().commits_after(0).unwrap();
        let (last, older) = log.split_last().unwrap();
        assert!(
            older.iter().flat_map(|c| &c.changes).all(|c| c.op == ChangeOp::Unrecorded),
            "format {version}"
        );
        assert!(older.iter().any(|c| !c.changed.is_empty()), "format {version}");
        assert_eq!(last.changes.len(), 1);
        assert_eq!((last.changes[0].id, last.changes[0].op), (id, ChangeOp::Wrote(Op::Insert)));
        assert_eq!(last.changes[0].kind, Some(Kind::Learning));
        drop(store);
        assert!(Store::check_integrity(&path).unwrap(), "format {version}");
    }
}
