//! End-to-end tests of the `mnemon` binary: every command, and the bad inputs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, run_at};
use serde_json::Value;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Env { dir: tempfile::tempdir().unwrap() }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("m.redb")
    }

    fn run(&self, args: &[&str]) -> Run {
        run_at(self.dir.path(), &self.db(), args, None)
    }

    fn run_in(&self, args: &[&str], stdin: Option<&str>) -> Run {
        run_at(self.dir.path(), &self.db(), args, stdin)
    }

    fn init(&self) {
        self.run(&["init"]).ok();
    }

    /// Make the machine's local model (scripts/fetch-minilm.sh) this environment's.
    #[cfg(feature = "local-minilm")]
    fn install_model(&self) {
        let real = mnemon::embed::LocalMiniLm::default_dir();
        assert!(real.join("model.safetensors").is_file(), "run scripts/fetch-minilm.sh first");
        std::os::unix::fs::symlink(real, self.dir.path().join("model")).unwrap();
    }

    fn add(&self, kind: &str, data: &str, extra: &[&str]) -> String {
        let mut args = vec!["add", kind, "--data", data];
        args.extend_from_slice(extra);
        self.run(&args).ok().to_string()
    }

    fn export_all(&self) -> String {
        self.run(&["export", "--all"]).ok().to_string()
    }
}

#[test]
fn init_creates_the_file_and_is_idempotent() {
    let e = Env::new();
    let r = e.run(&["--json", "init"]).json();
    assert_eq!(r["created"], true);
    assert!(e.db().exists());
    let r = e.run(&["--json", "init"]).json();
    assert_eq!(r["created"], false);
}

#[test]
fn default_db_path_is_under_the_current_directory() {
    let e = Env::new();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .current_dir(e.dir.path())
        .env_remove("MNEMON_DB")
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(e.dir.path().join(".mnemon/memory.redb").exists());
}

#[test]
fn add_get_list_with_both_time_axes() {
    let e = Env::new();
    e.init();
    let id = e.add(
        "decision",
        r#"{"title":"Use redb","rationale":"fast","metadata":{"pr":12}}"#,
        &["--valid-from", "2024-05-07", "--tag", "storage", "--importance", "5"],
    );
    let got = e.run(&["--json", "get", &id]).json();
    assert_eq!(got["status"], "active");
    assert_eq!(got["body"]["title"], "Use redb");
    assert_eq!(got["tags"][0], "storage");
    assert_eq!(got["metadata"]["pr"], 12);
    assert_eq!(got["valid_from"], "2024-05-07T00:00:00.000000Z");
    assert!(got["expires_at"].is_null(), "importance 5 is permanent");

    // Importance 2 gives a 7-day expiry from valid_from.
    let short =
        e.add("learning", r#"{"text":"tmp note"}"#, &["--importance", "2", "--valid-from", "2030-01-01"]);
    let got = e.run(&["--json", "get", &short, "--as-of", "2030-01-02"]).json();
    assert_eq!(got["expires_at"], "2030-01-08T00:00:00.000000Z");

    // Before it was valid: not found at that time, exit 1 with a hint.
    e.run(&["get", &id, "--as-of", "2024-05-06"]).fails(1, "not valid");
    // Known-at before it was recorded.
    e.run(&["get", &id, "--known-at", "2000-01-01"]).fails(1, "not yet known");

    let t = e.add("task", r#"{"title":"Write tests","priority":"high"}"#, &["--tag", "storage"]);
    let all = e.run(&["--json", "list"]).json_lines();
    assert_eq!(all.len(), 2, "the learning is only valid from 2030");
    let tasks = e.run(&["--json", "list", "task"]).json_lines();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["id"], t.as_str());
    assert_eq!(e.run(&["--json", "list", "--tag", "storage", "--limit", "1"]).json_lines().len(), 1);
    assert_eq!(e.run(&["--json", "list", "--as-of", "2024-05-08"]).json_lines().len(), 1);
    assert_eq!(e.run(&["--json", "list", "--as-of", "2030-01-03"]).json_lines().len(), 3);
    assert_eq!(e.run(&["--json", "list", "--known-at", "2000-01-01"]).json_lines().len(), 0);
    let table = e.run(&["list", "--explain"]).ok().to_string();
    assert!(table.contains("Use redb") && table.contains("Write tests"), "{table}");
    assert!(table.contains("answered from the current index"), "{table}");
    // Human detail view.
    let detail = e.run(&["get", &id]).ok().to_string();
    assert!(detail.contains("rationale") && detail.contains("storage"), "{detail}");
}

#[test]
fn data_from_stdin_and_from_a_file() {
    let e = Env::new();
    e.init();
    let id = e
        .run_in(&["add", "gotcha", "--data", "-"], Some(r#"{"title":"NaN in vectors","severity":"high"}"#))
        .ok()
        .to_string();
    assert_eq!(e.run(&["--json", "get", &id]).json()["body"]["severity"], "high");
    let file = e.dir.path().join("p.json");
    std::fs::write(&file, r#"{"title":"Repository pattern","category":"arch"}"#).unwrap();
    let arg = format!("@{}", file.display());
    let id = e.add("pattern", &arg, &[]);
    assert_eq!(e.run(&["--json", "get", &id]).json()["body"]["category"], "arch");
    e.run(&["add", "pattern", "--data", "@/nonexistent/p.json"]).fails(1, "cannot read");
}

#[test]
fn revise_retire_supersede_forget_history_chain() {
    let e = Env::new();
    e.init();
    let id =
        e.add("decision", r#"{"title":"Use SQLite","rationale":"known"}"#, &["--valid-from", "2024-01-01"]);
    let r = e
        .run(&["--json", "revise", &id, "--data", r#"{"rationale":"everyone knows it","tags":["db"]}"#])
        .json();
    assert_eq!(r["rev"], 1);
    let got = e.run(&["--json", "get", &id]).json();
    assert_eq!(got["body"]["rationale"], "everyone knows it");
    assert_eq!(got["body"]["title"], "Use SQLite", "merge patch keeps other fields");
    assert_eq!(got["tags"][0], "db");
    // A field named as `add` takes it: `text` is a gotcha's title.
    let gotcha = e.add("gotcha", r#"{"text":"fsync is slow on CI"}"#, &[]);
    e.run(&["revise", &gotcha, "--data", r#"{"text":"fsync is slow on CI disks"}"#]).ok();
    assert_eq!(e.run(&["--json", "get", &gotcha]).json()["body"]["title"], "fsync is slow on CI disks");

    let new = e
        .run(&["supersede", &id, "--data", r#"{"title":"Use redb"}"#, "--at", "2024-03-01"])
        .ok()
        .to_string();
    e.run(&["get", &id]).fails(1, "superseded by");
    let old = e.run(&["--json", "get", &id, "--as-of", "2024-02-01"]).json();
    assert_eq!(old["body"]["status"], "superseded");
    assert_eq!(old["superseded_by"], new.as_str());
    let chain = e.run(&["--json", "chain", &new]).json_lines();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0]["id"], id.as_str());
    assert_eq!(chain[1]["id"], new.as_str());
    let hist = e.run(&["--json", "history", &id]).json_lines();
    assert_eq!(
        hist.iter().map(|h| h["op"].as_str().unwrap()).collect::<Vec<_>>(),
        ["insert", "revise", "superseded"]
    );
    assert!(hist[0]["replaced_at"].is_string() && hist[2]["replaced_at"].is_null());
    // Short ids (a unique suffix) work for people.
    let suffix = &new[new.len() - 8..];
    assert!(e.run(&["chain", suffix]).ok().contains("Use redb"));
    assert!(e.run(&["history", suffix]).ok().contains("supersede"));
    // And the start of a full id, as people copy it: ids made in the same millisecond
    // share their first digits, so those name several records and are refused as such.
    let head = &new[..18];
    assert!(e.run(&["chain", head]).ok().contains("Use redb"));
    // The old and the new decision were made seconds apart: their first six digits (a
    // stretch of about 4.6 hours) are the same, and name both.
    if new[..6] == id[..6] {
        e.run(&["get", &new[..6]]).fails(2, "records have an id starting or ending with");
    }
    e.run(&["get", "abcdef99"]).fails(1, "starting or ending with");

    e.run(&["supersede", &id, "--data", r#"{"title":"again"}"#]).fails(1, "already superseded");

    let t = e.add("task", r#"{"title":"Ship"}"#, &["--valid-from", "2024-01-01"]);
    let r = e.run(&["--json", "retire", &t, "--at", "2024-02-01"]).json();
    assert_eq!(r["rev"], 1);
    e.run(&["get", &t]).fails(1, "retired");
    e.run(&["retire", &t]).fails(1, "no longer valid");
    e.run(&["retire", &new, "--at", "2023-01-01"]).fails(1, "only becomes valid");

    let x = e.add("learning", r#"{"text":"secret"}"#, &[]);
    e.run(&["expire", &x]).ok();
    e.run(&["get", &x]).fails(1, "expired");

    let r = e.run(&["--json", "forget", &x]).json();
    assert_eq!(r["revisions"], 2);
    e.run(&["history", &x]).fails(1, "no record");
    assert!(!e.export_all().contains("secret"));
}

#[test]
fn export_import_round_trip_is_identical() {
    let e = Env::new();
    e.init();
    let a = e.add(
        "decision",
        r#"{"title":"A","alternatives":["x","y"]}"#,
        &["--valid-from", "2024-01-01", "--tag", "t"],
    );
    e.run(&["supersede", &a, "--data", r#"{"title":"B"}"#, "--at", "2024-02-01"]).ok();
    e.add(
        "entity",
        r#"{"name":"Redis","entity_type":"service","properties":{"port":6379}}"#,
        &["--importance", "3"],
    );
    e.run(&["--ns", "other", "add", "brief", "--data", r#"{"text":"A project","confidence":0.7}"#]).ok();
    let t = e.add("task", r#"{"title":"T"}"#, &[]);
    e.run(&["revise", &t, "--data", r#"{"status":"in_progress"}"#]).ok();
    let dump = e.export_all();
    assert_eq!(dump.lines().count(), 7);
    let file = e.dir.path().join("dump.jsonl");
    std::fs::write(&file, format!("{dump}\n")).unwrap();

    let e2 = Env::new();
    e2.init();
    let r = e2.run(&["--json", "import", file.to_str().unwrap()]).json();
    assert_eq!(r["restored"], 7);
    assert_eq!(e2.export_all(), dump, "export -> import -> export must be identical");
    // Importing again changes nothing.
    let r = e2.run(&["--json", "import", file.to_str().unwrap()]).json();
    assert_eq!(r["unchanged"], 7);
    assert_eq!(e2.export_all(), dump);
    // Time travel survives the round trip.
    assert_eq!(
        e2.run(&["--json", "list", "decision", "--as-of", "2024-01-15"]).json_lines()[0]["body"]["title"],
        "A"
    );
    assert!(e2.run(&["check"]).ok().contains("indexes: ok"));
    // Only one namespace without --all.
    assert_eq!(e2.run(&["--ns", "other", "export"]).ok().lines().count(), 1);
}

#[test]
fn import_simple_form_and_bad_lines() {
    let e = Env::new();
    e.init();
    let good = r#"{"namespace":"p","kind":"learning","text":"one","tags":["a"],"importance":4}
{"kind":"decision","title":"two","valid_from":"2024-05-07","valid_until":"2024-06-01"}

{"kind":"preference","key":"indent","value":4,"metadata":{"from":"import"}}"#;
    let file = e.dir.path().join("simple.jsonl");
    std::fs::write(&file, good).unwrap();
    let r = e.run(&["--json", "import", file.to_str().unwrap()]).json();
    assert_eq!(r["created"], 3);
    assert_eq!(e.run(&["--ns", "p", "--json", "list"]).json_lines().len(), 1);
    assert_eq!(e.run(&["--json", "list", "decision", "--as-of", "2024-05-10"]).json_lines().len(), 1);

    let before = e.export_all();
    let bad = "{\"kind\":\"learning\",\"text\":\"fine\"}\n{not json\n{\"kind\":\"nope\",\"text\":\"x\"}\n";
    let file = e.dir.path().join("bad.jsonl");
    std::fs::write(&file, bad).unwrap();
    let r = e.run(&["import", file.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bad.jsonl:2:") && r.stderr.contains("bad.jsonl:3:"), "{}", r.stderr);
    assert_eq!(e.export_all(), before, "nothing written on invalid import");
    // --partial imports the good line and still fails.
    let r = e.run(&["import", "--partial", file.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("1 created"), "{}", r.stdout);
    // From stdin.
    let r = e.run_in(&["--json", "import", "-"], Some("{\"kind\":\"brief\",\"text\":\"hello\"}\n"));
    assert_eq!(r.json()["created"], 1);
}

/// `list` reads the listing operation page by page (1,000 records a page): every record once,
/// newest first, however many pages, and `--limit` cut across a page boundary.
#[test]
fn list_reads_every_page() {
    let e = Env::new();
    e.init();
    let lines: String =
        (0..2_345).map(|i| format!("{{\"kind\":\"learning\",\"text\":\"note {i}\"}}\n")).collect();
    let file = e.dir.path().join("many.jsonl");
    std::fs::write(&file, lines).unwrap();
    assert_eq!(e.run(&["--json", "import", file.to_str().unwrap()]).json()["created"], 2_345);
    let all = e.run(&["--json", "list"]).json_lines();
    assert_eq!(all.len(), 2_345);
    let ids: Vec<&str> = all.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(ids, sorted, "newest first, each once");
    let some = e.run(&["--json", "list", "--limit", "1001"]).json_lines();
    assert_eq!(some.len(), 1_001);
    assert_eq!(some, all[..1_001].to_vec());
    let table = e.run(&["list", "--limit", "1200", "--explain"]);
    assert!(table.stdout.contains("(1200 record(s), answered from the current index)"), "{}", table.stdout);
}

/// An import the file cannot hold (here: the process may not grow any file past a few MiB,
/// as on a full disk) stops at the first failed commit and names the cause and the first line
/// not imported; every line before it is in the database, none after, and importing the rest
/// of the file from that line finishes the job.
#[test]
fn an_import_the_disk_cannot_hold_stops_at_a_line_and_can_go_on_from_it() {
    let e = Env::new();
    e.init();
    e.add("decision", r#"{"title":"kept","rationale":"written before"}"#, &[]);
    let lines: Vec<String> = (0..20_000)
        .map(|i| format!("{{\"kind\":\"learning\",\"text\":\"note {i} about disks that fill up, files that may not grow, and what an import leaves behind\"}}"))
        .collect();
    let file = e.dir.path().join("big.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    // `ulimit -f` makes every write past the limit fail with EFBIG ("File too large"); the
    // signal a process gets for it (SIGXFSZ) is ignored, so the write returns the error.
    let out = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16384; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_mnemon"))
        .args(["--db", e.db().to_str().unwrap(), "import", file.to_str().unwrap()])
        .current_dir(e.dir.path())
        .env_remove("MNEMON_DB")
        .env_remove("MNEMON_NS")
        .output()
        .unwrap();
    let r = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    r.fails(1, "File too large");
    assert!(!r.stderr.contains("Previous I/O error"), "the cause, not a later symptom: {}", r.stderr);
    let line: usize = r
        .stderr
        .split("stopped at line ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no line in {}", r.stderr));
    assert!((2..=20_000).contains(&line), "some lines go in before the file is full: {}", r.stderr);
    // Reopened without the limit: whole, with the lines before `line` and none after.
    e.run(&["check"]).ok();
    let learnings = || e.run(&["--json", "list", "learning"]).json_lines().len();
    assert_eq!(learnings(), line - 1, "{}", r.stderr);
    assert_eq!(e.run(&["--json", "list", "decision"]).json_lines().len(), 1);
    // Going on from that line imports the rest, once.
    let rest = e.dir.path().join("rest.jsonl");
    std::fs::write(&rest, lines[line - 1..].join("\n")).unwrap();
    let created = e.run(&["--json", "import", rest.to_str().unwrap()]).json()["created"].as_u64().unwrap();
    assert_eq!(created as usize, 20_001 - line);
    assert_eq!(learnings(), 20_000);
}

#[test]
fn compact_shrinks_a_file_and_keeps_it_readable() {
    let e = Env::new();
    e.init();
    let lines: String = (0..3000)
        .map(|i| format!("{{\"kind\":\"learning\",\"text\":\"note {i} on topic {}\"}}\n", i % 50))
        .collect();
    let file = e.dir.path().join("bulk.jsonl");
    std::fs::write(&file, lines).unwrap();
    assert_eq!(e.run(&["--json", "import", file.to_str().unwrap()]).json()["created"], 3000);
    let before = e.export_all();
    let r = e.run(&["--json", "compact"]).json();
    let (b, a) = (r["bytes_before"].as_u64().unwrap(), r["bytes_after"].as_u64().unwrap());
    assert!(a <= b && a == std::fs::metadata(e.db()).unwrap().len(), "{r}");
    assert!(e.run(&["compact"]).ok().contains("MiB ->"));
    assert_eq!(e.export_all(), before);
    assert!(e.run(&["check"]).ok().contains("indexes: ok"));
    // A missing file: one line, runtime error, nothing created.
    let missing = e.dir.path().join("none.redb");
    let r = run_at(e.dir.path(), &missing, &["compact"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    assert!(!missing.exists());
}

#[test]
fn stats_check_and_tour() {
    let e = Env::new();
    e.init();
    e.add("decision", r#"{"title":"x"}"#, &[]);
    let s = e.run(&["--json", "stats"]).json();
    assert_eq!(s["namespaces"][0]["records"], 1);
    assert_eq!(s["namespaces"][0]["current"]["decision"], 1);
    assert!(e.run(&["stats"]).ok().contains("NAMESPACE"));
    let c = e.run(&["--json", "check"]).json();
    assert_eq!(c["problems"].as_array().unwrap().len(), 0);
    assert_eq!(c["file_intact"], true);
    let tour = e.run(&["tour"]).ok().to_string();
    assert!(
        tour.contains("What was true on 1 February 2024") && tour.contains("Store agent memory in SQLite")
    );
    assert!(tour.contains("superseded"));
    // Its "Your turn" commands, run as written, show what they say.
    let turn = Env::new();
    let mut listed = Vec::new();
    for line in tour.lines().skip_while(|l| !l.starts_with("Your turn")).skip(1) {
        let Some(cmd) = line.trim().strip_prefix("mnemon ") else { continue };
        let cmd = cmd.split("  #").next().unwrap().trim();
        let args = shell_words(cmd);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = turn.run(&args);
        if args[0] == "list" {
            listed.push(r.ok().to_string());
        } else {
            r.ok();
        }
    }
    assert!(listed[0].contains("Use redb"), "{listed:?}");
    assert!(!listed[1].contains("Use redb"), "{listed:?}");
}

/// A command line split as a shell would: words, and single-quoted words kept whole.
fn shell_words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            '"' if !quoted => {}
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn bad_inputs_fail_cleanly_and_write_nothing() {
    let e = Env::new();
    e.run(&["list"]).fails(1, "mnemon init");
    assert!(!e.db().exists(), "reading must not create the database");
    e.init();
    let id = e.add("decision", r#"{"title":"keep"}"#, &[]);
    let before = e.export_all();

    e.run(&["add", "decsion", "--data", "{}"]).fails(2, "unknown kind");
    e.run(&["add", "decision", "--data", "{not json"]).fails(2, "not valid JSON");
    e.run(&["add", "decision", "--data", r#"{"titel":"typo"}"#]).fails(2, "unknown field");
    e.run(&["add", "decision", "--data", r#"{"rationale":"no title"}"#]).fails(2, "title");
    e.run(&["add", "decision", "--data", r#"{"title":"x"}"#, "--valid-from", "yesterday"])
        .fails(2, "invalid");
    e.run(&["add", "decision", "--data", r#"{"title":"x"}"#, "--importance", "9"]).fails(2, "importance");
    e.run(&[
        "add",
        "decision",
        "--data",
        r#"{"title":"x","valid_from":"2024-05-07","valid_until":"2024-05-01"}"#,
    ])
    .fails(2, "must be after");
    e.run(&["add", "decision", "--data", r#"{"title":"x","confidence":7}"#]).fails(2, "confidence");
    e.run(&["list", "--as-of", "13/13/2024"]).fails(2, "invalid");
    e.run(&["get", "not-an-id"]).fails(2, "invalid record id");
    e.run(&["get", "01890000-0000-7000-8000-000000000000"])
        .fails(1, "no record 01890000-0000-7000-8000-000000000000 in namespace \"default\"");
    e.run(&["retire", "01890000-0000-7000-8000-000000000000"]).fails(1, "no record");
    e.run(&["revise", &id, "--data", "[1,2]"]).fails(2, "JSON object");
    e.run(&["revise", &id, "--data", r#"{"status":"maybe"}"#]).fails(2, "unknown variant");
    e.run(&["--ns", "", "list"]).fails(2, "namespace");
    e.run(&["frobnicate"]).fails(2, "unrecognized subcommand");
    assert_eq!(e.export_all(), before, "bad input wrote something");
}

#[test]
fn bad_files_are_refused() {
    let e = Env::new();
    let run = |p: &Path, args: &[&str]| run_at(e.dir.path(), p, args, None);
    // Not a database at all.
    let text = e.dir.path().join("notes.txt");
    std::fs::write(&text, "hello, this is not a database").unwrap();
    run(&text, &["list"]).fails(1, "not a mnemon database");
    run(&text, &["init"]).fails(1, "not a mnemon database");
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "hello, this is not a database");
    // An empty file.
    let empty = e.dir.path().join("empty.redb");
    std::fs::write(&empty, "").unwrap();
    run(&empty, &["list"]).fails(1, "empty");
    // A redb file that is not a mnemon database.
    let other = e.dir.path().join("other.redb");
    {
        let db = redb::Database::create(&other).unwrap();
        let w = db.begin_write().unwrap();
        {
            let mut t = w.open_table(redb::TableDefinition::<&str, &str>::new("x")).unwrap();
            t.insert("a", "b").unwrap();
        }
        w.commit().unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    run(&other, &["list"]).fails(1, "without mnemon metadata");
    assert_eq!(std::fs::read(&other).unwrap(), before, "a foreign file must not be modified");
    // A newer format.
    let newer = e.dir.path().join("newer.redb");
    run(&newer, &["init"]).ok();
    {
        let db = redb::Database::open(&newer).unwrap();
        let w = db.begin_write().unwrap();
        {
            let mut t = w.open_table(redb::TableDefinition::<&str, &[u8]>::new("mnemon.meta")).unwrap();
            t.insert("format_version", 99u32.to_le_bytes().as_slice()).unwrap();
        }
        w.commit().unwrap();
    }
    run(&newer, &["list"]).fails(1, "newer than this mnemon supports");
    // An unwritable location (a path below a regular file).
    let r = run(&text.join("sub/db.redb"), &["init"]);
    r.fails(1, &format!("cannot create directory {}", text.join("sub").display()));
    // The cause is told once, not again after the message that already includes it.
    assert_eq!(r.stderr.matches("os error").count(), 1, "{}", r.stderr);
    // A directory.
    run(e.dir.path(), &["list"]).fails(1, "not a regular file");
    // A mnemon database cut short (as by an interrupted copy), and one whose redb header is
    // damaged: named as damaged, with the file, and left as it is by reads and writes.
    let whole = e.dir.path().join("whole.redb");
    run(&whole, &["init"]).ok();
    for i in 0..3 {
        run(&whole, &["add", "learning", "--data", &format!("{{\"text\":\"note {i}\"}}")]).ok();
    }
    let bytes = std::fs::read(&whole).unwrap();
    let cut = e.dir.path().join("cut.redb");
    std::fs::write(&cut, &bytes[..bytes.len() / 5]).unwrap();
    let mut header = bytes.clone();
    for b in &mut header[64..200] {
        *b ^= 0x5a;
    }
    let scrambled = e.dir.path().join("scrambled.redb");
    std::fs::write(&scrambled, &header).unwrap();
    for (file, content, why) in
        [(&cut, &bytes[..bytes.len() / 5], "cut short"), (&scrambled, &header[..], "")]
    {
        for args in [&["list"][..], &["add", "learning", "--data", r#"{"text":"more"}"#], &["stats"]] {
            let r = run(file, args);
            r.fails(1, &format!("{} is damaged", file.display()));
            assert!(r.stderr.contains(why), "{}", r.stderr);
        }
        assert_eq!(std::fs::read(file).unwrap(), content, "a damaged file must not be modified");
    }
}

#[test]
fn a_database_held_by_another_process_is_reported() {
    let e = Env::new();
    e.init();
    let holder = redb::Database::open(e.db()).unwrap();
    e.run(&["list"]).fails(1, "in use by another process");
    drop(holder);
    e.run(&["list"]).ok();
}

#[test]
fn readers_share_the_file_and_a_writer_waits_its_turn() {
    let e = Env::new();
    e.init();
    e.add("decision", r#"{"title":"x"}"#, &[]);
    // Another process holds the database for reading: reading commands still work...
    let reader = redb::ReadOnlyDatabase::open(e.db()).unwrap();
    assert_eq!(e.run(&["--json", "list"]).json_lines().len(), 1);
    assert!(e.run(&["stats"]).ok().contains("NAMESPACE"));
    assert_eq!(e.run(&["export", "--all"]).ok().lines().count(), 1);
    // ...while writing is refused with a clear message, and nothing is written.
    e.run(&["add", "decision", "--data", r#"{"title":"y"}"#]).fails(1, "in use by another process");
    drop(reader);
    e.add("decision", r#"{"title":"y"}"#, &[]);
    assert_eq!(e.run(&["--json", "list"]).json_lines().len(), 2);
}

#[test]
fn vectors_put_search_explain_and_index() {
    let env = Env::new();
    env.init();
    let a = env.add("learning", r#"{"text":"bounded queues"}"#, &[]);
    let b = env.add("learning", r#"{"text":"retry with jitter"}"#, &["--tag", "net"]);
    env.run(&["vector", "put", &a, "--space", "toy", "--vector", "[1, 0, 0.1]"]).ok();
    let put = env.run(&["--json", "vector", "put", &b, "--space", "toy", "--vector", "[0, 1, 0.2]"]).json();
    assert_eq!(put["rev"], 0);

    let found = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[0.9, 0.1, 0]",
            "-k",
            "1",
            "--explain",
        ])
        .json();
    assert_eq!(found["hits"][0]["record"]["id"], a.as_str());
    assert_eq!(found["plan"]["path"], "exact");
    let tagged = env
        .run(&["--json", "vector", "search", "--space", "toy", "--vector", "[0.9, 0.1, 0]", "--tag", "net"])
        .json();
    assert_eq!(tagged["hits"].as_array().unwrap().len(), 1);
    assert_eq!(tagged["hits"][0]["record"]["id"], b.as_str());
    let text = env
        .run(&["vector", "search", "--space", "toy", "--vector", "[0.9, 0.1, 0]", "--explain"])
        .ok()
        .to_string();
    assert!(text.contains("answered by the exact path"), "{text}");

    // Time travel: retired now, still found as of before.
    let before = env.run(&["--json", "get", &a]).json()["recorded_at"].as_str().unwrap().to_string();
    env.run(&["retire", &a]).ok();
    let now =
        env.run(&["--json", "vector", "search", "--space", "toy", "--vector", "[1, 0, 0]", "-k", "1"]).json();
    assert_eq!(now["hits"][0]["record"]["id"], b.as_str());
    let then = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[1, 0, 0]",
            "-k",
            "1",
            "--as-of",
            &before,
        ])
        .json();
    assert_eq!(then["hits"][0]["record"]["id"], a.as_str());

    // Bad vectors: usage errors (exit 2), one line, nothing written.
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, 2]"]).fails(2, "dimension mismatch");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[0, 0, 0]"]).fails(2, "zero vector");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, \"x\", 0]"])
        .fails(2, "component 1 is not a number");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, 0"]).fails(2, "not valid JSON");
    env.run(&["vector", "search", "--space", "toy", "--vector", "[1, 0]"])
        .fails(2, "dimension 2 does not match");
    env.run(&["vector", "search", "--space", "toy", "--vector", "[1,0,0]", "--mode", "fast"])
        .fails(2, "unknown mode");
    let unknown = "0190f3a2-0000-7000-8000-000000000000";
    env.run(&["vector", "put", unknown, "--space", "toy", "--vector", "[1, 0, 0]"]).fails(1, "no record");

    // Index status and build (two vectors: the graph is tiny but real), then check.
    env.run(&["index", "build", "--space", "toy"]).ok();
    let status = env.run(&["--json", "index", "status"]).json_lines();
    let toy = status.iter().find(|s| s["space"] == "toy").unwrap();
    assert_eq!(toy["generation"], 1);
    assert_eq!(toy["vectors"], 2);
    // Every record was also embedded with the default (offline) embedder as it was written.
    let hash = status.iter().find(|s| s["space"] == "mnemon-hash-v1-384").unwrap();
    assert_eq!(hash["vectors"], 2);
    assert!(env.db().with_file_name("m.redb.index").is_dir());
    let found = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[0, 1, 0]",
            "--mode",
            "graph",
            "--explain",
        ])
        .json();
    assert_eq!(found["hits"][0]["record"]["id"], b.as_str());
    assert_eq!(found["plan"]["path"], "graph");
    env.run(&["check"]).ok();
}

#[test]
fn search_hybrid_lexical_batch_and_reindex() {
    let env = Env::new();
    env.init();
    let a = env.add("learning", r#"{"text":"Retry with exponential backoff and jitter"}"#, &[]);
    let b = env.add(
        "gotcha",
        r#"{"title":"parseHTTPResponse drops chunked bodies","problem":"chunked","solution":"buffer"}"#,
        &["--tag", "http"],
    );
    env.add("decision", r#"{"title":"Use bounded queues","rationale":"avoid memory blowups"}"#, &[]);
    let hits = env.run(&["--json", "search", "backoff retry"]).json_lines();
    assert_eq!(hits[0]["id"], a.as_str());
    assert_eq!(hits[0]["lexical_rank"], 1);
    let lex = env.run(&["--json", "search", "response", "--mode", "lexical"]).json_lines();
    assert_eq!(lex.len(), 1);
    assert_eq!(lex[0]["id"], b.as_str());
    let tagged = env.run(&["--json", "search", "chunked backoff", "--tag", "http"]).json_lines();
    assert!(tagged.iter().all(|h| h["id"] == b.as_str()));
    let text = env.run(&["search", "bounded queues", "--kind", "decision"]).ok().to_string();
    assert!(text.contains("Use bounded queues"), "{text}");
    env.run(&["search", "x", "--mode", "fuzzy"]).fails(2, "unknown search mode");
    // Another namespace is searched only when asked for.
    env.run(&["--ns", "other", "add", "learning", "--data", r#"{"text":"backoff in the other project"}"#])
        .ok();
    let here = env.run(&["--json", "search", "backoff"]).json_lines();
    assert!(here.iter().all(|h| h["namespace"] == "default"));
    let both = env.run(&["--json", "search", "backoff", "--in", "other"]).json_lines();
    assert!(
        both.iter().any(|h| h["namespace"] == "other") && both.iter().any(|h| h["namespace"] == "default")
    );
    env.run(&["search", "backoff", "--in", " bad"]).fails(2, "invalid namespace");
    env.run(&["search"]).fails(2, "give a query");

    let batch = env.dir.path().join("q.jsonl");
    std::fs::write(&batch, "{\"query\":\"backoff\",\"limit\":1}\nnot json\n{\"query\":\"queues\",\"kinds\":[\"nope\"]}\n{\"query\":\"queues\",\"mode\":\"lexical\"}\n").unwrap();
    let out = env.run(&["--json", "search", "--batch", batch.to_str().unwrap()]).json_lines();
    assert_eq!(out.len(), 4, "one line per query, in order");
    assert_eq!(out[0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(out[0]["results"][0]["id"], a.as_str());
    assert!(out[1]["error"].is_string() && out[2]["error"].as_str().unwrap().contains("unknown kind"));
    assert_eq!(out[3]["results"][0]["kind"], "decision");

    let r = env.run(&["--json", "reindex"]).json();
    assert_eq!(r["embedded"], 0, "everything was embedded on write: {r}");
    assert_eq!(r["embedder"], "mnemon-hash-v1-384");
}

/// Without the local-minilm feature, asking for MiniLM is a clear usage error.
#[cfg(not(feature = "local-minilm"))]
#[test]
fn minilm_needs_the_feature() {
    let env = Env::new();
    env.run(&["--embedder", "minilm", "init"]).fails(2, "local-minilm");
    env.run(&["--embedder", "bert", "init"]).fails(2, "unknown embedder");
}

/// `init` picks the local model when it is installed (`local` names it too), and otherwise
/// the hashing embedder with a note saying how to install the model.
#[cfg(feature = "local-minilm")]
#[test]
fn init_picks_the_local_model_when_installed() {
    let bare = Env::new();
    let r = bare.run(&["--json", "init"]);
    assert_eq!(r.json()["embedder"], "mnemon-hash-v1-384");
    assert!(r.stderr.contains("scripts/fetch-minilm.sh"), "{}", r.stderr);
    bare.run(&["--embedder", "local", "search", "x"]).fails(1, "fetch-minilm.sh");
    let env = Env::new();
    env.install_model();
    let r = env.run(&["--json", "init"]);
    assert_eq!(r.json()["embedder"], "all-MiniLM-L6-v2");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    // Remembered: later commands use it without being told, and `local` is the same model.
    env.add("learning", r#"{"text":"The deploy failed because the database migration timed out"}"#, &[]);
    env.run(&["--embedder", "local", "search", "deploy"]).ok();
    let stats = env.run(&["--json", "stats"]).json();
    assert!(stats.to_string().contains("all-MiniLM-L6-v2"), "{stats}");
}

/// The local MiniLM end to end: chosen at init, remembered by the database, used by search,
/// refused when another embedder is asked for, switched with reindex.
#[cfg(feature = "local-minilm")]
#[test]
fn minilm_is_remembered_and_searches_by_meaning() {
    let env = Env::new();
    env.install_model();
    env.run(&["--embedder", "minilm", "init"]).ok();
    let a =
        env.add("learning", r#"{"text":"The deploy failed because the database migration timed out"}"#, &[]);
    env.add("learning", r#"{"text":"My cat likes to sleep in the sun"}"#, &[]);
    // No shared words: only the meaning connects the query to the record, at a cosine
    // (about 0.36) below what a result needs on its own by default, so a floor of its own is
    // asked for; the unrelated record scores 0.
    let query = "schema change too slow broke release";
    let hits = env.run(&["--json", "search", query, "--mode", "vector", "--min-score", "0.05"]).json_lines();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["id"], a.as_str(), "{hits:?}");
    assert!(env.run(&["--json", "search", query]).json_lines().is_empty());
    let all = env.run(&["--json", "search", query, "--mode", "vector", "--min-score", "0"]).json_lines();
    assert_eq!((all.len(), all[0]["id"].as_str()), (2, Some(a.as_str())), "{all:?}");
    // A query that matches nothing returns nothing.
    assert!(env.run(&["--json", "search", "kubernetes"]).json_lines().is_empty());
    let stats = env.run(&["--json", "stats"]).json();
    assert!(stats.to_string().contains("all-MiniLM-L6-v2"), "{stats}");
    env.run(&["--embedder", "hash", "search", "x"]).fails(2, "all-MiniLM-L6-v2");
    let r = env.run(&["--json", "--embedder", "hash", "reindex"]).json();
    assert_eq!((r["embedder"].as_str(), r["embedded"].as_u64()), (Some("mnemon-hash-v1-384"), Some(2)));
    env.run(&["--embedder", "minilm:/nonexistent/dir", "init"]).fails(1, "fetch-minilm.sh");
}

#[test]
fn task_decision_entity_conversation_groups() {
    let env = Env::new();
    env.init();
    let a = env.add("task", r#"{"title":"schema","priority":"high"}"#, &[]);
    let b = env.add("task", &format!(r#"{{"title":"api","dependencies":["{a}"]}}"#), &[]);
    let cs = env.run(&["--json", "task", "can-start", &b]).json();
    assert_eq!(cs["ready"], false);
    assert_eq!(cs["waiting_on"][0], a.as_str());
    // A cycle is refused by `task depend` and by `add task` alike; nothing is written.
    env.run(&["task", "depend", &a, &b]).fails(1, "cycle");
    env.run(&[
        "add",
        "task",
        "--data",
        r#"{"title":"x","dependencies":["01a2028c-9443-7553-877f-ea5942c3d2f4"]}"#,
    ])
    .fails(1, "not a task valid now");
    env.run(&["task", "start", &a]).ok();
    let blocked = env.run(&["--json", "task", "block", &a, "--reason", "review"]).json();
    assert_eq!(blocked["body"]["status"], "blocked");
    let back = env.run(&["--json", "task", "unblock", &a]).json();
    assert_eq!(back["body"]["status"], "in_progress");
    assert_eq!(back["body"]["status_history"].as_array().unwrap().len(), 3);
    env.run(&["task", "unblock", &a]).fails(1, "not blocked");
    env.run(&["task", "complete", &a]).ok();
    env.run(&["task", "start", &a]).fails(1, "completed");
    assert_eq!(env.run(&["--json", "task", "can-start", &b]).json()["ready"], true);
    let listed = env.run(&["--json", "task", "list"]).json_lines();
    assert_eq!(listed.len(), 1, "completed tasks only with --all");
    assert_eq!(env.run(&["--json", "task", "list", "--all"]).json_lines()[0]["body"]["title"], "schema");
    env.run(&["task", "list", "--status", "nope"]).fails(2, "unknown value");
    // The valid values are listed.
    env.run(&["task", "list", "--status", "doing"])
        .fails(2, "expected one of `backlog`, `planned`, `in_progress`");

    let d = env.add("decision", r#"{"title":"Use SQLite"}"#, &["--tag", "storage"]);
    let n = env.run(&["--json", "decision", "supersede", &d, "--data", r#"{"title":"Use redb"}"#]).json();
    let new = n["id"].as_str().unwrap().to_string();
    let chain = env.run(&["--json", "decision", "history", &new]).json_lines();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0]["body"]["status"], "superseded");
    env.run(&["decision", "link", &new, &b]).ok();
    let task = env.run(&["--json", "get", &b]).json();
    assert_eq!(task["body"]["related_decisions"][0], new.as_str());
    env.run(&["decision", "accept", &d]).fails(1, "superseded");

    let e = env.run(&["--json", "entity", "ensure", "Postgres", "--type", "technology"]).json();
    assert_eq!(e["created"], true);
    let again = env.run(&["--json", "entity", "ensure", "POSTGRES"]).json();
    assert_eq!((again["id"].clone(), again["created"].clone()), (e["id"].clone(), Value::Bool(false)));
    let pg = e["id"].as_str().unwrap().to_string();
    let alias = env.run(&["entity", "ensure", "PG"]).ok().to_string();
    env.run(&["entity", "mention", &alias, "PG is slow"]).ok();
    env.run(&["entity", "set", &pg, "version", "16"]).ok();
    let merged = env.run(&["--json", "entity", "merge", &pg, &alias]).json();
    assert_eq!(merged["body"]["mentions"].as_array().unwrap().len(), 1);
    assert_eq!(merged["body"]["properties"]["version"], 16);
    // The absorbed name stays an alias of the survivor: found, and not created again.
    assert_eq!(env.run(&["--json", "entity", "find", "pg"]).json()["id"], pg.as_str());
    let ensured = env.run(&["--json", "entity", "ensure", "PG"]).json();
    assert_eq!(
        (ensured["id"].clone(), ensured["created"].clone()),
        (Value::from(pg.as_str()), Value::Bool(false))
    );
    assert_eq!(env.run(&["--json", "entity", "find", "postgres"]).json()["id"], pg.as_str());
    env.run(&["entity", "find", "mysql"]).fails(1, "no entity named");
    assert!(env.export_all().contains(r#""aux":"app/alias/"#), "the alias goes with an export");

    let c = env.run(&["conversation", "start", "planning"]).ok().to_string();
    env.run(&["conversation", "add", &c, "Should we use redb?"]).ok();
    env.run(&["conversation", "add", &c, "--role", "assistant", "Yes."]).ok();
    env.run(&["conversation", "end", &c, "--summary", "chose redb"]).ok();
    let shown = env.run(&["--json", "conversation", "show", &c]).json_lines();
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[0]["body"]["summary"], "chose redb");
    assert_eq!(shown[2]["body"]["role"], "assistant");
    env.run(&["conversation", "add", &c, "late"]).fails(1, "ended");
    // A message's title keeps its case; only the role is spelled as in JSON.
    let listed = env.run(&["list", "message"]).ok().to_string();
    assert!(listed.contains("user: Should we use redb?"), "{listed}");
    assert!(listed.contains("assistant: Yes."), "{listed}");

    let tagged = env.run(&["--json", "tagged", "storage"]).json_lines();
    assert_eq!(tagged.len(), 1);
    let stats = env.run(&["--json", "stats", "--domain"]).json();
    assert_eq!(stats["tasks_by_status"]["completed"], 1);
    assert_eq!(stats["entities_by_type"]["technology"], 1);
    let r = env.run(&["--json", "consolidate", "--older-than", "0"]).json();
    assert_eq!(r["decisions_superseded"], 1);
    // A decision superseded from a later time is still valid until then: consolidate leaves
    // it to end by itself (it used to fail retiring it).
    let d = env.add("decision", r#"{"title":"Adopt tokio"}"#, &[]);
    env.run(&["decision", "supersede", &d, "--data", r#"{"title":"Adopt smol"}"#, "--at", "2099-01-01"]).ok();
    let r = env.run(&["--json", "consolidate", "--older-than", "0"]).json();
    assert_eq!(r["decisions_retired"], 0, "{r}");
    assert_eq!(env.run(&["--json", "get", &d]).json()["valid_until"], "2099-01-01T00:00:00.000000Z");
}

#[test]
fn knowledge_agent_and_episode_groups() {
    let env = Env::new();
    env.init();
    let ag = ["--ns", "agent:dev-1", "--json"];
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = ag.to_vec();
        all.extend_from_slice(args);
        env.run(&all)
    };
    let k = run(&["knowledge", "learn", "--category", "testing", "Run the tests before committing"]).json();
    assert_eq!(k["reinforced"], false);
    let again =
        run(&["knowledge", "learn", "--category", "testing", "run the tests before committing!"]).json();
    assert_eq!((again["id"].clone(), again["reinforced"].clone()), (k["id"].clone(), Value::Bool(true)));
    let id = k["id"].as_str().unwrap().to_string();
    let r = run(&["knowledge", "reinforce", &id]).json();
    assert!((r["confidence"].as_f64().unwrap() - 0.7).abs() < 1e-6, "{r}");
    assert_eq!(run(&["knowledge", "list"]).json_lines().len(), 1);

    run(&["agent", "prefer", "--data", r#"{"indent": 4}"#]).ok();
    let p = run(&["agent", "preferences", "--defaults", r#"{"indent": 2, "tabs": false}"#]).json();
    assert_eq!(p, serde_json::json!({"indent": 4, "tabs": false}));
    run(&["agent", "completed", "--data", r#"{"task":"T-1","iterations":3,"quality_gate_passed":true}"#])
        .ok();
    run(&["agent", "completed", "--data", r#"{"task":"T-2","iterations":"many"}"#])
        .fails(2, "invalid task metrics");
    run(&["agent", "error", "E0502 borrow", "--resolution", "clone first"]).ok();
    let perf = run(&["agent", "performance"]).json();
    assert_eq!(perf["tasks_completed"], 1);
    let ctx = run(&["agent", "context"]).json();
    assert!(ctx["context"].as_str().unwrap().contains("[testing] Run the tests before committing"), "{ctx}");

    let e = run(&[
        "episode",
        "store",
        "Compared redb and sled for storage",
        "--type",
        "research",
        "--task",
        "T-9",
    ])
    .json();
    let eid = e["id"].as_str().unwrap().to_string();
    let hits = run(&["episode", "query", "redb storage"]).json_lines();
    assert_eq!(hits[0]["id"], eid.as_str());
    assert_eq!(run(&["episode", "access", &eid]).json()["count"], 1, "counted, and flushed at exit");
    // The count goes through an export and an import, of all namespaces or of this one.
    for args in [&["export", "--all"][..], &["--ns", "agent:dev-1", "export"][..]] {
        let dump = env.run(args).ok().to_string();
        assert!(
            dump.lines().last().is_some_and(|l| l.starts_with(r#"{"aux":"app/access/agent:dev-1/"#)),
            "{dump}"
        );
        let other = Env::new();
        other.init();
        let file = other.dir.path().join("dump.jsonl");
        std::fs::write(&file, &dump).unwrap();
        other.run(&["import", file.to_str().unwrap()]).ok();
        let count = other.run(&["--ns", "agent:dev-1", "--json", "episode", "access", &eid]).json();
        assert_eq!(count["count"], 1, "{args:?}");
        assert_eq!(other.export_all(), env.export_all(), "{args:?}");
    }
    let c = run(&["episode", "context", "T-9", "--max-tokens", "100"]).json();
    assert_eq!(c["ids"][0], eid.as_str());
    run(&["episode", "prune"]).fails(2, "--days");
    assert_eq!(run(&["episode", "prune", "--keep", "0"]).json()["retired"], 1);
}

#[test]
fn project_group() {
    let env = Env::new();
    env.init();
    let pj = |args: &[&str]| {
        let mut all = vec!["--ns", "project:1a2b3c4d-app", "--json"];
        all.extend_from_slice(args);
        env.run(&all)
    };
    let p = pj(&[
        "project",
        "pattern",
        "--agent",
        "dev-1",
        "--data",
        r#"{"title":"Errors as values","description":"Return Result","category":"rust"}"#,
    ])
    .json();
    assert_eq!(p["existing"], false);
    let again = pj(&[
        "project",
        "pattern",
        "--data",
        r#"{"title":"errors as values","example":"fn f() -> Result<()>"}"#,
    ])
    .json();
    assert_eq!((again["id"].clone(), again["existing"].clone()), (p["id"].clone(), Value::Bool(true)));
    pj(&["project", "pattern", "--data", r#"{"description":"no title"}"#]).fails(2, "title");
    pj(&[
        "project",
        "gotcha",
        "--data",
        r#"{"title":"One writer","problem":"deadlock","solution":"group commit","severity":"high"}"#,
    ])
    .ok();
    assert_eq!(pj(&["project", "gotchas", "--severity", "high"]).json_lines().len(), 1);
    let back =
        pj(&["project", "relate", "api", "depends_on", "storage"]).json()["id"].as_str().unwrap().to_string();
    // The refusal names the relationship that closes the path, never a nil id.
    pj(&["project", "relate", "storage", "depends_on", "api"]).fails(1, &format!("record {back}: "));
    pj(&["project", "relate", "storage", "depends_on", "api"]).fails(1, "cycle");
    assert_eq!(pj(&["project", "relations", "api"]).json_lines().len(), 1);
    pj(&["project", "learn", "Index files live beside the db", "--agent", "dev-2", "--type", "note"]).ok();
    let md = env.run(&["--ns", "project:1a2b3c4d-app", "project", "learnings"]).ok().to_string();
    assert!(
        md.starts_with("# Project Learnings") && md.contains("### [dev-2]") && md.contains("**Type:** note"),
        "{md}"
    );
    let ctx = pj(&["project", "context"]).json();
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains("**One writer**: deadlock → group commit")
            && text.contains("Example: `fn f() -> Result<()>`"),
        "{text}"
    );
    let found = pj(&["project", "search", "writer deadlock"]).json_lines();
    assert!(found.iter().any(|r| r["kind"] == "gotcha"), "{found:?}");
}

#[test]
fn memory_group() {
    let env = Env::new();
    env.init();
    let p = "project:/home/me/src/yume";
    let a = env
        .run(&[
            "--json",
            "memory",
            "add",
            "learnings",
            "Uses Zustand for state",
            "--scope",
            p,
            "--importance",
            "4",
        ])
        .json();
    assert!(
        a["namespace"].as_str().unwrap().starts_with("project:")
            && a["namespace"].as_str().unwrap().ends_with("-yume")
    );
    env.run(&["memory", "add", "errors", "emit fails → create the window first", "--scope", p]).ok();
    env.run(&["memory", "add", "preferences", "Prefers strict mode", "--importance", "5"]).ok();
    env.run(&["memory", "add", "learnings", "x", "--importance", "9"]).fails(2, "importance");
    // A pattern of an existing title: the same again is reported as existing; another
    // description or importance supersedes it.
    let add_pattern = |text: &str, importance: &str| {
        env.run(&["--json", "memory", "add", "patterns", text, "--scope", p, "--importance", importance])
            .json()
    };
    let first = add_pattern("Store slices: one slice per feature", "3");
    let same = add_pattern("Store slices: one slice per feature", "3");
    assert_eq!((same["id"].clone(), same["existing"].clone()), (first["id"].clone(), Value::Bool(true)));
    let changed = add_pattern("Store slices: a different description now", "5");
    assert_eq!(changed["superseded"], first["id"]);
    let shown = env.run(&["memory", "show", "--scope", p, "--section", "patterns"]).ok().to_string();
    assert!(
        shown.contains("a different description now") && !shown.contains("one slice per feature"),
        "{shown}"
    );
    let plain = env.run(&[
        "memory",
        "add",
        "patterns",
        "Store slices: a different description now",
        "--scope",
        p,
        "--importance",
        "5",
    ]);
    assert!(plain.ok().contains("already there"));
    env.run(&["memory", "add", "notes", "x"]).fails(2, "unknown section");
    env.run(&["memory", "add", "learnings", "x", "--scope", "team:x"]).fails(2, "unknown scope");
    env.run(&["memory", "brief", "--scope", p, "Tauri 2 with React 19"]).ok();
    let shown = env.run(&["memory", "show", "--scope", p]).ok().to_string();
    assert!(shown.contains("# Brief\nTauri 2") && shown.contains("| importance:4 | ttl:90 | id:"), "{shown}");
    let projects = env.run(&["--json", "memory", "projects"]).json_lines();
    assert_eq!(projects.len(), 1);
    let md = env.run(&["memory", "show", "--scope", p, "--section", "learnings"]).ok().to_string();
    let file = env.dir.path().join("learnings.md");
    std::fs::write(&file, &md).unwrap();
    let r = env
        .run(&[
            "--json",
            "memory",
            "import",
            file.to_str().unwrap(),
            "--section",
            "learnings",
            "--scope",
            "project:/tmp/copy",
        ])
        .json();
    assert_eq!(r["imported"], 1);
    let graph = env.dir.path().join("memory.jsonl");
    std::fs::write(&graph, "{\"type\":\"entity\",\"name\":\"user\",\"entityType\":\"person\",\"observations\":[\"Likes dark mode\"]}\n").unwrap();
    assert_eq!(env.run(&["--json", "memory", "import-graph", graph.to_str().unwrap()]).json()["imported"], 1);
    // Importing it again adds nothing: the preference is listed once.
    assert_eq!(env.run(&["--json", "memory", "import-graph", graph.to_str().unwrap()]).json()["imported"], 0);
    let prefs = env.run(&["memory", "show", "--section", "preferences"]).ok().to_string();
    assert_eq!(prefs.matches("Likes dark mode").count(), 1, "{prefs}");
    let ctx = env.run(&["--json", "memory", "context", "--scope", p, "--query", "why does emit fail"]).json();
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains("## brief") && text.contains("## recent errors") && text.contains("## preferences"),
        "{text}"
    );
    // A budget smaller than the block's frame gets nothing; a larger one is kept to.
    for budget in ["0", "5", "12"] {
        let small = env.run(&["--json", "memory", "context", "--scope", p, "--budget", budget]).json();
        assert_eq!(small["context"], "", "budget {budget}");
    }
    let some = env.run(&["--json", "memory", "context", "--scope", p, "--budget", "40"]).json();
    let some = some["context"].as_str().unwrap();
    assert!(some.starts_with("<mnemon-memory") && some.chars().count() <= 40 * 4, "{some}");
    let id = a["id"].as_str().unwrap();
    env.run(&["memory", "delete", id, "--scope", p]).ok();
    assert!(!env.run(&["memory", "show", "--scope", p, "--section", "learnings"]).ok().contains("Zustand"));
    assert_eq!(env.run(&["--json", "memory", "clear", "--scope", p]).json()["cleared"], 3);
    env.run(&["memory", "prune"]).ok();
}

#[test]
fn context_and_prune_commands() {
    let env = Env::new();
    env.init();
    env.run(&[
        "project",
        "gotcha",
        "--data",
        r#"{"title":"One writer","problem":"deadlock","solution":"group commit","severity":"critical"}"#,
    ])
    .ok();
    env.add("decision", r#"{"title":"Use redb","rationale":"embedded"}"#, &[]);
    env.add("learning", r#"{"text":"redb commits fsync by default"}"#, &[]);
    let b = env.run(&["--json", "context", "--query", "redb", "--budget", "500"]).json();
    let text = b["context"].as_str().unwrap();
    assert!(text.starts_with("## critical gotchas\n- One writer"), "{text}");
    assert!(b["tokens"].as_u64().unwrap() <= 500);
    let xml = env.run(&["context", "--format", "xml", "--budget", "40"]);
    assert!(xml.ok().starts_with("<mnemon-context"));
    assert!(xml.stderr.contains("tokens (o200k_base) of 40"), "{}", xml.stderr);
    env.run(&["context", "--format", "yaml"]).fails(2, "unknown format");
    env.run(&["episode", "store", "one"]).ok();
    env.run(&["episode", "store", "two"]).ok();
    let dry = env.run(&["--json", "prune", "--dry-run", "--episode-cap", "1"]).json();
    assert_eq!((dry["episodes_capped"].as_u64(), dry["dry_run"].as_bool()), (Some(1), Some(true)));
    let done = env.run(&["--json", "prune", "--episode-cap", "1"]).json();
    assert_eq!(done["episodes_capped"], 1);
    assert_eq!(env.run(&["--json", "prune", "--episode-cap", "1"]).json()["episodes_capped"], 0);
}

#[test]
fn import_formats_mcp_jsonl_and_markdown() {
    let env = Env::new();
    env.init();
    let kg = env.dir.path().join("memory.jsonl");
    std::fs::write(
        &kg,
        "{\"type\":\"entity\",\"name\":\"Alice\",\"entityType\":\"person\",\"observations\":[\"likes Rust\",\"works on mnemon\"]}\n\
         not json\n\
         {\"type\":\"relation\",\"from\":\"Alice\",\"to\":\"mnemon\",\"relationType\":\"works_on\"}\n\
         {\"type\":\"entity\",\"observations\":[]}\n",
    )
    .unwrap();
    let r = env.run(&["--json", "import", "--format", "mcp-jsonl", kg.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("memory.jsonl:2: invalid JSON") && r.stderr.contains("memory.jsonl:4:"),
        "{}",
        r.stderr
    );
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 4, "an entity, two observations, a relation: {sum}");
    // Again: nothing new.
    let again = env.run(&["--json", "import", "--format", "mcp-jsonl", kg.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(2)), "{sum}");
    assert_eq!(env.run(&["--json", "list", "observation"]).json_lines().len(), 2);

    let dir = env.dir.path().join("mem");
    std::fs::create_dir_all(dir.join("global")).unwrap();
    std::fs::create_dir_all(dir.join("projects/7e2aaa07-yume")).unwrap();
    std::fs::write(dir.join("global/preferences.md"), "# Preferences\n\n## 2026-01-28T10:00:00Z | importance:5 | ttl:permanent | id:p1\nPrefers strict mode\n").unwrap();
    std::fs::write(dir.join("projects/7e2aaa07-yume/brief.md"), "Tauri 2 with React 19.\n").unwrap();
    std::fs::write(
        dir.join("projects/7e2aaa07-yume/learnings.md"),
        "# Learnings\n\n## 2026-01-28T10:00:00Z | importance:5 | ttl:permanent | id:abc\nUses Zustand\n",
    )
    .unwrap();
    let sum = env.run(&["--json", "import", "--format", "markdown", dir.to_str().unwrap()]).json();
    assert_eq!(sum["imported"], 3, "{sum}");
    let sum = env.run(&["--json", "import", "--format", "markdown", dir.to_str().unwrap()]).json();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(3)), "{sum}");
    let shown = env.run(&["memory", "show", "--scope", "project-id:7e2aaa07-yume"]).ok().to_string();
    assert!(shown.contains("Tauri 2") && shown.contains("Uses Zustand"), "{shown}");
    env.run(&["import", "--format", "yaml", kg.to_str().unwrap()]).fails(2, "unknown import format");
}

#[test]
fn import_assistant_json_files() {
    let env = Env::new();
    env.init();
    let dir = env.dir.path().join("assistant");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("decisions.json"), r#"[
      {"id":"1714000000-abc","type":"decision","title":"Use SQLite","description":"","rationale":"simple","context":"","status":"superseded","tags":["db"],"relatedTasks":["1714000001-def"],"supersededBy":"1714000002-ghi","createdAt":"2024-04-25T00:00:00Z","updatedAt":"2024-04-26T00:00:00Z","validFrom":"2024-04-25T00:00:00Z","validUntil":"2024-04-26T00:00:00Z"},
      {"id":"1714000002-ghi","type":"decision","title":"Use redb","rationale":"embedded","status":"accepted","tags":["db"],"relatedDecisions":["1714000000-abc"],"validFrom":"2024-04-26T00:00:00Z"},
      {"type":"decision","title":"no id"}
    ]"#).unwrap();
    std::fs::write(dir.join("tasks.json"), r#"[
      {"id":"1714000001-def","type":"task","title":"Port the store","status":"in_progress","priority":"high","dependencies":[],"relatedDecisions":["1714000000-abc"],"tags":[],"statusHistory":[{"from":"backlog","to":"in_progress","timestamp":"2024-04-25T10:00:00Z"}],"validFrom":"2024-04-25T00:00:00Z"},
      {"id":"1714000003-jkl","type":"task","title":"Bad status","status":"someday"},
      {"id":"1714000004-mno","title":"No type: the file says task","status":"backlog"}
    ]"#).unwrap();
    std::fs::write(dir.join("entities.json"), r#"[{"id":"e1","type":"entity","entityType":"technology","name":"redb","description":"a store","properties":{"version":"4"},"mentions":[{"context":"we use redb","timestamp":"2024-04-26T00:00:00Z","source":"conversation"}],"tags":[]}]"#).unwrap();
    std::fs::write(dir.join("conversations.json"), r#"[{"id":"c1","startedAt":"2024-04-26T00:00:00Z","endedAt":"2024-04-26T01:00:00Z","summary":"chose redb","messages":[{"role":"user","content":"redb?","timestamp":"2024-04-26T00:00:01Z"},{"role":"assistant","content":"yes","timestamp":"2024-04-26T00:00:02Z"}],"extractedDecisions":["1714000002-ghi"]}]"#).unwrap();
    let r = env.run(&["--json", "import", "--format", "assistant", dir.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("decisions.json:3: item 3: no id") && r.stderr.contains("tasks.json:2:"),
        "{}",
        r.stderr
    );
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 6, "{sum}");
    // References carried over to the new ids; time travel sees the old decision.
    let tasks = env.run(&["--json", "task", "list"]).json_lines();
    assert_eq!(tasks[0]["body"]["status_history"][0]["to"], "in_progress");
    let old = env.run(&["--json", "list", "decision", "--as-of", "2024-04-25T12:00:00Z"]).json_lines();
    assert_eq!(old[0]["body"]["title"], "Use SQLite");
    assert_eq!(tasks[0]["body"]["related_decisions"][0], old[0]["id"]);
    let now = env.run(&["--json", "list", "decision"]).json_lines();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["body"]["related_decisions"][0], old[0]["id"]);
    // supersededBy is a supersession: the chain leads from the old decision to the new one.
    let chain = env.run(&["--json", "chain", now[0]["id"].as_str().unwrap()]).json_lines();
    let titles: Vec<&str> = chain.iter().map(|r| r["body"]["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Use SQLite", "Use redb"], "{chain:?}");
    assert!(env.run(&["task", "list"]).ok().contains("No type: the file says task"));
    let conv = env.run(&["--json", "conversation", "recent"]).json_lines();
    let shown = env.run(&["--json", "conversation", "show", conv[0]["id"].as_str().unwrap()]).json_lines();
    assert_eq!(shown.len(), 3);
    // Again: nothing new.
    let again = env.run(&["--json", "import", "--format", "assistant", dir.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(6)), "{sum}");
}

#[test]
fn import_crewly_knowledge_and_agent_files() {
    let env = Env::new();
    env.init();
    let k = env.dir.path().join("knowledge");
    std::fs::create_dir_all(&k).unwrap();
    std::fs::write(k.join("patterns.json"), r#"[{"id":"p1","title":"Errors as values","description":"Return Result","category":"rust","example":"fn f() -> Result<()>","discoveredBy":"dev-1","createdAt":"2025-01-01T00:00:00Z"},{"id":"p2","title":"","description":"no title"}]"#).unwrap();
    std::fs::write(k.join("decisions.json"), r#"[{"id":"d1","title":"Use redb","decision":"redb 4","rationale":"embedded","decidedAt":"2025-01-02T00:00:00Z"}]"#).unwrap();
    std::fs::write(k.join("gotchas.json"), r#"[{"id":"g1","title":"One writer","problem":"deadlock","solution":"group commit","severity":"high"}]"#).unwrap();
    std::fs::write(
        k.join("relationships.json"),
        r#"[{"id":"r1","from":"api","to":"storage","relationshipType":"depends_on"}]"#,
    )
    .unwrap();
    std::fs::write(k.join("learnings.md"), "# Project Learnings\n\n\n## 2025-01-03\n### [dev-2] 10:00:00\nIndex files live beside the db\n\n**Type:** note\n---\n\n## 2025-01-04\n### [dev-1] 11:30:00\nredb commits fsync\n---\n").unwrap();
    let r = env.run(&["--ns", "project:x", "--json", "import", "--format", "crewly", k.to_str().unwrap()]);
    assert_eq!(r.code, 1, "one pattern has no title: {}", r.stderr);
    assert!(r.stderr.contains("patterns.json:2:"), "{}", r.stderr);
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 6, "{sum}");
    let md = env.run(&["--ns", "project:x", "project", "learnings"]).ok().to_string();
    assert!(
        md.contains("## 2025-01-03\n### [dev-2] 10:00:00\nIndex files live beside the db")
            && md.contains("**Type:** note"),
        "{md}"
    );
    let ctx = env.run(&["--ns", "project:x", "project", "context"]).ok().to_string();
    assert!(
        ctx.contains("**One writer**") && ctx.contains("api depends_on storage") && ctx.contains("Use redb"),
        "{ctx}"
    );
    let again =
        env.run(&["--ns", "project:x", "--json", "import", "--format", "crewly", k.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(6)), "{sum}");

    let a = env.dir.path().join("agent");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::write(a.join("role-knowledge.json"), r#"[{"id":"k1","category":"testing","content":"Run the tests first","confidence":0.8,"createdAt":"2025-01-01T00:00:00Z"}]"#).unwrap();
    std::fs::write(a.join("preferences.json"), r#"{"indent": 4, "verbosity": "terse"}"#).unwrap();
    std::fs::write(a.join("performance.json"), r#"{"taskCompletions":[{"taskId":"T-1","iterations":2,"qualityGatePassed":true}],"errorPatterns":[{"pattern":"E0502","resolution":"clone","occurrences":3}]}"#).unwrap();
    let sum = env
        .run(&["--ns", "agent:dev-1", "--json", "import", "--format", "crewly", a.to_str().unwrap()])
        .json();
    assert_eq!(sum["imported"], 5, "{sum}");
    let ctx = env.run(&["--ns", "agent:dev-1", "--json", "agent", "context"]).json();
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains("[testing] Run the tests first")
            && text.contains("E0502 → clone")
            && text.contains("indent: 4"),
        "{text}"
    );
    let perf = env.run(&["--ns", "agent:dev-1", "--json", "agent", "performance"]).json();
    assert_eq!(perf["common_errors"][0][2], 3);
}

/// `tests/data/reference-memory.jsonl` was written by the reference server's own saveGraph
/// code (`reference-memory.gen.mjs` beside it, run with node): import then export gives it
/// back byte for byte.
#[test]
fn mcp_jsonl_round_trip_is_byte_identical() {
    let env = Env::new();
    env.init();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-memory.jsonl");
    let sum = env
        .run(&["--ns", "kg", "--json", "import", "--format", "mcp-jsonl", reference.to_str().unwrap()])
        .json();
    assert_eq!(sum["imported"], 3 + 7 + 2, "{sum}");
    let out = env.run(&["--ns", "kg", "export", "--format", "mcp-jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, std::fs::read_to_string(&reference).unwrap());
    env.run(&["export", "--format", "mcp-jsonl", "--all"]).fails(2, "one namespace");
    env.run(&["export", "--format", "csv"]).fails(2, "unknown export format");
    // An empty graph is an empty file, as the reference writes it.
    assert_eq!(env.run(&["--ns", "empty", "export", "--format", "mcp-jsonl"]).stdout, "");
}

/// `mnemon mcp` as a real child process speaking JSON-RPC on stdio (a raw client; the official
/// SDK drives it in mcp_sdk.rs): the reference's tool list, results, errors, the resource,
/// and a clean exit on EOF with the writes durable.
#[test]
fn mcp_server_speaks_the_reference_contract() {
    let env = Env::new();
    env.init();
    let msgs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_entities","arguments":{"entities":[{"name":"Alice","entityType":"person","observations":["likes Rust"]}]}}}"#,
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is only JSON-RPC")).collect();
    let by_id = |id: u64| {
        lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("no reply {id}: {lines:?}")).clone()
    };
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "mnemon");
    let tools = by_id(2)["result"]["tools"].as_array().unwrap().clone();
    let reference: Value = serde_json::from_str(include_str!("../src/mcp/reference-tools.json")).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names[..9],
        [
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes"
        ]
    );
    assert_eq!(
        names[9..],
        [
            "remember",
            "recall",
            "context",
            "get",
            "list",
            "supersede",
            "history",
            "chain",
            "task",
            "forget",
            "memory_add",
            "memory_show",
            "memory_context",
            "episode_store",
            "episode_query",
            "knowledge_learn",
            "knowledge_reinforce",
            "knowledge_list",
            "project_relate",
            "project_knowledge"
        ]
    );
    for (ours, theirs) in tools.iter().zip(reference.as_array().unwrap()) {
        assert_eq!(ours["inputSchema"], theirs["inputSchema"]);
        assert_eq!(ours["outputSchema"], theirs["outputSchema"]);
        assert_eq!(ours["annotations"], theirs["annotations"]);
    }
    let created = by_id(3)["result"].clone();
    assert_eq!(created["structuredContent"]["entities"][0]["name"], "Alice");
    assert!(
        created["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[\n  {\n    \"name\": \"Alice\",\n    \"entityType\""),
        "{created}"
    );
    // A new process sees the write (durable at EOF); errors are results and the server lives on.
    let msgs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_observations","arguments":{"observations":[{"entityName":"Nobody","contents":["x"]}]}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_nodes","arguments":{"query":42}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"memory://knowledge-graph"}}"#,
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_id = |id: u64| lines.iter().find(|l| l["id"] == id).unwrap().clone();
    assert_eq!(by_id(2)["result"]["isError"], true);
    assert!(
        by_id(2)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Entity with name Nobody not found")
    );
    assert_eq!(by_id(3)["result"]["isError"], true);
    assert!(
        by_id(4)["result"]["content"][0]["text"].as_str().unwrap().contains("Tool no_such_tool not found")
    );
    let graph: Value =
        serde_json::from_str(by_id(5)["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(graph["entities"][0]["observations"][0], "likes Rust");
}

/// Bad requests to `mnemon mcp` get errors and the server keeps serving with its data intact:
/// a request before initialize, a line that is not JSON, wrongly typed arguments, NUL bytes
/// and a 2 MB string.
#[test]
fn mcp_server_survives_bad_requests() {
    let env = Env::new();
    env.init();
    let big = "x".repeat(2_000_000);
    let create = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_entities",
        "arguments":{"entities":[{"name":"Nul\u{0}Name","entityType":"p","observations":["a\u{0}b", big]}]}}});
    let msgs = [
        r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        create.to_string(),
        "this is not json".to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_entities","arguments":{"entities":"nope"}}}"#.to_string(),
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is only JSON-RPC")).collect();
    let by_id =
        |id: u64| lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("no reply {id}")).clone();
    assert!(by_id(0)["error"].is_object(), "a request before initialize is refused");
    assert_eq!(by_id(2)["result"]["isError"], false);
    assert_eq!(by_id(3)["result"]["isError"], true);
    // The data is intact: the next process reads it back, NUL bytes and all.
    let graph = env.run(&["--ns", "kg", "export", "--format", "mcp-jsonl"]).stdout;
    let entity: Value = serde_json::from_str(graph.lines().next().unwrap()).unwrap();
    assert_eq!(entity["name"], "Nul\u{0}Name");
    assert_eq!(entity["observations"][1].as_str().unwrap().len(), 2_000_000);
}

/// A missing argument is named in the one-line error, with the command's usage.
#[test]
fn a_missing_argument_is_named() {
    let env = Env::new();
    env.init();
    env.run(&["get"]).fails(2, "<ID>");
    env.run(&["get"]).fails(2, "usage: mnemon get");
    env.run(&["task", "block", "0123456789ab"]).fails(2, "--reason");
}

/// The importance sets a time to live only for the kinds of scoped memory, counted from when
/// the record is recorded: a back-dated record is never hidden as it is added.
#[test]
fn importance_ttl_counts_from_the_recording_and_only_for_memory_kinds() {
    let e = Env::new();
    e.init();
    let decision =
        e.add("decision", r#"{"title":"Use redb"}"#, &["--valid-from", "2024-01-10", "--importance", "4"]);
    let got = e.run(&["--json", "get", &decision]).json();
    assert_eq!((got["status"].clone(), got["expires_at"].clone()), (Value::from("active"), Value::Null));
    assert_eq!(e.run(&["--json", "list", "decision"]).json_lines().len(), 1);
    let learning = e.add(
        "learning",
        r#"{"text":"Back-dated, short-lived"}"#,
        &["--valid-from", "2024-01-10", "--importance", "1"],
    );
    let got = e.run(&["--json", "get", &learning]).json();
    assert_eq!(got["status"], "active", "{got}");
    let expires = got["expires_at"].as_str().unwrap();
    assert!(expires > "2026-01-01", "one day from the recording, not from 2024-01-10: {expires}");
}

/// Memory commands and markdown imports go to the scope of --ns when no --scope is given,
/// refuse a --ns that is no scope or disagrees with --scope, and take the project id that
/// `memory projects` prints as it is.
#[test]
fn memory_scope_follows_the_namespace() {
    let e = Env::new();
    e.init();
    let p = "/home/me/src/yume";
    let first = e
        .run(&["--json", "memory", "add", "learnings", "Uses Zustand", "--scope", &format!("project:{p}")])
        .json();
    let ns = first["namespace"].as_str().unwrap().to_string();
    let id = ns.strip_prefix("project:").unwrap();
    let listed = e.run(&["memory", "projects"]).ok().to_string();
    assert!(listed.contains(id), "{listed}");
    // The printed id, as --scope or through --ns, is the same project.
    let again = e
        .run(&["--json", "memory", "add", "learnings", "Uses Vite", "--scope", &format!("project:{id}")])
        .json();
    assert_eq!(again["namespace"], ns.as_str());
    let by_ns = e.run(&["--json", "--ns", &ns, "memory", "add", "learnings", "Uses pnpm"]).json();
    assert_eq!(by_ns["namespace"], ns.as_str());
    let shown = e.run(&["--ns", &ns, "memory", "show", "--section", "learnings"]).ok().to_string();
    assert!(shown.contains("Zustand") && shown.contains("Vite") && shown.contains("pnpm"), "{shown}");
    // A markdown import follows --ns too; a --ns that is no scope, or disagrees, is refused.
    let md = e.dir.path().join("learnings.md");
    std::fs::write(&md, "# Learnings\n\n## 2026-01-28T10:00:00Z | importance:4 | ttl:90 | id:abc123\nKeep builds reproducible\n").unwrap();
    e.run(&["--ns", &ns, "import", "--format", "markdown", md.to_str().unwrap()]).ok();
    let shown = e.run(&["--ns", &ns, "memory", "show", "--section", "learnings"]).ok().to_string();
    assert!(shown.contains("Keep builds reproducible"), "{shown}");
    e.run(&["--ns", "proj", "import", "--format", "markdown", md.to_str().unwrap()])
        .fails(2, "not a memory scope");
    e.run(&["--ns", "agent:bob", "memory", "add", "learnings", "x", "--scope", "global"])
        .fails(2, "give one of them");
    assert!(
        !e.run(&["memory", "show", "--section", "learnings"]).ok().contains("Zustand"),
        "global stays apart"
    );
}

/// `mnemon context` shows the entities the work touches and their relationships, keeps the
/// backlog (new tasks start there) at the end of the budget, and is built as of any time on
/// both axes: the decision in force then, only what was known then.
#[test]
fn context_has_entities_relationships_the_backlog_and_any_time() {
    let e = Env::new();
    e.init();
    let old = e.add("decision", r#"{"title":"Store memories in SQLite"}"#, &["--valid-from", "2024-01-10"]);
    e.run(&["supersede", &old, "--data", r#"{"title":"Store memories in redb"}"#, "--at", "2024-03-01"]).ok();
    e.run(&["project", "relate", "StorageService", "depends_on", "Database"]).ok();
    e.add("entity", r#"{"name":"Database","entity_type":"component","description":"the redb file"}"#, &[]);
    e.add("task", r#"{"title":"Shard the file someday"}"#, &[]);
    let before_gotcha =
        e.run(&["--json", "list", "task"]).json_lines()[0]["recorded_at"].as_str().unwrap().to_string();
    e.add(
        "gotcha",
        r#"{"title":"fsync cost","problem":"slow commits","solution":"group commit","severity":"critical"}"#,
        &[],
    );

    let now = e.run(&["context"]).ok().to_string();
    for part in [
        "## critical gotchas\n- fsync cost",
        "## active decisions\n- Store memories in redb [2024-03-01 → now]",
        "## entities\n- Database (component): the redb file",
        "## relationships\n- StorageService depends_on Database",
        "## backlog\n- Shard the file someday [backlog, medium]",
    ] {
        assert!(now.contains(part), "{part:?} missing from:\n{now}");
    }
    assert!(now.find("## relationships").unwrap() < now.find("## backlog").unwrap(), "{now}");
    assert!(!now.contains("SQLite"), "{now}");
    // A query keeps the entities it names (and their relationships), not the others.
    let about_db = e.run(&["context", "--query", "database file"]).ok().to_string();
    assert!(about_db.contains("Database (component)") && about_db.contains("depends_on"), "{about_db}");
    let elsewhere = e.run(&["context", "--query", "kubernetes"]).ok().to_string();
    assert!(!elsewhere.contains("## entities") && !elsewhere.contains("## relationships"), "{elsewhere}");

    // As of February 2024: the SQLite decision was in force, and nothing else existed yet.
    let then = e.run(&["context", "--as-of", "2024-02-01"]).ok().to_string();
    assert_eq!(then, "## active decisions\n- Store memories in SQLite [2024-01-10 → 2024-03-01]", "{then}");
    // As known before the gotcha was recorded: everything but the gotcha.
    let known = e.run(&["context", "--known-at", &before_gotcha]).ok().to_string();
    assert!(known.contains("Store memories in redb") && !known.contains("fsync"), "{known}");
    let xml = e.run(&["--json", "context", "--format", "xml", "--as-of", "2024-02-01"]).json();
    assert!(xml["context"].as_str().unwrap().contains("<section name=\"active decisions\">"), "{xml}");
    e.run(&["context", "--as-of", "yesterday-ish"]).fails(2, "yesterday-ish");
    // A rejected decision superseded from a later time is still valid, but was never in
    // force: it is not an active decision.
    let rejected = e.add("decision", r#"{"title":"Adopt tokio"}"#, &[]);
    e.run(&["decision", "reject", &rejected]).ok();
    e.run(&["decision", "supersede", &rejected, "--data", r#"{"title":"Adopt smol"}"#, "--at", "2099-01-01"])
        .ok();
    let later = e.run(&["context"]).ok().to_string();
    assert!(!later.contains("Adopt tokio"), "{later}");
}

/// One behaviour for one action, whichever command does it: `decision supersede` takes
/// `--at` as `supersede` does; both keep the old decision's tags (unless new ones are given)
/// and link the new decision to the old; `add episode` and `episode store` treat an
/// importance alike (it ranks, it sets no expiry).
#[test]
fn supersession_and_importance_behave_alike_across_commands() {
    let e = Env::new();
    e.init();
    let get = |id: &str| e.run(&["--json", "get", id]).json();
    for generic in [false, true] {
        let old = e.add(
            "decision",
            r#"{"title":"Cache in memory"}"#,
            &["--tag", "cache", "--valid-from", "2024-01-01"],
        );
        let data = r#"{"title":"Cache in redb"}"#;
        let new = if generic {
            e.run(&["supersede", &old, "--data", data, "--at", "2024-03-01"]).ok().to_string()
        } else {
            e.run(&["decision", "supersede", &old, "--data", data, "--at", "2024-03-01"]).ok().to_string()
        };
        let n = get(&new);
        assert_eq!(n["valid_from"], "2024-03-01T00:00:00.000000Z", "generic {generic}: {n}");
        assert_eq!(n["tags"], serde_json::json!(["cache"]), "generic {generic}: {n}");
        assert_eq!(n["body"]["related_decisions"], serde_json::json!([old]), "generic {generic}: {n}");
        assert_eq!(n["supersedes"], old.as_str());
        let o = e.run(&["--json", "get", &old, "--as-of", "2024-02-01"]).json();
        assert_eq!(o["valid_until"], "2024-03-01T00:00:00.000000Z", "{o}");
    }
    // New tags replace the old ones.
    let old = e.add("decision", r#"{"title":"Log to files"}"#, &["--tag", "logs"]);
    let new = e
        .run(&["supersede", &old, "--data", r#"{"title":"Log to journald"}"#, "--tag", "ops"])
        .ok()
        .to_string();
    assert_eq!(get(&new)["tags"], serde_json::json!(["ops"]));

    let added = e.add("episode", r#"{"content":"Paired on the retry policy"}"#, &["--importance", "2"]);
    let stored = e.run(&["episode", "store", "Paired on the backoff", "--importance", "2"]).ok().to_string();
    for id in [&added, &stored] {
        let r = get(id);
        assert_eq!(r["importance"], 2, "{r}");
        assert!(r["expires_at"].is_null(), "{r}");
    }
}

/// An argument that cannot be an id says what an id may be.
#[test]
fn a_malformed_id_says_what_ids_may_be() {
    let e = Env::new();
    e.init();
    for bad in ["7", "zzzzzz", "01a2"] {
        e.run(&["get", bad])
            .fails(2, "expected a UUID, or a unique start or end of one (6 hex digits or more)");
    }
}

/// A mistyped namespace gives an empty answer and a note on standard error naming the
/// namespaces there and the nearest; a namespace that exists gets no note, even when empty.
#[test]
fn a_mistyped_namespace_is_named() {
    let e = Env::new();
    e.init();
    e.run(&["--ns", "project:1a2b3c4d-app", "add", "learning", "--data", r#"{"text":"redb is embedded"}"#])
        .ok();
    let r = e.run(&["--ns", "project:1a2b3c4d-ap", "search", "redb"]);
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains(
            r#"namespace "project:1a2b3c4d-ap" holds no records; did you mean "project:1a2b3c4d-app"?"#
        ),
        "{}",
        r.stderr
    );
    let r = e.run(&["--json", "--ns", "agent:nobody", "list"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(
        r.stderr.contains("holds no records") && r.stderr.contains("project:1a2b3c4d-app"),
        "{}",
        r.stderr
    );
    let r = e.run(&["--ns", "project:1a2b3c4d-app", "list", "decision"]);
    assert!(r.ok().contains("no records valid") && r.stderr.is_empty(), "{}", r.stderr);
}

/// Tables speak the domain: VALIDITY says where a record stands in time, STATE what its kind
/// says of itself (a rejected decision is rejected, a task shows its status, priority and due
/// date, a gotcha its severity, a pattern its category); `vector search` prints a table too.
#[test]
fn tables_show_each_kinds_state() {
    let e = Env::new();
    e.init();
    let rejected = e.add("decision", r#"{"title":"Use Mongo","status":"rejected"}"#, &[]);
    e.add("task", r#"{"title":"Ship it","priority":"high","due":"2030-12-01","status":"in_progress"}"#, &[]);
    e.add("gotcha", r#"{"title":"fsync cost","problem":"slow","solution":"batch","severity":"high"}"#, &[]);
    e.add(
        "pattern",
        r#"{"title":"Repository","description":"one store per aggregate","category":"architecture"}"#,
        &[],
    );
    let table = e.run(&["list"]).ok().to_string();
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("VALIDITY") && header.contains("STATE") && !header.contains("STATUS"),
        "{header}"
    );
    let row = |title: &str| table.lines().find(|l| l.contains(title)).unwrap().to_string();
    assert!(row("Use Mongo").contains("active") && row("Use Mongo").contains("rejected"), "{table}");
    assert!(row("Ship it").contains("in_progress, high, due 2030-12-01"), "{table}");
    assert!(row("fsync cost").contains("high"), "{table}");
    assert!(row("Repository").contains("architecture"), "{table}");
    let detail = e.run(&["get", &rejected]).ok().to_string();
    assert!(detail.contains("validity   active") && detail.contains("state      rejected"), "{detail}");

    e.run(&["vector", "put", &rejected, "--space", "s", "--vector", "[1, 0, 0]"]).ok();
    let found = e.run(&["vector", "search", "--space", "s", "--vector", "[1, 0.1, 0]"]).ok().to_string();
    let mut lines = found.lines();
    assert!(lines.next().unwrap().starts_with("SCORE"), "{found}");
    let hit = lines.next().unwrap();
    assert!(
        hit.contains("decision")
            && hit.contains("rejected")
            && hit.contains("Use Mongo")
            && !hit.contains('{'),
        "{found}"
    );
}

/// Errors never show secrets: a password in the embedding server's URL is left out of the
/// error that says the server cannot be reached.
#[test]
fn an_unreachable_embedding_server_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .env("MNEMON_EMBED_URL", "http://user:hunter2@127.0.0.1:9/v1?api-key=sk-abcdefghijklmnop")
        .env("MNEMON_EMBED_MODEL", "m")
        .env_remove("MNEMON_EMBED_KEY")
        .args(["--db", dir.path().join("h.redb").to_str().unwrap(), "--embedder", "http", "init"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot reach the embedding server at http://127.0.0.1:9/v1/embeddings?[redacted]"),
        "{err}"
    );
    assert!(!err.contains("hunter2") && !err.contains("sk-abcdef"), "{err}");
}

/// Unbounded result counts are refused with a clear error (no overflow, no allocation that
/// aborts): a search returns at most 10,000 results, in any mode, in a batch too.
#[test]
fn result_counts_are_bounded() {
    let e = Env::new();
    e.init();
    let id = e.add("learning", r#"{"text":"redb is embedded"}"#, &[]);
    for mode in ["hybrid", "lexical", "vector"] {
        e.run(&["search", "redb", "--mode", mode, "--limit", "18446744073709551615"])
            .fails(2, "a limit of 18446744073709551615 is outside 1 to 10000");
        e.run(&["search", "redb", "--mode", mode, "--limit", "100000000"]).fails(2, "outside 1 to 10000");
        e.run(&["search", "redb", "--mode", mode, "--limit", "0"]).fails(2, "outside 1 to 10000");
    }
    assert!(e.run(&["search", "redb", "--limit", "10000"]).ok().contains("redb is embedded"));
    let batch = e.dir.path().join("q.jsonl");
    std::fs::write(&batch, "{\"query\":\"redb\",\"limit\":99999999999}\n{\"query\":\"redb\"}\n").unwrap();
    let lines = e.run(&["--json", "search", "--batch", batch.to_str().unwrap()]).json_lines();
    assert!(lines[0]["error"].as_str().unwrap().contains("outside 1 to 10000"), "{lines:?}");
    assert_eq!(lines[1]["results"][0]["id"], id.as_str());
    let v = format!("[{}]", ["0.1"; 4].join(","));
    e.run(&["vector", "put", &id, "--space", "s", "--vector", &v]).ok();
    e.run(&["vector", "search", "--space", "s", "--vector", &v, "-k", "18446744073709551615"])
        .fails(2, "outside 1 to 10000");
}

/// A damaged file never panics a command: with a page zeroed anywhere in a file of 300
/// records, search, list, export, get and check either answer or fail with one line (exit 1,
/// never 101), and `check` says the file is damaged when it cannot read it.
#[test]
fn a_damaged_page_gives_an_error_not_a_panic() {
    let e = Env::new();
    e.init();
    let lines: String = (0..300)
        .map(|i| {
            format!(
                "{{\"kind\":\"learning\",\"namespace\":\"default\",\"text\":\"note {i} about topic{}\"}}\n",
                i % 10
            )
        })
        .collect();
    let file = e.dir.path().join("b.jsonl");
    std::fs::write(&file, lines).unwrap();
    e.run(&["import", file.to_str().unwrap()]).ok();
    let id = e.run(&["--json", "list", "--limit", "1"]).json_lines()[0]["id"].as_str().unwrap().to_string();
    let clean = std::fs::read(e.db()).unwrap();
    let damaged = e.dir.path().join("x.redb");
    let mut failures = 0;
    for page in (1..clean.len() / 4096).step_by(3) {
        let mut bytes = clean.clone();
        bytes[page * 4096..(page + 1) * 4096].fill(0);
        std::fs::write(&damaged, &bytes).unwrap();
        for args in [&["search", "topic3"][..], &["list"], &["export", "--all"], &["get", &id], &["check"]] {
            let r = run_at(e.dir.path(), &damaged, args, None);
            assert!(!r.stderr.contains("panicked") && r.code != 101, "page {page} {args:?}: {}", r.stderr);
            if r.code != 0 {
                failures += 1;
                assert_eq!(r.code, 1, "page {page} {args:?}: {}", r.stderr);
                assert_eq!(r.stderr.trim().lines().count(), 1, "page {page} {args:?}: {}", r.stderr);
            }
        }
    }
    assert!(failures > 0, "some damage was noticed");
}

/// Content is data: a record's text holding terminal escape sequences is shown escaped in
/// tables, record views and errors, never sent raw to the terminal; JSON keeps it exact.
#[test]
fn terminal_control_characters_are_escaped() {
    let e = Env::new();
    e.init();
    let id = e.add("learning", r#"{"text":"evil \u001b[31mred\u001b[0m bell\u0007"}"#, &[]);
    for args in [&["list"][..], &["search", "evil"], &["get", &id], &["history", &id]] {
        let out = e.run(args).ok().to_string();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{args:?}: {out:?}");
        // Escaped the terminal's way (`\u{1b}`) in tables, JSON's (`\u001b`) in a body.
        assert!(out.contains("\\u{1b}[31mred") || out.contains("\\u001b[31mred"), "{args:?}: {out}");
    }
    let json = e.run(&["--json", "get", &id]).json();
    assert_eq!(json["body"]["text"], "evil \u{1b}[31mred\u{1b}[0m bell\u{7}");
    let r = e.run(&["list", "--tag", "\u{1b}[2J"]);
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stdout.contains('\u{1b}'),
        "{r:?}",
        r = (&r.stdout, &r.stderr)
    );
}

/// A record larger than a record may hold (4 MiB by default) is refused with one line and
/// exit code 2, on add and on revise, and nothing is written.
#[test]
fn oversized_records_are_refused() {
    let e = Env::new();
    e.init();
    let big = "x".repeat(5 << 20);
    let data = e.dir.path().join("big.json");
    std::fs::write(&data, format!("{{\"text\":\"{big}\"}}")).unwrap();
    let at = format!("@{}", data.display());
    e.run(&["add", "learning", "--data", &at]).fails(2, "more than the 4194304 a record may hold");
    let id = e.add("learning", r#"{"text":"small"}"#, &[]);
    std::fs::write(&data, format!("{{\"text\":\"{big}\"}}")).unwrap();
    e.run(&["revise", &id, "--data", &at]).fails(2, "a record may hold");
    let listed = e.run(&["--json", "list"]).json_lines();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["body"]["text"], "small");
    assert_eq!(listed[0]["rev"], 0);
    // Just under the limit is fine.
    std::fs::write(&data, format!("{{\"text\":\"{}\"}}", "y".repeat(3 << 20))).unwrap();
    e.run(&["add", "learning", "--data", &at]).ok();
}
