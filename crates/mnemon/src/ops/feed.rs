//! The change feed as an operation: a page of committed changes after a place, waiting a
//! while for the first one if asked (long polling). Every interface reads the feed through
//! it (the command line's `watch`, Python's `ns.watch()`); the HTTP server also streams it
//! as Server-Sent Events from the same [`crate::feed`].

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, Session, kinds, kinds_schema};
use crate::error::Result;
use crate::feed::{ChangeFilter, ChangePage, Cursor};

/// The longest a `changes` call waits for a first change.
pub const MAX_WAIT_MS: u64 = 30_000;
/// The most changes one `changes` call answers.
pub const MAX_CHANGES: usize = 1_000;

/// The changes committed after a place in the feed.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Changes {
    /// Where to start: a `next` or a change's `cursor` from an earlier answer, or a
    /// transaction time (RFC 3339 or a date). Default: now (only what is committed from now on).
    pub since: Option<String>,
    /// Only changes of these kinds.
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    pub kinds: Vec<String>,
    /// Only changes of revisions carrying one of these tags (a forgetting always matches).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The most changes to answer (default 100, at most 1,000).
    pub limit: Option<usize>,
    /// Wait up to this many milliseconds (at most 30,000) for a first change when none is
    /// there yet. Default: answer at once.
    pub wait_ms: Option<u64>,
    /// The namespaces: names or globs (`project:*`), each the session's own, one it reaches,
    /// or one of the patterns it was allowed. Default: the session's own.
    #[serde(default)]
    pub namespaces: Vec<String>,
}

impl Changes {
    /// The filter of this request, checked against what `session` reaches.
    pub fn filter(&self, session: &Session) -> Result<ChangeFilter> {
        let namespaces = if self.namespaces.is_empty() {
            vec![session.namespace().to_string()]
        } else {
            let patterns = session.reach_patterns();
            for n in &self.namespaces {
                if !patterns.contains(n) && (n.contains('*') || !session.reaches(n)) {
                    // The usual refusal, naming what the session reaches.
                    session.ns(Some(n))?;
                    return Err(crate::error::invalid(format!(
                        "{n:?} is a pattern the session was not allowed; name namespaces or allowed patterns"
                    )));
                }
            }
            self.namespaces.clone()
        };
        Ok(ChangeFilter { namespaces, kinds: kinds(&self.kinds)?, tags: self.tags.clone() })
    }
}

impl Operation for Changes {
    const NAME: &'static str = "changes";
    const TITLE: &'static str = "Changes";
    const DESCRIPTION: &'static str = "The changes committed after a place in the change feed (`since`: an earlier answer's `next`, a change's `cursor`, or a time; default now), oldest first: each names the namespace, the record, its kind, what happened (insert, revise, supersede, superseded, retire, expire, forget), the revision and its transaction time. With `wait_ms`, waits that long for a first change. Resume from `next` to miss nothing and see nothing twice.";
    const READ_ONLY: bool = true;
    const MCP: bool = false;
    type Output = ChangePage;

    fn run(self, session: &Session) -> Result<ChangePage> {
        let filter = self.filter(session)?;
        let db = session.db();
        let since = match &self.since {
            Some(s) => s.parse::<Cursor>()?,
            None => db.changes_now()?,
        };
        let limit = self.limit.unwrap_or(100).clamp(1, MAX_CHANGES);
        let wait = Duration::from_millis(self.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
        db.watch(filter, Some(since))?.next_page(limit, wait)
    }
}
