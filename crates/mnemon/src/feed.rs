//! The change feed: every committed change to the records, in transaction-time order,
//! resumable from any point.
//!
//! The feed reads the database's commit log, which names for each change the record, its
//! kind, what happened (insert, revise, supersede, superseded, retire, expire, forget) and
//! when (its transaction time). Changes never go back in time, so a [`Cursor`] (a
//! transaction time, and how many changes at that time were seen) says exactly where a reader
//! is: resuming from it gives every later change once. A change carries no content, only
//! what names it (a reader fetches the record if it wants it, and may no longer find it);
//! a tag filter reads the revision's tags, so a forgetting, which leaves none, reaches every
//! tag reader, and the earlier changes of a forgotten record no longer match a tag.
//!
//! In-process readers are woken by each commit at once; on a shared file, the commits of
//! other processes are looked for every 20 ms while anyone watches.
//!
//! ```
//! use mnemon::{Db, feed::ChangeFilter};
//! use mnemon::body::Learning;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("memory.redb"))?;
//! let ns = db.ns("project:demo")?;
//! let mut watch = ns.watch(ChangeFilter::default())?;     // from now on
//! let id = ns.add(Learning { text: "bounded queues".into(), ..Default::default() })?;
//! let change = watch.next_timeout(std::time::Duration::from_secs(5))?.expect("a change");
//! assert_eq!((change.id, change.op), (id, mnemon::feed::ChangeOp::Insert));
//! // Resume later from where the reader stopped: nothing lost, nothing twice.
//! let page = db.changes(&ChangeFilter::default(), Some(change.cursor), 100)?;
//! assert!(page.changes.is_empty());
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemon_storage::{Commits, LogChange, Snapshot};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};
use crate::{Db, Kind, Op, RecordId, Timestamp};

/// What a change did to a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeOp {
    /// The record was created.
    Insert,
    /// A new revision corrected it.
    Revise,
    /// It was created to replace another (its `supersedes` names it).
    Supersede,
    /// It was replaced by another (its `superseded_by` names it).
    Superseded,
    /// Its valid interval was closed.
    Retire,
    /// Its expiry was set.
    Expire,
    /// Every revision was erased.
    Forget,
    /// A change recorded by a release before the feed, which did not say what it was.
    Change,
}

impl ChangeOp {
    /// The name, as JSON and the command line write it.
    pub fn name(self) -> &'static str {
        match self {
            ChangeOp::Insert => "insert",
            ChangeOp::Revise => "revise",
            ChangeOp::Supersede => "supersede",
            ChangeOp::Superseded => "superseded",
            ChangeOp::Retire => "retire",
            ChangeOp::Expire => "expire",
            ChangeOp::Forget => "forget",
            ChangeOp::Change => "change",
        }
    }

    /// The feed's view of a logged change: `None` for what changes no record's revisions (a
    /// vector stored for it).
    fn of(op: mnemon_storage::ChangeOp) -> Option<ChangeOp> {
        use mnemon_storage::ChangeOp as L;
        Some(match op {
            L::Wrote(Op::Insert) => ChangeOp::Insert,
            L::Wrote(Op::Revise) => ChangeOp::Revise,
            L::Wrote(Op::Supersede) => ChangeOp::Supersede,
            L::Wrote(Op::Superseded) => ChangeOp::Superseded,
            L::Wrote(Op::Retire) => ChangeOp::Retire,
            L::Wrote(Op::Expire) => ChangeOp::Expire,
            L::Forgot => ChangeOp::Forget,
            L::Vector => return None,
            _ => ChangeOp::Change,
        })
    }
}

impl fmt::Display for ChangeOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A place in the feed: after the first `seen` changes at transaction time `tx` (and every
/// change before it). Written `TIME~N` (`2026-11-29T05:12:56.123456Z~2`); a plain time means
/// after every change at that time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cursor {
    /// The transaction time.
    pub tx: Timestamp,
    /// How many changes at `tx` were seen (`u32::MAX`: all of them).
    pub seen: u32,
}

impl Cursor {
    /// After every change at or before `tx`.
    pub fn after(tx: Timestamp) -> Cursor {
        Cursor { tx, seen: u32::MAX }
    }

    /// Whether the `index`-th change at `tx` lies after this place.
    fn precedes(&self, tx: Timestamp, index: u32) -> bool {
        tx > self.tx || (tx == self.tx && index >= self.seen)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.seen == u32::MAX { write!(f, "{}", self.tx) } else { write!(f, "{}~{}", self.tx, self.seen) }
    }
}

impl FromStr for Cursor {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Cursor> {
        let bad = || {
            invalid(format!(
                "{s:?} is not a place in the change feed: a time (RFC 3339 or a date), optionally followed by ~N"
            ))
        };
        let (time, seen) = match s.trim().split_once('~') {
            Some((t, n)) => (t, n.parse::<u32>().map_err(|_| bad())?),
            None => (s.trim(), u32::MAX),
        };
        // `-inf`: before the first change (what an empty database's "now" is).
        let tx = if time == "-inf" { Timestamp::MIN } else { Timestamp::parse(time).map_err(|_| bad())? };
        Ok(Cursor { tx, seen })
    }
}

impl Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cursor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Cursor, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Cursor {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cursor".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A place in the change feed: a transaction time (RFC 3339), optionally followed by ~N (the changes at that time already seen)."
        })
    }
}

/// One committed change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// The record's namespace.
    pub namespace: String,
    /// The record.
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Its kind (absent for a change recorded before the feed existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub kind: Option<Kind>,
    /// What happened.
    pub op: ChangeOp,
    /// The revision written (for a forgetting, the last one erased).
    pub rev: u32,
    /// The transaction time of the change.
    #[schemars(with = "String")]
    pub tx: Timestamp,
    /// Where the feed resumes after this change.
    pub cursor: Cursor,
}

/// Which changes a reader wants. Empty lists mean every kind, every tag.
#[derive(Clone, Debug, Default)]
pub struct ChangeFilter {
    /// Namespaces (names, or globs with `*`); empty: every namespace.
    pub namespaces: Vec<String>,
    /// Kinds.
    pub kinds: Vec<Kind>,
    /// Tags: a change matches if its revision carries any of them (a forgetting always does).
    pub tags: Vec<String>,
}

impl ChangeFilter {
    /// Changes of one namespace.
    pub fn namespace(ns: impl Into<String>) -> ChangeFilter {
        ChangeFilter { namespaces: vec![ns.into()], ..Default::default() }
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = Kind>) -> ChangeFilter {
        self.kinds.extend(kinds);
        self
    }

    /// Only changes of revisions carrying one of these tags.
    pub fn tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> ChangeFilter {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    fn matches(&self, snap: &Snapshot, c: &LogChange) -> Result<bool> {
        if !self.namespaces.is_empty()
            && !self.namespaces.iter().any(|p| crate::ops::glob_matches(p, c.namespace.as_str()))
        {
            return Ok(false);
        }
        if !self.kinds.is_empty() && !c.kind.is_some_and(|k| self.kinds.contains(&k)) {
            return Ok(false);
        }
        if self.tags.is_empty() || c.op == mnemon_storage::ChangeOp::Forgot {
            return Ok(true);
        }
        let Some(rev) = snap.revision_at(&c.namespace, c.id, c.tx)? else { return Ok(false) };
        Ok(rev.envelope.tags.iter().any(|t| self.tags.iter().any(|w| w == t.as_str())))
    }
}

/// A page of the feed: the changes found, and where to go on from (past every change looked
/// at, the filtered-out ones included).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChangePage {
    /// The changes, oldest first.
    pub changes: Vec<Change>,
    /// Where the next page starts.
    pub next: Cursor,
}

/// How many commits one read of the log looks at, at most.
const COMMITS_PER_READ: usize = 512;

impl Db {
    /// The changes after `after` (from the start of the log if `None`) that match `filter`, at
    /// most `limit` (at least one page's worth of the log is looked at each call, so a call
    /// may come back with none and a later `next`).
    pub fn changes(&self, filter: &ChangeFilter, after: Option<Cursor>, limit: usize) -> Result<ChangePage> {
        let after = after.unwrap_or(Cursor { tx: Timestamp::MIN, seen: u32::MAX });
        let db = self.feed_db(filter)?;
        let snap = db.snapshot()?;
        let mut seq = if after.tx == Timestamp::MIN { 0 } else { snap.commit_before(after.tx)? };
        let mut out = Vec::new();
        let mut next = after;
        // The index of each change among those at its time (vectors excluded), counted over
        // the whole log so that it does not depend on the filter.
        let mut at: Option<(Timestamp, u32)> = None;
        let limit = limit.max(1);
        loop {
            let commits = snap.commits_after_at_most(seq, COMMITS_PER_READ)?;
            let Some(last) = commits.last() else { break };
            seq = last.seq;
            for commit in &commits {
                for c in &commit.changes {
                    let Some(op) = ChangeOp::of(c.op) else { continue };
                    let index = match at {
                        Some((t, i)) if t == c.tx => i + 1,
                        _ => 0,
                    };
                    at = Some((c.tx, index));
                    if !after.precedes(c.tx, index) {
                        continue;
                    }
                    let cursor = Cursor { tx: c.tx, seen: index + 1 };
                    if filter.matches(&snap, c)? {
                        if out.len() == limit {
                            return Ok(ChangePage { changes: out, next });
                        }
                        out.push(Change {
                            namespace: c.namespace.to_string(),
                            id: c.id,
                            kind: c.kind,
                            op,
                            rev: c.rev,
                            tx: c.tx,
                            cursor,
                        });
                    }
                    next = cursor;
                }
            }
            if out.len() >= limit || commits.len() < COMMITS_PER_READ {
                break;
            }
        }
        Ok(ChangePage { changes: out, next })
    }

    /// When each namespace last changed, as far as the latest `commits` commits tell (a
    /// namespace not changed in them is missing).
    pub fn last_changes(&self, commits: usize) -> Result<std::collections::BTreeMap<String, Timestamp>> {
        let mut out = std::collections::BTreeMap::new();
        let dbs = if self.is_partitioned() { self.partitions() } else { vec![self.clone()] };
        for db in dbs {
            for commit in db.snapshot()?.latest_commits(commits)? {
                for c in &commit.changes {
                    if ChangeOp::of(c.op).is_some() {
                        let t = out.entry(c.namespace.to_string()).or_insert(c.tx);
                        *t = (*t).max(c.tx);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The place after every change committed so far: where a reader that wants only what
    /// comes next starts.
    pub fn changes_now(&self) -> Result<Cursor> {
        Ok(Cursor::after(self.snapshot()?.meta().last_tx))
    }

    /// Watch the changes matching `filter` from `after` (from now if `None`): a blocking
    /// iterator that waits for each next change, and an async stream ([`Watch::next_async`]).
    pub fn watch(&self, filter: ChangeFilter, after: Option<Cursor>) -> Result<Watch> {
        let db = self.feed_db(&filter)?;
        let commits = db.store().commits()?;
        let cursor = match after {
            Some(c) => c,
            None => db.changes_now()?,
        };
        Ok(Watch { db, filter, cursor, commits, seen_seq: 0, buffer: VecDeque::new() })
    }

    /// The database a feed of `filter` reads: this one, or on a partitioned handle the
    /// partition of the one namespace it names.
    fn feed_db(&self, filter: &ChangeFilter) -> Result<Db> {
        if !self.is_partitioned() {
            return Ok(self.clone());
        }
        match filter.namespaces.as_slice() {
            [one] if !one.contains('*') => self.db_for(one),
            _ => Err(invalid("on a cluster node, a change feed names one namespace")),
        }
    }
}

impl crate::Ns {
    /// Watch this namespace's changes matching `filter` (its namespaces are replaced by this
    /// one), from now on: see [`Db::watch`].
    pub fn watch(&self, filter: ChangeFilter) -> Result<Watch> {
        let filter = ChangeFilter { namespaces: vec![self.name().to_string()], ..filter };
        self.db().watch(filter, None)
    }
}

/// A reader of the change feed (see [`Db::watch`]): each [`next`](Iterator::next) waits for
/// the next change.
pub struct Watch {
    db: Db,
    filter: ChangeFilter,
    cursor: Cursor,
    commits: Arc<Commits>,
    /// The commit up to which the log was read.
    seen_seq: u64,
    buffer: VecDeque<Change>,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch").field("cursor", &self.cursor).field("filter", &self.filter).finish()
    }
}

impl Watch {
    /// Where the reader is: resume a later watch from here.
    pub fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// Read what the log holds past the cursor into the buffer (the commit announced is
    /// `seq`).
    fn fill(&mut self, seq: u64) -> Result<()> {
        const PAGE: usize = 1_000;
        let page = self.db.changes(&self.filter, Some(self.cursor), PAGE)?;
        self.cursor = page.next;
        // A full page may have more behind it: read again before waiting.
        if page.changes.len() < PAGE {
            self.seen_seq = seq;
        }
        self.buffer.extend(page.changes);
        Ok(())
    }

    /// The next change, waiting at most `timeout` for one: `None` if none came.
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<Change>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.buffer.pop_front() {
                return Ok(Some(c));
            }
            let seq = self.commits.seq();
            if seq > self.seen_seq {
                self.fill(seq)?;
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.commits.wait_past(self.seen_seq, left);
        }
    }

    /// The next changes, at most `limit`, waiting at most `wait` for a first one; `next` is
    /// where the page ends (an empty page's `next` may still have moved past changes the
    /// filter left out).
    pub fn next_page(&mut self, limit: usize, wait: Duration) -> Result<ChangePage> {
        if self.buffer.is_empty()
            && let Some(c) = self.next_timeout(wait)?
        {
            self.buffer.push_front(c);
        }
        let n = limit.max(1).min(self.buffer.len());
        let changes: Vec<Change> = self.buffer.drain(..n).collect();
        let next = match changes.last() {
            Some(last) if !self.buffer.is_empty() => last.cursor,
            _ => self.cursor,
        };
        Ok(ChangePage { changes, next })
    }

    /// The next change, as a future: pending until a commit brings one. Reading the log once
    /// woken is a short blocking read.
    pub async fn next_async(&mut self) -> Result<Change> {
        loop {
            if let Some(c) = self.buffer.pop_front() {
                return Ok(c);
            }
            let seen = self.seen_seq;
            let commits = Arc::clone(&self.commits);
            let seq = std::future::poll_fn(|cx| commits.poll_past(seen, cx)).await;
            self.fill(seq)?;
        }
    }
}

impl Iterator for Watch {
    type Item = Result<Change>;

    /// The next change, waiting as long as it takes.
    fn next(&mut self) -> Option<Result<Change>> {
        loop {
            match self.next_timeout(Duration::from_secs(3600)) {
                Ok(Some(c)) => return Some(Ok(c)),
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
