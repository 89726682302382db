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
