//! The domain groups: tasks, decisions, entities, conversations, knowledge, agents, episodes, projects, scoped memory; `context` and `prune`.

use super::*;

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
