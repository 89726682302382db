//! The domain command groups, each an adapter over the operation layer (`mnemon::ops`):
//! parse the arguments, call the operation, render its answer. `work`: tasks, decisions,
//! entities, conversations; `agent`: an agent's knowledge, preferences and episodes;
//! `project`: a project's knowledge and the namespace's overview; `memory`: scoped memory;
//! `upkeep`: pruning and the other importers.

pub mod agent;
pub mod memory;
pub mod project;
pub mod upkeep;
pub mod work;

use anyhow::Result;
use mnemon::json::RecordView;
use mnemon::ops;
use mnemon::{Record, RecordId, Timestamp};
use serde_json::{Value, json};

use crate::cli::Cli;

use crate::output::{Out, record_detail, records_table};

pub(super) fn show(out: &mut Out, r: &Record, at: Timestamp) -> Result<()> {
    if out.json {
        out.json_line(&RecordView::new(r, at))?;
    } else {
        out.line(record_detail(r, at))?;
    }
    Ok(())
}

pub(super) fn show_all(out: &mut Out, rs: &[Record], at: Timestamp, empty: &str) -> Result<()> {
    if out.json {
        for r in rs {
            out.json_line(&RecordView::new(r, at))?;
        }
    } else if rs.is_empty() {
        out.line(empty)?;
    } else {
        out.line(records_table(rs, at))?;
    }
    Ok(())
}

/// Print `doc` under `--json`, else `text`.
pub(super) fn report(out: &mut Out, doc: Value, text: impl AsRef<str>) -> Result<()> {
    if out.json {
        out.json_line(&doc)?;
    } else {
        out.line(text)?;
    }
    Ok(())
}

pub(super) fn show_id(out: &mut Out, id: RecordId, extra: Value) -> Result<()> {
    if out.json {
        let mut doc = json!({ "id": id });
        if let (Some(d), Value::Object(e)) = (doc.as_object_mut(), extra) {
            d.extend(e);
        }
        out.json_line(&doc)?;
    } else {
        out.line(id.to_string())?;
    }
    Ok(())
}

/// A record an operation answered.
pub(super) fn one(out: &mut Out, o: &ops::One) -> Result<()> {
    show(out, &o.record.record, o.record.at)
}

/// Records an operation answered, or `empty` when there are none.
pub(super) fn entries(out: &mut Out, e: ops::Entries, empty: &str) -> Result<()> {
    let at = e.entries.first().map(|r| r.at);
    let rs: Vec<Record> = e.entries.into_iter().map(|r| r.record).collect();
    show_all(out, &rs, at.unwrap_or(Timestamp::MIN), empty)
}

/// A session for a command that writes (`write`) or only reads.
pub(super) fn session_for(cli: &Cli, write: bool) -> Result<crate::open::Conn> {
    crate::open::connect(cli, write)
}

/// The record `id` as it is now.
pub(super) fn current(session: &crate::open::Conn, id: String) -> Result<ops::One> {
    let got = session.call(ops::Get { id, ..Default::default() })?;
    Ok(ops::One { record: got.record })
}

/// Records by kind, each kind under its name and count.
pub(super) fn groups(out: &mut Out, g: ops::Groups, empty: &str) -> Result<()> {
    if out.json {
        for r in g.groups.iter().flat_map(|g| &g.records) {
            out.json_line(&RecordView::new(&r.record, r.at))?;
        }
        return Ok(());
    }
    if g.groups.is_empty() {
        out.line(empty)?;
    }
    for group in g.groups {
        let at = group.records.first().map_or(Timestamp::MIN, |r| r.at);
        let rs: Vec<Record> = group.records.into_iter().map(|r| r.record).collect();
        out.line(format!("{} ({})", group.kind, rs.len()))?;
        out.line(records_table(&rs, at))?;
    }
    Ok(())
}
