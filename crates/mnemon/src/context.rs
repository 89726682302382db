//! The context builder: the block an agent puts into its prompt, within a token budget counted
//! with a real BPE tokenizer (o200k_base, embedded, offline).
//!
//! Sections, in the order they claim the budget: critical gotchas, the brief, active
//! decisions with their date ranges, active tasks, relevant learnings / episodes / patterns /
//! errors / gotchas (ranked by hybrid score, importance and recency), entities (those the
//! query names, or the weightiest) and the relationships touching them, preferences, role
//! knowledge, and the backlog last. Everything is read as of the request's time on both
//! axes ([`ContextRequest::as_of`]). Each item goes in whole or not at all; the final text is counted again and
//! never exceeds the budget. The same data and request give the same block.
//!
//! ```
//! use mnemon::body::{Gotcha, Severity};
//! use mnemon::context::ContextRequest;
//! use mnemon::Db;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let ns = db.ns("project")?;
//! ns.project().add_gotcha(Gotcha { title: "One writer".into(), problem: "deadlock".into(), solution: "group commit".into(), severity: Severity::Critical })?;
//! let block = ns.context(&ContextRequest { budget: 200, ..Default::default() })?;
//! assert!(block.text.contains("One writer") && block.tokens <= 200);
//! assert_eq!(block.tokens, mnemon::context::count_tokens(&block.text));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use mnemon_storage::body::{DecisionStatus, Severity, TaskStatus};
use mnemon_storage::{AsOf, Body, Kind, ListQuery, Record, RecordId};

use crate::db::Ns;
use crate::error::Result;
use crate::search::Weights;

/// Tokens of `text` in OpenAI's o200k_base encoding (embedded in the binary; no download).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

/// How the block is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// `## Section` headings and `- item` lines.
    #[default]
    Markdown,
    /// `<mnemon-context>` with `<section name>` and `<item kind id>` elements.
    Xml,
}

/// What to build a context for.
#[derive(Clone, Debug)]
pub struct ContextRequest {
    /// What the agent is about to do (ranks the relevant items; empty: by importance and
    /// recency).
    pub query: String,
    /// The task being worked on: its episodes and records come first.
    pub task: Option<String>,
    /// The agent: its namespace (`agent:<name>`) gives preferences and role knowledge.
    pub agent: Option<String>,
    /// The most tokens the block may have.
    pub budget: usize,
    /// Markdown or XML.
    pub format: Format,
    /// The time to build it at: what was valid then, as known then (default: now, as known
    /// now). A block as of a past moment is what an agent had to go on then.
    pub as_of: AsOf,
    /// Only records that pass this test may be in the block (a `where` filter,
    /// [`crate::filter::Where::test`]): every section reads through it.
    pub test: Option<std::sync::Arc<dyn mnemon_storage::RecordTest>>,
}

impl Default for ContextRequest {
    fn default() -> Self {
        ContextRequest {
            query: String::new(),
            task: None,
            agent: None,
            budget: 2000,
            format: Format::Markdown,
            as_of: AsOf::now(),
            test: None,
        }
    }
}

/// A built context block.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ContextBlock {
    /// The text to put into the prompt.
    pub text: String,
    /// Its size in o200k_base tokens (never above the budget).
    pub tokens: usize,
    /// The records in it, in order.
    pub ids: Vec<RecordId>,
    /// Items that did not fit the budget.
    pub left_out: usize,
}

struct Item {
    section: &'static str,
    kind: Kind,
    id: RecordId,
    text: String,
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn item_text(r: &Record) -> String {
    let t = match &r.body {
        Body::Gotcha(g) => format!("{}: {} → {}", g.title, g.problem, g.solution),
        Body::Decision(d) => {
            let until = r.valid_until.map_or_else(|| "now".to_string(), |u| u.to_rfc3339()[..10].to_string());
            let what = if d.description.is_empty() { String::new() } else { format!(": {}", d.description) };
            let why =
                if d.rationale.is_empty() { String::new() } else { format!(" (because {})", d.rationale) };
            format!("{}{what}{why} [{} → {until}]", d.title, &r.valid_from.to_rfc3339()[..10])
        }
        Body::Task(t) => {
            let due = t.due.map(|d| format!(", due {}", &d.to_rfc3339()[..10])).unwrap_or_default();
            let status = serde_json::to_value(t.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let prio = serde_json::to_value(t.priority)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("{} [{status}, {prio}{due}]", t.title)
        }
        Body::Episode(e) => e.summary.clone().unwrap_or_else(|| e.content.clone()),
        Body::ErrorFix(e) if !e.solution.is_empty() => format!("{} → {}", e.error, e.solution),
        Body::Pattern(p) if !p.description.is_empty() => format!("{}: {}", p.title, p.description),
        Body::Preference(p) if p.text.is_empty() => format!("{}: {}", p.key, p.value.as_str()),
        Body::Knowledge(k) => format!("[{}] {}", k.category, k.content),
        Body::Entity(e) => {
            let what = if e.description.is_empty() { String::new() } else { format!(": {}", e.description) };
            format!("{} ({}){what}", e.name, e.entity_type)
        }
        Body::Relation(x) => {
            let what = if x.description.is_empty() { String::new() } else { format!(": {}", x.description) };
            format!("{} {} {}{what}", x.from, x.relation_type, x.to)
        }
        b => b.text(),
    };
    one_line(&t)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Ns {
    /// Build the context block for a prompt; see [`crate::context`].
    pub fn context(&self, req: &ContextRequest) -> Result<ContextBlock> {
        let items = self.context_items(req)?;
        Ok(fit(items, req, self.name().as_str()))
    }

    fn context_items(&self, req: &ContextRequest) -> Result<Vec<Item>> {
        let mut items: Vec<Item> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut push = |items: &mut Vec<Item>, section: &'static str, r: &Record| {
            if seen.insert(r.id) {
                items.push(Item { section, kind: r.kind(), id: r.id, text: item_text(r) });
            }
        };
        // Everything is read as of the asked time: valid then, as known then.
        let as_of = req.as_of;
        let now = as_of.valid.unwrap_or_else(|| self.db().now());
        // Every read of the block: as of the asked time, through the request's test.
        let query = |kinds: &[Kind]| ListQuery {
            kinds: kinds.to_vec(),
            as_of,
            test: req.test.clone(),
            ..ListQuery::default()
        };
        let list = |ns: &Ns, kinds: &[Kind]| ns.list(&query(kinds));
        let has_query = !req.query.trim().is_empty();
        // 1. Critical gotchas (critical, then high).
        let mut gotchas = list(self, &[Kind::Gotcha])?;
        let rank = |r: &Record| match &r.body {
            Body::Gotcha(g) => crate::project::severity_rank(g.severity),
            _ => u8::MAX,
        };
        gotchas.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.id.cmp(&b.id)));
        for r in &gotchas {
            if matches!(&r.body, Body::Gotcha(g) if matches!(g.severity, Severity::Critical | Severity::High))
            {
                push(&mut items, "critical gotchas", r);
            }
        }
        // 2. The brief.
        for r in list(self, &[Kind::Brief])? {
            push(&mut items, "brief", &r);
        }
        // 3. Active decisions, newest first. A decision valid at the asked time whose body
        //    says superseded had, until its supersession took effect (later in valid time),
        //    the status of its revision before it: accepted ones count.
        for r in list(self, &[Kind::Decision])? {
            let status = |r: &Record| match &r.body {
                Body::Decision(d) => Some(d.status),
                _ => None,
            };
            let accepted = match status(&r) {
                Some(DecisionStatus::Accepted) => true,
                Some(DecisionStatus::Superseded) => {
                    let revisions = self.history(r.id)?;
                    let before =
                        revisions.iter().rev().find(|p| status(p) != Some(DecisionStatus::Superseded));
                    before.and_then(status) == Some(DecisionStatus::Accepted)
                }
                _ => false,
            };
            if accepted {
                push(&mut items, "active decisions", &r);
            }
        }
        // 4. Open tasks (the backlog comes last, below): the given task first, then by
        //    priority and date.
        let mut tasks: Vec<Record> = list(self, &[Kind::Task])?
            .into_iter()
            .filter(|r| matches!(&r.body, Body::Task(t) if !matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled)))
            .collect();
        tasks.sort_by(crate::domain::task_order);
        if let Some(t) = &req.task {
            tasks.sort_by_key(|r| r.id.to_string() != *t && !r.id.to_string().starts_with(t.as_str()));
        }
        let in_backlog = |r: &Record| matches!(&r.body, Body::Task(t) if t.status == TaskStatus::Backlog);
        for r in tasks.iter().filter(|r| !in_backlog(r) || req.task.is_some()) {
            push(&mut items, "active tasks", r);
        }
        // 5. Relevant records: the task's own first, then ranked by hybrid score weighted by
        //    importance and recency (or by importance and recency alone without a query).
        let kinds =
            [Kind::Learning, Kind::Episode, Kind::Pattern, Kind::ErrorFix, Kind::Gotcha, Kind::Observation];
        if let Some(t) = &req.task {
            let mut q = query(&kinds);
            q.task = Some(t.clone());
            let mut own = self.list(&q)?;
            own.sort_by_key(|r| std::cmp::Reverse(r.id));
            for r in &own {
                push(&mut items, "relevant", r);
            }
        }
        let weights = Weights { importance: 0.5, confidence: 0.0, recency_half_life_days: Some(30.0) };
        let ranked = |kinds: &[Kind], n: usize| -> Result<Vec<Record>> {
            if has_query {
                let hits = self.search(&req.query).filter(query(kinds)).limit(n).weigh(weights).run()?;
                Ok(hits.into_iter().map(|h| h.record).collect())
            } else {
                let mut all = list(self, kinds)?;
                let score = |r: &Record| crate::search::weight(&weights, r, now);
                all.sort_by(|a, b| score(b).total_cmp(&score(a)).then(b.id.cmp(&a.id)));
                all.truncate(n);
                Ok(all)
            }
        };
        for r in ranked(&kinds, 20)? {
            push(&mut items, "relevant", &r);
        }
        // 6. Entities: those the query names (or the weightiest without one), then the
        //    relationships that touch them (or match the query).
        let entities = ranked(&[Kind::Entity], 10)?;
        let names: std::collections::BTreeSet<String> = entities
            .iter()
            .filter_map(|r| match &r.body {
                Body::Entity(e) => Some(e.name.to_lowercase()),
                _ => None,
            })
            .collect();
        for r in &entities {
            push(&mut items, "entities", r);
        }
        let mut relations: Vec<Record> = list(self, &[Kind::Relation])?
            .into_iter()
            .filter(|r| {
                !has_query
                    || matches!(&r.body, Body::Relation(x) if names.contains(&x.from.to_lowercase()) || names.contains(&x.to.to_lowercase()))
            })
            .collect();
        if has_query {
            relations.extend(ranked(&[Kind::Relation], 10)?);
        }
        for r in relations.iter().take(20) {
            push(&mut items, "relationships", r);
        }
        // 7. Preferences: this namespace, the agent's, the global ones.
        let mut pref_ns = vec![self.clone()];
        if let Some(a) = &req.agent {
            pref_ns.push(self.db().ns(&format!("agent:{a}"))?);
        }
        if self.name().as_str() != "global" {
            pref_ns.push(self.db().ns("global")?);
        }
        for ns in &pref_ns {
            let mut prefs = list(ns, &[Kind::Preference])?;
            crate::domain::by_importance(&mut prefs);
            for r in &prefs {
                push(&mut items, "preferences", r);
            }
        }
        // 8. Role knowledge of the agent (confidence >= 0.6, strongest first).
        if let Some(a) = &req.agent {
            let mut known = list(&self.db().ns(&format!("agent:{a}"))?, &[Kind::Knowledge])?;
            crate::agent::by_confidence(&mut known);
            for r in known.iter().filter(|r| crate::agent::confident(r)) {
                push(&mut items, "role knowledge", r);
            }
        }
        // 9. The backlog, with whatever budget is left.
        for r in tasks.iter().filter(|r| in_backlog(r)) {
            push(&mut items, "backlog", r);
        }
        Ok(items)
    }
}

/// Render `chosen` items (in section order as given).
fn render(items: &[&Item], req: &ContextRequest, ns: &str) -> String {
    let mut s = String::new();
    let mut section = "";
    match req.format {
        Format::Markdown => {
            for it in items {
                if it.section != section {
                    section = it.section;
                    if !s.is_empty() {
                        s.push('\n');
                    }
                    s.push_str(&format!("## {section}\n"));
                }
                s.push_str(&format!("- {}\n", it.text));
            }
        }
        Format::Xml => {
            s.push_str(&format!("<mnemon-context namespace=\"{}\">\n", xml_escape(ns)));
            for it in items {
                if it.section != section {
                    if !section.is_empty() {
                        s.push_str("</section>\n");
                    }
                    section = it.section;
                    s.push_str(&format!("<section name=\"{section}\">\n"));
                }
                s.push_str(&format!(
                    "<item kind=\"{}\" id=\"{}\">{}</item>\n",
                    it.kind,
                    it.id,
                    xml_escape(&it.text)
                ));
            }
            if !section.is_empty() {
                s.push_str("</section>\n");
            }
            s.push_str("</mnemon-context>\n");
        }
    }
    s
}

/// Take items in order while the rendered block fits the budget; the final text is counted
/// again (BPE counts are not additive across joins) and trimmed from the end if needed.
fn fit(items: Vec<Item>, req: &ContextRequest, ns: &str) -> ContextBlock {
    let mut chosen: Vec<&Item> = Vec::new();
    let mut left_out = 0;
    let base = count_tokens(&render(&[], req, ns));
    let mut estimate = base;
    for it in &items {
        // Each line's own count, plus a heading when its section starts, plus slack for joins.
        let heading = if chosen.last().is_none_or(|l| l.section != it.section) {
            count_tokens(it.section) + 4
        } else {
            0
        };
        let cost = count_tokens(&it.text) + 2 + heading + if req.format == Format::Xml { 24 } else { 0 };
        if estimate + cost > req.budget {
            left_out += 1;
            continue;
        }
        estimate += cost;
        chosen.push(it);
    }
    let mut text = render(&chosen, req, ns);
    let mut tokens = count_tokens(&text);
    while tokens > req.budget && !chosen.is_empty() {
        chosen.pop();
        left_out += 1;
        text = render(&chosen, req, ns);
        tokens = count_tokens(&text);
    }
    if tokens > req.budget {
        // Not even the empty frame fits.
        text.clear();
        tokens = 0;
    }
    ContextBlock { ids: chosen.iter().map(|i| i.id).collect(), text, tokens, left_out }
}
