//! Crash test: a child process writing acknowledged batches from several threads is killed
//! with SIGKILL at random moments. After each kill the database must pass redb's integrity
//! check, hold every acknowledged batch, show no partial batch, and have consistent indexes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemon_storage::body::Learning;
use mnemon_storage::*;

const CHILD_ENV: &str = "MNEMON_CRASH_CHILD_DB";
const BATCH: usize = 5;
const THREADS: usize = 4;

/// The child's workload (runs only when the parent sets the environment variable).
#[test]
#[ignore = "run by crash_kill_cycles as a child process"]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let store =
        Store::open(&path, StoreOptions { create: true, min_checkpoint_gap: 8, ..Default::default() })
            .unwrap();
    let ns = Namespace::new("crash").unwrap();
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let start = std::process::id();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = store.clone();
            let ns = ns.clone();
            let stdout = Arc::clone(&stdout);
            std::thread::spawn(move || {
                for k in 0..1_000_000u64 {
                    let tag = format!("p{start}-t{t}-b{k}");
                    let ops: Vec<WriteOp> = (0..BATCH)
                        .map(|i| {
                            let mut n = NewRecord::new(
                                ns.clone(),
                                Learning { text: format!("{tag} item {i}"), ..Default::default() },
                            );
                            n.envelope.tags = mnemon_storage::text_list![tag.clone()];
                            WriteOp::Insert(n)
                        })
                        .collect();
                    store.write(ops).unwrap();
                    let mut out = stdout.lock().unwrap();
                    writeln!(out, "ACK {tag}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn crash_kill_cycles() {
    let cycles: u64 = std::env::var("MNEMON_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut acked: BTreeSet<String> = BTreeSet::new();
    for cycle in 0..cycles {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash::crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Some(tag) = line.strip_prefix("ACK ") {
                        seen.lock().unwrap().push(tag.to_string());
                    }
                }
            })
        };
        // Let it run a random while (sometimes before it has even opened the file).
        let wait = 5 + rng.next() % 250;
        std::thread::sleep(Duration::from_millis(wait));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();
        acked.extend(seen.lock().unwrap().drain(..));

        if !path.exists() {
            continue;
        }
        assert!(Store::check_integrity(&path).unwrap(), "cycle {cycle}: redb integrity check failed");
        let store = Store::open(&path, StoreOptions::default()).unwrap();
        let snap = store.snapshot().unwrap();
        let ns = Namespace::new("crash").unwrap();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for r in snap.list(&ns, &ListQuery::new()).unwrap() {
            for t in &r.envelope.tags {
                *counts.entry(t.to_string()).or_insert(0) += 1;
            }
        }
        for (tag, n) in &counts {
            assert_eq!(*n, BATCH, "cycle {cycle}: batch {tag} is partial ({n} of {BATCH})");
        }
        for tag in &acked {
            assert_eq!(counts.get(tag), Some(&BATCH), "cycle {cycle}: acknowledged batch {tag} is missing");
        }
        let problems = snap.verify().unwrap();
        assert!(problems.is_empty(), "cycle {cycle}: {problems:?}");
    }
    assert!(
        acked.len() > cycles as usize,
        "the children acknowledged too few batches ({}) to test anything",
        acked.len()
    );
}
