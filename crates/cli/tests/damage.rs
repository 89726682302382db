//! A corruption corpus: a realistic file damaged at many offsets (a page zeroed, one byte
//! flipped, the file cut short there; the header and the last page included), and on each
//! damaged copy the commands a user runs: every answer is the right one or a clear error (one
//! line, exit 1), never a panic, never a wrong answer with exit 0.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{Run, run_at};
use serde_json::Value;

/// `mnemon --db DB ARGS` in `dir`.
fn run(dir: &Path, db: &Path, args: &[&str]) -> Run {
    run_at(dir, db, args, None)
}

/// The records of a `--json` listing or search answer (a hit's `record`), by id, as their
/// full JSON views.
fn records(stdout: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let record = if v.get("record").is_some() { v["record"].clone() } else { v };
        out.insert(record["id"].as_str().unwrap_or_default().to_string(), record);
    }
    out
}

/// A file of mixed memories: 240 learnings imported in one commit (a lexical segment), 30
/// decisions with valid times, a few records added one by one, some revised, one retired,
/// one superseded.
fn realistic(dir: &Path, db: &Path) -> Vec<String> {
    assert_eq!(run(dir, db, &["init"]).code, 0);
    let mut lines = String::new();
    for i in 0..240 {
        lines.push_str(&format!(
            "{{\"kind\":\"learning\",\"text\":\"note {i} about topic{} and the {} cache\",\"tags\":[\"t{}\"]}}\n",
            i % 10,
            ["redis", "disk", "page"][i % 3],
            i % 4
        ));
    }
    for i in 0..30 {
        lines.push_str(&format!(
            "{{\"kind\":\"decision\",\"title\":\"decision {i} on topic{}\",\"rationale\":\"because {i}\",\"valid_from\":\"2024-0{}-01\"}}\n",
            i % 10,
            1 + i % 9
        ));
    }
    let file = dir.join("bulk.jsonl");
    std::fs::write(&file, lines).unwrap();
    assert_eq!(run(dir, db, &["import", file.to_str().unwrap()]).code, 0);
    let mut ids = Vec::new();
    for i in 0..6 {
        let data = format!("{{\"text\":\"single {i} about topic3 gotcha\"}}");
        let r = run(dir, db, &["add", "gotcha", "--data", &data]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        ids.push(r.stdout.trim().to_string());
    }
    assert_eq!(
        run(dir, db, &["revise", &ids[0], "--data", r#"{"text":"single 0 revised, topic3"}"#]).code,
        0
    );
    assert_eq!(run(dir, db, &["retire", &ids[1]]).code, 0);
    let r = run(dir, db, &["supersede", &ids[2], "--data", r#"{"text":"single 2 superseded, topic3"}"#]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    ids
}

/// What the commands answer on a file: `(args, answer)` where the answer is what must match
/// the clean file's when the command succeeds.
const COMMANDS: [&[&str]; 5] = [
    &["--json", "list"],
    &["--json", "list", "--as-of", "2024-03-15"],
    &["--json", "search", "topic3", "--limit", "20"],
    &["export", "--all"],
    &["check"],
];

#[test]
fn damage_anywhere_is_an_error_or_the_right_answer() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let db = dir.join("m.redb");
    // The records visible now (a retired or superseded one is asked about with --as-of).
    let ids: Vec<String> =
        realistic(dir, &db).into_iter().filter(|id| run(dir, &db, &["get", id]).code == 0).collect();
    assert_eq!(ids.len(), 4);
    let clean_bytes = std::fs::read(&db).unwrap();
    let mut clean: Vec<Run> = COMMANDS.iter().map(|args| run(dir, &db, args)).collect();
    let gets: Vec<Run> = ids.iter().map(|id| run(dir, &db, &["--json", "get", id])).collect();
    for r in clean.iter().chain(&gets) {
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert!(clean[0].stdout.lines().count() > 250);
    assert!(clean[2].stdout.lines().count() > 5);
    assert!(clean[4].stdout.contains("file integrity: ok"));
    clean.extend(gets);

    let pages = clean_bytes.len() / 4096;
    let damaged = dir.join("x.redb");
    // MNEMON_DAMAGE_SEED picks another sample, MNEMON_DAMAGE_PAGES how many pages (`all`: every
    // page of the file).
    let mut seed =
        std::env::var("MNEMON_DAMAGE_SEED").map_or(0x9E37_79B9_7F4A_7C15u64, |v| v.parse().unwrap());
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // The header, the last page, and a seeded sample of the pages between.
    let mut sample: Vec<usize> = vec![0, pages - 1];
    let n = match std::env::var("MNEMON_DAMAGE_PAGES").as_deref() {
        Ok("all") => usize::MAX,
        Ok(v) => v.parse().unwrap(),
        Err(_) => 40,
    };
    if n == usize::MAX {
        sample.extend(1..pages - 1);
    } else {
        sample.extend((0..n).map(|_| 1 + (next() as usize) % (pages - 2)));
    }
    sample.sort_unstable();
    sample.dedup();
    let (mut errors, mut right, mut wrong, mut found_by_check) = (0, 0, Vec::new(), 0);
    let (mut writes, mut refused) = (0, 0);
    for &page in &sample {
        for how in ["zero", "flip", "cut"] {
            let mut bytes = clean_bytes.clone();
            match how {
                "zero" => bytes[page * 4096..(page + 1) * 4096].fill(0),
                "flip" => {
                    let at = page * 4096 + (next() as usize) % 4096;
                    bytes[at] ^= 1 << (next() % 8);
                }
                _ => bytes.truncate(page * 4096 + 100),
            }
            std::fs::write(&damaged, &bytes).unwrap();
            let gets = ids.iter().map(|id| vec!["--json", "get", id.as_str()]);
            let all: Vec<Vec<&str>> = COMMANDS.iter().map(|a| a.to_vec()).chain(gets).collect();
            let mut check_found = false;
            let mut wrong_here = Vec::new();
            for (args, want) in all.iter().zip(&clean) {
                let r = run(dir, &damaged, args);
                let what = format!("{how} page {page} of {pages}, {args:?}");
                assert!(!r.stderr.contains("panicked") && r.code != 101, "{what}: {}", r.stderr);
                if args == &["check"] {
                    check_found = r.code != 0;
                }
                if r.code != 0 {
                    assert_eq!(r.code, 1, "{what}: {}", r.stderr);
                    assert_eq!(r.stderr.trim().lines().count(), 1, "{what}: {}", r.stderr);
                    errors += 1;
                    continue;
                }
                let same = if args.contains(&"search") {
                    // A damaged index may rank differently; the records it returns are right.
                    let (got, all) = (records(&r.stdout), records(&clean[0].stdout));
                    got.iter().all(|(id, v)| all.get(id) == Some(v))
                } else if args == &["check"] {
                    // `check` passing is right only when every other command answered right.
                    true
                } else {
                    r.stdout == want.stdout
                };
                if same {
                    right += 1;
                } else {
                    let diff = r.stdout.lines().zip(want.stdout.lines()).find(|(a, b)| a != b);
                    eprintln!(
                        "DIFF {what}: {diff:?} lines {} vs {}",
                        r.stdout.lines().count(),
                        want.stdout.lines().count()
                    );
                    // MNEMON_DAMAGE_KEEP=DIR keeps the clean file and each copy answered wrongly.
                    if let Ok(keep) = std::env::var("MNEMON_DAMAGE_KEEP") {
                        std::fs::copy(&damaged, Path::new(&keep).join(format!("{how}-{page}.redb"))).unwrap();
                        std::fs::write(Path::new(&keep).join("clean.redb"), &clean_bytes).unwrap();
                    }
                    wrong_here.push(what);
                }
            }
            // An answer that is wrong with exit 0 can only come from damage to redb's own
            // B-tree pages (a branch pointing elsewhere, so a scan skips rows): every value is
            // sealed with its key. redb checks those pages' checksums only in its integrity
            // check, so `check` must find the damage (docs/reliability.md).
            if check_found {
                found_by_check += wrong_here.len();
            } else {
                wrong.extend(wrong_here);
            }
            // A write on a fresh copy (no read has met the damage, no mark) either is refused
            // with one line or leaves a file `check` passes: it never builds on damage (its
            // open verifies the file), and never hides damage under fresh checksums.
            std::fs::write(&damaged, &bytes).unwrap();
            let _ = mnemon::clear_damage_mark(&damaged);
            let r = run(dir, &damaged, &["add", "learning", "--data", r#"{"text":"after the damage"}"#]);
            assert!(!r.stderr.contains("panicked") && r.code != 101, "{how} page {page} add: {}", r.stderr);
            assert!(
                r.code == 0 || (r.code == 1 && r.stderr.trim().lines().count() == 1),
                "{how} {page}: {}",
                r.stderr
            );
            if r.code == 0 {
                writes += 1;
                let c = run(dir, &damaged, &["check"]);
                assert_eq!(c.code, 0, "{how} page {page}: a write went on and left {}", c.stderr);
            } else {
                refused += 1;
            }
        }
    }
    eprintln!(
        "{} damaged copies: {right} right answers, {errors} errors, {found_by_check} wrong answers on \
         copies `check` finds damaged, {} wrong answers on copies it passes; a write on a fresh copy: \
         {writes} went on (the file then checks clean), {refused} refused",
        sample.len() * 3,
        wrong.len()
    );
    assert!(errors > 0, "some damage was noticed");
    assert!(wrong.is_empty(), "wrong answers with exit 0 on a file `check` passes: {wrong:#?}");
}
