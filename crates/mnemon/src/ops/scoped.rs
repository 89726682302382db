//! Upkeep of scoped memory (the project briefs and the global, project and agent sections):
//! setting a brief, listing the projects, deleting, pruning and clearing entries, importing
//! sections' markdown and the knowledge-graph JSONL. Adding, showing and the block, offered
//! to models, are in [`super::memory`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::memory::scope_of;
use super::{Operation, SectionArg, Session, Stored};
use crate::error::Result;
use crate::scoped::ProjectSummary;

/// Set a scope's brief.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryBrief {
    /// What the project is, in a few lines (it replaces the brief before).
    pub text: String,
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

impl Operation for MemoryBrief {
    const NAME: &'static str = "memory_brief";
    const TITLE: &'static str = "Set the brief";
    const DESCRIPTION: &'static str = "Set a scope's brief (what the project is), shown first in its memory and its block; it supersedes the brief before.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let scope = scope_of(session, self.scope.as_deref())?;
        Ok(Stored { id: session.db().memory().set_brief(&scope, &self.text)? })
    }
}

/// The projects with scoped memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryProjects {}

/// Projects with scoped memory.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Projects {
    /// By id.
    pub projects: Vec<ProjectSummary>,
}

impl Operation for MemoryProjects {
    const NAME: &'static str = "memory_projects";
    const TITLE: &'static str = "Projects";
    const DESCRIPTION: &'static str = "Every project the session reaches with current memory entries or a brief: its id, entry count and whether it has a brief.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = Projects;

    fn run(self, session: &Session) -> Result<Projects> {
        let mut projects = session.db().memory().projects()?;
        projects.retain(|p| session.reaches(&format!("project:{}", p.id)));
        Ok(Projects { projects })
    }
}

/// Delete an entry of a scope's memory.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryDelete {
    /// The entry: a record id (a unique head or tail of at least 6 hex digits also works).
    pub id: String,
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

impl Operation for MemoryDelete {
    const NAME: &'static str = "memory_delete";
    const TITLE: &'static str = "Delete a memory entry";
    const DESCRIPTION: &'static str =
        "Delete an entry of a scope's memory: it is retired, hidden from now on and kept for time travel.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Stored;

    fn run(self, session: &Session) -> Result<Stored> {
        let scope = scope_of(session, self.scope.as_deref())?;
        let id = session.ns(Some(&scope.namespace()))?.resolve_id(&self.id)?;
        session.db().memory().delete(&scope, id)?;
        Ok(Stored { id })
    }
}

/// Close the entries whose time to live ran out.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryPrune {}

/// Expired entries closed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Pruned {
    /// How many in all.
    pub pruned: usize,
    /// How many per namespace.
    pub by_namespace: BTreeMap<String, usize>,
}

impl Operation for MemoryPrune {
    const NAME: &'static str = "memory_prune";
    const TITLE: &'static str = "Prune expired entries";
    const DESCRIPTION: &'static str = "Close the validity of every entry whose time to live ran out (already hidden), at its expiry, in every namespace the session reaches.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Pruned;

    fn run(self, session: &Session) -> Result<Pruned> {
        let memory = session.db().memory();
        let mut by_namespace = BTreeMap::new();
        for (ns, found) in memory.expired()? {
            let Ok(handle) = session.ns(Some(&ns)) else { continue };
            for (id, at) in &found {
                handle.retire(*id, Some(*at))?;
            }
            by_namespace.insert(ns, found.len());
        }
        Ok(Pruned { pruned: by_namespace.values().sum(), by_namespace })
    }
}

/// Retire every entry of a scope.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryClear {
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

/// How many entries were cleared.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Cleared {
    /// Entries retired (the brief included).
    pub cleared: usize,
}

impl Operation for MemoryClear {
    const NAME: &'static str = "memory_clear";
    const TITLE: &'static str = "Clear a scope";
    const DESCRIPTION: &'static str =
        "Retire every current entry of a scope and its brief (kept for time travel).";
    const READ_ONLY: bool = false;
    const DESTRUCTIVE: bool = true;
    const MCP: bool = false;
    type Output = Cleared;

    fn run(self, session: &Session) -> Result<Cleared> {
        let scope = scope_of(session, self.scope.as_deref())?;
        Ok(Cleared { cleared: session.db().memory().clear(&scope)? })
    }
}

/// Import a section's markdown.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryImport {
    /// The markdown, as `memory show` writes a section (`# Title`, then `## <time> |
    /// importance:N | ttl:N | id:X` headings with the entry below).
    pub markdown: String,
    /// The section it fills.
    pub section: SectionArg,
    /// `current` (default), `global`, `project:PATH` (or a project id), or `agent:NAME`.
    pub scope: Option<String>,
}

/// What an import wrote.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Imported {
    /// Entries written.
    pub imported: usize,
    /// Entries already there (by id), left as they were.
    pub skipped: usize,
}

impl Operation for MemoryImport {
    const NAME: &'static str = "memory_import";
    const TITLE: &'static str = "Import a section";
    const DESCRIPTION: &'static str = "Import a section's markdown; entries already there (by id) are skipped, and a malformed heading is an error naming its line with nothing imported.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = Imported;

    fn run(self, session: &Session) -> Result<Imported> {
        let scope = scope_of(session, self.scope.as_deref())?;
        let (imported, skipped) =
            session.db().memory().import_markdown(&scope, self.section.into(), &self.markdown)?;
        Ok(Imported { imported, skipped })
    }
}

/// Import a knowledge-graph file as scoped entries.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryImportGraph {
    /// The JSON lines of the reference memory server's file (`{"type":"entity",...}`,
    /// `{"type":"relation",...}`).
    pub jsonl: String,
}

/// What a graph import wrote.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GraphImported {
    /// Entries written (observations already there are not written again).
    pub imported: usize,
}

impl Operation for MemoryImportGraph {
    const NAME: &'static str = "memory_import_graph";
    const TITLE: &'static str = "Import a knowledge graph";
    const DESCRIPTION: &'static str = "Import the reference memory server's knowledge-graph file as scoped entries: an entity named project:PATH goes to that project, others to the global scope; an observation already there is skipped. A bad line is an error naming it, and nothing is written.";
    const READ_ONLY: bool = false;
    const ADMIN: bool = true;
    const MCP: bool = false;
    type Output = GraphImported;

    fn run(self, session: &Session) -> Result<GraphImported> {
        // It writes to the global scope and to any project the file names.
        session.reach_all("importing a knowledge graph")?;
        Ok(GraphImported { imported: session.db().memory().import_graph_jsonl(&self.jsonl)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use crate::ops::{MemoryAdd, MemoryShow};

    #[test]
    fn scoped_memory_upkeep_runs_through_operations_within_reach()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = crate::Db::create(dir.path().join("m.redb"))?;
        let own = Session::new(db.clone(), "project:app")?;
        let all = Session::new(db, "project:app")?.allow("*");
        own.call(MemoryBrief { text: "A web app".into(), scope: None })?;
        let add = |content: &str| MemoryAdd {
            content: content.into(),
            section: Some(SectionArg::Learnings),
            importance: Some(5),
            scope: None,
        };
        let kept = own.call(add("pnpm, not npm"))?.id;
        own.call(add("vitest, not jest"))?;

        // A section's markdown imports into another scope, and again adds nothing.
        let shown = own.call(MemoryShow { section: Some(SectionArg::Learnings), scope: None })?;
        let rs: Vec<crate::Record> =
            shown.sections[0].entries.iter().map(|e| e.record.record.clone()).collect();
        let markdown = crate::scoped::section_markdown(crate::scoped::Section::Learnings, &rs);
        let into = |scope: &str| MemoryImport {
            markdown: markdown.clone(),
            section: SectionArg::Learnings,
            scope: Some(scope.into()),
        };
        assert_eq!(own.call(into("global")).err().map(|e| e.code()), Some(Code::Forbidden));
        let first = all.call(into("global"))?;
        let again = all.call(into("global"))?;
        assert_eq!((first.imported, first.skipped, again.imported, again.skipped), (2, 0, 0, 2));

        // Projects within reach; delete and clear.
        all.call(MemoryBrief { text: "Another".into(), scope: Some("project-id:1a2b3c4d-other".into()) })?;
        assert_eq!(own.call(MemoryProjects {})?.projects.len(), 1);
        assert_eq!(all.call(MemoryProjects {})?.projects.len(), 2);
        own.call(MemoryDelete { id: kept.to_string(), scope: None })?;
        assert_eq!(own.call(MemoryClear { scope: None })?.cleared, 2, "the other entry and the brief");

        // A graph import writes where its file says: only a session reaching everything.
        let line = r#"{"type":"entity","name":"tools","entityType":"note","observations":["use ripgrep"]}"#;
        let graph = || MemoryImportGraph { jsonl: line.into() };
        assert_eq!(own.call(graph()).err().map(|e| e.code()), Some(Code::Forbidden));
        assert_eq!(all.call(graph())?.imported, 1);
        Ok(())
    }

    /// An imported entry's own date and time to live decide its expiry: one that ran out before
    /// the import is expired at once (and seen by time travel while it lived), one still running
    /// keeps only what is left of its time, and `ttl:permanent` never expires.
    #[test]
    fn imported_entries_expire_from_their_own_date() -> std::result::Result<(), Box<dyn std::error::Error>> {
        use crate::Timestamp;
        let dir = tempfile::tempdir()?;
        let db = crate::Db::create(dir.path().join("m.redb"))?;
        let s = Session::new(db.clone(), "global")?;
        let now = db.now();
        let days_ago = |d: i64| Timestamp::from_micros(now.as_micros() - d * 86_400_000_000);
        let markdown = format!(
            "# Learnings\n\n## {} | importance:1 | ttl:1 | id:old\nran out long ago\n\n## {} | importance:2 | ttl:7 | id:young\nstill running\n\n## {} | importance:1 | ttl:permanent | id:kept\nkept for good\n",
            days_ago(3).to_rfc3339(),
            days_ago(2).to_rfc3339(),
            days_ago(400).to_rfc3339(),
        );
        let done = s.call(MemoryImport { markdown, section: SectionArg::Learnings, scope: None })?;
        assert_eq!(done.imported, 3);
        let ns = db.ns("global")?;
        let by_md = |m: &str| -> std::result::Result<crate::Record, Box<dyn std::error::Error>> {
            let mut found = None;
            db.snapshot()?.for_each_revision(Some(ns.name()), |r| {
                if r.envelope.metadata.value()["md_id"] == m {
                    found = Some(r.clone());
                }
                Ok(())
            })?;
            found.ok_or_else(|| format!("no entry {m}").into())
        };
        let old = by_md("old")?;
        assert_eq!(old.expires_at, Some(days_ago(3).plus_days(1)));
        assert!(ns.get(old.id)?.is_none(), "expired before the import: not current");
        // While it lived, time travel sees it.
        assert!(ns.get_as_of(old.id, days_ago(3).plus_micros(3_600_000_000))?.is_some());
        let young = by_md("young")?;
        assert_eq!(young.expires_at, Some(days_ago(2).plus_days(7)));
        assert!(ns.get(young.id)?.is_some());
        let kept = by_md("kept")?;
        assert_eq!(kept.expires_at, None);
        assert!(ns.get(kept.id)?.is_some());
        // Bad ttl fields are refused with the line.
        let bad = s.call(MemoryImport {
            markdown: "## 2026-01-01 | importance:1 | ttl:soon | id:x\nno\n".into(),
            section: SectionArg::Learnings,
            scope: None,
        });
        assert!(bad.err().is_some_and(|e| e.to_string().contains("ttl must be")));
        Ok(())
    }
}
