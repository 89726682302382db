//! Scoped markdown memory through the facade, on a real database file with a manual clock.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::Arc;

use mnemon::scoped::{Scope, Section, djb2, project_id};
use mnemon::{Db, ManualClock, Timestamp};

const DAY: i64 = 86_400_000_000;

#[test]
fn project_ids_follow_the_design_document() {
    // djb2: h = h * 33 + c from 5381, 32 bits.
    assert_eq!(djb2(""), 5381);
    assert_eq!(djb2("a"), 5381 * 33 + 97);
    let path = "/Users/me/code/a-very-long-project-directory-name";
    let id = project_id(path);
    assert_eq!(id, format!("{:08x}-a-very-long-project-", djb2(path)));
    assert_eq!(id.len(), 8 + 1 + 20);
    assert_eq!(project_id("/srv/app/"), format!("{:08x}-app", djb2("/srv/app/")));
    assert_eq!(
        Scope::parse("project:/srv/app").unwrap().namespace(),
        format!("project:{}", project_id("/srv/app"))
    );
    assert!(Scope::parse("team:x").is_err());
}

#[test]
fn entries_ttl_markdown_graph_import_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2026-01-28T09:00:00Z").unwrap()));
    let db = Db::builder(dir.path().join("m.redb")).create(true).clock(clock.clone()).open().unwrap();
    let mem = db.memory();
    let app = Scope::project("/home/me/src/yume");
    mem.set_brief(&app, "Tauri 2 with React 19.").unwrap();
    mem.set_brief(&app, "This project uses Tauri 2.x with React 19.").unwrap();
    assert_eq!(mem.brief(&app).unwrap().as_deref(), Some("This project uses Tauri 2.x with React 19."));
    let keep = mem.add(&app, Section::Learnings, "Uses Zustand for state management", 4).unwrap();
    let short = mem.add(&app, Section::Learnings, "Working on the settings tab today", 1).unwrap();
    mem.add(&app, Section::Errors, "Error: window not found → create it before emit", 3).unwrap();
    mem.add(&app, Section::Patterns, "Hooks: one hook per store slice", 5).unwrap();
    mem.add(&Scope::Global, Section::Preferences, "Prefers TypeScript strict mode", 4).unwrap();
    assert!(mem.add(&app, Section::Learnings, "  ", 3).is_err());
    assert_eq!(mem.projects().unwrap()[0].id, project_id("/home/me/src/yume"));
    assert!(mem.projects().unwrap()[0].has_brief);

    let md = mem.export_markdown(&app, Section::Learnings).unwrap();
    assert!(md.starts_with("# Learnings\n"), "{md}");
    assert!(md.contains("## 2026-01-28T09:00:00") && md.contains("| importance:4 | ttl:90 | id:"), "{md}");
    assert!(md.contains("| importance:1 | ttl:1 | id:"), "{md}");
    let pat = mem.export_markdown(&app, Section::Patterns).unwrap();
    assert!(
        pat.contains("| importance:5 | ttl:permanent |") && pat.contains("Hooks: one hook per store slice"),
        "{pat}"
    );

    // Round trip into another project: same entries; importing again skips them.
    let other = Scope::project("/tmp/copy");
    assert_eq!(mem.import_markdown(&other, Section::Learnings, &md).unwrap(), (2, 0));
    assert_eq!(mem.import_markdown(&other, Section::Learnings, &md).unwrap(), (0, 2));
    assert_eq!(mem.export_markdown(&other, Section::Learnings).unwrap().lines().count(), md.lines().count());
    let doc = "# Learnings\n\n## 2026-01-28T10:00:00Z | importance:4 | ttl:90 | id:abc123\nUses Zustand for state management with persist middleware.\n\n## 2026-01-28T09:00:00Z | importance:3 | ttl:30 | id:def456\nPrefer functional components\nover class components.\n";
    clock.advance(2 * 3_600_000_000); // the document's entries are from 09:00 and 10:00
    assert_eq!(mem.import_markdown(&other, Section::Learnings, doc).unwrap(), (2, 0));
    assert!(mem.export_markdown(&other, Section::Learnings).unwrap().contains("id:abc123"));
    let e = mem
        .import_markdown(&other, Section::Learnings, "## yesterday | importance:4 | id:x\ntext\n")
        .unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");

    // TTL: after two days the importance-1 entry is gone; prune closes it for good.
    clock.advance(2 * DAY);
    let ids: Vec<_> = mem.entries(&app, Section::Learnings).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![keep]);
    let pruned = mem.prune_expired().unwrap();
    assert_eq!(pruned.values().sum::<usize>(), 1 + 1, "one here, one imported copy");
    assert!(db.ns(&app.namespace()).unwrap().latest(short).unwrap().unwrap().valid_until.is_some());

    // The context block.
    let ctx = mem.context(&app, "state management", 2000).unwrap();
    assert!(
        ctx.starts_with(&format!("<mnemon-memory project=\"{}\">", project_id("/home/me/src/yume"))),
        "{ctx}"
    );
    assert!(ctx.contains("## brief\nThis project uses Tauri") && ctx.contains("- Uses Zustand"), "{ctx}");
    assert!(!ctx.contains("## recent errors"), "the query is not about errors: {ctx}");
    assert!(
        ctx.contains("## preferences\n- Prefers TypeScript strict mode") && ctx.ends_with("</mnemon-memory>"),
        "{ctx}"
    );
    let err_ctx = mem.context(&app, "why does emit fail", 2000).unwrap();
    assert!(
        err_ctx.contains("## recent errors\n- Error: window not found → create it before emit"),
        "{err_ctx}"
    );
    let tiny = mem.context(&app, "", 20).unwrap();
    assert!(mnemon::agent::estimate_tokens(&tiny) <= 20, "{tiny}");
    assert!(tiny.contains("</mnemon-memory>") && !tiny.contains("This project uses Tauri"), "{tiny}");

    // Delete one entry, clear a project.
    mem.delete(&app, keep).unwrap();
    assert!(mem.entries(&app, Section::Learnings).unwrap().is_empty());
    assert_eq!(mem.clear(&other).unwrap(), 3, "the importance-1 copy had expired");
    assert!(mem.projects().unwrap().iter().all(|p| p.id != project_id("/tmp/copy")));
}

#[test]
fn knowledge_graph_jsonl_is_routed_to_scopes_and_sections() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let mem = db.memory();
    let jsonl = r#"{"type":"entity","name":"project:/home/me/src/yume","entityType":"project","observations":["Uses Tauri","Builds with pnpm"]}
{"type":"entity","name":"build errors","entityType":"error","observations":["pnpm fails offline → use the cache"]}
{"type":"entity","name":"user","entityType":"person","observations":["Prefers dark mode"]}
{"type":"relation","from":"yume","to":"tauri","relationType":"uses"}
"#;
    assert_eq!(mem.import_graph_jsonl(jsonl).unwrap(), 5);
    let app = Scope::project("/home/me/src/yume");
    assert_eq!(mem.entries(&app, Section::Learnings).unwrap().len(), 2);
    assert_eq!(mem.entries(&Scope::Global, Section::Errors).unwrap().len(), 1);
    assert_eq!(mem.entries(&Scope::Global, Section::Preferences).unwrap().len(), 1);
    assert_eq!(mem.entries(&Scope::Global, Section::Learnings).unwrap().len(), 1);
    let e = mem.import_graph_jsonl("{\"type\":\"entity\"}\nnot json\n").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    assert_eq!(mem.entries(&Scope::Global, Section::Preferences).unwrap().len(), 1, "nothing written");
}

/// Content is data: an entry whose lines look like entry or section headings, or start with a
/// backslash, is exported escaped and imported back exactly, not split into fake entries.
#[test]
fn markdown_entries_holding_headings_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let mem = db.memory();
    let from = Scope::project("/src/a");
    let tricky = "Headers in content:\n## 2026-01-01T00:00:00Z | importance:5 | ttl:permanent | id:fake\n# Errors\n\\already escaped\n  indented # not a heading";
    mem.add(&from, Section::Learnings, tricky, 4).unwrap();
    mem.add(&from, Section::Learnings, "plain", 3).unwrap();
    let md = mem.export_markdown(&from, Section::Learnings).unwrap();
    assert!(
        md.contains("\n\\## 2026-01-01T00:00:00Z | importance:5") && md.contains("\n\\# Errors\n"),
        "{md}"
    );
    let to = Scope::project("/src/b");
    assert_eq!(mem.import_markdown(&to, Section::Learnings, &md).unwrap(), (2, 0));
    let mut texts: Vec<String> =
        mem.entries(&to, Section::Learnings).unwrap().iter().map(mnemon::scoped::entry_text).collect();
    texts.sort();
    assert_eq!(texts, [tricky.to_string(), "plain".to_string()]);
}
