//! `init`, `add`, `get`, `list`, `revise`, `retire`, `supersede`, `forget`, `history`, `chain`, `export`, `import`, `compact`, `stats`, `check`, `tour`.

use super::*;

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
    // On 1 February it was still what it was: its status then, and the link to its successor.
    assert_eq!(old["body"]["status"], "accepted");
    assert_eq!(old["status"], "active");
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

#[test]
fn erase_needs_the_namespace_confirmed_and_leaves_nothing() {
    let e = Env::new();
    e.init();
    e.run(&["--ns", "user:1", "add", "learning", "--data", r#"{"text":"private note"}"#, "--tag", "pii"])
        .ok();
    e.run(&["--ns", "user:1", "add", "decision", "--data", r#"{"title":"keep"}"#]).ok();
    e.run(&["--ns", "user:1", "erase"]).fails(2, "--confirm");
    e.run(&["--ns", "user:1", "erase", "--confirm", "user:2"]).fails(2, "nothing was erased");
    let some = e.run(&["--ns", "user:1", "--json", "erase", "--confirm", "user:1", "--tag", "pii"]).json();
    assert_eq!(some["records"], 1);
    let out = e.run(&["--ns", "user:1", "erase", "--confirm", "user:1"]).ok().to_string();
    assert!(out.starts_with("erased 1 record(s), 1 revision(s) from user:1 (audit record"), "{out}");
    assert!(e.run(&["--ns", "user:1", "--json", "list"]).json_lines().is_empty());
    assert!(e.run(&["--ns", "user:1", "--json", "export"]).ok().trim().is_empty());
    let audit = e.run(&["--ns", "mnemon:erasures", "--json", "list"]).json_lines();
    assert_eq!(audit.len(), 2);
}

#[test]
fn where_filters_list_and_search() {
    let e = Env::new();
    e.init();
    for i in 0..30 {
        e.add(
            "learning",
            &format!(r#"{{"text":"note {i}","metadata":{{"user":"u{}","n":{i}}}}}"#, i % 3),
            &[],
        );
    }
    let mine = e.run(&["--json", "list", "--where", r#"{"user":"u1","n":{"$gte":10}}"#]).json_lines();
    assert_eq!(mine.len(), 7);
    let hits = e
        .run(&["--json", "search", "note", "--limit", "4", "--where", r#"{"user":{"$in":["u2"]}}"#])
        .json_lines();
    assert_eq!(hits.len(), 4, "{hits:?}");
    // A context block holds only what passes: u0's notes are 0, 3, 6...
    let block = e.run(&["--json", "context", "--query", "note", "--where", r#"{"user":"u0"}"#]).json_lines();
    let text = block[0]["context"].as_str().unwrap_or_default();
    assert!(text.contains("note 3\n") && !text.contains("note 4\n"), "{text}");
    e.run(&["list", "--where", r#"{"n":{"$gt":"many"}}"#]).fails(2, "where.n.$gt");
    e.run(&["list", "--where", "{"]).fails(2, "--where");
    e.run(&["context", "--where", "[1]"]).fails(2, "where");
}
