//! `mnemon-bench` end to end: each driver runs on a small input and reports what it measured;
//! bad input is a one-line error with its exit code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "expected success, got {}: {}", self.code, self.stderr);
        self.stdout.trim()
    }

    fn json(&self) -> Value {
        serde_json::from_str(self.ok()).expect("one JSON document")
    }

    fn json_lines(&self) -> Vec<Value> {
        self.ok().lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
    }

    fn fails(&self, code: i32, needle: &str) {
        assert_eq!(self.code, code, "exit code; stderr: {}", self.stderr);
        assert_eq!(self.stderr.trim().lines().count(), 1, "one-line error expected: {:?}", self.stderr);
        assert!(self.stderr.contains(needle), "{:?} should mention {needle:?}", self.stderr);
    }
}

fn bench(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon-bench")).args(args).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The `mnemon` executable, built by cargo for this test (a no-op when it is up to date).
fn mnemon() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "-p", "mnemon-cli", "--bin", "mnemon", "--message-format=json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["executable"].as_str().map(PathBuf::from))
        .find(|p| p.file_stem().is_some_and(|s| s == "mnemon"));
    exe.expect("cargo named the mnemon executable")
}

/// The ANN benchmark on a small generated data set: both graphs and the exact scan.
#[test]
fn ann_measures_both_graphs_on_generated_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("ann");
    let d = data.to_str().unwrap();
    bench(&[
        "ann-data",
        "--out",
        d,
        "--n",
        "500",
        "--dim",
        "16",
        "--queries",
        "20",
        "--clusters",
        "5",
        "--gt-k",
        "10",
    ])
    .ok();
    let (base, queries, gt) =
        (format!("{d}/base.fvecs"), format!("{d}/queries.fvecs"), format!("{d}/gt.ivecs"));
    let files = ["--base", base.as_str(), "--queries", queries.as_str(), "--gt", gt.as_str()];
    let ann = |before: &[&str], after: &[&str]| bench(&[before, &["ann"][..], &files[..], after].concat());
    let report = ann(&["--json"], &["--ef", "16,64", "--m", "8", "--ef-construction", "50"]).json();
    assert_eq!(report["ef"].as_array().unwrap().len(), 4, "{report}");
    assert!(report["ef"][1]["recall"].as_f64().unwrap() > 0.9, "{report}");
    assert!(report["exact"]["recall"].as_f64().unwrap() > 0.999);
    bench(&["ann", "--base", "/nonexistent.fvecs", "--queries", "q", "--gt", "g"]).fails(1, "nonexistent");
    ann(&[], &["--m", "300"]).fails(2, "m must be 2 to 256");
    assert_eq!(report["builds"].as_array().map(Vec::len), Some(2), "{report}");
}

/// The synthetic search benchmark: every mode finds most answers.
#[test]
fn search_measures_every_mode() {
    let eval = bench(&["--json", "search", "--records", "300", "--queries", "30"]).json();
    let modes = eval["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 3);
    assert!(modes.iter().all(|m| m["recall_at_10"].as_f64().unwrap() > 0.3), "{eval}");
    bench(&["--embedder", "bert", "search"]).fails(2, "unknown embedder");
}

/// The MCP latency bench runs end to end (tiny sizes): a real server, every tool timed.
#[test]
fn mcp_times_every_tool() {
    let exe = mnemon();
    let args = [
        "--json",
        "mcp",
        "--mnemon",
        exe.to_str().unwrap(),
        "--sizes",
        "10",
        "--samples",
        "3",
        "--think-ms",
        "1",
    ];
    let rows = bench(&args).json_lines();
    let tools: Vec<&str> = rows.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "search_nodes",
            "open_nodes",
            "add_observations",
            "delete_observations",
            "create_entities",
            "create_relations",
            "read_graph"
        ]
    );
    assert!(rows.iter().all(|r| r["entities"] == 10 && r["p50_ms"].as_f64().unwrap() > 0.0), "{rows:?}");
    bench(&["mcp", "--mnemon", "/nonexistent/mnemon", "--sizes", "1"]).fails(1, "cannot start");
}

/// `mnemon-bench --json serve` on the built `mnemon` with 4 agents over 2 namespaces, and
/// `more` arguments: its report.
fn serve_report(more: &[&str]) -> serde_json::Value {
    let exe = mnemon();
    let mut args =
        vec!["--json", "serve", "--mnemon", exe.to_str().unwrap(), "--agents", "4", "--namespaces", "2"];
    args.extend_from_slice(more);
    bench(&args).json()
}

/// The server load bench runs end to end (a few agents for a second): every operation of the
/// mix answered, no acknowledged write lost, the stdio side by side measured.
#[test]
fn serve_loads_a_real_server_and_checks_every_write() {
    let report = serve_report(&["--seconds", "1"]);
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["server_exit"], 0, "{report}");
    assert!(report["acknowledged_writes"].as_u64().unwrap() > 0, "{report}");
    let ops: Vec<&str> =
        report["operations"].as_array().unwrap().iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["get", "list_as_of", "search", "write"], "{report}");
    assert!(report["stdio_writes_per_s"].as_f64().unwrap() > 0.0, "{report}");
    // The group commits the server's metrics counted, and the processor time it took.
    assert!(report["commits"].as_f64().unwrap() >= 1.0, "{report}");
    assert!(report["jobs_per_commit"].as_f64().unwrap() >= 1.0, "{report}");
    assert!(report["commit_ms"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["server_cpu_us_per_call"].as_f64().unwrap() > 0.0, "{report}");
    // Only writes: no other operation in the report.
    let writes = serve_report(&["--seconds", "1", "--writes-only", "--no-stdio"]);
    let ops: Vec<&str> =
        writes["operations"].as_array().unwrap().iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["write"], "{writes}");
    assert_eq!(writes["lost"], 0, "{writes}");
    assert_eq!(writes["writes_only"], true, "{writes}");
    bench(&["serve", "--agents", "0"]).fails(2, "at least 1");
    bench(&["serve", "--seconds", "2", "--kill-at", "3"]).fails(2, "--kill-at");
}

/// The cluster bench runs end to end (a few agents, a second a phase, on three nats-servers):
/// both configurations measured, the stopped node caught up, the client's failover timed.
#[test]
fn cluster_measures_one_and_three_nodes() {
    let exe = mnemon();
    let report = bench(&[
        "--json",
        "cluster",
        "--mnemon",
        exe.to_str().unwrap(),
        "--agents",
        "4",
        "--seconds",
        "1",
        "--partitions",
        "4",
    ])
    .json();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["nodes"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 3], "{report}");
    for r in runs {
        assert!(
            r["writes_per_s"].as_f64().unwrap() > 0.0 && r["reads_per_s"].as_f64().unwrap() > 0.0,
            "{report}"
        );
        assert_eq!((r["failed_writes"].as_u64(), r["failed_reads"].as_u64()), (Some(0), Some(0)), "{report}");
    }
    assert!(runs[1]["more"]["catch_up_entries"].as_u64().unwrap() > 0, "{report}");
    assert!(runs[1]["more"]["failover_ms"].as_f64().unwrap() > 0.0, "{report}");
    bench(&["cluster", "--agents", "0"]).fails(2, "at least 1");
}

/// The server killed with SIGKILL mid-load and started again, its writes sent as batches of
/// three: no acknowledged write lost.
#[test]
fn serve_survives_sigkill_mid_load_without_losing_an_acknowledged_write() {
    let report = serve_report(&["--seconds", "2", "--kill-at", "1", "--no-stdio", "--batch", "3"]);
    assert_eq!(report["batch"], 3, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["killed_at_s"], 1.0, "{report}");
    assert!(report["restart_ms"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["acknowledged_writes"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["server_exit"], 0, "the restarted server stops cleanly: {report}");
}
