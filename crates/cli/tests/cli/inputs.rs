//! Bad arguments and bad files: clear one-line errors, nothing written; files held by another process.

use super::*;

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
