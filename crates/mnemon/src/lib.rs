//! mnemon: an embedded, bitemporal memory database for AI agents.
//!
//! One file holds what agents and the people running them want remembered: decisions, tasks,
//! entities and relations, patterns, gotchas, learnings, error fixes, episodes, role knowledge,
//! preferences, briefs and conversations. Every record lives in a namespace and has two time
//! axes: when it was true (valid time) and when the database knew it (transaction time), so
//! you can ask "what was true at V, as we knew it at K", walk supersession chains and read the
//! full history of any record.
//!
//! ```
//! use mnemon::{AsOf, Db, Timestamp};
//! use mnemon::body::{Decision, Task};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("memory.redb"))?;
//! let ns = db.ns("project:demo")?;
//!
//! let sqlite = ns
//!     .record(Decision { title: "Store memories in SQLite".into(), ..Default::default() })
//!     .valid_from(Timestamp::parse("2024-01-10")?)
//!     .tag("storage")
//!     .insert()?;
//! let task = ns.add(Task { title: "Write the storage layer".into(), ..Default::default() })?;
//!
//! // Later the decision changes: supersede it (the old one stays in history).
//! let redb = ns.supersede(sqlite, Decision { title: "Store memories in redb".into(), ..Default::default() })?;
//!
//! let now = ns.list_of::<Decision>(AsOf::now())?;
//! assert_eq!(now[0].id, redb);
//! let then = ns.list_of::<Decision>(Timestamp::parse("2024-02-01")?)?;
//! assert_eq!(then[0].body_as::<Decision>().map(|d| d.title.as_str()), Some("Store memories in SQLite"));
//! assert_eq!(ns.chain(redb)?.len(), 2);
//! assert!(ns.get(task)?.is_some());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![doc(test(attr(deny(warnings))))]

pub mod agent;
pub mod context;
mod db;
pub mod domain;
mod embedding;
pub mod erase;
mod error;
pub mod feed;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod importers;
pub mod json;
pub mod lifecycle;
pub mod ops;
pub mod project;
mod rules;
pub mod scoped;
pub mod search;
mod stats;
pub mod transfer;
pub mod when;

pub use agent::{Access, Agent, EpisodeContext, Episodes, Performance};
pub use db::{
    Db, DbBuilder, MAX_RECORD_BYTES, Ns, Partitions, RecordBuilder, VectorSearch, WriteLog, check_id_form,
    check_integrity, clear_damage_mark, compact, embedder_for, mark_damaged,
};
pub use domain::{
    CONVERSATIONS_KEPT, CanStart, Consolidation, Conversations, Decisions, DomainStats, Entities, TaskQuery,
    Tasks,
};
pub use embedding::{Backlog, DEFAULT_BACKLOG, EmbedStats, EmbedderRecord};
pub use error::{Code, Error, LineError, Result, guard, panic_message};
pub use json::loose_form;
/// Embedders (offline hashing default, OpenAI-compatible HTTP).
pub use mnemon_embed as embed;
/// The vector index (exact scan, HNSW, planner, persistence).
pub use mnemon_index as index;
pub use mnemon_index::{Found, Hit, IndexOptions, Mode as SearchMode, Plan, SearchPath};
/// The storage engine's error (what [`Snapshot`] methods return).
pub use mnemon_storage::Error as StorageError;
/// A histogram of [`CommitStats`].
pub use mnemon_storage::Histogram as CommitHistogram;
pub use mnemon_storage::body;
pub use mnemon_storage::text_list;
pub use mnemon_storage::{
    AsOf, Body, Clock, CommitStats, Durability, Envelope, Expiry, FORMAT_VERSION, IdError, InputError,
    JsonText, Kind, KindBody, ListPath, ListQuery, ManualClock, Namespace, NamespaceCounters, NewRecord,
    OnConflict, Op, OpenError, Outcome, Receipt, Record, RecordId, Revise, Snapshot, Status, SystemClock,
    Text, TextList, TimeError, Timestamp, UnknownKind, VectorSpace, Visible, WriteOp, decode_job, encode_job,
    normalise,
};
pub use project::{ORDERED_RELATIONS, Project};
pub use search::{SearchHit, TextMode, TextSearch, Weights, default_lexical_share};
pub use stats::{NamespaceStats, Stats, stats};
