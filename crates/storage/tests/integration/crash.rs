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
const SHARED_ENV: &str = "MNEMON_CRASH_SHARED";
const BATCH: usize = 5;
const THREADS: usize = 4;

/// The child's workload (runs only when the parent sets the environment variable).
#[test]
#[ignore = "run by crash_kill_cycles as a child process"]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    // Several processes at once open the file shared (redb's multi-writer mode, as the CLI and
    // the MCP server do).
    let shared = std::env::var_os(SHARED_ENV).is_some();
    let options = StoreOptions { create: true, min_checkpoint_gap: 8, shared, ..Default::default() };
    let store = Store::open(&path, options).unwrap();
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

/// A child writing acknowledged batches (see [`crash_child`]), its acknowledgements gathered
/// by a thread as it prints them.
struct Child {
    process: std::process::Child,
    reader: std::thread::JoinHandle<()>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Child {
    fn spawn(path: &std::path::Path, shared: bool) -> Child {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["crash::crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if shared {
            cmd.env(SHARED_ENV, "1");
        }
        let mut process = cmd.spawn().unwrap();
        let stdout = process.stdout.take().unwrap();
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
        Child { process, reader, seen }
    }

    /// SIGKILL it; what it acknowledged.
    fn kill(mut self) -> Vec<String> {
        self.process.kill().unwrap();
        self.process.wait().unwrap();
        self.reader.join().unwrap();
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// After the kills: redb's integrity check passes, every acknowledged batch is there whole,
/// no batch is partial, and the indexes agree with the revisions.
fn check_after_kill(path: &std::path::Path, acked: &BTreeSet<String>, cycle: u64) {
    assert!(Store::check_integrity(path).unwrap(), "cycle {cycle}: redb integrity check failed");
    let store = Store::open(path, StoreOptions { shared: true, ..Default::default() }).unwrap();
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
    for tag in acked {
        assert_eq!(counts.get(tag), Some(&BATCH), "cycle {cycle}: acknowledged batch {tag} is missing");
    }
    let problems = snap.verify().unwrap();
    assert!(problems.is_empty(), "cycle {cycle}: {problems:?}");
}

/// One writer process (the exclusive mode), killed with SIGKILL at a random moment, over and
/// over (`MNEMON_CRASH_CYCLES`, default 50).
#[test]
fn crash_kill_cycles() {
    let cycles: u64 = std::env::var("MNEMON_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut acked: BTreeSet<String> = BTreeSet::new();
    for cycle in 0..cycles {
        let child = Child::spawn(&path, false);
        // Let it run a random while (sometimes before it has even opened the file).
        std::thread::sleep(Duration::from_millis(5 + rng.next() % 250));
        acked.extend(child.kill());
        if path.exists() {
            check_after_kill(&path, &acked, cycle);
        }
    }
    assert!(
        acked.len() > cycles as usize,
        "the children acknowledged too few batches ({}) to test anything",
        acked.len()
    );
}

/// Three writer processes on one file in redb's multi-writer mode (the mode the CLI and the
/// MCP server run), each killed with SIGKILL at its own random moment, some while the file is
/// still being opened and recovered after the previous kills; checked after every round
/// (`MNEMON_CRASH_SHARED_CYCLES`, default 100).
#[test]
fn crash_kill_cycles_shared_writers() {
    let cycles: u64 =
        std::env::var("MNEMON_CRASH_SHARED_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    // The file exists before the writers race to open it.
    drop(Store::open(&path, StoreOptions { create: true, shared: true, ..Default::default() }).unwrap());
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut acked: BTreeSet<String> = BTreeSet::new();
    for cycle in 0..cycles {
        let children: Vec<Child> = (0..3).map(|_| Child::spawn(&path, true)).collect();
        let mut waits: Vec<u64> = (0..3).map(|_| 2 + rng.next() % 200).collect();
        waits.sort_unstable();
        let mut slept = 0;
        for (child, wait) in children.into_iter().zip(waits) {
            std::thread::sleep(Duration::from_millis(wait - slept));
            slept = wait;
            acked.extend(child.kill());
        }
        check_after_kill(&path, &acked, cycle);
    }
    assert!(acked.len() > cycles as usize, "the writers acknowledged too few batches ({})", acked.len());
}
