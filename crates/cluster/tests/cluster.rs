//! Nodes as replicas of a real JetStream log (a nats-server on loopback).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use mnemon::body::{Decision, Learning, Task};
use mnemon::{Db, RecordId};
use mnemon_cluster::testing::Nats;
use mnemon_cluster::{Node, NodeConfig, take_tokens};

/// A node of `partitions` partitions, all hosted, its files in `dir`, streams named `prefix`.
fn config(nats: &Nats, name: &str, dir: &Path, partitions: u32) -> NodeConfig {
    let mut c = NodeConfig::new(&nats.url(), name, dir);
    c.partitions = partitions;
    c.hosted = (0..partitions).collect();
    c
}

/// Every partition's export, in partition order.
fn exports(node: &Node) -> Vec<String> {
    node.hosted()
        .map(|p| {
            let mut out = Vec::new();
            mnemon::transfer::export(node.db(p).unwrap(), None, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        })
        .collect()
}

/// Run `f` on a blocking thread (a database's writes block on the log).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// A mix of writes in several namespaces through `node`'s databases: adds, a revision, a
/// supersession, a retirement, a forget, a refused duplicate and a refused revision.
fn write_mix(dbs: Vec<(String, Db)>, round: u32) -> Vec<RecordId> {
    let mut ids = Vec::new();
    for (name, db) in dbs {
        let ns = db.ns(&name).unwrap();
        let a = ns
            .add(Learning { text: format!("redb pages are 4 KiB ({name}, {round})"), ..Default::default() })
            .unwrap();
        let b = ns.add(Decision { title: format!("use JetStream {round}"), ..Default::default() }).unwrap();
        let t = ns.add(Task { title: format!("ship {round}"), ..Default::default() }).unwrap();
        ns.revise_json(a, &serde_json::json!({"text": format!("redb pages are 4 KiB, revised {round}")}))
            .unwrap();
        let c = ns
            .supersede(b, Decision { title: format!("use JetStream R3 {round}"), ..Default::default() })
            .unwrap();
        ns.retire(t, None).unwrap();
        let gone = ns.add(Learning { text: "to forget".into(), ..Default::default() }).unwrap();
        assert_eq!(ns.forget(gone).unwrap(), 1);
        // Refused where it is applied, on every node alike.
        assert!(ns.retire(t, None).is_err());
        ids.extend([a, c]);
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_applying_one_log_export_the_same_lines() {
    let nats = Nats::start();
    let (da, db_) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Node::start(config(&nats, "a", da.path(), 4)).await.unwrap();
    let b = Node::start(config(&nats, "b", db_.path(), 4)).await.unwrap();
    let names = ["default", "project:a", "project:b", "agent:dev-1", "agent:dev-2", "team"];
    // Writes through both nodes, concurrently.
    let on_a: Vec<(String, Db)> =
        names.iter().map(|n| (n.to_string(), a.db_for(n).unwrap().clone())).collect();
    let on_b: Vec<(String, Db)> =
        names.iter().map(|n| (n.to_string(), b.db_for(n).unwrap().clone())).collect();
    let (wa, wb) = tokio::join!(
        blocking(move || (write_mix(on_a, 1), take_tokens())),
        blocking(move || (write_mix(on_b, 2), take_tokens()))
    );
    // Each node waits for the other's writes by their tokens.
    for (p, seq) in wa.1.iter().chain(&wb.1) {
        assert!(a.wait_applied(*p, *seq, Duration::from_secs(10)).await);
        assert!(b.wait_applied(*p, *seq, Duration::from_secs(10)).await);
    }
    let (ea, eb) = (exports(&a), exports(&b));
    assert_eq!(ea, eb);
    let lines: usize = ea.iter().map(|e| e.lines().count()).sum();
    // Per namespace and round: 2 + 2 + 2 revisions (learning, decision + successor, task + retirement), forgotten one gone.
    assert!(lines >= names.len() * 2 * 7, "{lines}");
    // A write on one node is read on the other once its token is applied.
    let id = wa.0[0];
    let (ns, dbb) = (names[0], b.db_for(names[0]).unwrap().clone());
    let got = blocking(move || dbb.ns(ns).unwrap().get(id).unwrap()).await;
    assert!(got.is_some());
    // A server's token (an auxiliary row) made through one node's handle is on the other.
    let ha = a.handle().unwrap();
    let made = blocking(move || {
        ha.put_aux("auth/token/t1", Some(b"made on a".to_vec())).unwrap();
        take_tokens()
    })
    .await;
    assert!(!made.is_empty(), "the row went through the log");
    for (p, seq) in &made {
        assert!(b.wait_applied(*p, *seq, Duration::from_secs(10)).await);
    }
    let row = b.handle().unwrap().snapshot().unwrap().aux("auth/token/t1").unwrap();
    assert_eq!(row.as_deref(), Some(&b"made on a"[..]));
    assert!(a.handle().unwrap().put_aux("index/x", None).is_err(), "only auth/ and app/ rows");
    let status = a.status().await.unwrap();
    assert_eq!(status.len(), 4);
    assert!(status.iter().all(|s| s.applied == s.last), "{status:?}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_restarted_resumes_where_its_file_left_off() {
    let nats = Nats::start();
    let (da, db_) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Node::start(config(&nats, "a", da.path(), 2)).await.unwrap();
    let b = Node::start(config(&nats, "b", db_.path(), 2)).await.unwrap();
    let dbs: Vec<(String, Db)> =
        ["x", "y", "z"].iter().map(|n| (n.to_string(), a.db_for(n).unwrap().clone())).collect();
    let dbs2 = dbs.clone();
    blocking(move || write_mix(dbs, 1)).await;
    // b stops; a writes on; b starts again from its file and catches up.
    b.shutdown().await.unwrap();
    let tokens = blocking(move || {
        write_mix(dbs2, 2);
        take_tokens()
    })
    .await;
    let b = Node::start(config(&nats, "b", db_.path(), 2)).await.unwrap();
    for (p, seq) in &tokens {
        assert!(b.wait_applied(*p, *seq, Duration::from_secs(10)).await);
        assert_eq!(b.applied(*p).unwrap().seq, *seq);
    }
    assert_eq!(exports(&a), exports(&b));
    // Applied once: the revisions counted equal a's.
    for p in a.hosted() {
        let (ra, rb) = (a.db(p).unwrap().snapshot().unwrap(), b.db(p).unwrap().snapshot().unwrap());
        assert_eq!(ra.meta().last_tx, rb.meta().last_tx);
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_wait_for_the_log_and_fail_cleanly_when_it_is_gone() {
    let mut nats = Nats::start();
    let d = tempfile::tempdir().unwrap();
    let mut c = config(&nats, "a", d.path(), 1);
    c.timeout = Duration::from_secs(2);
    let a = Node::start(c).await.unwrap();
    let db = a.db(0).unwrap().clone();
    let db2 = db.clone();
    let id = blocking(move || {
        db.ns("default").unwrap().add(Learning { text: "before".into(), ..Default::default() })
    })
    .await
    .unwrap();
    nats.kill();
    let err = blocking(move || {
        db2.ns("default").unwrap().add(Learning { text: "during".into(), ..Default::default() })
    })
    .await
    .unwrap_err();
    assert_eq!(err.code(), mnemon::Code::Unavailable, "{err}");
    // Reads go on from the file.
    let db3 = a.db(0).unwrap().clone();
    assert!(blocking(move || db3.ns("default").unwrap().get(id).unwrap()).await.is_some());
    // The log comes back: writes go through again.
    nats.restart();
    let db4 = a.db(0).unwrap().clone();
    let mut done = false;
    for _ in 0..50 {
        let db = db4.clone();
        if blocking(move || {
            db.ns("default").unwrap().add(Learning { text: "after".into(), ..Default::default() })
        })
        .await
        .is_ok()
        {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(done, "writes did not resume after the server came back");
    a.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn new_and_wiped_nodes_start_from_snapshots_and_the_log_is_trimmed() {
    let _ = tracing_subscriber::fmt().with_env_filter("mnemon_cluster=debug").with_test_writer().try_init();
    let nats = Nats::start();
    let (da, db_, dc) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let with_snapshots = |name: &str, dir: &Path| {
        let mut c = config(&nats, name, dir, 2);
        c.snapshot_every = Some(Duration::from_millis(300));
        c
    };
    let a = Node::start(with_snapshots("a", da.path())).await.unwrap();
    let b = Node::start(with_snapshots("b", db_.path())).await.unwrap();
    let dbs: Vec<(String, Db)> =
        ["x", "y", "z", "w"].iter().map(|n| (n.to_string(), a.db_for(n).unwrap().clone())).collect();
    let dbs2 = dbs.clone();
    blocking(move || write_mix(dbs, 1)).await;
    // b leaves; a writes on, snapshots, and trims the streams past what b had applied.
    b.shutdown().await.unwrap();
    let tokens = blocking(move || {
        write_mix(dbs2, 2);
        take_tokens()
    })
    .await;
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await.unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for (p, seq) in &tokens {
        loop {
            let mut s = js.get_stream(format!("MNEMON_P{p:03}")).await.unwrap();
            let first = s.info().await.unwrap().state.first_sequence;
            if first > *seq {
                break;
            }
            if std::time::Instant::now() >= deadline {
                let os = js.get_object_store("MNEMON_SNAPSHOTS").await;
                let info = match &os {
                    Ok(os) => format!("{:?}", os.info(format!("p{p:03}")).await.map(|i| i.metadata)),
                    Err(e) => format!("no bucket: {e}"),
                };
                panic!("partition {p}: first entry {first}, not trimmed past {seq}; snapshot: {info}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // b comes back behind the log's start: it starts from the snapshot. c is new: the same.
    let b = Node::start(with_snapshots("b", db_.path())).await.unwrap();
    let c = Node::start(with_snapshots("c", dc.path())).await.unwrap();
    for node in [&b, &c] {
        for (p, seq) in &tokens {
            assert!(node.wait_applied(*p, *seq, Duration::from_secs(10)).await);
        }
    }
    let (ea, eb, ec) = (exports(&a), exports(&b), exports(&c));
    assert_eq!(ea, eb);
    assert_eq!(ea, ec);
    assert!(ea.iter().map(|e| e.lines().count()).sum::<usize>() > 4 * 2 * 6);
    // And they go on with the log.
    let dbc = c.db_for("x").unwrap().clone();
    let more = blocking(move || {
        dbc.ns("x")
            .unwrap()
            .add(Learning { text: "after the snapshot".into(), ..Default::default() })
            .unwrap();
        take_tokens()
    })
    .await;
    for (p, seq) in &more {
        assert!(a.wait_applied(*p, *seq, Duration::from_secs(10)).await);
        assert!(b.wait_applied(*p, *seq, Duration::from_secs(10)).await);
    }
    assert_eq!(exports(&a), exports(&c));
    assert_eq!(exports(&b), exports(&c));
    for n in [a, b, c] {
        n.shutdown().await.unwrap();
    }
}
