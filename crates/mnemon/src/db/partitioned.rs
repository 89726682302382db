//! Namespaces spread over several database files, one per **partition**: what a cluster node
//! (crate `mnemon-cluster`) holds, and a way for any program to spread one machine's
//! namespaces over several files.
//!
//! A partitioned handle ([`Db::partitioned`]) routes: [`Db::ns`] returns a namespace handle on
//! the database of the namespace's partition, so every operation on one namespace (and the
//! operation layer reaches namespaces through it) runs on that file as it would on a single
//! one. What spans namespaces goes over every partition in order: [`Db::namespaces`], the
//! statistics, exports, imports (each record to its namespace's file), reindexing, pruning,
//! [`Db::sync`]. A batch of writes ([`crate::ops`]' `batch`) commits atomically only within one
//! partition, and is refused when its namespaces lie in several.

use std::sync::Arc;

use mnemon_storage::Namespace;

use super::Db;
use crate::error::Result;

/// The partitions of a partitioned handle (see the module documentation).
pub trait Partitions: Send + Sync + std::fmt::Debug {
    /// The database of namespace `ns`'s partition, or why it is not here (a cluster node that
    /// does not host that partition).
    fn db_for(&self, ns: &str) -> Result<Db>;
    /// Every partition's database held here, in a fixed order (at least one).
    fn all(&self) -> Vec<Db>;
}

impl Db {
    /// A handle routing each namespace to its partition's database (see the module
    /// documentation). Its own file, for what belongs to no namespace (the clock, the
    /// embedder), is the first partition's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mnemon::{Db, Partitions, body::Learning};
    ///
    /// #[derive(Debug)]
    /// struct Two(Db, Db);
    /// impl Partitions for Two {
    ///     fn db_for(&self, ns: &str) -> mnemon::Result<Db> {
    ///         Ok(if ns.starts_with("agent:") { self.1.clone() } else { self.0.clone() })
    ///     }
    ///     fn all(&self) -> Vec<Db> {
    ///         vec![self.0.clone(), self.1.clone()]
    ///     }
    /// }
    ///
    /// # fn main() -> mnemon::Result<()> {
    /// let dir = tempfile::tempdir().map_err(|e| mnemon::Error::Io { path: ".".into(), source: e })?;
    /// let (a, b) = (Db::create(dir.path().join("a.mnemon"))?, Db::create(dir.path().join("b.mnemon"))?);
    /// let db = Db::partitioned(Arc::new(Two(a.clone(), b.clone())))?;
    /// db.ns("agent:dev-1")?.add(Learning { text: "in b".into(), ..Default::default() })?;
    /// db.ns("project:x")?.add(Learning { text: "in a".into(), ..Default::default() })?;
    /// assert_eq!(b.snapshot()?.namespaces()?.len(), 1);
    /// assert_eq!(db.namespaces()?.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn partitioned(parts: Arc<dyn Partitions>) -> Result<Db> {
        let first =
            parts.all().into_iter().next().ok_or_else(|| {
                crate::error::invalid("a partitioned database needs at least one partition")
            })?;
        Ok(Db { router: Some(parts), front: true, extensions: Arc::default(), ..first })
    }

    /// Whether this is a partitioned handle ([`Db::partitioned`]), not a single database (or
    /// one partition's).
    pub fn is_partitioned(&self) -> bool {
        self.front && self.router.is_some()
    }

    /// The databases this handle's namespaces live in: the partitions of a partitioned
    /// handle, else itself.
    pub fn partitions(&self) -> Vec<Db> {
        match &self.router {
            Some(r) if self.front => r.all().into_iter().map(|db| self.member(db)).collect(),
            _ => vec![self.clone()],
        }
    }

    /// The database holding namespace `ns`: its partition's (reached through this handle or
    /// another partition's), or this one.
    pub fn db_for(&self, ns: &str) -> Result<Db> {
        match &self.router {
            Some(r) => Ok(self.member(r.db_for(ns)?)),
            None => Ok(self.clone()),
        }
    }

    /// A partition's database, routing the namespaces it does not hold as this handle does.
    fn member(&self, db: Db) -> Db {
        Db { router: self.router.clone(), front: false, ..db }
    }

    /// The namespaces ever written to, over every partition, in order.
    pub fn namespaces(&self) -> Result<Vec<Namespace>> {
        let mut out = Vec::new();
        for db in self.partitions() {
            out.extend(db.snapshot()?.namespaces()?);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::ops::{Catalog, Session};
    use crate::{ManualClock, Timestamp};

    /// Namespaces over three files by the sum of their bytes.
    #[derive(Debug)]
    struct Three(Vec<Db>);

    impl Partitions for Three {
        fn db_for(&self, ns: &str) -> Result<Db> {
            let sum: usize = ns.bytes().map(usize::from).sum();
            Ok(self.0[sum % self.0.len()].clone())
        }
        fn all(&self) -> Vec<Db> {
            self.0.clone()
        }
    }

    fn open(dir: &std::path::Path, name: &str, clock: &Arc<ManualClock>) -> Db {
        Db::builder(dir.join(name)).create(true).clock(clock.clone()).open().unwrap()
    }

    /// The answer with what differs between runs (ids, times, paths, sizes) left out.
    fn normalised(v: &Value) -> Value {
        match v {
            Value::String(s) if uuid::Uuid::parse_str(s).is_ok() => json!("<id>"),
            Value::String(s) if crate::Timestamp::parse(s).is_ok() && s.contains('T') => json!("<time>"),
            Value::Array(a) => Value::Array(a.iter().map(normalised).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter(|(k, _)| {
                        !["path", "file_bytes", "commits", "tables", "id", "ids"].contains(&k.as_str())
                    })
                    .map(|(k, v)| (k.clone(), normalised(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The workload: writes in several namespaces and scopes, then the operations that span
    /// namespaces.
    fn workload() -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        for (i, ns) in ["p", "q", "project:alpha", "project:beta", "agent:dev-1", "team"].iter().enumerate() {
            out.push(("remember", json!({"namespace": ns, "kind": "learning", "text": format!("redb keeps pages in a B-tree ({ns})")})));
            out.push((
                "remember",
                json!({"namespace": ns, "kind": "decision", "data": {"title": format!("use JetStream {i}")}}),
            ));
            out.push((
                "remember",
                json!({"namespace": ns, "kind": "task", "data": {"title": format!("ship replicas {i}")}}),
            ));
        }
        for (scope, text) in [
            ("global", "always run cargo fmt"),
            ("agent:dev-1", "prefers small commits"),
            ("project-id:alpha", "the alpha build needs nats-server"),
        ] {
            out.push(("memory_add", json!({"scope": scope, "content": text, "importance": 4})));
        }
        out.push((
            "memory_brief",
            json!({"scope": "project-id:beta", "text": "beta is the cluster project"}),
        ));
        for (op, args) in [
            ("namespaces", json!({})),
            ("namespaces", json!({"prefix": "project:"})),
            ("memory_projects", json!({})),
            ("memory_context", json!({"query": "nats", "scope": "project-id:alpha"})),
            ("memory_show", json!({"scope": "agent:dev-1"})),
            ("recall", json!({"query": "B-tree pages", "namespace": "team"})),
            ("context", json!({"query": "replicas", "namespace": "project:beta"})),
            ("project_search", json!({"query": "JetStream", "namespace": "project:alpha"})),
            ("task_list", json!({"namespace": "q"})),
            ("list", json!({"namespace": "agent:dev-1"})),
            ("db_stats", json!({})),
            ("memory_prune", json!({})),
            ("prune", json!({"dry_run": true})),
        ] {
            out.push((op, args));
        }
        out
    }

    /// Run the workload in a session reaching every namespace, the clock a second on per call.
    fn run(db: Db, clock: &ManualClock) -> Vec<(String, Value)> {
        let catalog = Catalog::new();
        let session = Session::new(db, "p").unwrap().allow("*");
        workload()
            .into_iter()
            .map(|(op, args)| {
                clock.advance(1_000_000);
                let entry = catalog.get(op).unwrap_or_else(|| panic!("no operation {op}"));
                let got = match entry.call(&session, args) {
                    Ok(v) => normalised(&v),
                    Err(e) => json!({"error": e.code().as_str(), "message": e.to_string()}),
                };
                (op.to_string(), got)
            })
            .collect()
    }

    #[test]
    fn every_operation_answers_on_partitions_as_on_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = Timestamp::parse("2026-11-01T00:00:00Z").unwrap();
        let (c1, c2) = (Arc::new(ManualClock::new(t0)), Arc::new(ManualClock::new(t0)));
        let single = open(dir.path(), "one.mnemon", &c1);
        let parts: Vec<Db> = (0..3).map(|i| open(dir.path(), &format!("p{i}.mnemon"), &c2)).collect();
        let routed = Db::partitioned(Arc::new(Three(parts.clone()))).unwrap();
        let (a, b) = (run(single.clone(), &c1), run(routed.clone(), &c2));
        for ((op, x), (_, y)) in a.iter().zip(&b) {
            assert_eq!(x, y, "{op}");
            assert!(x.get("error").is_none(), "{op}: {x}");
        }
        // The records are spread: every file holds some, none holds all.
        let held: Vec<usize> =
            parts.iter().map(|p| p.snapshot().unwrap().namespaces().unwrap().len()).collect();
        assert!(held.iter().all(|&n| n > 0 && n < routed.namespaces().unwrap().len()), "{held:?}");
        assert_eq!(routed.namespaces().unwrap(), single.namespaces().unwrap());
        // An export of all holds the same lines, partition after partition.
        let lines = |db: &Db| {
            let mut out = Vec::new();
            crate::transfer::export(db, None, &mut out).unwrap();
            let mut l: Vec<String> = String::from_utf8(out).unwrap().lines().map(str::to_string).collect();
            l.sort();
            l.len()
        };
        assert_eq!(lines(&single), lines(&routed));
        // One commit cannot span partitions.
        let session = Session::new(routed, "p").unwrap().allow("*");
        let spread = json!({"operations": [
            {"op": "remember", "args": {"namespace": "p", "kind": "learning", "text": "a"}},
            {"op": "remember", "args": {"namespace": "q", "kind": "learning", "text": "b"}}
        ]});
        let same = |db: &Db, ns: &str| db.db_for(ns).unwrap().path().to_path_buf();
        let routed = session.db().clone();
        if same(&routed, "p") != same(&routed, "q") {
            let err = Catalog::new().get("batch").unwrap().call(&session, spread).unwrap_err();
            assert_eq!(err.code(), crate::Code::InvalidInput, "{err}");
        }
    }
}
