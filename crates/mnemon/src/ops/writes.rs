//! Writes of any record in the loose JSON form (what `mnemon add KIND --data` takes): add,
//! revise, retire, expire. The model-facing tools are `remember`, `supersede` and `forget`
//! ([`super::records`]); these are for interfaces that take whole records.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Operation, Session, kind_schema, time};
use crate::db::Intent;
use crate::error::{Result, invalid};
use crate::json::parse_input;
use crate::{Kind, NewRecord, Ns, Outcome, RecordId, Timestamp};

/// What a write did.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WriteResult {
    /// The record written (for a supersession, the new one).
    #[schemars(with = "String")]
    pub id: RecordId,
    /// Its revision now (absent when nothing was written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rev: Option<u32>,
    /// Whether a live record of the same identity already held it: its id is returned and
    /// nothing was written.
    pub existing: bool,
    /// The record it superseded, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub supersedes: Option<RecordId>,
}

impl From<Outcome> for WriteResult {
    fn from(o: Outcome) -> WriteResult {
        let mut w = WriteResult { id: o.id(), rev: None, existing: false, supersedes: None };
        match o {
            Outcome::Written { rev, .. } | Outcome::VectorStored { rev, .. } => w.rev = Some(rev),
            Outcome::Existing { .. } => w.existing = true,
            Outcome::Superseded { old, .. } => {
                w.rev = Some(0);
                w.supersedes = Some(old);
            }
            _ => {}
        }
        w
    }
}

/// Add a record of any kind.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Add {
    /// Its kind.
    #[schemars(schema_with = "kind_schema")]
    pub kind: String,
    /// The record, loosely: the kind's fields with the envelope's beside them (`tags`,
    /// `importance`, `confidence`, `source`, `task`, `key`, `metadata`, `valid_from`,
    /// `valid_until`, `expires_at`); `text` fills the kind's main field.
    pub record: Map<String, Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Add {
    const NAME: &'static str = "add";
    const TITLE: &'static str = "Add a record";
    const DESCRIPTION: &'static str = "Add a record of any kind, described by its fields and envelope fields side by side. A live record with the same identity (an entity's name, a preference's key...) is returned instead, unless the record asks otherwise.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = WriteResult;

    fn run(self, session: &Session) -> Result<WriteResult> {
        let (ns, record) = self.prepare(session)?;
        Ok(ns.insert(record)?.into())
    }
}

impl Add {
    /// The record to insert, in its namespace.
    fn prepare(self, session: &Session) -> Result<(Ns, NewRecord)> {
        let kind: Kind = self.kind.parse()?;
        let ns = session.ns(self.namespace.as_deref())?;
        let input = parse_input(Value::Object(self.record), Some(kind), ns.name())?;
        if let Some(n) = &input.namespace
            && n != ns.name()
        {
            return Err(invalid(format!(
                "the record names namespace {:?}, not {:?}",
                n.as_str(),
                ns.name().as_str()
            )));
        }
        Ok((ns, input.record))
    }

    /// The write, for a batch.
    pub(crate) fn intent(self, session: &Session) -> Result<(Ns, Intent)> {
        self.prepare(session).map(|(ns, r)| (ns, Intent::Insert(r)))
    }
}

/// Correct a record.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Revise {
    /// The record: its id, or a unique start or end of it (6 hex digits or more).
    pub id: String,
    /// A JSON merge patch over its fields (body and envelope): `{"rationale": "..."}`;
    /// `null` removes a field.
    pub patch: Map<String, Value>,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Revise {
    const NAME: &'static str = "revise";
    const TITLE: &'static str = "Revise a record";
    const DESCRIPTION: &'static str = "Correct a record in place: a new revision with the patch applied, the old one kept in its history (transaction time).";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = WriteResult;

    fn run(self, session: &Session) -> Result<WriteResult> {
        let (ns, id, patch) = self.prepare(session)?;
        Ok(ns.revise_json(id, &patch)?.into())
    }
}

impl Revise {
    fn prepare(self, session: &Session) -> Result<(Ns, RecordId, Value)> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        Ok((ns, id, Value::Object(self.patch)))
    }

    /// The write, for a batch.
    pub(crate) fn intent(self, session: &Session) -> Result<(Ns, Intent)> {
        self.prepare(session).map(|(ns, id, patch)| (ns, Intent::Revise { id, patch }))
    }
}

/// End a record's validity, or set its expiry.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retire {
    /// The record: its id, or a unique start or end of it (6 hex digits or more).
    pub id: String,
    /// When it stops being valid (default: now). RFC 3339 or a date.
    pub at: Option<String>,
    /// Set its expiry instead (it disappears from default queries from then on).
    #[serde(default)]
    pub expire: bool,
    /// The namespace (default: the session's).
    pub namespace: Option<String>,
}

impl Operation for Retire {
    const NAME: &'static str = "retire";
    const TITLE: &'static str = "Retire a record";
    const DESCRIPTION: &'static str = "Close a record's valid interval at a time (default now), or with expire set its expiry; time travel still sees it.";
    const READ_ONLY: bool = false;
    const MCP: bool = false;
    type Output = WriteResult;

    fn run(self, session: &Session) -> Result<WriteResult> {
        let expire = self.expire;
        let (ns, id, at) = self.prepare(session)?;
        let o = if expire { ns.expire(id, at)? } else { ns.retire(id, at)? };
        Ok(o.into())
    }
}

impl Retire {
    fn prepare(self, session: &Session) -> Result<(Ns, RecordId, Option<Timestamp>)> {
        let ns = session.ns(self.namespace.as_deref())?;
        let id = ns.resolve_id(&self.id)?;
        Ok((ns, id, time("at", &self.at)?))
    }

    /// The write, for a batch.
    pub(crate) fn intent(self, session: &Session) -> Result<(Ns, Intent)> {
        let expire = self.expire;
        let (ns, id, at) = self.prepare(session)?;
        Ok((ns, if expire { Intent::Expire { id, at } } else { Intent::Retire { id, at } }))
    }
}
