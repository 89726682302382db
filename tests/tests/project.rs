//! Project knowledge through the facade, on a real database file.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::body::{Decision, Gotcha, Pattern, Severity};
use mnemon::{Body, Db, Kind};
use serde_json::json;

#[test]
fn patterns_gotchas_relationships_learnings_search_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let ns = db.ns("project:1a2b3c4d-app").unwrap();
    let project = ns.project();

    let p = Pattern {
        title: "Errors as values".into(),
        description: "Return Result from every fallible function, never panic".into(),
        category: "rust".into(),
        example: None,
    };
    let (id, existed) = project.add_pattern(p.clone(), Some("dev-1")).unwrap();
    assert!(!existed);
    // Same title, other case: the existing one, with the example filled in.
    let (same, existed) = project
        .add_pattern(
            Pattern {
                title: "ERRORS AS VALUES".into(),
                example: Some("fn f() -> Result<()>".into()),
                ..p.clone()
            },
            None,
        )
        .unwrap();
    assert!(existed && same == id);
    // Similar description under another title: also the existing one; an example is not overwritten.
    let (similar, existed) = project
        .add_pattern(
            Pattern {
                title: "No panics".into(),
                description: "return result from every fallible function; never panic!".into(),
                example: Some("other".into()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
    assert!(existed && similar == id);
    assert!(
        matches!(&ns.get(id).unwrap().unwrap().body, Body::Pattern(x) if x.example.as_deref() == Some("fn f() -> Result<()>"))
    );
    project
        .add_pattern(
            Pattern { title: "Builder for options".into(), category: "api".into(), ..Default::default() },
            Some("dev-2"),
        )
        .unwrap();
    assert_eq!(project.patterns(Some("RUST")).unwrap().len(), 1);
    assert_eq!(project.patterns(None).unwrap().len(), 2);

    project
        .add_gotcha(Gotcha {
            title: "redb needs one writer".into(),
            problem: "two writers deadlock".into(),
            solution: "group commit".into(),
            severity: Severity::High,
        })
        .unwrap();
    project
        .add_gotcha(Gotcha {
            title: "Slow CI".into(),
            problem: "candle builds".into(),
            solution: "opt-level".into(),
            severity: Severity::Low,
        })
        .unwrap();
    let crit = project
        .add_gotcha(Gotcha {
            title: "Data loss".into(),
            problem: "no fsync".into(),
            solution: "Immediate".into(),
            severity: Severity::Critical,
        })
        .unwrap();
    let g = project.gotchas(None).unwrap();
    assert_eq!(g[0].id, crit, "most severe first");
    assert_eq!(project.gotchas(Some(Severity::Low)).unwrap().len(), 1);

    let r1 = project.relate("api", "depends_on", "storage", "reads and writes").unwrap();
    assert_eq!(project.relate("API", "depends on", "Storage", "").unwrap(), r1, "the same relationship");
    project.relate("storage", "depends_on", "redb", "").unwrap();
    let e = project.relate("redb", "depends_on", "api", "").unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
    assert!(project.relate("api", "depends_on", "api", "").is_err());
    // Unordered types may go both ways.
    project.relate("redb", "mentions", "api", "").unwrap();
    project.relate("api", "mentions", "redb", "").unwrap();
    assert_eq!(project.relationships(Some("storage")).unwrap().len(), 2);

    project
        .record_learning(
            "dev-2",
            "The index files live beside the db",
            &json!({"type": "note", "related_files": ["src/index.rs"]}),
        )
        .unwrap();
    let md = project.learnings_markdown(10).unwrap();
    assert!(md.contains("### [dev-1]") && md.contains("Discovered pattern: Errors as values"), "{md}");
    assert!(
        md.contains("**Related files:** src/index.rs") && md.contains("**Type:** note") && md.contains("---"),
        "{md}"
    );
    assert_eq!(project.learnings(1).unwrap().len(), 1);

    ns.decisions()
        .create(Decision { title: "Use redb".into(), rationale: "embedded".into(), ..Default::default() })
        .unwrap();
    let found = project.search_all("redb writer", 10).unwrap();
    assert!(found.contains_key(&Kind::Gotcha) && found.contains_key(&Kind::Decision), "{found:?}");

    let ctx = project.context().unwrap();
    let crit_at = ctx.find("### Critical Gotchas").unwrap();
    assert!(ctx.find("**Data loss**").unwrap() > crit_at && !ctx.contains("Slow CI"), "{ctx}");
    assert!(
        ctx.contains("- **[rust] Errors as values**") && ctx.contains("Example: `fn f() -> Result<()>`"),
        "{ctx}"
    );
    assert!(
        ctx.contains("- **Use redb**: Use redb (embedded)") && ctx.contains("- api depends_on storage"),
        "{ctx}"
    );
    assert!(ctx.contains("### Recent Learnings"), "{ctx}");
}
