//! Domain rules that every write of a record obeys, whichever interface makes it: [`Ns`]'s
//! writes call them, so the CLI, MCP, the HTTP server and a library caller cannot skip them.
//! They depend only on the records they are given, not on the facade.
//!
//! [`Ns`]: crate::Ns

use std::collections::{BTreeMap, BTreeSet};

use mnemon_storage::{Body, NewRecord, Record, RecordId};

use crate::error::{Error, Result};

/// A task's dependencies: each must be a task valid now (a key of `graph`, every task valid
/// now and the tasks it depends on), not the task itself, and none may close a cycle.
pub(crate) fn task_dependencies(
    id: RecordId,
    deps: &[RecordId],
    graph: &BTreeMap<RecordId, Vec<RecordId>>,
) -> Result<()> {
    let rule = |reason: String| Error::Rule { id, reason };
    for &d in deps {
        if d == id {
            return Err(rule("a task cannot depend on itself".into()));
        }
        if !graph.contains_key(&d) {
            return Err(rule(format!("dependency {d} is not a task valid now")));
        }
        // Walk what `d` depends on: reaching `id` would close a cycle.
        let mut stack = vec![d];
        let mut seen = BTreeSet::new();
        while let Some(n) = stack.pop() {
            if n == id {
                return Err(rule(format!("depending on {d} would close a dependency cycle")));
            }
            if seen.insert(n) {
                stack.extend(graph.get(&n).into_iter().flatten().copied());
            }
        }
    }
    Ok(())
}

/// What a record that supersedes `old` carries over from it, whichever interface supersedes:
/// `old`'s tags when it gives none, and a decision's link to the decision it replaces
/// (`related_decisions`).
pub(crate) fn carry_over(old: &Record, new: &mut NewRecord) {
    if new.envelope.tags.is_empty() {
        new.envelope.tags.clone_from(&old.envelope.tags);
    }
    if let Body::Decision(d) = &mut new.body
        && !d.related_decisions.contains(&old.id)
    {
        d.related_decisions.push(old.id);
    }
}

/// A new record's size, its body and envelope measured as JSON, at most `max` bytes.
pub(crate) fn record_size(record: &NewRecord, max: usize) -> Result<()> {
    // The text fields first: a record far over the limit is refused without serialising it.
    let text = record.body.text().len();
    let size = if text > max {
        text
    } else {
        serde_json::to_vec(&record.body.to_json()).map_or(text, |b| b.len())
            + record.envelope.metadata.as_str().len()
            + record.envelope.tags.iter().map(|t| t.len()).sum::<usize>()
    };
    if size > max {
        return Err(crate::error::invalid(format!(
            "the record is {size} bytes, more than the {max} a record may hold here (DbBuilder::max_record_bytes)"
        )));
    }
    Ok(())
}
