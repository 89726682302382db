//! Project knowledge: patterns (deduplicated), decisions, gotchas by severity, relationships
//! between components (cycles refused where the type implies an order), the append-only
//! learnings log (as markdown on request), search across all of them, and the project context
//! block.
//!
//! ```
//! use mnemon::body::Pattern;
//! use mnemon::Db;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let ns = db.ns("project:1a2b3c4d-app")?;
//! let project = ns.project();
//! let p = Pattern { title: "Errors as values".into(), description: "Return Result, never panic".into(), ..Default::default() };
//! let (id, existed) = project.add_pattern(p.clone(), Some("dev-1"))?;
//! assert!(!existed);
//! // The same title again returns the existing pattern (and fills in a missing example).
//! let (again, existed) = project.add_pattern(Pattern { example: Some("fn f() -> Result<()>".into()), ..p }, None)?;
//! assert!(existed && again == id);
//! project.relate("api", "depends_on", "storage", "")?;
//! assert!(project.relate("storage", "depends_on", "api", "").is_err()); // a cycle
//! assert!(project.context()?.contains("api depends_on storage"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};

use mnemon_storage::body::{Gotcha, Learning, Pattern, Relation, Severity, normalise_key};
use mnemon_storage::{AsOf, Body, Kind, NewRecord, OnConflict, Outcome, Record, RecordId};
use serde_json::{Value, json};

use crate::agent::{SIMILAR_JACCARD, similarity};
use crate::db::Ns;
use crate::error::{Error, Result};

/// Relationship types that imply an order: adding one that closes a cycle of the same type is
/// refused.
pub const ORDERED_RELATIONS: [&str; 10] = [
    "depends_on",
    "requires",
    "imports",
    "extends",
    "inherits_from",
    "calls",
    "precedes",
    "blocks",
    "contains",
    "part_of",
];

impl Ns {
    /// This namespace as a project's knowledge base.
    pub fn project(&self) -> Project<'_> {
        Project { ns: self }
    }
}

/// A project's knowledge; see [`Ns::project`].
#[derive(Clone, Copy)]
pub struct Project<'a> {
    ns: &'a Ns,
}

pub(crate) fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Critical => 0,
        Severity::High => 1,
        Severity::Medium => 2,
        Severity::Low => 3,
    }
}

impl Project<'_> {
    /// Add a pattern unless one with the same title (case-insensitive) or a similar
    /// description exists: then return that one (filling in its example if it had none).
    /// A new pattern is also written to the learnings log. Returns the id and whether it
    /// already existed.
    pub fn add_pattern(&self, p: Pattern, discovered_by: Option<&str>) -> Result<(RecordId, bool)> {
        if p.title.trim().is_empty() {
            return Err(crate::error::invalid("a pattern needs a non-empty title"));
        }
        let existing = self.ns.list_of::<Pattern>(AsOf::now())?.into_iter().find(|r| {
            matches!(&r.body, Body::Pattern(x) if normalise_key(&x.title) == normalise_key(&p.title)
                || (!p.description.trim().is_empty() && similarity(&x.description, &p.description) >= SIMILAR_JACCARD))
        });
        if let Some(r) = existing {
            if let (Some(example), Body::Pattern(x)) = (&p.example, &r.body)
                && x.example.as_deref().is_none_or(|e| e.trim().is_empty())
            {
                self.ns.edit::<Pattern>(r.id, |x, _| {
                    x.example = Some(example.clone());
                    Ok(())
                })?;
            }
            return Ok((r.id, true));
        }
        let text = format!("Discovered pattern: {} - {}", p.title, p.description);
        let mut b = self.ns.record(p);
        if let Some(a) = discovered_by {
            b = b.source(a);
        }
        let id = b.insert()?;
        self.record_learning(
            discovered_by.unwrap_or("unknown"),
            &text,
            &json!({"type": "pattern", "pattern_id": id}),
        )?;
        Ok((id, false))
    }

    /// Current patterns (of one category, or all), oldest first.
    pub fn patterns(&self, category: Option<&str>) -> Result<Vec<Record>> {
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Pattern>(AsOf::now())?
            .into_iter()
            .filter(|r| {
                category.is_none_or(
                    |c| matches!(&r.body, Body::Pattern(p) if p.category.as_str().eq_ignore_ascii_case(c)),
                )
            })
            .collect();
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// Add a gotcha; returns its id.
    pub fn add_gotcha(&self, g: Gotcha) -> Result<RecordId> {
        self.ns.add(g)
    }

    /// Current gotchas (of one severity, or all), most severe first.
    pub fn gotchas(&self, severity: Option<Severity>) -> Result<Vec<Record>> {
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Gotcha>(AsOf::now())?
            .into_iter()
            .filter(|r| severity.is_none_or(|s| matches!(&r.body, Body::Gotcha(g) if g.severity == s)))
            .collect();
        let rank = |r: &Record| match &r.body {
            Body::Gotcha(g) => severity_rank(g.severity),
            _ => u8::MAX,
        };
        out.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Record that `from` `relation_type` `to` (e.g. `api depends_on storage`). The same
    /// relationship again returns the existing one. For the ordered types
    /// ([`ORDERED_RELATIONS`]) one that would close a cycle of that type is refused.
    pub fn relate(&self, from: &str, relation_type: &str, to: &str, description: &str) -> Result<RecordId> {
        let rel = normalise_key(relation_type).replace(' ', "_");
        if from.trim().is_empty() || to.trim().is_empty() || rel.is_empty() {
            return Err(crate::error::invalid("a relationship needs from, type and to"));
        }
        if ORDERED_RELATIONS.contains(&rel.as_str()) {
            let (f, t) = (normalise_key(from), normalise_key(to));
            if f == t {
                return Err(crate::error::invalid(format!("{from} cannot {rel} itself")));
            }
            // Is there already a path to -> ... -> from over this type? Each edge keeps its
            // relationship's id: the error names the one that leads back to `from`.
            let mut edges: BTreeMap<String, Vec<(String, RecordId)>> = BTreeMap::new();
            for r in self.ns.list_of::<Relation>(AsOf::now())? {
                if let Body::Relation(x) = &r.body
                    && normalise_key(&x.relation_type).replace(' ', "_") == rel
                {
                    edges.entry(normalise_key(&x.from)).or_default().push((normalise_key(&x.to), r.id));
                }
            }
            let mut stack: Vec<(String, Option<RecordId>)> = vec![(t.clone(), None)];
            let mut seen = BTreeSet::new();
            while let Some((n, via)) = stack.pop() {
                if n == f
                    && let Some(id) = via
                {
                    return Err(Error::Rule {
                        id,
                        reason: format!(
                            "{from} {rel} {to} would close a {rel} cycle: {to} already leads back to {from} \
                             (this relationship closes the path)"
                        ),
                    });
                }
                if seen.insert(n.clone()) {
                    stack.extend(edges.get(&n).into_iter().flatten().map(|(to, id)| (to.clone(), Some(*id))));
                }
            }
        }
        let body = Relation {
            from: from.trim().to_string(),
            relation_type: rel,
            to: to.trim().to_string(),
            description: description.to_string(),
        };
        let mut rec = NewRecord::new(self.ns.name().clone(), body);
        rec.on_conflict = OnConflict::ReturnExisting;
        Ok(match self.ns.insert(rec)? {
            Outcome::Existing { id } => id,
            o => o.id(),
        })
    }

    /// Current relationships touching `component` (either end, case-insensitive), or all.
    pub fn relationships(&self, component: Option<&str>) -> Result<Vec<Record>> {
        let want = component.map(normalise_key);
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Relation>(AsOf::now())?
            .into_iter()
            .filter(|r| {
                want.as_ref().is_none_or(|c| {
                    matches!(&r.body, Body::Relation(x) if normalise_key(&x.from) == *c || normalise_key(&x.to) == *c)
                })
            })
            .collect();
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// Append to the learnings log: a learning by `agent`, with free metadata
    /// (`related_files`: a list of paths, `type`: a word, anything else).
    pub fn record_learning(&self, agent: &str, text: &str, metadata: &Value) -> Result<RecordId> {
        let files: mnemon_storage::TextList = metadata["related_files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(Into::into))
            .collect();
        self.ns
            .record(Learning { text: text.to_string(), related_files: files })
            .source(agent)
            .metadata(metadata.clone())
            .permanent()
            .insert()
    }

    /// The last `limit` learnings, oldest first.
    pub fn learnings(&self, limit: usize) -> Result<Vec<Record>> {
        let mut all = self.ns.list_of::<Learning>(AsOf::now())?;
        all.sort_by_key(|r| r.id);
        let skip = all.len().saturating_sub(limit);
        Ok(all.split_off(skip))
    }

    /// The last `limit` learnings as the readable markdown log of the design document:
    /// `## date`, `### [agent] time`, the text, related files, type, `---`.
    pub fn learnings_markdown(&self, limit: usize) -> Result<String> {
        let mut s = String::new();
        for r in self.learnings(limit)? {
            let Body::Learning(l) = &r.body else { continue };
            let at = r.valid_from.to_rfc3339();
            let (date, time) = at.split_once('T').unwrap_or((at.as_str(), ""));
            let time: String = time.chars().take(8).collect();
            let agent = r.envelope.source.as_deref().unwrap_or("unknown");
            s.push_str(&format!("\n## {date}\n### [{agent}] {time}\n{}\n", l.text));
            if !l.related_files.is_empty() {
                let files: Vec<&str> = l.related_files.iter().map(|f| f.as_str()).collect();
                s.push_str(&format!("\n**Related files:** {}\n", files.join(", ")));
            }
            if let Some(t) = r.envelope.metadata.value()["type"].as_str() {
                s.push_str(&format!("\n**Type:** {t}\n"));
            }
            s.push_str("---\n");
        }
        Ok(s)
    }

    /// Search patterns, decisions, gotchas, relationships and learnings (hybrid), grouped by
    /// kind, best first.
    pub fn search_all(&self, query: &str, limit: usize) -> Result<BTreeMap<Kind, Vec<Record>>> {
        let hits = self
            .ns
            .search(query)
            .kinds([Kind::Pattern, Kind::Decision, Kind::Gotcha, Kind::Relation, Kind::Learning])
            .limit(limit)
            .run()?;
        let mut out: BTreeMap<Kind, Vec<Record>> = BTreeMap::new();
        for h in hits {
            out.entry(h.record.kind()).or_default().push(h.record);
        }
        Ok(out)
    }

    /// The project context block (markdown): critical and high gotchas first, then up to 10
    /// patterns, 5 accepted decisions, the relationships and the 5 latest learnings.
    pub fn context(&self) -> Result<String> {
        let mut s = String::from("## Project Knowledge Base\n\n");
        let critical: Vec<Record> = self
            .gotchas(None)?
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Gotcha(g) if matches!(g.severity, Severity::High | Severity::Critical)))
            .collect();
        if !critical.is_empty() {
            s.push_str("### Critical Gotchas (Must Know!)\n");
            for r in &critical {
                if let Body::Gotcha(g) = &r.body {
                    s.push_str(&format!("- **{}**: {} → {}\n", g.title, g.problem, g.solution));
                }
            }
            s.push('\n');
        }
        let patterns = self.patterns(None)?;
        if !patterns.is_empty() {
            s.push_str("### Code Patterns\n");
            for r in patterns.iter().take(10) {
                if let Body::Pattern(p) = &r.body {
                    s.push_str(&format!("- **[{}] {}**: {}\n", p.category, p.title, p.description));
                    if let Some(e) = p.example.as_deref().filter(|e| !e.is_empty()) {
                        s.push_str(&format!("  Example: `{e}`\n"));
                    }
                }
            }
            s.push('\n');
        }
        let decisions = self.ns.decisions().active()?;
        if !decisions.is_empty() {
            s.push_str("### Architecture Decisions\n");
            for r in decisions.iter().take(5) {
                if let Body::Decision(d) = &r.body {
                    let what = if d.description.is_empty() { &d.title } else { &d.description };
                    s.push_str(&format!("- **{}**: {} ({})\n", d.title, what, d.rationale));
                }
            }
            s.push('\n');
        }
        let rels = self.relationships(None)?;
        if !rels.is_empty() {
            s.push_str("### Component Relationships\n");
            for r in &rels {
                if let Body::Relation(x) = &r.body {
                    s.push_str(&format!("- {} {} {}\n", x.from, x.relation_type, x.to));
                }
            }
            s.push('\n');
        }
        let learnings = self.learnings_markdown(5)?;
        if !learnings.is_empty() {
            s.push_str("### Recent Learnings\n");
            s.push_str(&learnings);
        }
        Ok(s.trim_end().to_string())
    }
}
