//! Erasure as an operation: a namespace, or its records of some kinds or with some tags,
//! removed for good (every revision, vector and index entry), confirmed by naming the
//! namespace, with an audit record that keeps no content ([`crate::erase`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Operation, Session, kinds, kinds_schema};
use crate::error::{Result, invalid};

/// Erase a namespace's records for good.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Erase {
    /// The namespace to erase from.
    pub namespace: String,
    /// The namespace's name again: nothing is erased unless it is given, exactly.
    pub confirm: String,
    /// Only records of these kinds (default: every kind).
    #[serde(default)]
    #[schemars(schema_with = "kinds_schema")]
    pub kinds: Vec<String>,
    /// Only records whose latest revision carries every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only records passing this filter over metadata and envelope fields (as `list` takes
    /// it): `{"user_id": "42"}`.
    #[serde(rename = "where", default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub where_: Option<serde_json::Value>,
}

/// What was erased.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Erased {
    /// Records erased.
    pub records: u64,
    /// Their revisions, all erased.
    pub revisions: u64,
    /// The audit record in namespace `mnemon:erasures` (none when nothing matched).
    pub audit: Option<String>,
}

impl Operation for Erase {
    const NAME: &'static str = "erase";
    const TITLE: &'static str = "Erase records for good";
    const DESCRIPTION: &'static str = "Erase every record of a namespace (or those of some kinds, with some tags, passing a `where` filter) permanently: every revision, vector and index entry, so that time travel no longer sees them either; for data-deletion requests. `confirm` must repeat the namespace's name. An audit record (counts, kinds, hashes of the namespace and tags, no content) goes to namespace mnemon:erasures. Unlike retiring, which keeps the history, this cannot be undone.";
    const READ_ONLY: bool = false;
    const DESTRUCTIVE: bool = true;
    const ADMIN: bool = true;
    const MCP: bool = false;
    type Output = Erased;

    fn run(self, session: &Session) -> Result<Erased> {
        let ns = session.ns(Some(&self.namespace))?;
        if self.confirm != self.namespace {
            return Err(invalid(format!(
                "to erase from namespace {:?}, give confirm: {:?} (its name again); nothing was erased",
                self.namespace, self.namespace
            )));
        }
        let kinds = kinds(&self.kinds)?;
        let filter = self.where_.as_ref().map(crate::filter::Where::parse).transpose()?;
        let done = session.db().erase_where(ns.name().as_str(), &kinds, &self.tags, filter.as_ref())?;
        Ok(Erased {
            records: done.records,
            revisions: done.revisions,
            audit: done.audit.map(|id| id.to_string()),
        })
    }
}
