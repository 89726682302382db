//! Operations that find memories: recall (search) and context (a briefing within a budget).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, RecordOut, Session, kinds, kinds_schema, time};
use crate::context::{ContextRequest, Format};
use crate::error::Result;
use crate::search::TextMode;
use crate::{AsOf, ListQuery, RecordId};

/// Search the memories by meaning and by words.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recall {
    /// What to look for, in words.
    pub query: String,
    /// Only these kinds.
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    pub kinds: Vec<String>,
    /// Only memories carrying all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only memories recorded by this agent (their source).
    pub agent: Option<String>,
    /// Only memories of this task.
    pub task: Option<String>,
    /// How many (default 10).
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// hybrid (default: words and meaning), lexical (exact words, identifiers), vector
    /// (meaning) or exact (meaning, by scanning every vector).
    pub mode: Option<TextMode>,
    /// Only matches scoring at least this (0 to 1; 0 returns the nearest memories even if
    /// unrelated). By default only memories that share words with the query or are close in
    /// meaning come back; an empty result means nothing relevant is remembered.
    pub min_score: Option<f64>,
    /// Search what was valid at this time (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// ...as it was known at this time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// Only memories passing this filter over metadata and envelope fields (as `list`
    /// takes it): `{"user_id": "42", "importance": {"$gte": 3}}`. Applied where the search
    /// reads records, so `limit` hits come back when that many pass.
    #[serde(rename = "where", default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub where_: Option<serde_json::Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
    /// Search these namespaces too, ranked together.
    #[serde(default)]
    pub also: Vec<String>,
    /// Also say how each match was found: its rank in the word and meaning results and its
    /// similarity to the query.
    #[serde(default)]
    pub explain: bool,
}

/// One memory found.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Hit {
    /// The record.
    #[serde(flatten)]
    pub record: RecordOut,
    /// How well it matches, 0 to 1, comparable across queries.
    pub score: f64,
    /// How it was found (when asked with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explain>,
}

/// How a match was found.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Explain {
    /// Its rank (from 1) among the matches of the query's words, if there.
    pub lexical_rank: Option<usize>,
    /// Its BM25 score there.
    pub lexical_score: Option<f64>,
    /// Its rank (from 1) among the nearest in meaning, if there.
    pub vector_rank: Option<usize>,
    /// The cosine similarity of its vector with the query's, where known.
    pub similarity: Option<f32>,
}

/// What `recall` found.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Hits {
    /// Best first.
    pub hits: Vec<Hit>,
}

impl Operation for Recall {
    const NAME: &'static str = "recall";
    const TITLE: &'static str = "Recall";
    const DESCRIPTION: &'static str = "Search the memories by meaning and by words (hybrid: BM25 and vector similarity fused) and return the best matches with their ids, kinds and scores. Use it before starting work to find earlier decisions, gotchas and patterns about the topic, and whenever the user refers to something from the past. Narrow with kinds and tags; ask about the past with as_of.";
    const READ_ONLY: bool = true;
    type Output = Hits;

    fn run(self, session: &Session) -> Result<Hits> {
        let ns = session.ns(self.namespace.as_deref())?;
        for other in &self.also {
            session.ns(Some(other))?;
        }
        let as_of = AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? };
        let filter = ListQuery {
            kinds: kinds(&self.kinds)?,
            tags: self.tags,
            source: self.agent,
            task: self.task,
            as_of,
            test: crate::filter::Where::test(self.where_.as_ref())?,
            ..Default::default()
        };
        let limit = super::count(self.limit, 10, mnemon_index::MAX_K)?;
        let mut search =
            ns.search(&self.query).limit(limit).mode(self.mode.unwrap_or_default()).filter(filter);
        if let Some(m) = self.min_score {
            search = search.min_score(m);
        }
        for n in &self.also {
            search = search.also_in(n.clone());
        }
        let found = search.run()?;
        let at = as_of.valid.unwrap_or_else(|| session.db().now());
        let explain = self.explain;
        let hits = found
            .into_iter()
            .map(|h| Hit {
                score: h.score,
                explain: explain.then_some(Explain {
                    lexical_rank: h.lexical.map(|l| l.0),
                    lexical_score: h.lexical.map(|l| l.1),
                    vector_rank: h.vector.map(|v| v.0),
                    similarity: h.similarity,
                }),
                record: RecordOut::new(h.record, at),
            })
            .collect();
        Ok(Hits { hits })
    }
}

/// Build a briefing within a token budget.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// What you are about to do.
    #[serde(default)]
    pub query: String,
    /// The task being worked on (its memories come first).
    pub task: Option<String>,
    /// Your agent name (adds its preferences and role knowledge).
    pub agent: Option<String>,
    /// The most tokens the block may have (default 2000; counted with o200k_base).
    #[schemars(range(min = 0, max = 200000))]
    pub budget_tokens: Option<usize>,
    /// markdown (default) or xml.
    pub format: Option<BlockFormat>,
    /// Build it as of this valid time: what was true then (default: now). RFC 3339 or a
    /// date.
    pub as_of: Option<String>,
    /// ...as it was known at this time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// Only records passing this filter may be in the block (docs/filters.md), as `recall`'s
    /// `where`: `{"user_id": "42"}` builds one user's briefing.
    #[serde(rename = "where", default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub where_: Option<serde_json::Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// How a context block is written.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BlockFormat {
    /// `## Section` headings and `- item` lines.
    #[default]
    Markdown,
    /// `<mnemon-context>` with sections and items.
    Xml,
}

/// A context block.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ContextOut {
    /// The text to read.
    pub context: String,
    /// Its size in tokens (never above the budget).
    pub tokens: usize,
    /// The memories in it, in order.
    #[schemars(with = "Vec<String>")]
    pub ids: Vec<RecordId>,
    /// Items that did not fit the budget.
    pub left_out: usize,
}

impl Operation for Context {
    const NAME: &'static str = "context";
    const TITLE: &'static str = "Context block";
    const DESCRIPTION: &'static str = "Build a ready-to-read briefing within a token budget: critical gotchas, the project brief, active decisions, open tasks, the memories most relevant to the query, the entities it names and their relationships, the agent's preferences and role knowledge, then the backlog. Call it at the start of a task with a one-line description of the task; paste nothing else from memory. With as_of / known_at, the briefing an agent would have had at that time.";
    const READ_ONLY: bool = true;
    type Output = ContextOut;

    fn run(self, session: &Session) -> Result<ContextOut> {
        let ns = session.ns(self.namespace.as_deref())?;
        let format = match self.format.unwrap_or_default() {
            BlockFormat::Markdown => Format::Markdown,
            BlockFormat::Xml => Format::Xml,
        };
        let req = ContextRequest {
            query: self.query,
            task: self.task,
            agent: self.agent,
            budget: self.budget_tokens.unwrap_or(2000),
            format,
            as_of: AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? },
            test: crate::filter::Where::test(self.where_.as_ref())?,
        };
        let b = ns.context(&req)?;
        Ok(ContextOut { context: b.text, tokens: b.tokens, ids: b.ids, left_out: b.left_out })
    }
}

#[cfg(test)]
mod tests {
    use super::{Recall, TextMode};
    use crate::ops::{Remember, Session};
    use crate::{Code, Db};

    #[test]
    fn recall_reaches_other_namespaces_only_when_allowed_and_explains_on_request()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = Db::create(dir.path().join("m.redb"))?;
        let note = |ns: &str, text: &str| Remember {
            namespace: Some(ns.into()),
            kind: "learning".into(),
            text: Some(text.into()),
            ..Default::default()
        };
        let all = Session::new(db.clone(), "p")?.allow("*");
        let here = all.call(note("p", "redb keeps the memory in one file"))?.id;
        let there = all.call(note("q", "redb needs shared mode for several processes"))?.id;
        let ask = Recall { query: "redb".into(), mode: Some(TextMode::Lexical), ..Default::default() };

        let own = Session::new(db.clone(), "p")?;
        let found = own.call(ask.clone())?;
        assert_eq!(found.hits.iter().map(|h| h.record.record.id).collect::<Vec<_>>(), vec![here]);
        assert!(found.hits[0].explain.is_none());
        let wider = Recall { also: vec!["q".into()], ..ask.clone() };
        assert_eq!(own.call(wider.clone()).err().map(|e| e.code()), Some(Code::Forbidden));

        let both = all.call(Recall { explain: true, ..wider })?;
        let mut ids: Vec<_> = both.hits.iter().map(|h| h.record.record.id).collect();
        ids.sort();
        let mut want = vec![here, there];
        want.sort();
        assert_eq!(ids, want);
        for h in &both.hits {
            let x = h.explain.ok_or("no explanation")?;
            assert!(x.lexical_rank.is_some() && x.lexical_score.is_some_and(|s| s > 0.0));
            assert_eq!(x.vector_rank, None);
        }
        // A named task narrows like the listing's filter.
        let none = all.call(Recall { task: Some("elsewhere".into()), ..ask })?;
        assert!(none.hits.is_empty());
        Ok(())
    }

    /// A `where` filter is applied where records are read, on both halves of a search and in
    /// every section of a context block: one user in twenty, asked for ten, gives ten, whichever
    /// way the search runs.
    #[test]
    fn where_narrows_search_and_context_where_records_are_read() -> Result<(), Box<dyn std::error::Error>> {
        use super::Context;
        use crate::ops::List;
        let dir = tempfile::tempdir()?;
        let s = Session::new(Db::create(dir.path().join("m.redb"))?, "p")?;
        for i in 0..400 {
            s.call(Remember {
                kind: "learning".into(),
                text: Some(format!("retry the flaky upload with backoff, note {i}")),
                metadata: Some(serde_json::json!({"user": format!("u{}", i % 20), "n": i})),
                ..Default::default()
            })?;
        }
        let mine = serde_json::json!({"user": "u7"});
        let is_mine = |m: &serde_json::Value| m["user"] == "u7";
        for mode in [TextMode::Hybrid, TextMode::Lexical, TextMode::Vector, TextMode::Exact] {
            let found = s.call(Recall {
                query: "retry upload backoff".into(),
                mode: Some(mode),
                limit: Some(10),
                where_: Some(mine.clone()),
                ..Default::default()
            })?;
            assert_eq!(found.hits.len(), 10, "{mode:?}");
            assert!(
                found.hits.iter().all(|h| h.record.record.envelope.metadata.value().get("user")
                    == Some(&serde_json::json!("u7")))
            );
        }
        // All twenty, and no more, when more are asked for.
        let all = s.call(Recall {
            query: "retry".into(),
            limit: Some(50),
            where_: Some(mine.clone()),
            ..Default::default()
        })?;
        assert_eq!(all.hits.len(), 20);
        // A listing pages through the twenty.
        let page = s.call(List { limit: Some(15), where_: Some(mine.clone()), ..Default::default() })?;
        assert_eq!(page.records.len(), 15);
        let rest = s.call(List {
            limit: Some(15),
            cursor: page.next_cursor,
            where_: Some(mine.clone()),
            ..Default::default()
        })?;
        assert_eq!(rest.records.len(), 5);
        assert!(rest.next_cursor.is_none());
        // A context block holds that user's records only, and some of them.
        let block =
            s.call(Context { query: "upload".into(), where_: Some(mine.clone()), ..Default::default() })?;
        assert!(!block.ids.is_empty());
        for id in &block.ids {
            let r = s.db().ns("p")?.get(*id)?.ok_or("a record of the block is gone")?;
            assert!(is_mine(&r.envelope.metadata.value()), "{id} is another user's");
        }
        let everyone = s.call(Context { query: "upload".into(), ..Default::default() })?;
        assert!(everyone.ids.len() > block.ids.len() || everyone.ids != block.ids);
        // A bad filter names its part.
        let bad =
            s.call(Context { where_: Some(serde_json::json!({"n": {"$gt": "x"}})), ..Default::default() });
        assert!(
            bad.err()
                .is_some_and(|e| e.code() == Code::InvalidInput && e.to_string().contains("where.n.$gt"))
        );
        Ok(())
    }
}
