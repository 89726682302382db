//! The knowledge graph of the reference MCP memory server (`@modelcontextprotocol/server-memory`)
//! on mnemon records: entities (kind `entity`), one `observation` record per observation, and
//! `relation` records, with the reference's nine operations and their semantics. The
//! differences are mnemon's: entity names match case-insensitively (the identity index),
//! deletions retire records (time travel still sees them), and every call is one commit.
//!
//! ```
//! use mnemon::graph::{GraphEntity, GraphRelation};
//! use mnemon::Db;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let ns = db.ns("kg")?;
//! let g = ns.graph();
//! g.create_entities(&[GraphEntity { name: "Alice".into(), entity_type: "person".into(), observations: vec!["likes Rust".into()] }])?;
//! g.create_relations(&[GraphRelation { from: "Alice".into(), to: "mnemon".into(), relation_type: "works_on".into() }])?;
//! let found = g.search_nodes("rust")?;
//! assert_eq!(found.entities[0].name, "Alice");
//! assert_eq!(found.relations.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use mnemon_storage::body::{Entity, Observation, Relation, normalise_key};
use mnemon_storage::{AsOf, Body, NewRecord, Record, RecordId, WriteOp};

use crate::db::Ns;
use crate::error::{Result, invalid};

/// An entity with its observations, as the reference server returns it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GraphEntity {
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "entityType")]
    pub entity_type: String,
    /// Its observations, oldest first.
    pub observations: Vec<String>,
}

/// A directed relation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GraphRelation {
    /// Source entity name.
    pub from: String,
    /// Target entity name.
    pub to: String,
    /// The relation, in active voice.
    #[serde(rename = "relationType")]
    pub relation_type: String,
}

/// A graph (or part of one).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KnowledgeGraph {
    /// Entities, in creation order.
    pub entities: Vec<GraphEntity>,
    /// Relations, in creation order.
    pub relations: Vec<GraphRelation>,
}

/// Observations added to one entity.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Added {
    /// The entity.
    #[serde(rename = "entityName")]
    pub entity_name: String,
    /// The contents that were new.
    #[serde(rename = "addedObservations")]
    pub added_observations: Vec<String>,
}

impl Ns {
    /// This namespace as the reference server's knowledge graph.
    pub fn graph(&self) -> Graph<'_> {
        Graph { ns: self }
    }
}

/// The knowledge graph of one namespace; see [`Ns::graph`].
#[derive(Clone, Copy)]
pub struct Graph<'a> {
    ns: &'a Ns,
}

struct State {
    entities: Vec<Record>,
    observations: BTreeMap<String, Vec<Record>>,
    relations: Vec<Record>,
}

impl Graph<'_> {
    fn state(&self) -> Result<State> {
        let mut entities = self.ns.list_of::<Entity>(AsOf::now())?;
        entities.sort_by_key(|r| r.id);
        let mut obs = self.ns.list_of::<Observation>(AsOf::now())?;
        obs.sort_by_key(|r| r.id);
        let mut observations: BTreeMap<String, Vec<Record>> = BTreeMap::new();
        for r in obs {
            if let Body::Observation(o) = &r.body {
                observations.entry(normalise_key(&o.entity)).or_default().push(r);
            }
        }
        let mut relations = self.ns.list_of::<Relation>(AsOf::now())?;
        relations.sort_by_key(|r| r.id);
        Ok(State { entities, observations, relations })
    }

    fn write(&self, ops: Vec<WriteOp>, texts: Vec<(RecordId, String)>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let mut ops = ops;
        ops.extend(self.ns.db().embed_ops(self.ns.name(), &texts)?);
        self.ns.db().write(ops)?;
        Ok(())
    }

    fn insert(&self, body: Body, ops: &mut Vec<WriteOp>, texts: &mut Vec<(RecordId, String)>) {
        let rec = NewRecord::new(self.ns.name().clone(), body);
        texts.push((rec.id, rec.body.text()));
        ops.push(WriteOp::Insert(rec));
    }

    fn retire(&self, id: RecordId, ops: &mut Vec<WriteOp>) {
        ops.push(WriteOp::Retire { namespace: self.ns.name().clone(), id, at: None });
    }

    /// Create entities whose names are new (others, and repeats within the call, are
    /// skipped); returns the ones created.
    pub fn create_entities(&self, entities: &[GraphEntity]) -> Result<Vec<GraphEntity>> {
        let st = self.state()?;
        let mut taken: BTreeSet<String> = st
            .entities
            .iter()
            .filter_map(|r| match &r.body {
                Body::Entity(e) => Some(normalise_key(&e.name)),
                _ => None,
            })
            .collect();
        let (mut ops, mut texts, mut created) = (Vec::new(), Vec::new(), Vec::new());
        for e in entities {
            if e.name.trim().is_empty() {
                return Err(invalid("an entity needs a non-empty name"));
            }
            if !taken.insert(normalise_key(&e.name)) {
                continue;
            }
            let body = Entity {
                name: e.name.clone(),
                entity_type: e.entity_type.as_str().into(),
                ..Default::default()
            };
            self.insert(body.into(), &mut ops, &mut texts);
            let mut seen = BTreeSet::new();
            for o in e.observations.iter().filter(|o| seen.insert(o.as_str())) {
                self.insert(
                    Observation { entity: e.name.clone(), content: o.clone() }.into(),
                    &mut ops,
                    &mut texts,
                );
            }
            created.push(e.clone());
        }
        self.write(ops, texts)?;
        Ok(created)
    }

    /// Create relations not already present (same from, to and type); returns the new ones.
    pub fn create_relations(&self, relations: &[GraphRelation]) -> Result<Vec<GraphRelation>> {
        let st = self.state()?;
        let mut have: BTreeSet<(String, String, String)> =
            st.relations.iter().filter_map(|r| rel_of(r).map(|x| rel_key(&x))).collect();
        let (mut ops, mut texts, mut created) = (Vec::new(), Vec::new(), Vec::new());
        for r in relations {
            if !have.insert(rel_key(r)) {
                continue;
            }
            let body = Relation {
                from: r.from.clone(),
                relation_type: r.relation_type.clone(),
                to: r.to.clone(),
                description: String::new(),
            };
            self.insert(body.into(), &mut ops, &mut texts);
            created.push(r.clone());
        }
        self.write(ops, texts)?;
        Ok(created)
    }

    /// Add observations to existing entities (contents already there are skipped). An
    /// unknown entity is an error and nothing is written.
    pub fn add_observations(&self, items: &[(String, Vec<String>)]) -> Result<Vec<Added>> {
        let st = self.state()?;
        let names: BTreeMap<String, String> = st
            .entities
            .iter()
            .filter_map(|r| match &r.body {
                Body::Entity(e) => Some((normalise_key(&e.name), e.name.clone())),
                _ => None,
            })
            .collect();
        let mut present: BTreeMap<String, BTreeSet<String>> = st
            .observations
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.iter()
                        .filter_map(|r| match &r.body {
                            Body::Observation(o) => Some(o.content.clone()),
                            _ => None,
                        })
                        .collect(),
                )
            })
            .collect();
        let (mut ops, mut texts, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for (entity, contents) in items {
            let key = normalise_key(entity);
            let Some(name) = names.get(&key) else {
                return Err(invalid(format!("Entity with name {entity} not found")));
            };
            let have = present.entry(key).or_default();
            let mut added = Vec::new();
            for c in contents {
                if have.insert(c.clone()) {
                    self.insert(
                        Observation { entity: name.clone(), content: c.clone() }.into(),
                        &mut ops,
                        &mut texts,
                    );
                    added.push(c.clone());
                }
            }
            out.push(Added { entity_name: entity.clone(), added_observations: added });
        }
        self.write(ops, texts)?;
        Ok(out)
    }

    /// Delete entities, their observations and every relation touching them (retired).
    pub fn delete_entities(&self, names: &[String]) -> Result<()> {
        let st = self.state()?;
        let keys: BTreeSet<String> = names.iter().map(|n| normalise_key(n)).collect();
        let mut ops = Vec::new();
        for r in &st.entities {
            if let Body::Entity(e) = &r.body
                && keys.contains(&normalise_key(&e.name))
            {
                self.retire(r.id, &mut ops);
                for o in st.observations.get(&normalise_key(&e.name)).into_iter().flatten() {
                    self.retire(o.id, &mut ops);
                }
            }
        }
        for r in &st.relations {
            if let Some(x) = rel_of(r)
                && (keys.contains(&normalise_key(&x.from)) || keys.contains(&normalise_key(&x.to)))
            {
                self.retire(r.id, &mut ops);
            }
        }
        self.write(ops, Vec::new())
    }

    /// Delete observations (retired; unknown entities and contents are ignored).
    pub fn delete_observations(&self, items: &[(String, Vec<String>)]) -> Result<()> {
        let st = self.state()?;
        let mut ops = Vec::new();
        for (entity, contents) in items {
            for r in st.observations.get(&normalise_key(entity)).into_iter().flatten() {
                if matches!(&r.body, Body::Observation(o) if contents.contains(&o.content)) {
                    self.retire(r.id, &mut ops);
                }
            }
        }
        self.write(ops, Vec::new())
    }

    /// Delete relations (retired; unknown ones are ignored).
    pub fn delete_relations(&self, relations: &[GraphRelation]) -> Result<()> {
        let st = self.state()?;
        let gone: BTreeSet<(String, String, String)> = relations.iter().map(rel_key).collect();
        let mut ops = Vec::new();
        for r in &st.relations {
            if let Some(x) = rel_of(r)
                && gone.contains(&rel_key(&x))
            {
                self.retire(r.id, &mut ops);
            }
        }
        self.write(ops, Vec::new())
    }

    /// The whole graph.
    pub fn read_graph(&self) -> Result<KnowledgeGraph> {
        self.filtered(true, |_| true)
    }

    /// Entities whose name, type or an observation contains `query` (case-insensitive),
    /// and the relations touching any of them.
    pub fn search_nodes(&self, query: &str) -> Result<KnowledgeGraph> {
        let q = query.to_lowercase();
        self.filtered(false, |e| {
            e.name.to_lowercase().contains(&q)
                || e.entity_type.to_lowercase().contains(&q)
                || e.observations.iter().any(|o| o.to_lowercase().contains(&q))
        })
    }

    /// The named entities and the relations touching any of them.
    pub fn open_nodes(&self, names: &[String]) -> Result<KnowledgeGraph> {
        let keys: BTreeSet<String> = names.iter().map(|n| normalise_key(n)).collect();
        self.filtered(false, |e| keys.contains(&normalise_key(&e.name)))
    }

    fn filtered(&self, all: bool, keep: impl Fn(&GraphEntity) -> bool) -> Result<KnowledgeGraph> {
        let st = self.state()?;
        let mut g = KnowledgeGraph::default();
        for r in &st.entities {
            let Body::Entity(e) = &r.body else { continue };
            let observations = st
                .observations
                .get(&normalise_key(&e.name))
                .into_iter()
                .flatten()
                .filter_map(|o| match &o.body {
                    Body::Observation(o) => Some(o.content.clone()),
                    _ => None,
                })
                .collect();
            let ge =
                GraphEntity { name: e.name.clone(), entity_type: e.entity_type.to_string(), observations };
            if keep(&ge) {
                g.entities.push(ge);
            }
        }
        let names: BTreeSet<String> = g.entities.iter().map(|e| normalise_key(&e.name)).collect();
        for r in &st.relations {
            if let Some(x) = rel_of(r)
                && (all || names.contains(&normalise_key(&x.from)) || names.contains(&normalise_key(&x.to)))
            {
                g.relations.push(x);
            }
        }
        Ok(g)
    }
}

/// Relations are the same when from, type and to match case-insensitively (the identity key).
fn rel_key(r: &GraphRelation) -> (String, String, String) {
    (normalise_key(&r.from), normalise_key(&r.relation_type), normalise_key(&r.to))
}

fn rel_of(r: &Record) -> Option<GraphRelation> {
    match &r.body {
        Body::Relation(x) => Some(GraphRelation {
            from: x.from.clone(),
            to: x.to.clone(),
            relation_type: x.relation_type.clone(),
        }),
        _ => None,
    }
}
