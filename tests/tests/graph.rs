//! The reference memory server's knowledge graph semantics on mnemon records.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::graph::{GraphEntity, GraphRelation};
use mnemon::{AsOf, Db};

fn ent(name: &str, t: &str, obs: &[&str]) -> GraphEntity {
    GraphEntity {
        name: name.into(),
        entity_type: t.into(),
        observations: obs.iter().map(|s| s.to_string()).collect(),
    }
}

fn rel(f: &str, t: &str, r: &str) -> GraphRelation {
    GraphRelation { from: f.into(), to: t.into(), relation_type: r.into() }
}

#[test]
fn the_nine_operations() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let ns = db.ns("kg").unwrap();
    let g = ns.graph();
    // create_entities: existing names (and repeats in the call) are skipped.
    let made = g
        .create_entities(&[
            ent("Alice", "person", &["likes Rust", "likes Rust"]),
            ent("mnemon", "project", &[]),
            ent("Alice", "robot", &[]),
        ])
        .unwrap();
    assert_eq!(made.len(), 2);
    assert!(
        g.create_entities(&[ent("alice", "person", &[])]).unwrap().is_empty(),
        "names match case-insensitively"
    );
    // create_relations: duplicates skipped; relations may name unknown entities.
    assert_eq!(
        g.create_relations(&[
            rel("Alice", "mnemon", "works_on"),
            rel("Alice", "mnemon", "works_on"),
            rel("Bob", "Alice", "knows")
        ])
        .unwrap()
        .len(),
        2
    );
    assert!(g.create_relations(&[rel("alice", "MNEMON", "works_on")]).unwrap().is_empty());
    // add_observations: new contents only; an unknown entity writes nothing.
    let added =
        g.add_observations(&[("Alice".into(), vec!["likes Rust".into(), "lives in Lyon".into()])]).unwrap();
    assert_eq!(added[0].added_observations, vec!["lives in Lyon".to_string()]);
    let before = db.store().snapshot().unwrap().meta().commit_seq;
    let e = g
        .add_observations(&[
            ("mnemon".into(), vec!["written in Rust".into()]),
            ("Nobody".into(), vec!["x".into()]),
        ])
        .unwrap_err();
    assert!(e.to_string().contains("Entity with name Nobody not found"), "{e}");
    assert_eq!(db.store().snapshot().unwrap().meta().commit_seq, before, "nothing written");
    let graph = g.read_graph().unwrap();
    assert_eq!(graph.entities[0], ent("Alice", "person", &["likes Rust", "lives in Lyon"]));
    assert_eq!(graph.relations.len(), 2, "a relation to an unknown entity is kept, as in the reference");
    // search_nodes: case-insensitive over names, types, observations; relations touching any hit.
    let s = g.search_nodes("LYON").unwrap();
    assert_eq!(s.entities.len(), 1);
    assert_eq!(s.relations.len(), 2, "both relations touch Alice");
    assert_eq!(g.search_nodes("project").unwrap().entities[0].name, "mnemon");
    assert!(g.search_nodes("zzz").unwrap().entities.is_empty());
    // open_nodes: the named entities and relations touching any of them.
    let o = g.open_nodes(&["mnemon".into(), "nobody".into()]).unwrap();
    assert_eq!((o.entities.len(), o.relations.len()), (1, 1));
    // delete_observations and delete_relations retire; time travel still sees them.
    let t0 = db.now();
    g.delete_observations(&[("Alice".into(), vec!["likes Rust".into(), "unknown".into()])]).unwrap();
    g.delete_relations(&[rel("Bob", "Alice", "knows")]).unwrap();
    let graph = g.read_graph().unwrap();
    assert_eq!(graph.entities[0].observations, vec!["lives in Lyon".to_string()]);
    assert_eq!(graph.relations, vec![rel("Alice", "mnemon", "works_on")]);
    let then = ns
        .list(&mnemon::ListQuery::new().kinds([mnemon::Kind::Observation]).as_of(AsOf::valid_at(t0)))
        .unwrap();
    assert_eq!(then.len(), 2);
    // delete_entities cascades to observations and relations.
    g.delete_entities(&["alice".into()]).unwrap();
    let graph = g.read_graph().unwrap();
    assert_eq!(graph.entities, vec![ent("mnemon", "project", &[])]);
    assert!(graph.relations.is_empty());
    // The name is free again.
    assert_eq!(g.create_entities(&[ent("Alice", "person", &[])]).unwrap().len(), 1);
    assert!(g.read_graph().unwrap().entities.iter().any(|e| e.name == "Alice" && e.observations.is_empty()));
}

/// The graph is served from memory, caught up from the commit log: writes made outside the
/// graph API show up, and so do records coming into force or expiring with no commit at all.
#[test]
fn the_in_memory_graph_follows_commits_and_time() {
    use mnemon::body::{Entity, Observation};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t0 = mnemon::Timestamp::parse("2025-01-01T00:00:00Z").unwrap();
    let clock = Arc::new(mnemon::ManualClock::new(t0));
    let db = Db::builder(dir.path().join("m.redb")).create(true).clock(clock.clone()).open().unwrap();
    let ns = db.ns("kg").unwrap();
    let g = ns.graph();
    g.create_entities(&[ent("Alice", "person", &["likes Rust"])]).unwrap();
    assert_eq!(g.read_graph().unwrap().entities.len(), 1);
    // Written through the record API, not the graph: seen at the next call.
    let at = |s: &str| mnemon::Timestamp::parse(s).unwrap();
    ns.record(Observation { entity: "Alice".into(), content: "lives in Lyon".into() }).insert().unwrap();
    let temp = ns
        .record(Entity { name: "Temp".into(), entity_type: "note".into(), ..Default::default() })
        .valid_until(at("2025-01-02T00:00:00Z"))
        .insert()
        .unwrap();
    ns.record(Entity { name: "Later".into(), entity_type: "plan".into(), ..Default::default() })
        .valid_from(at("2025-01-03T00:00:00Z"))
        .insert()
        .unwrap();
    let names =
        |g: &mnemon::graph::KnowledgeGraph| g.entities.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    let now = g.read_graph().unwrap();
    assert_eq!(names(&now), ["Alice", "Temp"]);
    assert_eq!(now.entities[0].observations, ["likes Rust", "lives in Lyon"]);
    assert_eq!(g.search_nodes("lyon").unwrap().entities.len(), 1);
    // Time passes with no commit: Temp expires, then Later comes into force.
    let seq = db.snapshot().unwrap().meta().commit_seq;
    clock.set(at("2025-01-02T12:00:00Z"));
    assert_eq!(names(&g.read_graph().unwrap()), ["Alice"]);
    clock.set(at("2025-01-04T00:00:00Z"));
    assert_eq!(names(&g.read_graph().unwrap()), ["Alice", "Later"]);
    assert_eq!(db.snapshot().unwrap().meta().commit_seq, seq, "reads commit nothing");
    // A retire through the record API drops it; the time travel view keeps it.
    ns.retire(ns.entities().find_by_name("Later").unwrap().unwrap().id, None).unwrap();
    assert_eq!(names(&g.read_graph().unwrap()), ["Alice"]);
    assert!(ns.get_as_of(temp, AsOf::valid_at(at("2025-01-01T12:00:00Z"))).unwrap().is_some());
}
