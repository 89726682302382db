//! `mnemon project ...`, `mnemon tagged`, `mnemon stats --domain`, `mnemon consolidate`: a
//! project's knowledge and the namespace's overview.

use anyhow::Result;
use mnemon::ops;
use serde_json::{Value, json};

use super::{entries, groups, report, session_for, show_id};
use crate::cli::Cli;
use crate::cli::domain::*;
use crate::open::usage;
use crate::output::{Out, short, table};

pub fn project(cli: &Cli, out: &mut Out, cmd: &ProjectCmd) -> Result<()> {
    let writes = matches!(
        cmd,
        ProjectCmd::Pattern { .. }
            | ProjectCmd::Gotcha { .. }
            | ProjectCmd::Relate { .. }
            | ProjectCmd::Learn { .. }
    );
    let session = session_for(cli, writes)?;
    let object = |data: &str| -> Result<serde_json::Map<String, Value>> {
        match crate::open::read_data(data)? {
            Value::Object(m) => Ok(m),
            _ => Err(usage("--data must be a JSON object")),
        }
    };
    match cmd {
        ProjectCmd::Pattern { data, agent } => {
            let p = ops::ProjectPattern { pattern: object(data)?, agent: agent.clone(), namespace: None };
            let added = session.call(p)?;
            show_id(out, added.id, json!({ "existing": added.existing }))
        }
        ProjectCmd::Patterns { category } => {
            let q = ops::ProjectPatterns { category: category.clone(), namespace: None };
            entries(out, session.call(q)?, "no patterns")
        }
        ProjectCmd::Gotcha { data } => {
            let g = ops::ProjectGotcha { gotcha: object(data)?, namespace: None };
            show_id(out, session.call(g)?.id, json!({}))
        }
        ProjectCmd::Gotchas { severity } => {
            let q = ops::ProjectGotchas { severity: *severity, namespace: None };
            entries(out, session.call(q)?, "no gotchas")
        }
        ProjectCmd::Relate { from, relation_type, to, description } => {
            let r = ops::ProjectRelate {
                from: from.clone(),
                relation: relation_type.clone(),
                to: to.clone(),
                description: description.clone(),
                namespace: None,
            };
            show_id(out, session.call(r)?.id, json!({}))
        }
        ProjectCmd::Relations { component } => {
            let rs = session.call(ops::ProjectRelations { component: component.clone(), namespace: None })?;
            if out.json {
                return entries(out, rs, "");
            }
            for r in rs.entries.iter().map(|r| &r.record) {
                if let mnemon::Body::Relation(x) = &r.body {
                    out.line(format!("{}  {} {} {}", short(r.id), x.from, x.relation_type, x.to))?;
                }
            }
            if rs.entries.is_empty() {
                out.line("no relationships")?;
            }
            Ok(())
        }
        ProjectCmd::Learn { text, agent, learning_type, files } => {
            let l = ops::ProjectLearn {
                text: text.clone(),
                agent: Some(agent.clone()),
                learning_type: learning_type.clone(),
                files: files.clone(),
                namespace: None,
            };
            show_id(out, session.call(l)?.id, json!({}))
        }
        ProjectCmd::Learnings { limit } => {
            let l = session.call(ops::ProjectLearnings { limit: Some(*limit), namespace: None })?;
            if out.json {
                return entries(out, ops::Entries { entries: l.entries }, "");
            }
            out.line(format!("# Project Learnings\n{}", l.markdown))?;
            Ok(())
        }
        ProjectCmd::Search { query, limit } => {
            let q = ops::ProjectSearch { query: query.clone(), limit: Some(*limit), namespace: None };
            groups(out, session.call(q)?, &format!("nothing matches {query:?}"))
        }
        ProjectCmd::Context => {
            let text = session.call(ops::ProjectKnowledge::default())?.context;
            report(out, json!({ "context": text }), text)
        }
    }
}

/// `mnemon tagged TAG`: current records carrying the tag, by kind.
pub fn tagged(cli: &Cli, out: &mut Out, tag: &str) -> Result<()> {
    let g = session_for(cli, false)?.call(ops::Tagged { tag: tag.to_string(), namespace: None })?;
    groups(out, g, &format!("nothing tagged {tag:?} in namespace {}", cli.ns))
}

/// `mnemon consolidate --older-than DAYS`.
pub fn consolidate(cli: &Cli, out: &mut Out, days: u32) -> Result<()> {
    let r = session_for(cli, true)?.call(ops::Consolidate { older_than_days: days, namespace: None })?;
    if out.json {
        out.json_line(&r)?;
    } else {
        out.line(format!(
            "retired {} cancelled task(s) and {} superseded decision(s) older than {days} days; {} decision(s) \
             were already superseded before then (still visible to time travel)",
            r.tasks_retired, r.decisions_retired, r.decisions_superseded
        ))?;
    }
    Ok(())
}

/// `mnemon stats --domain`: per-kind statistics of what is current.
pub fn domain_stats(cli: &Cli, out: &mut Out) -> Result<()> {
    let s = session_for(cli, false)?.call(ops::Stats::default())?;
    if out.json {
        out.json_line(&s)?;
        return Ok(());
    }
    let rows = |m: &std::collections::BTreeMap<String, usize>| -> Vec<Vec<String>> {
        m.iter().map(|(k, v)| vec![k.clone(), v.to_string()]).collect()
    };
    out.line(table(&["KIND", "CURRENT"], &rows(&s.by_kind)))?;
    if !s.decisions_by_status.is_empty() {
        out.line(table(&["DECISION STATUS", "COUNT"], &rows(&s.decisions_by_status)))?;
    }
    if !s.tasks_by_status.is_empty() {
        out.line(table(&["TASK STATUS", "COUNT"], &rows(&s.tasks_by_status)))?;
        out.line(table(&["TASK PRIORITY", "COUNT"], &rows(&s.tasks_by_priority)))?;
        out.line(format!("overdue tasks: {}", s.tasks_overdue))?;
        if let Some(secs) = s.average_completion_secs {
            out.line(format!("average completion time: {:.1} h", secs / 3600.0))?;
        }
    }
    if !s.entities_by_type.is_empty() {
        out.line(table(&["ENTITY TYPE", "COUNT"], &rows(&s.entities_by_type)))?;
        let top: Vec<Vec<String>> =
            s.most_mentioned.iter().map(|(n, c)| vec![n.clone(), c.to_string()]).collect();
        out.line(table(&["MOST MENTIONED", "MENTIONS"], &top))?;
    }
    if !s.tags.is_empty() {
        out.line(table(&["TAG", "RECORDS"], &rows(&s.tags)))?;
    }
    Ok(())
}
