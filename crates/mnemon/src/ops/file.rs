//! Operations on the database as a whole, within the session's reach: pruning what ran out,
//! statistics, and the streamed export and import (methods of [`Session`], since they read
//! and write streams rather than answering one document).

use std::io::{BufRead, Write};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, Session};
use crate::error::Result;
use crate::importers::ImportSummary;
use crate::lifecycle::{PruneOptions, PruneReport};
use crate::stats::Stats;
use crate::transfer::{ImportOptions, ImportReport};

/// Retire (or erase) what ran out.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prune {
    /// Only count; change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Erase what is pruned (every revision) instead of retiring it.
    #[serde(default)]
    pub forget: bool,
    /// Also retire episodes older than this many days.
    pub episode_days: Option<u32>,
    /// Episodes of importance 4 and 5 live this many times longer (default 3).
    pub important_factor: Option<u32>,
    /// Also keep at most this many episodes per namespace, the most important and newest.
    pub episode_cap: Option<usize>,
    /// These namespaces (default: the session's own, or every one when it reaches them all).
    #[serde(default)]
    pub namespaces: Vec<String>,
}

impl Operation for Prune {
    const NAME: &'static str = "prune";
    const TITLE: &'static str = "Prune";
    const DESCRIPTION: &'static str = "Close the records whose time to live ran out at their expiry (or erase them with `forget`), and retire episodes past an age or over a cap, in the namespaces named (default: the session's). A dry run only counts.";
    const READ_ONLY: bool = false;
    const ADMIN: bool = true;
    const DESTRUCTIVE: bool = true;
    const MCP: bool = false;
    type Output = PruneReport;

    fn run(self, session: &Session) -> Result<PruneReport> {
        let namespaces = if self.namespaces.is_empty() {
            if session.reach_all("").is_ok() { Vec::new() } else { vec![session.namespace().to_string()] }
        } else {
            for n in &self.namespaces {
                session.ns(Some(n))?;
            }
            self.namespaces
        };
        let o = PruneOptions {
            dry_run: self.dry_run,
            forget: self.forget,
            episode_max_age_days: self.episode_days,
            important_factor: self.important_factor.unwrap_or(3),
            episode_cap: self.episode_cap,
            namespaces,
        };
        session.db().prune(&o)
    }
}

/// Statistics of the database.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DbStats {}

impl Operation for DbStats {
    const NAME: &'static str = "db_stats";
    const TITLE: &'static str = "Database statistics";
    const DESCRIPTION: &'static str = "The file, its size, format, commits, embedder and vector spaces, its tables' row counts, and per namespace the session reaches its records, revisions and current records by kind.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Stats;

    fn run(self, session: &Session) -> Result<Stats> {
        let mut s = crate::stats::stats(session.db())?;
        s.namespaces.retain(|n| session.reaches(n.namespace.as_str()));
        Ok(s)
    }
}

/// The namespaces written to.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Namespaces {
    /// Only those whose name starts with this.
    pub prefix: Option<String>,
}

/// The namespaces.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceNames {
    /// Their names, in order.
    pub namespaces: Vec<String>,
}

impl Operation for Namespaces {
    const NAME: &'static str = "namespaces";
    const TITLE: &'static str = "Namespaces";
    const DESCRIPTION: &'static str = "The names of the namespaces ever written to that the session reaches (optionally only those starting with `prefix`), in order. A namespace whose records were all retired or forgotten is still listed.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = NamespaceNames;

    fn run(self, session: &Session) -> Result<NamespaceNames> {
        let prefix = self.prefix.unwrap_or_default();
        let namespaces = session
            .db()
            .namespaces()?
            .into_iter()
            .map(|n| n.as_str().to_string())
            .filter(|n| n.starts_with(&prefix) && session.reaches(n))
            .collect();
        Ok(NamespaceNames { namespaces })
    }
}

/// Import a knowledge graph in the reference memory server's JSON lines.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphImport {
    /// The lines (`{"type":"entity","name","entityType","observations":[...]}`,
    /// `{"type":"relation","from","to","relationType"}`).
    pub jsonl: String,
    /// What the lines are called in error messages (default `input`).
    pub source: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for GraphImport {
    const NAME: &'static str = "graph_import";
    const TITLE: &'static str = "Import a knowledge graph";
    const DESCRIPTION: &'static str = "Import the reference memory server's knowledge graph (its JSON lines file) into a namespace: entities found by name, one observation record per observation, relations; what is already there is skipped, and a bad line is reported with its number while the others are imported.";
    const READ_ONLY: bool = false;
    const ADMIN: bool = true;
    const MCP: bool = false;
    type Output = ImportSummary;

    fn run(self, session: &Session) -> Result<ImportSummary> {
        let ns = session.ns(self.namespace.as_deref())?;
        crate::importers::import_mcp_jsonl(&ns, &self.jsonl, self.source.as_deref().unwrap_or("input"))
    }
}

/// Export a namespace's knowledge graph in the reference memory server's JSON lines.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphExport {
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// A knowledge graph as JSON lines.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GraphLines {
    /// The lines, each ending in a line break: entities with their observations, then
    /// relations, as the reference memory server writes its file.
    pub jsonl: String,
}

impl Operation for GraphExport {
    const NAME: &'static str = "graph_export";
    const TITLE: &'static str = "Export the knowledge graph";
    const DESCRIPTION: &'static str = "The namespace's current entities (with their observations) and relations as the reference memory server's JSON lines file, the form graph_import reads.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = GraphLines;

    fn run(self, session: &Session) -> Result<GraphLines> {
        let ns = session.ns(self.namespace.as_deref())?;
        Ok(GraphLines { jsonl: crate::importers::export_mcp_jsonl(&ns)? })
    }
}

impl Session {
    /// Write every revision of namespace `ns` (or, with `None`, of every namespace: the
    /// session must reach them all) to `out` as export lines; returns how many.
    pub fn export(&self, ns: Option<&str>, out: &mut dyn Write) -> Result<u64> {
        let ns = match ns {
            Some(n) => Some(self.ns(Some(n))?.name().clone()),
            None => {
                self.reach_all("exporting every namespace")?;
                None
            }
        };
        // Episode access counts are buffered in memory (a long-running server's for a while):
        // written first, so that the export has them.
        self.db().flush_access()?;
        crate::transfer::export(self.db(), ns.as_ref(), out)
    }

    /// Import JSON lines from `input` (named `source` in messages) into the session's
    /// namespace, where lines naming none go; a line naming a namespace the session does not
    /// reach is invalid. See [`crate::transfer::import`].
    pub fn import(
        &self,
        input: &mut dyn BufRead,
        source: &str,
        partial: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ImportReport> {
        let mut o = ImportOptions::new(self.ns(None)?.name().clone());
        o.partial = partial;
        o.reach = self.reach_patterns();
        crate::transfer::import(self.db(), input, source, &o, progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn namespaces_lists_what_the_session_reaches() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let (_dir, db, all, _) = crate::ops::testing::two_namespaces()?;
        assert_eq!(all.call(Namespaces::default())?.namespaces, ["p", "q"]);
        assert_eq!(all.call(Namespaces { prefix: Some("q".into()) })?.namespaces, ["q"]);
        assert!(all.call(Namespaces { prefix: Some("z".into()) })?.namespaces.is_empty());
        let own = Session::new(db, "p")?;
        assert_eq!(own.call(Namespaces::default())?.namespaces, ["p"]);
        Ok(())
    }

    #[test]
    fn whole_database_operations_stay_within_reach() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let (_dir, db, all, _) = crate::ops::testing::two_namespaces()?;
        let own = Session::new(db, "p")?;

        // Export: its own namespace, not every one.
        let mut lines = Vec::new();
        assert_eq!(own.export(Some("p"), &mut lines)?, 1);
        assert_eq!(own.export(None, &mut Vec::new()).err().map(|e| e.code()), Some(Code::Forbidden));
        assert_eq!(own.export(Some("q"), &mut Vec::new()).err().map(|e| e.code()), Some(Code::Forbidden));
        let mut everything = Vec::new();
        assert_eq!(all.export(None, &mut everything)?, 2);

        // Import: a line naming a namespace out of reach is invalid, and nothing is written.
        let input = "{\"kind\":\"learning\",\"text\":\"mine\"}\n{\"namespace\":\"q\",\"kind\":\"learning\",\"text\":\"theirs\"}\n";
        let e = own.import(&mut input.as_bytes(), "test", false, &mut |_, _| {});
        assert!(
            matches!(&e, Err(crate::Error::InvalidImport { errors }) if errors.len() == 1 && errors[0].reason.contains("\"q\"")),
            "{e:?}"
        );
        let report = own.import(&mut input.as_bytes(), "test", true, &mut |_, _| {})?;
        assert_eq!((report.created, report.failed.len()), (1, 1));

        // Statistics of what it reaches; pruning only there.
        let stats = own.call(DbStats {})?;
        assert_eq!(stats.namespaces.iter().map(|n| n.namespace.as_str()).collect::<Vec<_>>(), ["p"]);
        assert_eq!(all.call(DbStats {})?.namespaces.len(), 2);
        let elsewhere = Prune { dry_run: true, namespaces: vec!["q".into()], ..Default::default() };
        assert_eq!(own.call(elsewhere).err().map(|e| e.code()), Some(Code::Forbidden));
        assert!(own.call(Prune { dry_run: true, ..Default::default() })?.dry_run);

        // A knowledge graph goes into a namespace within reach.
        let jsonl =
            r#"{"type":"entity","name":"redb","entityType":"technology","observations":["embedded"]}"#;
        let graph = |ns: &str| GraphImport { jsonl: jsonl.into(), source: None, namespace: Some(ns.into()) };
        assert_eq!(own.call(graph("q")).err().map(|e| e.code()), Some(Code::Forbidden));
        let first = own.call(graph("p"))?;
        let again = own.call(graph("p"))?;
        assert!(first.imported > 0 && again.imported == 0 && first.errors.is_empty(), "{first:?} {again:?}");
        Ok(())
    }
}
