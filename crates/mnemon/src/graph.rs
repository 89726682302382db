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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use mnemon_storage::body::{Entity, Observation, Relation, normalise_key};
use mnemon_storage::{
    AsOf, Body, Kind, ListQuery, Namespace, NewRecord, OnConflict, Record, RecordId, Snapshot, Timestamp,
    WriteOp,
};

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

/// The knowledge graph of one namespace held in memory, for calls that would otherwise read
/// the whole namespace: the graph records valid now, as of commit `seq`. It is brought up to
/// date from the commit log (only the records changed since are read again), so it follows
/// commits of this process and of every other process sharing the file, and it is reloaded
/// when a record comes into force or expires without a commit (`stale_at`).
#[derive(Default)]
struct Model {
    seq: u64,
    loaded: bool,
    stale_at: Option<Timestamp>,
    entities: BTreeMap<RecordId, Ent>,
    by_name: HashMap<String, RecordId>,
    observations: BTreeMap<RecordId, Obs>,
    by_entity: HashMap<String, BTreeSet<RecordId>>,
    relations: BTreeMap<RecordId, Rel>,
    by_rel: HashMap<(String, String, String), RecordId>,
    /// Relations by the key of each end.
    by_end: HashMap<String, BTreeSet<RecordId>>,
}

struct Ent {
    name: String,
    key: String,
    entity_type: String,
    /// Lower-cased name, type and observations, each after a `\u{1f}`: what search scans.
    hay: String,
}

struct Obs {
    entity_key: String,
    content: String,
    lower: String,
}

struct Rel {
    rel: GraphRelation,
    key: (String, String, String),
}

const GRAPH_KINDS: [Kind; 3] = [Kind::Entity, Kind::Observation, Kind::Relation];

impl Model {
    fn remove(&mut self, id: RecordId) {
        if let Some(e) = self.entities.remove(&id)
            && self.by_name.get(&e.key) == Some(&id)
        {
            self.by_name.remove(&e.key);
        }
        if let Some(o) = self.observations.remove(&id)
            && let Some(set) = self.by_entity.get_mut(&o.entity_key)
        {
            set.remove(&id);
            if set.is_empty() {
                self.by_entity.remove(&o.entity_key);
            }
        }
        if let Some(r) = self.relations.remove(&id) {
            if self.by_rel.get(&r.key) == Some(&id) {
                self.by_rel.remove(&r.key);
            }
            for end in [&r.key.0, &r.key.2] {
                if let Some(set) = self.by_end.get_mut(end) {
                    set.remove(&id);
                    if set.is_empty() {
                        self.by_end.remove(end);
                    }
                }
            }
        }
    }

    fn add(&mut self, r: Record) {
        match r.body {
            Body::Entity(e) => {
                let key = normalise_key(&e.name);
                let entity_type = e.entity_type.to_string();
                self.by_name.insert(key.clone(), r.id);
                self.entities.insert(r.id, Ent { name: e.name, key, entity_type, hay: String::new() });
            }
            Body::Observation(o) => {
                let entity_key = normalise_key(&o.entity);
                self.by_entity.entry(entity_key.clone()).or_default().insert(r.id);
                let lower = o.content.to_lowercase();
                self.observations.insert(r.id, Obs { entity_key, content: o.content, lower });
            }
            Body::Relation(x) => {
                let rel = GraphRelation { from: x.from, to: x.to, relation_type: x.relation_type };
                let key = rel_key(&rel);
                self.by_rel.insert(key.clone(), r.id);
                self.by_end.entry(key.0.clone()).or_default().insert(r.id);
                self.by_end.entry(key.2.clone()).or_default().insert(r.id);
                self.relations.insert(r.id, Rel { rel, key });
            }
            _ => {}
        }
    }

    /// Bring the model to `snap`: catch up from the commit log, or reload.
    fn refresh(&mut self, snap: &Snapshot, ns: &Namespace) -> Result<()> {
        let seq = snap.meta().commit_seq;
        let now = snap.now();
        let expired = self.stale_at.is_some_and(|t| t <= now);
        if self.loaded && seq == self.seq && !expired {
            return Ok(());
        }
        let mut changed: BTreeSet<RecordId> = BTreeSet::new();
        if self.loaded && !expired {
            for c in snap.commits_after(self.seq)? {
                changed.extend(c.changed.into_iter().filter(|(n, _)| n == ns).map(|(_, id)| id));
            }
        }
        let many = changed.len() > 64 + self.entities.len() + self.observations.len();
        if !self.loaded || expired || many {
            *self = Model::default();
            for r in snap.list(ns, &ListQuery::new().kinds(GRAPH_KINDS))? {
                self.add(r);
            }
            self.loaded = true;
            let ids: Vec<RecordId> = self.entities.keys().copied().collect();
            self.rebuild_hay(ids);
        } else {
            let mut touched = BTreeSet::new();
            for id in changed {
                touched.extend(self.key_of(id));
                self.remove(id);
                if let Some(r) = snap.get(ns, id, AsOf::now())?
                    && GRAPH_KINDS.contains(&r.kind())
                {
                    self.add(r);
                    touched.extend(self.key_of(id));
                }
            }
            let ids: Vec<RecordId> = touched.iter().filter_map(|k| self.by_name.get(k).copied()).collect();
            self.rebuild_hay(ids);
        }
        self.seq = seq;
        self.stale_at = snap.next_change(ns, now, &GRAPH_KINDS)?;
        Ok(())
    }

    /// The entity key an entity or observation record belongs to.
    fn key_of(&self, id: RecordId) -> Option<String> {
        self.entities
            .get(&id)
            .map(|e| e.key.clone())
            .or_else(|| self.observations.get(&id).map(|o| o.entity_key.clone()))
    }

    fn rebuild_hay(&mut self, ids: Vec<RecordId>) {
        for id in ids {
            let Some(e) = self.entities.get(&id) else { continue };
            let mut hay = format!("\u{1f}{}\u{1f}{}", e.name.to_lowercase(), e.entity_type.to_lowercase());
            for o in self.observations_of(&e.key) {
                hay.push('\u{1f}');
                hay.push_str(&o.lower);
            }
            if let Some(e) = self.entities.get_mut(&id) {
                e.hay = hay;
            }
        }
    }

    fn observations_of(&self, key: &str) -> impl Iterator<Item = &Obs> {
        self.by_entity.get(key).into_iter().flatten().filter_map(|id| self.observations.get(id))
    }

    fn entity(&self, e: &Ent) -> GraphEntity {
        GraphEntity {
            name: e.name.clone(),
            entity_type: e.entity_type.clone(),
            observations: self.observations_of(&e.key).map(|o| o.content.clone()).collect(),
        }
    }
}

/// The in-memory graphs of a database's namespaces (see [`Ns::graph`]).
#[derive(Default)]
pub(crate) struct GraphCache {
    models: Mutex<HashMap<Namespace, Arc<Mutex<Model>>>>,
}

impl std::fmt::Debug for GraphCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphCache").finish_non_exhaustive()
    }
}

impl GraphCache {
    fn model(&self, ns: &Namespace) -> Arc<Mutex<Model>> {
        let mut map = self.models.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(ns.clone()).or_default())
    }
}

impl Graph<'_> {
    /// Run `f` on the namespace's graph, up to date with the latest commit. Calls on one
    /// namespace are serialised in this process, so a call's read and its write see no other
    /// call of this process in between.
    fn with<T>(&self, f: impl FnOnce(&Model) -> Result<T>) -> Result<T> {
        let model = self.ns.db().extension(|_| GraphCache::default()).model(self.ns.name());
        let mut m = model.lock().unwrap_or_else(PoisonError::into_inner);
        let snap = self.ns.db().snapshot()?;
        if let Err(e) = m.refresh(&snap, self.ns.name()) {
            *m = Model::default();
            return Err(e);
        }
        f(&m)
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
        let mut rec = NewRecord::new(self.ns.name().clone(), body);
        // Another process may create the same entity or relation between our read and our
        // commit: then it is there already, which is what the call asked for.
        rec.on_conflict = OnConflict::ReturnExisting;
        texts.push((rec.id, rec.body.text()));
        ops.push(WriteOp::Insert(rec));
    }

    fn retire(&self, id: RecordId, ops: &mut Vec<WriteOp>) {
        ops.push(WriteOp::Retire { namespace: self.ns.name().clone(), id, at: None });
    }

    /// Create entities whose names are new (others, and repeats within the call, are
    /// skipped); returns the ones created.
    pub fn create_entities(&self, entities: &[GraphEntity]) -> Result<Vec<GraphEntity>> {
        if entities.iter().any(|e| e.name.trim().is_empty()) {
            return Err(invalid("an entity needs a non-empty name"));
        }
        self.with(|m| {
            let mut taken: HashSet<String> = HashSet::new();
            let (mut ops, mut texts, mut created) = (Vec::new(), Vec::new(), Vec::new());
            for e in entities {
                let key = normalise_key(&e.name);
                if m.by_name.contains_key(&key) || !taken.insert(key) {
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
                    let body = Observation { entity: e.name.clone(), content: o.clone() };
                    self.insert(body.into(), &mut ops, &mut texts);
                }
                created.push(e.clone());
            }
            self.write(ops, texts)?;
            Ok(created)
        })
    }

    /// Create relations not already present (same from, to and type); returns the new ones.
    pub fn create_relations(&self, relations: &[GraphRelation]) -> Result<Vec<GraphRelation>> {
        self.with(|m| {
            let mut taken = HashSet::new();
            let (mut ops, mut texts, mut created) = (Vec::new(), Vec::new(), Vec::new());
            for r in relations {
                let key = rel_key(r);
                if m.by_rel.contains_key(&key) || !taken.insert(key) {
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
        })
    }

    /// Add observations to existing entities (contents already there are skipped). An
    /// unknown entity is an error and nothing is written.
    pub fn add_observations(&self, items: &[(String, Vec<String>)]) -> Result<Vec<Added>> {
        self.with(|m| {
            let mut added_now: HashMap<String, HashSet<&str>> = HashMap::new();
            let (mut ops, mut texts, mut out) = (Vec::new(), Vec::new(), Vec::new());
            for (entity, contents) in items {
                let key = normalise_key(entity);
                let Some(e) = m.by_name.get(&key).and_then(|id| m.entities.get(id)) else {
                    return Err(invalid(format!("Entity with name {entity} not found")));
                };
                let fresh = added_now.entry(key).or_default();
                let mut added = Vec::new();
                for c in contents {
                    let known = m.observations_of(&e.key).any(|o| &o.content == c);
                    if !known && fresh.insert(c.as_str()) {
                        let body = Observation { entity: e.name.clone(), content: c.clone() };
                        self.insert(body.into(), &mut ops, &mut texts);
                        added.push(c.clone());
                    }
                }
                out.push(Added { entity_name: entity.clone(), added_observations: added });
            }
            self.write(ops, texts)?;
            Ok(out)
        })
    }

    /// Delete entities, their observations and every relation touching them (retired).
    pub fn delete_entities(&self, names: &[String]) -> Result<()> {
        let keys: BTreeSet<String> = names.iter().map(|n| normalise_key(n)).collect();
        self.with(|m| {
            let mut ops = Vec::new();
            for key in &keys {
                if let Some(id) = m.by_name.get(key) {
                    self.retire(*id, &mut ops);
                    for o in m.by_entity.get(key).into_iter().flatten() {
                        self.retire(*o, &mut ops);
                    }
                }
            }
            let rels: BTreeSet<RecordId> =
                keys.iter().flat_map(|k| m.by_end.get(k).into_iter().flatten().copied()).collect();
            for id in rels {
                self.retire(id, &mut ops);
            }
            self.write(ops, Vec::new())
        })
    }

    /// Delete observations (retired; unknown entities and contents are ignored).
    pub fn delete_observations(&self, items: &[(String, Vec<String>)]) -> Result<()> {
        self.with(|m| {
            let mut ops = Vec::new();
            for (entity, contents) in items {
                for id in m.by_entity.get(&normalise_key(entity)).into_iter().flatten() {
                    if m.observations.get(id).is_some_and(|o| contents.contains(&o.content)) {
                        self.retire(*id, &mut ops);
                    }
                }
            }
            self.write(ops, Vec::new())
        })
    }

    /// Delete relations (retired; unknown ones are ignored).
    pub fn delete_relations(&self, relations: &[GraphRelation]) -> Result<()> {
        self.with(|m| {
            let mut ops = Vec::new();
            for key in relations.iter().map(rel_key).collect::<BTreeSet<_>>() {
                if let Some(id) = m.by_rel.get(&key) {
                    self.retire(*id, &mut ops);
                }
            }
            self.write(ops, Vec::new())
        })
    }

    /// The whole graph.
    pub fn read_graph(&self) -> Result<KnowledgeGraph> {
        self.with(|m| {
            Ok(KnowledgeGraph {
                entities: m.entities.values().map(|e| m.entity(e)).collect(),
                relations: m.relations.values().map(|r| r.rel.clone()).collect(),
            })
        })
    }

    /// Entities whose name, type or an observation contains `query` (case-insensitive),
    /// and the relations touching any of them.
    pub fn search_nodes(&self, query: &str) -> Result<KnowledgeGraph> {
        let q = query.to_lowercase();
        self.with(|m| {
            // One scan per entity over its name, type and observations, which the separator
            // keeps apart (a query holding the separator itself is matched field by field).
            let hits = m.entities.values().filter(|e| {
                if q.contains('\u{1f}') {
                    e.name.to_lowercase().contains(&q)
                        || e.entity_type.to_lowercase().contains(&q)
                        || m.observations_of(&e.key).any(|o| o.lower.contains(&q))
                } else {
                    e.hay.contains(&q)
                }
            });
            Ok(m.subgraph(hits))
        })
    }

    /// The named entities and the relations touching any of them.
    pub fn open_nodes(&self, names: &[String]) -> Result<KnowledgeGraph> {
        let keys: BTreeSet<String> = names.iter().map(|n| normalise_key(n)).collect();
        self.with(|m| {
            let mut ids: Vec<RecordId> = keys.iter().filter_map(|k| m.by_name.get(k).copied()).collect();
            ids.sort();
            Ok(m.subgraph(ids.iter().filter_map(|id| m.entities.get(id))))
        })
    }
}

impl Model {
    /// These entities (in creation order) and the relations touching any of them.
    fn subgraph<'m>(&'m self, hits: impl Iterator<Item = &'m Ent>) -> KnowledgeGraph {
        let mut g = KnowledgeGraph::default();
        let mut keys = HashSet::new();
        for e in hits {
            keys.insert(e.key.as_str());
            g.entities.push(self.entity(e));
        }
        // Relations in creation order (ids are time-ordered), each once.
        let ids: BTreeSet<RecordId> =
            keys.iter().flat_map(|k| self.by_end.get(*k).into_iter().flatten().copied()).collect();
        g.relations = ids.iter().filter_map(|id| self.relations.get(id)).map(|r| r.rel.clone()).collect();
        g
    }
}

/// Relations are the same when from, type and to match case-insensitively (the identity key).
fn rel_key(r: &GraphRelation) -> (String, String, String) {
    (normalise_key(&r.from), normalise_key(&r.relation_type), normalise_key(&r.to))
}
