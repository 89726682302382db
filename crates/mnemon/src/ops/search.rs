//! Operations that find memories: recall (search) and context (a briefing within a budget).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, RecordOut, Session, kinds, kinds_schema, time};
use crate::context::{ContextRequest, Format};
use crate::error::Result;
use crate::search::TextMode;
use crate::{AsOf, RecordId};

/// Search the memories by meaning and by words.
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
    /// How many (default 10).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<usize>,
    /// hybrid (default), lexical (exact words, identifiers) or vector (meaning).
    pub mode: Option<Mode>,
    /// Only matches scoring at least this (0 to 1; 0 returns the nearest memories even if
    /// unrelated). By default only memories that share words with the query or are close in
    /// meaning come back; an empty result means nothing relevant is remembered.
    pub min_score: Option<f64>,
    /// Search what was valid at this time (default: now). RFC 3339 or a date.
    pub as_of: Option<String>,
    /// ...as it was known at this time (default: now). RFC 3339 or a date.
    pub known_at: Option<String>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// Which evidence a recall weighs.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Words and meaning, fused.
    #[default]
    Hybrid,
    /// Words (BM25): exact terms, identifiers.
    Lexical,
    /// Meaning (vector similarity).
    Vector,
}

/// One memory found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    /// The record.
    #[serde(flatten)]
    pub record: RecordOut,
    /// How well it matches, 0 to 1, comparable across queries.
    pub score: f64,
}

/// What `recall` found.
#[derive(Debug, Serialize, JsonSchema)]
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
        let mode = match self.mode.unwrap_or_default() {
            Mode::Hybrid => TextMode::Hybrid,
            Mode::Lexical => TextMode::Lexical,
            Mode::Vector => TextMode::Vector,
        };
        let as_of = AsOf { valid: time("as_of", &self.as_of)?, known: time("known_at", &self.known_at)? };
        let mut s = ns
            .search(&self.query)
            .limit(super::count(self.limit, 10, 100)?)
            .mode(mode)
            .kinds(kinds(&self.kinds)?)
            .as_of(as_of);
        if let Some(m) = self.min_score {
            s = s.min_score(m);
        }
        for t in self.tags {
            s = s.tag(t);
        }
        if let Some(agent) = self.agent {
            s = s.source(agent);
        }
        let at = as_of.valid.unwrap_or_else(|| session.db().now());
        let hits = s
            .run()?
            .into_iter()
            .map(|h| Hit { score: h.score, record: RecordOut::new(h.record, at) })
            .collect();
        Ok(Hits { hits })
    }
}

/// Build a briefing within a token budget.
#[derive(Debug, Default, Deserialize, JsonSchema)]
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
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

/// How a context block is written.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BlockFormat {
    /// `## Section` headings and `- item` lines.
    #[default]
    Markdown,
    /// `<mnemon-context>` with sections and items.
    Xml,
}

/// A context block.
#[derive(Debug, Serialize, JsonSchema)]
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
        };
        let b = ns.context(&req)?;
        Ok(ContextOut { context: b.text, tokens: b.tokens, ids: b.ids, left_out: b.left_out })
    }
}
