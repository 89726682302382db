//! The project-assistant domain (decisions, tasks, entities, conversations) through the facade,
//! on a real database file with a manual clock.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::sync::Arc;

use mnemon::body::{Decision, DecisionStatus, Entity, Priority, Role, Task, TaskStatus};
use mnemon::{Body, Clock, Db, Error, Kind, ManualClock, Ns, Timestamp};

const DAY: i64 = 86_400_000_000;

fn setup() -> (tempfile::TempDir, Arc<ManualClock>, Ns) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::parse("2024-05-01").unwrap()));
    let db = Db::builder(dir.path().join("m.redb")).create(true).clock(clock.clone()).open().unwrap();
    let ns = db.ns("project").unwrap();
    (dir, clock, ns)
}

fn task(title: &str) -> Task {
    Task { title: title.into(), ..Default::default() }
}

fn status(ns: &Ns, id: mnemon::RecordId) -> TaskStatus {
    match ns.latest(id).unwrap().unwrap().body {
        Body::Task(t) => t.status,
        b => panic!("not a task: {b:?}"),
    }
}

#[test]
fn task_transitions_keep_their_history_and_rules() {
    let (_d, clock, ns) = setup();
    let tasks = ns.tasks();
    let id = tasks.create(Task { status: TaskStatus::Planned, ..task("Write the parser") }).unwrap();
    clock.advance(1_000);
    tasks.start(id).unwrap();
    clock.advance(500);
    let while_started = clock.now();
    clock.advance(500);
    let blocked = tasks.block(id, "waiting for the grammar").unwrap();
    assert_eq!(blocked.blocked_by.as_deref(), Some("waiting for the grammar"));
    clock.advance(1_000);
    // Unblock restores the status from before the block.
    let t = tasks.unblock(id).unwrap();
    assert_eq!((t.status, t.blocked_by), (TaskStatus::InProgress, None));
    let e = tasks.unblock(id).unwrap_err();
    assert!(matches!(e, Error::Rule { .. }) && e.to_string().contains("not blocked"), "{e}");
    assert!(tasks.start(id).unwrap_err().to_string().contains("already in_progress"));
    clock.advance(1_000);
    let done = tasks.complete(id).unwrap();
    assert!(done.completed_at.is_some());
    let trail: Vec<(TaskStatus, TaskStatus)> = done.status_history.iter().map(|c| (c.from, c.to)).collect();
    assert_eq!(
        trail,
        vec![
            (TaskStatus::Planned, TaskStatus::InProgress),
            (TaskStatus::InProgress, TaskStatus::Blocked),
            (TaskStatus::Blocked, TaskStatus::InProgress),
            (TaskStatus::InProgress, TaskStatus::Completed),
        ]
    );
    assert_eq!(done.status_history[1].reason.as_deref(), Some("waiting for the grammar"));
    // Final states stay final; every change is a revision.
    assert!(tasks.cancel(id, Some("late")).unwrap_err().to_string().contains("completed"));
    assert_eq!(ns.history(id).unwrap().len(), 5);
    assert_eq!(status(&ns, id), TaskStatus::Completed);
    // Time travel on transaction time: as known before the block, it was in progress.
    let then = ns.get_as_of(id, mnemon::AsOf::now().known_at(while_started)).unwrap();
    assert!(matches!(then.unwrap().body, Body::Task(t) if t.status == TaskStatus::InProgress));
    // A cancel records its reason.
    let other = tasks.create(task("Drop IE support")).unwrap();
    let c = tasks.cancel(other, Some("no longer needed")).unwrap();
    assert_eq!(c.status_history[0].reason.as_deref(), Some("no longer needed"));
    // Not a task.
    let d = ns.decisions().create(Decision { title: "x".into(), ..Default::default() }).unwrap();
    assert!(tasks.start(d).unwrap_err().to_string().contains("not a task"));
}

#[test]
fn dependencies_can_start_cycles_overdue_and_order() {
    let (_d, clock, ns) = setup();
    let tasks = ns.tasks();
    let a = tasks.create(task("schema")).unwrap();
    let b = tasks.create(Task { dependencies: vec![a], ..task("api") }).unwrap();
    let c = tasks.create(Task { dependencies: vec![b], ..task("ui") }).unwrap();
    let cs = tasks.can_start(b).unwrap();
    assert!(!cs.ready && cs.waiting_on == vec![a]);
    tasks.start(a).unwrap();
    tasks.complete(a).unwrap();
    assert!(tasks.can_start(b).unwrap().ready);
    // a -> ... -> c closing back to a is refused, as is a self-dependency and an unknown one.
    let e = tasks.add_dependency(a, c).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
    assert!(tasks.add_dependency(a, a).unwrap_err().to_string().contains("itself"));
    assert!(tasks.add_dependency(a, mnemon::RecordId::new()).unwrap_err().to_string().contains("not a task"));
    // The rules hold for every write of a task, not only through `Tasks`: a plain insert of
    // a task on an unknown task, or on itself, is refused (a conflict, by its code), and so
    // is a supersession that would depend on an unknown task.
    let stray = mnemon::RecordId::new();
    let plain =
        ns.insert(mnemon::NewRecord::new(ns.name().clone(), Task { dependencies: vec![stray], ..task("x") }));
    let e = plain.unwrap_err();
    assert!(e.to_string().contains("not a task valid now"), "{e}");
    assert_eq!(e.code(), mnemon::Code::Conflict);
    let own = mnemon::NewRecord::new(ns.name().clone(), task("self"));
    let own_id = own.id;
    let mut own = own;
    if let Body::Task(t) = &mut own.body {
        t.dependencies = vec![own_id];
    }
    assert!(ns.insert(own).unwrap_err().to_string().contains("itself"));
    let on_stray = Task { dependencies: vec![stray], ..task("ui, again") };
    assert!(ns.supersede(c, on_stray).unwrap_err().to_string().contains("not a task valid now"));
    let graph = tasks.dependency_graph().unwrap();
    assert_eq!(graph[&c], vec![b]);
    assert_eq!(graph[&a], vec![]);

    let due = Timestamp::from_micros(clock.now().as_micros() + DAY);
    let late = tasks.create(Task { due: Some(due), priority: Priority::Low, ..task("report") }).unwrap();
    tasks.create(Task { due: Some(due), priority: Priority::Critical, ..task("hotfix") }).unwrap();
    assert!(tasks.overdue().unwrap().is_empty());
    clock.advance(2 * DAY);
    let overdue: Vec<_> = tasks.overdue().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(overdue.len(), 2);
    assert!(overdue.contains(&late));
    // Priority first (critical first), then newest first; completed tasks only when asked.
    let listed = tasks.list(&mnemon::TaskQuery::default()).unwrap();
    let titles: Vec<String> = listed
        .iter()
        .map(|r| match &r.body {
            Body::Task(t) => t.title.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(titles, vec!["hotfix", "ui", "api", "report"]);
    let all = tasks.list(&mnemon::TaskQuery { include_completed: true, ..Default::default() }).unwrap();
    assert_eq!(all.len(), 5);
}

#[test]
fn decisions_statuses_supersession_and_links() {
    let (_d, clock, ns) = setup();
    let decisions = ns.decisions();
    let old = decisions
        .create(Decision { title: "Use SQLite".into(), rationale: "known".into(), ..Default::default() })
        .unwrap();
    let proposal = decisions
        .create(Decision {
            title: "Try Postgres".into(),
            status: DecisionStatus::Proposed,
            ..Default::default()
        })
        .unwrap();
    decisions.set_status(proposal, DecisionStatus::Rejected).unwrap();
    assert!(decisions.set_status(old, DecisionStatus::Superseded).is_err());
    clock.advance(1_000);
    let before = clock.now();
    clock.advance(DAY);
    let new = decisions.supersede(old, Decision { title: "Use redb".into(), ..Default::default() }).unwrap();
    let active: Vec<_> = decisions.active().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(active, vec![new]);
    // The old one ends as superseded, pointing to the new one; the new one names the old.
    let last_old = ns.latest(old).unwrap().unwrap();
    assert_eq!(last_old.superseded_by, Some(new));
    assert!(matches!(&last_old.body, Body::Decision(d) if d.status == DecisionStatus::Superseded));
    assert!(
        matches!(ns.get(new).unwrap().unwrap().body, Body::Decision(d) if d.related_decisions == vec![old])
    );
    let chain: Vec<_> = decisions.history(new).unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(chain, vec![old, new]);
    // What was true before, as known then: the old decision, accepted; as known now, it was
    // still accepted then (its state then), and we now know what replaced it.
    let then = ns.get_as_of(old, mnemon::AsOf::valid_at(before).known_at(before)).unwrap().unwrap();
    assert!(matches!(then.body, Body::Decision(d) if d.status == DecisionStatus::Accepted));
    let now_known = ns.get_as_of(old, before).unwrap().unwrap();
    assert!(matches!(now_known.body, Body::Decision(d) if d.status == DecisionStatus::Accepted));
    assert_eq!(now_known.superseded_by, Some(new));
    assert!(decisions.set_status(old, DecisionStatus::Accepted).is_err());

    let t = ns.tasks().create(task("Port the store to redb")).unwrap();
    decisions.link_task(new, t).unwrap();
    decisions.link_task(new, t).unwrap(); // idempotent
    assert!(matches!(ns.get(new).unwrap().unwrap().body, Body::Decision(d) if d.related_tasks == vec![t]));
    assert!(matches!(ns.get(t).unwrap().unwrap().body, Body::Task(x) if x.related_decisions == vec![new]));
    assert!(decisions.link_task(t, new).is_err(), "the arguments are a decision then a task");
}

#[test]
fn entities_find_or_create_mentions_links_and_merge() {
    let (_d, clock, ns) = setup();
    let entities = ns.entities();
    let (pg, created) = entities
        .find_or_create(Entity {
            name: "PostgreSQL".into(),
            entity_type: "technology".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(created);
    let (again, created) = entities
        .find_or_create(Entity {
            name: "  postgresql ".into(),
            description: "the database".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((again, created), (pg, false));
    let found = entities.find_by_name("POSTGRESQL").unwrap().unwrap();
    assert!(
        matches!(&found.body, Body::Entity(e) if e.description == "the database" && e.entity_type.as_str() == "technology")
    );
    clock.advance(1_000);
    entities.mention(pg, "we moved billing to postgres", "conversation").unwrap();
    entities.set_property(pg, "version", serde_json::json!(16)).unwrap();
    let (alias, _) = entities
        .find_or_create(Entity {
            name: "Postgres".into(),
            entity_type: "technology".into(),
            ..Default::default()
        })
        .unwrap();
    entities.set_property(alias, "version", serde_json::json!(15)).unwrap();
    entities.set_property(alias, "host", serde_json::json!("db1")).unwrap();
    clock.advance(1_000);
    entities.mention(alias, "postgres is slow on reports", "manual").unwrap();
    let (svc, _) = entities
        .find_or_create(Entity {
            name: "billing".into(),
            entity_type: "service".into(),
            ..Default::default()
        })
        .unwrap();
    entities.link(alias, svc).unwrap();
    assert!(entities.link(svc, svc).is_err());
    let before_merge = clock.now();
    clock.advance(1_000);

    let kept = entities.merge(pg, alias).unwrap();
    let Body::Entity(e) = &kept.body else { panic!() };
    assert_eq!(e.mentions.len(), 2);
    assert_eq!(e.properties.value(), serde_json::json!({"version": 16, "host": "db1"}));
    assert_eq!(e.related_entities, vec![svc]);
    assert!(kept.envelope.metadata.value()["merged_from"][0]["name"] == "Postgres");
    // The absorbed entity is superseded by the survivor, not deleted.
    assert!(ns.get(alias).unwrap().is_none());
    let gone = ns.latest(alias).unwrap().unwrap();
    assert_eq!(gone.superseded_by, Some(pg));
    assert!(ns.get_as_of(alias, before_merge).unwrap().is_some());
    assert_eq!(ns.chain(alias).unwrap().last().unwrap().id, pg);
    // Links to the absorbed entity now point to the survivor; its name is an alias of it.
    assert!(matches!(ns.get(svc).unwrap().unwrap().body, Body::Entity(s) if s.related_entities == vec![pg]));
    assert_eq!(entities.find_by_name("postgres").unwrap().map(|r| r.id), Some(pg));
    assert!(entities.merge(pg, alias).is_err());
    assert!(entities.merge(pg, pg).is_err());
    let tech: Vec<_> = entities.by_type("technology").unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(tech, vec![pg]);
}

#[test]
fn conversations_tags_stats_and_consolidation() {
    let (_d, clock, ns) = setup();
    let conv = ns.conversations();
    let c = conv.start("planning").unwrap();
    clock.advance(10);
    conv.add(c, Role::User, "Should we use redb?").unwrap();
    clock.advance(10);
    conv.add(c, Role::Assistant, "Yes: embedded, MVCC, pure Rust.").unwrap();
    clock.advance(10);
    let ended = conv.end(c, Some("chose redb")).unwrap();
    assert!(matches!(ended.body, Body::Conversation(x) if x.summary.as_deref() == Some("chose redb")));
    assert!(conv.add(c, Role::User, "late").is_err());
    assert!(conv.end(c, None).is_err());
    let msgs = conv.messages(c).unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(matches!(&msgs[0].body, Body::Message(m) if m.role == Role::User));
    // Only the last CONVERSATIONS_KEPT stay current.
    for i in 0..mnemon::CONVERSATIONS_KEPT {
        clock.advance(10);
        conv.start(&format!("session {i}")).unwrap();
    }
    let recent = conv.recent(1_000).unwrap();
    assert_eq!(recent.len(), mnemon::CONVERSATIONS_KEPT);
    assert!(!recent.iter().any(|r| r.id == c));
    assert!(conv.messages(c).unwrap().is_empty());
    assert!(ns.latest(c).unwrap().is_some(), "retired, not deleted");

    // Tags across kinds, statistics, consolidation.
    let d = ns
        .record(Decision { title: "Use redb".into(), ..Default::default() })
        .tag("storage")
        .insert()
        .unwrap();
    let t = ns.record(task("Port to redb")).tag("storage").insert().unwrap();
    let by_tag = ns.by_tag("storage").unwrap();
    assert_eq!(by_tag[&Kind::Decision][0].id, d);
    assert_eq!(by_tag[&Kind::Task][0].id, t);
    let dropped = ns.tasks().create(task("Old idea")).unwrap();
    ns.tasks().cancel(dropped, None).unwrap();
    clock.advance(1_000);
    let stats = ns.domain_stats().unwrap();
    assert_eq!(stats.tasks_by_status["cancelled"], 1);
    assert_eq!(stats.tags["storage"], 2);
    assert_eq!(stats.by_kind["conversation"], mnemon::CONVERSATIONS_KEPT);
    assert_eq!(ns.consolidate(30).unwrap().tasks_retired, 0, "too recent");
    let cancelled_at = clock.now();
    clock.advance(31 * DAY);
    assert_eq!(ns.consolidate(30).unwrap().tasks_retired, 1);
    assert!(ns.get(dropped).unwrap().is_none(), "hidden from current queries");
    assert!(ns.get_as_of(dropped, cancelled_at).unwrap().is_some(), "time travel still sees it");
}
