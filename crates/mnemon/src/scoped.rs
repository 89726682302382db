//! Scoped markdown memory: entries in a global, project or agent scope, each with an
//! importance 1-5 whose TTL is 1, 7, 30, 90 days or permanent; the project brief; listing
//! projects; deleting an entry; pruning what expired; clearing a project; the markdown entry
//! format (`## <timestamp> | importance:N | ttl:N | id:X`) out and in; the knowledge-graph
//! JSONL file such memories migrate from; and the context block for a prompt.
//!
//! A project's namespace is derived from its path: `project:` + the 8 hex digits of the djb2
//! hash of the full path + `-` + the basename cut to 20 characters.
//!
//! ```
//! use mnemon::scoped::{Scope, Section, project_id};
//! use mnemon::Db;
//!
//! assert_eq!(project_id("/home/me/src/yume"), format!("{:08x}-yume", mnemon::scoped::djb2("/home/me/src/yume")));
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let memory = db.memory();
//! let project = Scope::project("/home/me/src/yume");
//! memory.add(&project, Section::Learnings, "Uses Zustand for state", 4)?;
//! let md = memory.export_markdown(&project, Section::Learnings)?;
//! assert!(md.starts_with("# Learnings\n") && md.contains("| importance:4 | ttl:90 | id:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use mnemon_storage::body::{Brief, ErrorFix, Learning, Pattern, Preference};
use mnemon_storage::{
    AsOf, Body, Kind, ListQuery, NewRecord, OnConflict, Outcome, Record, RecordId, Timestamp,
};
use serde_json::Value;

use crate::db::{Db, Ns};
use crate::error::{Result, invalid};

/// The djb2 hash of a string's UTF-8 bytes (`h = h * 33 + byte`, from 5381, 32 bits).
pub fn djb2(s: &str) -> u32 {
    s.bytes().fold(5381u32, |h, b| h.wrapping_mul(33).wrapping_add(u32::from(b)))
}

/// A project's id: 8 hex digits of djb2(full path), `-`, the basename cut to 20 characters.
pub fn project_id(path: &str) -> String {
    let trimmed = path.trim_end_matches(['/', '\\']);
    let base = trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed);
    let base: String = base.chars().take(20).collect();
    format!("{:08x}-{base}", djb2(path))
}

/// Whether `s` has the form of a project id (8 hex digits, a dash, a name without path
/// separators), as [`project_id`] makes them.
fn is_project_id(s: &str) -> bool {
    let (hex, name) = s.split_at_checked(8).unwrap_or(("", ""));
    hex.chars().all(|c| c.is_ascii_hexdigit())
        && !hex.is_empty()
        && name.strip_prefix('-').is_some_and(|n| !n.is_empty() && !n.contains(['/', '\\']))
}

/// Where an entry lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Across all projects (namespace `global`).
    Global,
    /// One project, by its id (namespace `project:<id>`).
    Project(String),
    /// One agent (namespace `agent:<name>`).
    Agent(String),
}

impl Scope {
    /// The scope of the project at `path`.
    pub fn project(path: &str) -> Scope {
        Scope::Project(project_id(path))
    }

    /// Parse `global`, `project:PATH` (a path, hashed; or a project id as [`project_id`]
    /// makes them and `memory projects` prints them, `1a2b3c4d-app`, taken as it is),
    /// `project-id:ID`, or `agent:NAME`.
    pub fn parse(s: &str) -> Result<Scope> {
        if s == "global" {
            return Ok(Scope::Global);
        }
        if let Some(p) = s.strip_prefix("project:").filter(|p| !p.is_empty()) {
            return Ok(if is_project_id(p) { Scope::Project(p.to_string()) } else { Scope::project(p) });
        }
        if let Some(p) = s.strip_prefix("project-id:").filter(|p| !p.is_empty()) {
            return Ok(Scope::Project(p.to_string()));
        }
        if let Some(a) = s.strip_prefix("agent:").filter(|a| !a.is_empty()) {
            return Ok(Scope::Agent(a.to_string()));
        }
        Err(invalid(format!("unknown scope {s:?} (global, project:PATH, project-id:ID or agent:NAME)")))
    }

    /// The scope whose namespace is `ns` (`global`, `project:ID`, `agent:NAME`), if any.
    pub fn of_namespace(ns: &str) -> Option<Scope> {
        if ns == "global" {
            return Some(Scope::Global);
        }
        if let Some(id) = ns.strip_prefix("project:").filter(|p| !p.is_empty()) {
            return Some(Scope::Project(id.to_string()));
        }
        ns.strip_prefix("agent:").filter(|a| !a.is_empty()).map(|a| Scope::Agent(a.to_string()))
    }

    /// Its name as [`Scope::parse`] takes it back, whatever the project id looks like
    /// (`global`, `project-id:ID`, `agent:NAME`).
    pub fn spec(&self) -> String {
        match self {
            Scope::Project(id) => format!("project-id:{id}"),
            other => other.namespace(),
        }
    }

    /// Its namespace.
    pub fn namespace(&self) -> String {
        match self {
            Scope::Global => "global".to_string(),
            Scope::Project(id) => format!("project:{id}"),
            Scope::Agent(a) => format!("agent:{a}"),
        }
    }
}

/// A section of a scope: a markdown file in the design document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// `learnings.md` (learning records).
    Learnings,
    /// `errors.md` (error → solution; error_fix records).
    Errors,
    /// `patterns.md` (pattern records).
    Patterns,
    /// `preferences.md` (preference records).
    Preferences,
}

impl Section {
    /// All sections.
    pub const ALL: [Section; 4] =
        [Section::Learnings, Section::Errors, Section::Patterns, Section::Preferences];

    /// Parse `learnings`, `errors`, `patterns` or `preferences` (singular too).
    pub fn parse(s: &str) -> Result<Section> {
        Ok(match s.trim_end_matches('s') {
            "learning" => Section::Learnings,
            "error" => Section::Errors,
            "pattern" => Section::Patterns,
            "preference" => Section::Preferences,
            _ => {
                return Err(invalid(format!(
                    "unknown section {s:?} (learnings, errors, patterns, preferences)"
                )));
            }
        })
    }

    /// The record kind.
    pub fn kind(self) -> Kind {
        match self {
            Section::Learnings => Kind::Learning,
            Section::Errors => Kind::ErrorFix,
            Section::Patterns => Kind::Pattern,
            Section::Preferences => Kind::Preference,
        }
    }

    /// The heading of its markdown file.
    pub fn title(self) -> &'static str {
        match self {
            Section::Learnings => "Learnings",
            Section::Errors => "Errors",
            Section::Patterns => "Patterns",
            Section::Preferences => "Preferences",
        }
    }

    /// A body holding `content` (errors: `error → solution` or `error -> solution`; patterns:
    /// `name: description`).
    fn body(self, content: &str) -> Body {
        match self {
            Section::Learnings => Learning { text: content.to_string(), ..Default::default() }.into(),
            Section::Errors => {
                let (e, s) =
                    content.split_once(" → ").or_else(|| content.split_once(" -> ")).unwrap_or((content, ""));
                ErrorFix {
                    error: e.trim().to_string(),
                    solution: s.trim().to_string(),
                    context: String::new(),
                }
                .into()
            }
            Section::Patterns => {
                let (t, d) = content.split_once(": ").unwrap_or((content, ""));
                Pattern {
                    title: t.trim().to_string(),
                    description: d.trim().to_string(),
                    ..Default::default()
                }
                .into()
            }
            Section::Preferences => Preference { text: content.to_string(), ..Default::default() }.into(),
        }
    }
}

/// A section's entries (newest first) as its markdown file: `# Title`, then one
/// `## <timestamp> | importance:N | ttl:N | id:X` heading per entry with the entry below;
/// `ttl:permanent` for importance 5. See [`Memory::export_markdown`].
pub fn section_markdown(section: Section, entries: &[Record]) -> String {
    let mut s = format!("# {}\n", section.title());
    for r in entries {
        let imp = r.envelope.importance.unwrap_or(3);
        let ttl = ttl_days(imp).map_or_else(|| "permanent".to_string(), |d| d.to_string());
        let md_id = r.envelope.metadata.value()["md_id"].as_str().map(str::to_string);
        let id = md_id.unwrap_or_else(|| r.id.to_string());
        s.push_str(&md_entry(r.valid_from, imp, &ttl, &id, &entry_text(r)));
    }
    s
}

/// An entry's text as its section writes it.
pub fn entry_text(r: &Record) -> String {
    match &r.body {
        Body::ErrorFix(e) if !e.solution.is_empty() => format!("{} → {}", e.error, e.solution),
        Body::ErrorFix(e) => e.error.clone(),
        Body::Pattern(p) if !p.description.is_empty() => format!("{}: {}", p.title, p.description),
        Body::Pattern(p) => p.title.clone(),
        b => b.text(),
    }
}

/// Expired records of one namespace: (namespace, [(id, expiry)]).
pub type Expired = (String, Vec<(RecordId, Timestamp)>);

/// The TTL in days of an importance (None: permanent).
pub fn ttl_days(importance: u8) -> Option<u32> {
    mnemon_storage::TTL_DAYS.get(usize::from(importance.saturating_sub(1))).copied()
}

impl Db {
    /// Scoped markdown memory over this database.
    pub fn memory(&self) -> Memory<'_> {
        Memory { db: self }
    }
}

/// Scoped memory; see [`Db::memory`].
#[derive(Clone, Copy)]
pub struct Memory<'a> {
    db: &'a Db,
}

/// A project known to the memory.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ProjectSummary {
    /// Its id (`<hash>-<basename>`).
    pub id: String,
    /// Current entries.
    pub entries: usize,
    /// Whether it has a brief.
    pub has_brief: bool,
}

impl Memory<'_> {
    fn ns(&self, scope: &Scope) -> Result<Ns> {
        self.db.ns(&scope.namespace())
    }

    /// Add an entry with importance 1-5 (its TTL follows); returns its id. Markdown-style
    /// entries keep their original id in `metadata.md_id` when imported.
    pub fn add(&self, scope: &Scope, section: Section, content: &str, importance: u8) -> Result<RecordId> {
        Ok(self.add_at(scope, section, content, importance, None)?.id())
    }

    /// [`Self::add`], saying what it did: a new entry (`Written`); the same entry already
    /// there (`Existing`: a pattern of that title with the same description and importance);
    /// or a pattern of that title that said something else, superseded by this one
    /// (`Superseded`: the new description and importance win, the old one stays in the
    /// history and the chain).
    pub fn add_entry(
        &self,
        scope: &Scope,
        section: Section,
        content: &str,
        importance: u8,
    ) -> Result<Outcome> {
        self.add_at(scope, section, content, importance, None)
    }

    /// Add an entry; `imported` is an entry of a markdown file: its own time, its id there and
    /// its time to live (`None`: permanent), which runs from its own time.
    fn add_at(
        &self,
        scope: &Scope,
        section: Section,
        content: &str,
        importance: u8,
        imported: Option<(Timestamp, &str, Option<u32>)>,
    ) -> Result<Outcome> {
        if content.trim().is_empty() {
            return Err(invalid("an entry needs a non-empty content"));
        }
        let ns = self.ns(scope)?;
        let mut rec = NewRecord::new(ns.name().clone(), section.body(content.trim()));
        rec.envelope.importance = Some(importance);
        if let Some((at, md_id, ttl)) = imported {
            rec.valid_from = Some(at);
            rec.envelope.metadata =
                mnemon_storage::JsonText::from_value(&serde_json::json!({ "md_id": md_id }));
            // An entry that ran out before the import is written expired: visible to time
            // travel while it lived, not now.
            rec.expiry = match ttl {
                Some(days) => mnemon_storage::Expiry::At(at.plus_days(days.max(1))),
                None => mnemon_storage::Expiry::Never,
            };
        }
        // Patterns are unique by title: a second one with that title returns the first if it
        // says the same, and supersedes it if not.
        rec.on_conflict = OnConflict::ReturnExisting;
        let again = rec.clone();
        match ns.insert(rec)? {
            Outcome::Existing { id } => {
                let same = ns.get(id)?.is_some_and(|cur| {
                    cur.body == again.body && cur.envelope.importance == again.envelope.importance
                });
                if same {
                    return Ok(Outcome::Existing { id });
                }
                let mut new = again;
                new.on_conflict = OnConflict::Supersede;
                Ok(ns.insert(new)?)
            }
            other => Ok(other),
        }
    }

    /// Set the project brief (plain text, permanent; the previous one is superseded).
    pub fn set_brief(&self, scope: &Scope, brief: &str) -> Result<RecordId> {
        let ns = self.ns(scope)?;
        let mut rec = NewRecord::new(ns.name().clone(), Brief { text: brief.to_string() });
        rec.on_conflict = OnConflict::Supersede;
        rec.envelope.importance = Some(5);
        Ok(ns.insert(rec)?.id())
    }

    /// The brief, if any.
    pub fn brief(&self, scope: &Scope) -> Result<Option<String>> {
        Ok(self.ns(scope)?.list_of::<Brief>(AsOf::now())?.into_iter().find_map(|r| match r.body {
            Body::Brief(b) => Some(b.text),
            _ => None,
        }))
    }

    /// Current entries of a section, newest first.
    pub fn entries(&self, scope: &Scope, section: Section) -> Result<Vec<Record>> {
        self.ns(scope)?.list(&ListQuery::new().kinds([section.kind()]))
    }

    /// Every project with current entries or a brief.
    pub fn projects(&self) -> Result<Vec<ProjectSummary>> {
        let mut out = Vec::new();
        for part in self.db.partitions() {
            let snap = part.snapshot()?;
            for n in snap.namespaces()? {
                let Some(id) = n.as_str().strip_prefix("project:") else { continue };
                let recs = snap.list(&n, &ListQuery::new())?;
                if recs.is_empty() {
                    continue;
                }
                let has_brief = recs.iter().any(|r| r.kind() == Kind::Brief);
                out.push(ProjectSummary { id: id.to_string(), entries: recs.len(), has_brief });
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Delete an entry: it is retired (hidden from now on, kept for time travel).
    pub fn delete(&self, scope: &Scope, id: RecordId) -> Result<()> {
        self.ns(scope)?.retire(id, None).map(|_| ())
    }

    /// Entries whose TTL ran out are already hidden; this closes their validity at their
    /// expiry so that they leave the current set for good. Returns how many, per namespace.
    pub fn prune_expired(&self) -> Result<BTreeMap<String, usize>> {
        let mut out = BTreeMap::new();
        for (ns, found) in self.expired()? {
            let handle = self.db.ns(&ns)?;
            for (id, at) in &found {
                handle.retire(*id, Some(*at))?;
            }
            out.insert(ns, found.len());
        }
        Ok(out)
    }

    /// Records of every namespace whose expiry has passed and whose validity is still open:
    /// (namespace, [(id, expiry)]).
    pub fn expired(&self) -> Result<Vec<Expired>> {
        let mut out = Vec::new();
        for part in self.db.partitions() {
            self.expired_in(&part, &mut out)?;
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// [`Self::expired`] in one database.
    fn expired_in(&self, db: &crate::Db, out: &mut Vec<Expired>) -> Result<()> {
        let snap = db.snapshot()?;
        let now = snap.now();
        for n in snap.namespaces()? {
            let mut found = Vec::new();
            snap.for_each_revision(Some(&n), |r| {
                if r.replaced_at.is_none()
                    && r.valid_until.is_none()
                    && r.superseded_by.is_none()
                    && let Some(e) = r.expires_at.filter(|e| *e <= now && *e > r.valid_from)
                {
                    found.push((r.id, e));
                }
                Ok(())
            })?;
            if !found.is_empty() {
                out.push((n.as_str().to_string(), found));
            }
        }
        Ok(())
    }

    /// Retire every current entry of a scope (and its brief); returns how many.
    pub fn clear(&self, scope: &Scope) -> Result<usize> {
        let ns = self.ns(scope)?;
        let recs = ns.list(&ListQuery::new())?;
        for r in &recs {
            ns.retire(r.id, None)?;
        }
        Ok(recs.len())
    }

    /// A section as its markdown file: `# Title`, then one `## <timestamp> | importance:N |
    /// ttl:N | id:X` heading per entry (newest first) with the entry below; `ttl:permanent`
    /// for importance 5.
    pub fn export_markdown(&self, scope: &Scope, section: Section) -> Result<String> {
        Ok(section_markdown(section, &self.entries(scope, section)?))
    }

    /// Import a section's markdown (as [`Memory::export_markdown`] writes it, or the design
    /// document's files). An entry whose id is already present (as a record id or an imported
    /// `md_id`) is skipped. Returns (imported, skipped). A malformed heading is an error naming
    /// its line, and nothing is imported.
    pub fn import_markdown(&self, scope: &Scope, section: Section, text: &str) -> Result<(usize, usize)> {
        let entries = parse_markdown(text)?;
        let ns = self.ns(scope)?;
        let mut known: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let snap = ns.db().snapshot()?;
        snap.for_each_revision(Some(ns.name()), |r| {
            known.insert(r.id.to_string());
            if let Some(m) = r.envelope.metadata.value()["md_id"].as_str() {
                known.insert(m.to_string());
            }
            Ok(())
        })?;
        let (mut imported, mut skipped) = (0, 0);
        for e in entries {
            if known.contains(&e.id) {
                skipped += 1;
                continue;
            }
            let ttl = e.ttl.unwrap_or_else(|| ttl_days(e.importance));
            let id =
                self.add_at(scope, section, &e.content, e.importance, Some((e.at, e.id.as_str(), ttl)))?.id();
            known.insert(id.to_string());
            imported += 1;
        }
        Ok((imported, skipped))
    }

    /// Import the knowledge-graph JSONL file (`{"type":"entity","name","entityType",
    /// "observations"}` and `{"type":"relation","from","to","relationType"}` lines) as scoped
    /// entries: an entity named `project:<path>` (or a path) goes to that project, others to
    /// the global scope; its observations become entries of importance 3 in `errors` if the
    /// entity name or type mentions an error, `patterns` if a pattern, else `learnings`
    /// (project) or `preferences` (global). Relations become learnings
    /// ("from relationType to"). An observation its section already holds (the same text) is
    /// skipped, so importing a file again adds nothing. Returns how many entries were
    /// written. A bad line is an error naming it, and nothing is written.
    pub fn import_graph_jsonl(&self, text: &str) -> Result<usize> {
        let mut plan: Vec<(Scope, Section, String)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| invalid(format!("line {}: invalid JSON: {e}", i + 1)))?;
            match v["type"].as_str() {
                Some("entity") => {
                    let name = v["name"].as_str().unwrap_or_default();
                    let etype = v["entityType"].as_str().unwrap_or_default();
                    let scope = if let Some(p) = name.strip_prefix("project:") {
                        if p == "current" { Scope::Global } else { Scope::project(p) }
                    } else if name.starts_with('/') || name.starts_with('~') {
                        Scope::project(name)
                    } else {
                        Scope::Global
                    };
                    let hay = format!("{name} {etype}").to_lowercase();
                    let section = if hay.contains("error") {
                        Section::Errors
                    } else if hay.contains("pattern") {
                        Section::Patterns
                    } else if scope == Scope::Global {
                        Section::Preferences
                    } else {
                        Section::Learnings
                    };
                    for o in v["observations"].as_array().into_iter().flatten() {
                        if let Some(o) = o.as_str().filter(|o| !o.trim().is_empty()) {
                            plan.push((scope.clone(), section, o.to_string()));
                        }
                    }
                }
                Some("relation") => {
                    let (f, t, r) = (v["from"].as_str(), v["to"].as_str(), v["relationType"].as_str());
                    let (Some(f), Some(t), Some(r)) = (f, t, r) else {
                        return Err(invalid(format!(
                            "line {}: a relation needs from, to and relationType",
                            i + 1
                        )));
                    };
                    plan.push((Scope::Global, Section::Learnings, format!("{f} {r} {t}")));
                }
                _ => {
                    return Err(invalid(format!(
                        "line {}: expected \"type\": \"entity\" or \"relation\"",
                        i + 1
                    )));
                }
            }
        }
        // An observation already held in its section (from an earlier import of the same
        // file, or twice in this one) is not added again.
        let mut held: std::collections::HashMap<(Scope, Section), std::collections::HashSet<String>> =
            std::collections::HashMap::new();
        let mut n = 0;
        for (scope, section, content) in plan {
            let texts = match held.entry((scope.clone(), section)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let current = self.entries(&scope, section)?;
                    e.insert(current.iter().map(|r| entry_text(r).trim().to_string()).collect())
                }
            };
            if texts.insert(content.trim().to_string()) {
                self.add(&scope, section, &content, 3)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The memory block for a prompt, within `token_budget` (tokens estimated as characters /
    /// 4): the project brief (up to 200 tokens), the learnings relevant to `query` (all when
    /// it is empty) by importance, at most 5; the project's recent errors (at most 3) when the
    /// query speaks of errors (or is empty); the global preferences by importance, at most 3.
    /// A budget smaller than the block's frame gives an empty string.
    pub fn context(&self, scope: &Scope, query: &str, token_budget: usize) -> Result<String> {
        use crate::agent::estimate_tokens;
        let label = match scope {
            Scope::Project(id) => format!(" project=\"{id}\""),
            Scope::Agent(a) => format!(" agent=\"{a}\""),
            Scope::Global => String::new(),
        };
        let mut parts: Vec<(String, Vec<String>)> = Vec::new();
        if let Some(b) = self.brief(scope)? {
            let cut: String = b.chars().take(800).collect();
            parts.push(("brief".into(), vec![cut]));
        }
        let by_importance = |mut v: Vec<Record>| {
            crate::domain::by_importance(&mut v);
            v
        };
        let ns = self.ns(scope)?;
        let learnings = if query.trim().is_empty() {
            self.entries(scope, Section::Learnings)?
        } else {
            ns.search(query)
                .kinds([Kind::Learning, Kind::Pattern])
                .limit(10)
                .run()?
                .into_iter()
                .map(|h| h.record)
                .collect()
        };
        let items: Vec<String> =
            by_importance(learnings).iter().take(5).map(|r| format!("- {}", entry_text(r))).collect();
        if !items.is_empty() {
            parts.push(("learnings".into(), items));
        }
        let q = query.to_lowercase();
        if q.trim().is_empty()
            || ["error", "fail", "bug", "crash", "panic", "exception", "fix"].iter().any(|w| q.contains(w))
        {
            let errs: Vec<String> = self
                .entries(scope, Section::Errors)?
                .iter()
                .take(3)
                .map(|r| format!("- {}", entry_text(r)))
                .collect();
            if !errs.is_empty() {
                parts.push(("recent errors".into(), errs));
            }
        }
        let prefs: Vec<String> = by_importance(self.entries(&Scope::Global, Section::Preferences)?)
            .iter()
            .take(3)
            .map(|r| format!("- {}", entry_text(r)))
            .collect();
        if !prefs.is_empty() {
            parts.push(("preferences".into(), prefs));
        }
        let open = format!("<mnemon-memory{label}>\n");
        let close = "</mnemon-memory>";
        let mut out = open.clone();
        let mut used = estimate_tokens(&open) + estimate_tokens(close);
        // A budget too small for the frame itself gets nothing, not a frame over it.
        if used > token_budget {
            return Ok(String::new());
        }
        for (head, lines) in parts {
            let mut block = format!("## {head}\n");
            for l in lines {
                let l = format!("{l}\n");
                if used + estimate_tokens(&block) + estimate_tokens(&l) > token_budget {
                    break;
                }
                block.push_str(&l);
            }
            if block.lines().count() > 1 && used + estimate_tokens(&block) <= token_budget {
                used += estimate_tokens(&block);
                out.push_str(&block);
            }
        }
        out.push_str(close);
        Ok(out)
    }
}

/// An entry's text as the markdown format writes it: a line that starts with `#` (which
/// would read as an entry's or a section's heading) or with `\` gets a `\` before it, which
/// [`parse_markdown`] takes away, so that any text round-trips.
fn escape_md(text: &str) -> String {
    text.split('\n')
        .map(|l| if l.starts_with('#') || l.starts_with('\\') { format!("\\{l}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An entry as the markdown format writes it (an empty line, its heading, its escaped text).
fn md_entry(at: Timestamp, importance: u8, ttl: &str, id: &str, text: &str) -> String {
    format!("\n## {} | importance:{importance} | ttl:{ttl} | id:{id}\n{}\n", at.to_rfc3339(), escape_md(text))
}

/// Parse markdown `text` as `memory import` does, write its entries again as `memory show`
/// does, and parse that: the same entries (the fuzz target `markdown`).
pub(crate) fn markdown_round_trip(text: &str) -> std::result::Result<(), String> {
    let Ok(entries) = parse_markdown(text) else { return Ok(()) };
    let written: String =
        entries.iter().map(|e| md_entry(e.at, e.importance, "30", &e.id, &e.content)).collect();
    let again =
        parse_markdown(&format!("# Learnings\n{written}")).map_err(|e| format!("{e}: {written:?}"))?;
    let key = |v: &[MdEntry]| {
        v.iter().map(|e| (e.at, e.importance, e.id.clone(), e.content.clone())).collect::<Vec<_>>()
    };
    if key(&entries) != key(&again) {
        return Err(format!("{:?} written as {written:?} read back as {:?}", key(&entries), key(&again)));
    }
    Ok(())
}

/// One entry of the markdown format.
struct MdEntry {
    at: Timestamp,
    importance: u8,
    /// Its `ttl:` field: days, `Some(None)` for `permanent`; `None` when absent (then the
    /// importance's).
    ttl: Option<Option<u32>>,
    id: String,
    content: String,
}

fn parse_markdown(text: &str) -> Result<Vec<MdEntry>> {
    let mut out: Vec<MdEntry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(head) = line.strip_prefix("## ") {
            let bad = |why: &str| invalid(format!("line {}: {why}: {line:?}", i + 1));
            let mut fields = head.split(" | ");
            let at = fields.next().ok_or_else(|| bad("no timestamp"))?;
            let at = Timestamp::parse(at.trim()).map_err(|_| bad("bad timestamp"))?;
            let (mut importance, mut id, mut ttl) = (3u8, None, None);
            for f in fields {
                match f.trim().split_once(':') {
                    Some(("importance", v)) => {
                        importance = v
                            .trim()
                            .parse()
                            .ok()
                            .filter(|n| (1..=5).contains(n))
                            .ok_or_else(|| bad("importance must be 1 to 5"))?;
                    }
                    Some(("id", v)) if !v.trim().is_empty() => id = Some(v.trim().to_string()),
                    Some(("ttl", v)) => {
                        ttl = Some(match v.trim() {
                            "permanent" => None,
                            days => Some(
                                days.parse::<u32>()
                                    .ok()
                                    .filter(|d| (1..=36_500).contains(d))
                                    .ok_or_else(|| bad("ttl must be 1 to 36500 days or permanent"))?,
                            ),
                        });
                    }
                    _ => return Err(bad("unknown field")),
                }
            }
            let id = id.ok_or_else(|| bad("no id"))?;
            out.push(MdEntry { at, importance, ttl, id, content: String::new() });
        } else if let Some(e) = out.last_mut()
            && (!e.content.is_empty() || !line.trim().is_empty())
        {
            // A content line that would read as a heading was written with a backslash before
            // it (see `escape_md`).
            e.content.push_str(line.strip_prefix('\\').unwrap_or(line));
            e.content.push('\n');
        }
    }
    for e in &mut out {
        e.content = e.content.trim().to_string();
    }
    Ok(out.into_iter().filter(|e| !e.content.is_empty()).collect())
}
