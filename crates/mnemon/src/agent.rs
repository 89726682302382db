//! Agent knowledge (role knowledge with confidence, preferences, task metrics, error patterns,
//! the agent context block) and episodes (stored with a summary, queried by similarity with
//! batched access counting, a task's context within a token budget, pruning).
//!
//! An agent's memory is a namespace (`agent:dev-1` by convention); everything here works on
//! any [`Ns`].
//!
//! ```
//! use mnemon::Db;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let ns = db.ns("agent:dev-1")?;
//! let agent = ns.agent();
//! let (id, reinforced) = agent.learn("testing", "Run the unit tests before every commit")?;
//! assert!(!reinforced);
//! // The same lesson again reinforces the entry instead of duplicating it: 0.5 -> 0.6.
//! let (again, reinforced) = agent.learn("testing", "run the unit tests before every commit.")?;
//! assert!(reinforced && again == id);
//! assert!(agent.context()?.contains("Run the unit tests before every commit"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use mnemon_storage::body::{Episode, ErrorFix, Knowledge, Metrics, Preference};
use mnemon_storage::tokens::tokenize;
use mnemon_storage::{
    AsOf, Body, Durability, JsonText, Kind, ListQuery, Namespace, NewRecord, OnConflict, Record, RecordId,
    Store, Timestamp, WriteOp,
};
use serde_json::{Value, json};

use crate::db::Ns;
use crate::error::{Error, Result};
use crate::search::TextMode;

/// Confidence of new role knowledge.
pub const START_CONFIDENCE: f32 = 0.5;
/// Confidence added by a reinforcement (capped at 1).
pub const REINFORCE_STEP: f32 = 0.1;
/// Role knowledge shown in the agent context block needs at least this confidence.
pub const CONTEXT_MIN_CONFIDENCE: f32 = 0.6;
/// Two texts are "similar" when their token sets overlap this much (Jaccard).
pub const SIMILAR_JACCARD: f64 = 0.8;
/// Access counts buffered in memory before they are written (in one non-durable commit).
const ACCESS_FLUSH_AT: usize = 256;
/// The length of an automatic episode summary, in characters.
pub const SUMMARY_CHARS: usize = 200;

fn not_found(ns: &Ns, id: RecordId) -> Error {
    Error::Storage(mnemon_storage::Error::NotFound { namespace: ns.name().clone(), id })
}

/// Token-set Jaccard similarity of two texts (case, punctuation and word order ignored).
pub fn similarity(a: &str, b: &str) -> f64 {
    let (x, y): (BTreeSet<String>, BTreeSet<String>) =
        (tokenize(a).into_iter().collect(), tokenize(b).into_iter().collect());
    if x.is_empty() && y.is_empty() {
        return 1.0;
    }
    let inter = x.intersection(&y).count();
    inter as f64 / (x.len() + y.len() - inter) as f64
}

impl Ns {
    /// This namespace as an agent's memory: role knowledge, preferences, performance.
    pub fn agent(&self) -> Agent<'_> {
        Agent { ns: self }
    }

    /// Episodes of agent work in this namespace.
    pub fn episodes(&self) -> Episodes<'_> {
        Episodes { ns: self }
    }
}

// ---------------------------------------------------------------- agent knowledge

/// An agent's memory; see [`Ns::agent`].
#[derive(Clone, Copy)]
pub struct Agent<'a> {
    ns: &'a Ns,
}

/// What [`Agent::performance`] computes from the recorded task metrics and errors.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Performance {
    /// Task completions recorded.
    pub tasks_completed: usize,
    /// Mean iterations per task.
    pub average_iterations: f64,
    /// Share of tasks whose quality gate passed (0 to 1).
    pub quality_gate_pass_rate: f64,
    /// Mean duration of the tasks that measured it, in milliseconds.
    pub average_duration_ms: Option<f64>,
    /// Error patterns, most frequent first: (pattern, resolution, occurrences).
    pub common_errors: Vec<(String, String, u64)>,
}

impl Agent<'_> {
    /// Add role knowledge: an entry similar to a current one of the same category (token
    /// overlap >= [`SIMILAR_JACCARD`]) reinforces that one instead. Returns the id and whether
    /// it was a reinforcement. New entries start at confidence 0.5.
    pub fn learn(&self, category: &str, content: &str) -> Result<(RecordId, bool)> {
        if content.trim().is_empty() {
            return Err(crate::error::invalid("role knowledge needs a non-empty content"));
        }
        for r in self.ns.list_of::<Knowledge>(AsOf::now())? {
            if let Body::Knowledge(k) = &r.body
                && k.category.as_str().eq_ignore_ascii_case(category)
                && similarity(&k.content, content) >= SIMILAR_JACCARD
            {
                self.reinforce(r.id)?;
                return Ok((r.id, true));
            }
        }
        let now = self.ns.db().now();
        let id = self
            .ns
            .record(Knowledge {
                category: category.into(),
                content: content.to_string(),
                last_used: Some(now),
            })
            .confidence(START_CONFIDENCE)
            .insert()?;
        Ok((id, false))
    }

    /// Reinforce role knowledge: confidence + 0.1 (at most 1), last used now.
    pub fn reinforce(&self, id: RecordId) -> Result<Record> {
        let now = self.ns.db().now();
        self.ns.edit::<Knowledge>(id, |k, env| {
            let c = env.confidence.unwrap_or(START_CONFIDENCE);
            env.confidence = Some((c + REINFORCE_STEP).min(1.0));
            k.last_used = Some(now);
            Ok(())
        })
    }

    /// Current role knowledge (of one category, or all), strongest first.
    pub fn knowledge(&self, category: Option<&str>) -> Result<Vec<Record>> {
        let mut out: Vec<Record> = self
            .ns
            .list_of::<Knowledge>(AsOf::now())?
            .into_iter()
            .filter(|r| {
                category.is_none_or(
                    |c| matches!(&r.body, Body::Knowledge(k) if k.category.as_str().eq_ignore_ascii_case(c)),
                )
            })
            .collect();
        by_confidence(&mut out);
        Ok(out)
    }

    /// Set preferences from a JSON object: each top-level key is one preference record
    /// (identity = key), replaced by supersession so its history stays; `null` removes one.
    pub fn set_preferences(&self, partial: &Value) -> Result<()> {
        let Some(obj) = partial.as_object() else {
            return Err(crate::error::invalid("preferences must be a JSON object"));
        };
        for (key, value) in obj {
            let existing = self.ns.db().snapshot()?.identity(self.ns.name(), Kind::Preference, key)?;
            if value.is_null() {
                if let Some(id) = existing {
                    self.ns.retire(id, None)?;
                }
                continue;
            }
            let body = Preference {
                key: key.as_str().into(),
                value: JsonText::from_value(value),
                text: String::new(),
            };
            let mut rec = NewRecord::new(self.ns.name().clone(), body);
            rec.on_conflict = OnConflict::Supersede;
            self.ns.insert(rec)?;
        }
        Ok(())
    }

    /// The preferences: `defaults` overlaid with the stored ones (a stored object merges into
    /// an object default key by key).
    pub fn preferences(&self, defaults: &Value) -> Result<Value> {
        let mut out = if defaults.is_object() { defaults.clone() } else { json!({}) };
        for r in self.ns.list_of::<Preference>(AsOf::now())? {
            if let Body::Preference(p) = &r.body
                && let Some(o) = out.as_object_mut()
            {
                let v = p.value.value();
                match (o.get_mut(p.key.as_str()), v) {
                    (Some(Value::Object(d)), Value::Object(s)) => d.extend(s),
                    (_, v) => {
                        o.insert(p.key.to_string(), v);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Record a task completion.
    pub fn record_task(&self, m: Metrics) -> Result<RecordId> {
        self.ns.add(m)
    }

    /// Record an error pattern (with its resolution, if known): a pattern seen before (same
    /// text, case and spacing ignored) counts one more occurrence and takes a new resolution.
    pub fn record_error(&self, pattern: &str, resolution: Option<&str>) -> Result<RecordId> {
        let key = format!("error:{}", mnemon_storage::body::normalise_key(pattern));
        let snap = self.ns.db().snapshot()?;
        if let Some(id) = snap.identity(self.ns.name(), Kind::ErrorFix, &key)? {
            self.ns.edit::<ErrorFix>(id, |e, env| {
                if let Some(r) = resolution {
                    e.solution = r.to_string();
                }
                let mut meta = env.metadata.value();
                if !meta.is_object() {
                    meta = json!({});
                }
                let n = meta["occurrences"].as_u64().unwrap_or(1) + 1;
                meta["occurrences"] = json!(n);
                env.metadata = JsonText::from_value(&meta);
                Ok(())
            })?;
            return Ok(id);
        }
        self.ns
            .record(ErrorFix {
                error: pattern.to_string(),
                solution: resolution.unwrap_or_default().to_string(),
                context: String::new(),
            })
            .key(key)
            .metadata(json!({"occurrences": 1}))
            .insert()
    }

    /// Performance computed from the task metrics and error patterns.
    pub fn performance(&self) -> Result<Performance> {
        let mut p = Performance::default();
        let (mut iters, mut passed, mut durations) = (0u64, 0usize, Vec::new());
        for r in self.ns.list_of::<Metrics>(AsOf::now())? {
            if let Body::Metrics(m) = &r.body {
                p.tasks_completed += 1;
                iters += u64::from(m.iterations);
                passed += usize::from(m.quality_gate_passed);
                durations.extend(m.duration_ms);
            }
        }
        if p.tasks_completed > 0 {
            p.average_iterations = iters as f64 / p.tasks_completed as f64;
            p.quality_gate_pass_rate = passed as f64 / p.tasks_completed as f64;
        }
        if !durations.is_empty() {
            p.average_duration_ms = Some(durations.iter().sum::<u64>() as f64 / durations.len() as f64);
        }
        for r in self.ns.list_of::<ErrorFix>(AsOf::now())? {
            if let Body::ErrorFix(e) = &r.body {
                let n = r.envelope.metadata.value()["occurrences"].as_u64().unwrap_or(1);
                p.common_errors.push((e.error.clone(), e.solution.clone(), n));
            }
        }
        p.common_errors.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        Ok(p)
    }

    /// Retire role knowledge not used (or reinforced) since `before`; returns how many.
    pub fn prune_stale(&self, before: Timestamp) -> Result<usize> {
        let mut n = 0;
        for r in self.ns.list_of::<Knowledge>(AsOf::now())? {
            if let Body::Knowledge(k) = &r.body
                && k.last_used.unwrap_or(r.valid_from) < before
            {
                self.ns.retire(r.id, None)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The agent context block (markdown): role knowledge with confidence >= 0.6, strongest
    /// first (at most 20), the stored preferences, performance and the five most common errors.
    pub fn context(&self) -> Result<String> {
        let mut s = String::from("## Your Role Knowledge\n");
        for r in self.knowledge(None)?.iter().filter(|r| confidence(r) >= CONTEXT_MIN_CONFIDENCE).take(20) {
            if let Body::Knowledge(k) = &r.body {
                s.push_str(&format!("- [{}] {}\n", k.category, k.content));
            }
        }
        s.push_str("\n## Your Preferences\n");
        let prefs = self.preferences(&json!({}))?;
        for (k, v) in prefs.as_object().into_iter().flatten() {
            s.push_str(&format!("- {k}: {v}\n"));
        }
        let p = self.performance()?;
        s.push_str(&format!(
            "\n## Your Performance\n- Tasks completed: {}\n- Average iterations: {:.1}\n- Quality gate pass rate: {:.0}%\n",
            p.tasks_completed,
            p.average_iterations,
            p.quality_gate_pass_rate * 100.0
        ));
        if !p.common_errors.is_empty() {
            s.push_str("\n### Common Errors to Avoid\n");
            for (e, r, _) in p.common_errors.iter().take(5) {
                let r = if r.is_empty() { "No resolution recorded" } else { r.as_str() };
                s.push_str(&format!("- {e} → {r}\n"));
            }
        }
        Ok(s.trim_end().to_string())
    }
}

fn confidence(r: &Record) -> f32 {
    r.envelope.confidence.unwrap_or(START_CONFIDENCE)
}

/// Role knowledge strongest first (then newest first).
pub(crate) fn by_confidence(recs: &mut [Record]) {
    recs.sort_by(|a, b| confidence(b).total_cmp(&confidence(a)).then(b.id.cmp(&a.id)));
}

/// Whether role knowledge is confident enough for a context block.
pub(crate) fn confident(r: &Record) -> bool {
    confidence(r) >= CONTEXT_MIN_CONFIDENCE
}

// ---------------------------------------------------------------- episodes

/// Access counts of query results, buffered in memory and written as auxiliary rows (not
/// revisions) in one commit per [`ACCESS_FLUSH_AT`] entries, on [`crate::Db::flush_access`],
/// and when the last handle on the database closes. A crash may lose the unflushed counts,
/// never a record. The commit is durable (one fsync per 256 counts): a non-durable one that an
/// I/O error later lost would make the store refuse to go on (`mnemon_storage::Error::Closed`),
/// and a server that only reads must not be closed by its own bookkeeping.
#[derive(Debug)]
pub(crate) struct AccessLog {
    store: Store,
    /// The log the database is a replica of, which the counts are appended to (exports carry
    /// them, so every replica must hold the same).
    log: Option<std::sync::Arc<dyn crate::db::WriteLog>>,
    read_only: bool,
    pending: Mutex<HashMap<(Namespace, RecordId), (u64, Timestamp)>>,
}

/// An access count: how often, and when last.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Access {
    /// Times returned by a query.
    pub count: u64,
    /// When last returned.
    #[schemars(with = "Option<String>")]
    pub last: Option<Timestamp>,
}

fn access_key(ns: &Namespace, id: RecordId) -> String {
    format!("app/access/{}/{}", ns.as_str(), id)
}

impl AccessLog {
    pub(crate) fn new(
        store: Store,
        log: Option<std::sync::Arc<dyn crate::db::WriteLog>>,
        read_only: bool,
    ) -> Self {
        AccessLog { store, log, read_only, pending: Mutex::new(HashMap::new()) }
    }

    fn note(&self, ns: &Namespace, ids: &[RecordId], at: Timestamp) -> Result<()> {
        let full = {
            let mut p = self.pending.lock().map_err(|_| crate::error::invalid("access log poisoned"))?;
            for id in ids {
                let e = p.entry((ns.clone(), *id)).or_insert((0, at));
                e.0 += 1;
                e.1 = at;
            }
            p.len() >= ACCESS_FLUSH_AT
        };
        if full { self.flush() } else { Ok(()) }
    }

    fn get(&self, ns: &Namespace, id: RecordId) -> Result<Access> {
        let stored: Access = self
            .store
            .snapshot()?
            .aux(&access_key(ns, id))?
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let p = self.pending.lock().map_err(|_| crate::error::invalid("access log poisoned"))?;
        Ok(match p.get(&(ns.clone(), id)) {
            Some((n, at)) => Access { count: stored.count + n, last: Some(*at) },
            None => stored,
        })
    }

    pub(crate) fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let drained: Vec<_> = {
            let mut p = self.pending.lock().map_err(|_| crate::error::invalid("access log poisoned"))?;
            p.drain().collect()
        };
        if drained.is_empty() {
            return Ok(());
        }
        let snap = self.store.snapshot()?;
        let mut ops = Vec::with_capacity(drained.len());
        for ((ns, id), (n, at)) in drained {
            let key = access_key(&ns, id);
            let old: Access =
                snap.aux(&key)?.and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
            let new = Access { count: old.count + n, last: Some(at) };
            let value = serde_json::to_vec(&new).map_err(|e| crate::error::invalid(e.to_string()))?;
            ops.push(WriteOp::PutAux { key, value: Some(value) });
        }
        match &self.log {
            // (A count read from this replica may miss another node's increment that its log
            // has not brought yet: counts are statistics.)
            Some(log) => {
                for r in log.append(vec![ops], Durability::Immediate) {
                    r?;
                }
            }
            None => {
                self.store.write_with(ops, Durability::Immediate)?;
            }
        }
        Ok(())
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        // Best effort: the counts are statistics, not records.
        let _ = self.flush();
    }
}

impl crate::db::Db {
    /// Write the buffered access counts of episode queries now.
    pub fn flush_access(&self) -> Result<()> {
        self.partitions().iter().try_for_each(|db| access_log(db).flush())
    }
}

/// The database's access log (made on first use; flushed when the database closes).
fn access_log(db: &crate::db::Db) -> std::sync::Arc<AccessLog> {
    db.extension(|db| AccessLog::new(db.store().clone(), db.write_log(), db.is_read_only()))
}

/// Episodes of one namespace; see [`Ns::episodes`].
#[derive(Clone, Copy)]
pub struct Episodes<'a> {
    ns: &'a Ns,
}

/// What [`Episodes::context`] selected.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct EpisodeContext {
    /// The rendered block.
    pub text: String,
    /// The episodes in it, in order.
    #[schemars(with = "Vec<String>")]
    pub ids: Vec<RecordId>,
    /// Its estimated size in tokens (about four characters each).
    pub tokens: usize,
}

/// A rough token count: about four characters per token, as the design documents estimate.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

impl Episodes<'_> {
    /// Store an episode (of a task, if given); the summary defaults to the first 200
    /// characters of the content.
    pub fn store(&self, mut e: Episode, task: Option<&str>, importance: Option<u8>) -> Result<RecordId> {
        if e.content.trim().is_empty() {
            return Err(crate::error::invalid("an episode needs a non-empty content"));
        }
        if e.summary.as_deref().is_none_or(|s| s.trim().is_empty()) {
            e.summary = Some(e.content.chars().take(SUMMARY_CHARS).collect());
        }
        let mut b = self.ns.record(e);
        if let Some(t) = task {
            b = b.task(t);
        }
        if let Some(i) = importance {
            b = b.importance(i).permanent();
        }
        b.insert()
    }

    /// The episodes most similar to `query` (hybrid search), counting the access of each
    /// (buffered; see [`crate::Db::flush_access`]).
    pub fn query(&self, query: &str, limit: usize) -> Result<Vec<Record>> {
        let hits = self.ns.search(query).kinds([Kind::Episode]).limit(limit).mode(TextMode::Hybrid).run()?;
        let recs: Vec<Record> = hits.into_iter().map(|h| h.record).collect();
        let ids: Vec<RecordId> = recs.iter().map(|r| r.id).collect();
        access_log(self.ns.db()).note(self.ns.name(), &ids, self.ns.db().now())?;
        Ok(recs)
    }

    /// How often an episode was returned by [`Episodes::query`], and when last (the stored
    /// body's own counts included).
    pub fn access(&self, id: RecordId) -> Result<Access> {
        let r = self.ns.latest(id)?.ok_or_else(|| not_found(self.ns, id))?;
        let mut a = access_log(self.ns.db()).get(self.ns.name(), id)?;
        if let Body::Episode(e) = &r.body {
            a.count += e.access_count;
            a.last = a.last.max(e.last_accessed_at);
        }
        Ok(a)
    }

    /// The context for a task within `max_tokens`: that task's episodes first (newest first),
    /// then the episodes most relevant to `query`; each as its summary. Episodes that do not
    /// fit are skipped.
    pub fn context(&self, task: &str, query: &str, max_tokens: usize) -> Result<EpisodeContext> {
        let mut q = ListQuery::new().kinds([Kind::Episode]);
        q.task = Some(task.to_string());
        let mut candidates = self.ns.list(&q)?;
        candidates.sort_by_key(|r| std::cmp::Reverse(r.id));
        if !query.trim().is_empty() {
            candidates.extend(self.query(query, 20)?);
        }
        let mut text = String::from("## Relevant past work\n");
        let mut ids = Vec::new();
        let mut seen = BTreeSet::new();
        for r in candidates {
            if !seen.insert(r.id) {
                continue;
            }
            let Body::Episode(e) = &r.body else { continue };
            let line = format!(
                "- [{}{}] {}\n",
                e.episode_type,
                r.envelope.task.as_ref().map(|t| format!(", task {t}")).unwrap_or_default(),
                e.summary.as_deref().unwrap_or(&e.content)
            );
            if estimate_tokens(&text) + estimate_tokens(&line) > max_tokens {
                continue;
            }
            text.push_str(&line);
            ids.push(r.id);
        }
        if ids.is_empty() {
            text.clear();
        }
        let tokens = estimate_tokens(&text);
        Ok(EpisodeContext { text, ids, tokens })
    }

    /// Retire episodes older than `days`; important ones (importance 4 or 5) are kept
    /// `important_factor` times longer. Returns how many were retired.
    pub fn prune_by_age(&self, days: u32, important_factor: u32) -> Result<usize> {
        let ids = self.aged(days, important_factor)?;
        for id in &ids {
            self.ns.retire(*id, None)?;
        }
        Ok(ids.len())
    }

    /// The episodes [`Episodes::prune_by_age`] would retire.
    pub fn aged(&self, days: u32, important_factor: u32) -> Result<Vec<RecordId>> {
        let now = self.ns.db().now().as_micros();
        Ok(self
            .ns
            .list_of::<Episode>(AsOf::now())?
            .into_iter()
            .filter(|r| {
                let important = r.envelope.importance.is_some_and(|i| i >= 4);
                let keep_days =
                    i64::from(days) * if important { i64::from(important_factor.max(1)) } else { 1 };
                now - r.valid_from.as_micros() > keep_days * 86_400_000_000
            })
            .map(|r| r.id)
            .collect())
    }

    /// Keep at most `max` current episodes: the most important, then the newest, stay.
    pub fn prune_by_count(&self, max: usize) -> Result<usize> {
        let ids = self.over_cap(max)?;
        for id in &ids {
            self.ns.retire(*id, None)?;
        }
        Ok(ids.len())
    }

    /// The episodes [`Episodes::prune_by_count`] would retire.
    pub fn over_cap(&self, max: usize) -> Result<Vec<RecordId>> {
        let mut all = self.ns.list_of::<Episode>(AsOf::now())?;
        crate::domain::by_importance(&mut all);
        Ok(all.iter().skip(max).map(|r| r.id).collect())
    }

    /// Episodes per type (current).
    pub fn by_type(&self) -> Result<BTreeMap<String, usize>> {
        let mut out = BTreeMap::new();
        for r in self.ns.list_of::<Episode>(AsOf::now())? {
            if let Body::Episode(e) = &r.body {
                *out.entry(e.episode_type.to_string()).or_default() += 1;
            }
        }
        Ok(out)
    }
}
