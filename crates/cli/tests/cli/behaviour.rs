//! Behaviour shared by every command: ids and namespaces named, times, tables, bounds, damage, escaping, sizes.

use super::*;

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
    std::fs::write(&md, "# Learnings\n\n## 2026-01-28T10:00:00Z | importance:5 | ttl:permanent | id:abc123\nKeep builds reproducible\n").unwrap();
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
    // Listings: refused with the range, never an empty answer with exit 0.
    for bad in ["0", "1000001", "18446744073709551615"] {
        e.run(&["list", "--limit", bad]).fails(2, "is not in 1..=1000000");
        e.run(&["task", "list", "--limit", bad]).fails(2, "outside 1 to");
        e.run(&["conversation", "recent", "--limit", bad]).fails(2, "outside 1 to 1000");
        e.run(&["episode", "query", "x", "--limit", bad]).fails(2, "outside 1 to 100");
    }
    e.run(&["task", "list", "--limit", "0"]).fails(2, "a limit of 0 is outside 1 to 10000");
    // JSON nested far deeper than any record needs: one line, exit 2, nothing written.
    let deep = format!("{{\"text\":\"x\",\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let file = e.dir.path().join("deep.json");
    std::fs::write(&file, &deep).unwrap();
    e.run(&["add", "learning", "--data", &format!("@{}", file.display())]).fails(2, "recursion limit");
    let nested = format!("{{\"a\":{}1{}}}", "{\"$not\":".repeat(3_000), "}".repeat(3_000));
    e.run(&["list", "--where", &nested]).fails(2, "--where");
    assert_eq!(e.run(&["--json", "list", "--limit", "1"]).json_lines().len(), 1);
}

/// A file of 300 learnings ("note N about topicM", ten topics), imported in one commit: enough
/// for a segment of the lexical index and pages of every table, for the damage tests.
fn three_hundred_notes() -> Env {
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
    e
}

/// A damaged file never panics a command: with a page zeroed anywhere in a file of 300
/// records, search, list, export, get and check either answer or fail with one line (exit 1,
/// never 101), and `check` says the file is damaged when it cannot read it.
#[test]
fn a_damaged_page_gives_an_error_not_a_panic() {
    let e = three_hundred_notes();
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

/// Damage never changes an answer: with any one page of a 300-record file zeroed, a search
/// answers exactly as on the sound file or fails (exit 1). (Before format 17 sealed the lexical
/// index's blocks, zeroing a page inside a segment block dropped top hits with exit 0.)
#[test]
fn no_damaged_page_changes_a_search_answer() {
    let e = three_hundred_notes();
    let ids = |out: &str| -> Vec<String> {
        out.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_string()
            })
            .collect()
    };
    let args = ["--json", "search", "topic3", "--limit", "10"];
    let sound = ids(e.run(&args).ok());
    assert_eq!(sound.len(), 10);
    let clean = std::fs::read(e.db()).unwrap();
    let damaged = e.dir.path().join("x.redb");
    let (mut failed, mut pages) = (0, 0);
    for page in 1..clean.len() / 4096 {
        let mut bytes = clean.clone();
        bytes[page * 4096..(page + 1) * 4096].fill(0);
        std::fs::write(&damaged, &bytes).unwrap();
        let _ = std::fs::remove_file(e.dir.path().join("x.redb.damaged"));
        let r = run_at(e.dir.path(), &damaged, &args, None);
        pages += 1;
        match r.code {
            0 => assert_eq!(ids(&r.stdout), sound, "page {page}: a different answer with exit 0"),
            1 => failed += 1,
            other => panic!("page {page}: exit {other}: {}", r.stderr),
        }
    }
    eprintln!("{failed} of {pages} damaged copies failed the search; none answered otherwise");
    assert!(failed > 0 && failed < pages, "{failed} of {pages} pages failed the search");
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
    // Bidirectional controls (which reorder what a terminal shows) and C1 controls, in
    // tables, record views and JSON: escaped, and the JSON still reads back exact.
    let sly = "admin\u{202e}nimda \u{2066}x\u{2069} c1\u{85}\u{9b}31m del\u{7f}";
    let id = e.add("learning", &serde_json::json!({ "text": sly }).to_string(), &[]);
    let raw = |s: &str| {
        s.chars().any(|c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{80}'..='\u{9f}' | '\u{7f}'))
    };
    for args in
        [&["list"][..], &["search", "nimda"], &["get", &id], &["--json", "get", &id], &["--json", "list"]]
    {
        let out = e.run(args).ok().to_string();
        assert!(!raw(&out), "{args:?}: {out:?}");
    }
    assert_eq!(e.run(&["--json", "get", &id]).json()["body"]["text"], sly);
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

/// Damage found by one process stops every other from writing: the first read that meets it
/// marks the file (`FILE.damaged`); later processes read but refuse writes, naming the mark,
/// until the file is restored and `mnemon check` finds it sound and clears the mark.
#[test]
fn damage_marks_the_file_until_check_finds_it_sound() {
    let e = Env::new();
    e.init();
    let id = e.add("learning", r#"{"text":"the vault code is kept offsite"}"#, &[]);
    let mut other = String::new();
    for i in 0..20 {
        other = e.add("learning", &format!(r#"{{"text":"note {i} about painting"}}"#), &[]);
    }
    let backup = std::fs::read(e.db()).unwrap();
    // A letter of the stored text changed wherever the text is (the revision and the current
    // row; the lexical index holds words, not the phrase).
    let mut bytes = backup.clone();
    let spots: Vec<usize> =
        bytes.windows(10).enumerate().filter(|(_, w)| *w == b"vault code").map(|(i, _)| i).collect();
    assert!(!spots.is_empty(), "the text is in the file");
    for at in spots {
        bytes[at + 4] = b'u';
    }
    std::fs::write(e.db(), &bytes).unwrap();
    let mark = e.db().with_file_name(format!("{}.damaged", e.db().file_name().unwrap().to_string_lossy()));
    assert!(!mark.exists());
    e.run(&["get", &id]).fails(1, "checksum");
    assert!(mark.exists(), "the read that met the damage marks the file");
    // Another process: reads what it can, writes nothing.
    assert!(e.run(&["get", &other]).ok().contains("painting"));
    // (refused by its own open, which verifies the file; the mark keeps the first cause)
    e.run(&["add", "learning", "--data", r#"{"text":"after the damage"}"#]).fails(1, "refused");
    assert!(std::fs::read_to_string(&mark).unwrap().contains("checksum"));
    e.run(&["check"]).fails(1, "");
    assert!(mark.exists());
    // Restored from the backup: still refused until the check clears the mark.
    std::fs::write(e.db(), &backup).unwrap();
    e.run(&["add", "learning", "--data", r#"{"text":"after the restore"}"#]).fails(1, "refused");
    assert!(e.run(&["check"]).ok().contains("damage mark: cleared"));
    assert!(!mark.exists());
    e.run(&["add", "learning", "--data", r#"{"text":"after the check"}"#]).ok();
}

#[test]
fn ui_and_watch_refuse_what_they_cannot_do_in_one_line() {
    let e = Env::new();
    // No database: the view does not create an empty one.
    e.run(&["ui"]).fails(1, "no mnemon database");
    e.run(&["init"]).ok();
    e.run(&["ui", "--listen", "0.0.0.0:0"]).fails(2, "loopback only");
    e.run(&["watch", "--since", "yesterday"]).fails(2, "not a place in the change feed");
    e.run(&["watch", "--idle=-1"]).fails(2, "--idle");
    e.run(&["--server", "http://127.0.0.1:9", "ui"]).fails(2, "works on a database file");
    // From the start of the log, the init wrote nothing: an idle watch ends empty.
    assert_eq!(e.run(&["--json", "watch", "--since", "2000-01-01", "--idle", "0.2"]).ok(), "");
}

#[test]
fn completions_and_the_manual_page_are_generated() {
    let e = Env::new();
    for (shell, marker) in [
        ("bash", "complete -F _mnemon"),
        ("zsh", "#compdef mnemon"),
        ("fish", "complete -c mnemon"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = e.run(&["completions", shell]).ok().to_string();
        assert!(
            script.contains(marker) || script.contains("_mnemon"),
            "{shell}: {}",
            &script[..200.min(script.len())]
        );
        assert!(script.contains("watch") && script.contains("install"), "{shell}: every command");
    }
    e.run(&["completions", "tcsh"]).fails(2, "possible values");
    let man = e.run(&["man"]).ok().to_string();
    assert!(man.contains(".TH mnemon 1") && man.contains("bitemporal"), "{}", &man[..300.min(man.len())]);
}
