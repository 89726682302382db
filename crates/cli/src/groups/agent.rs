//! `mnemon knowledge|agent|episode ...`: an agent's own memory.

use anyhow::Result;
use mnemon::ops;
use mnemon::{Record, Timestamp};
use serde_json::{Value, json};

use super::{entries, one, report, session_for, show_all, show_id};
use crate::cli::Cli;
use crate::cli::domain::*;
use crate::open::{check_id_form, usage};
use crate::output::{Out, short, table};

pub fn knowledge(cli: &Cli, out: &mut Out, cmd: &KnowledgeCmd) -> Result<()> {
    let session = session_for(cli, !matches!(cmd, KnowledgeCmd::List { .. }))?;
    match cmd {
        KnowledgeCmd::Learn { category, content } => {
            let l = session.call(ops::KnowledgeLearn {
                category: category.clone(),
                content: content.clone(),
                namespace: None,
            })?;
            show_id(out, l.id, json!({"reinforced": l.reinforced}))
        }
        KnowledgeCmd::Reinforce { id } => {
            check_id_form(id)?;
            one(out, &session.call(ops::KnowledgeReinforce { id: id.clone(), namespace: None })?)
        }
        KnowledgeCmd::List { category } => {
            let rs = session.call(ops::KnowledgeList { category: category.clone(), namespace: None })?;
            if out.json {
                return entries(out, rs, "");
            }
            let rows: Vec<Vec<String>> = rs
                .entries
                .iter()
                .map(|r| &r.record)
                .filter_map(|r| match &r.body {
                    mnemon::Body::Knowledge(k) => Some(vec![
                        short(r.id),
                        format!("{:.1}", r.envelope.confidence.unwrap_or(0.5)),
                        k.category.to_string(),
                        k.content.clone(),
                    ]),
                    _ => None,
                })
                .collect();
            out.line(if rows.is_empty() {
                "no role knowledge".to_string()
            } else {
                table(&["ID", "CONFIDENCE", "CATEGORY", "CONTENT"], &rows)
            })?;
            Ok(())
        }
        KnowledgeCmd::Prune { before } => {
            let r = session.call(ops::KnowledgePrune { before: before.to_rfc3339(), namespace: None })?;
            let n = r.retired;
            report(out, json!(r), format!("retired {n} entries unused since {}", before.to_human()))
        }
    }
}

pub fn agent(cli: &Cli, out: &mut Out, cmd: &AgentCmd) -> Result<()> {
    let writes = matches!(cmd, AgentCmd::Prefer { .. } | AgentCmd::Completed { .. } | AgentCmd::Error { .. });
    let session = session_for(cli, writes)?;
    let object = |v: Value, what: &str| -> Result<serde_json::Map<String, Value>> {
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(usage(format!("{what} must be a JSON object"))),
        }
    };
    let prefs = |out: &mut Out, p: ops::Preferences| -> Result<()> {
        let p = p.preferences;
        if out.json {
            out.json_line(&p)?;
        } else {
            out.line(serde_json::to_string_pretty(&p)?)?;
        }
        Ok(())
    };
    match cmd {
        AgentCmd::Prefer { data } => {
            let preferences = object(crate::open::read_data(data)?, "--data")?;
            prefs(out, session.call(ops::AgentPrefer { preferences, namespace: None })?)
        }
        AgentCmd::Preferences { defaults } => {
            let d: Value = serde_json::from_str(defaults).map_err(|e| usage(format!("--defaults: {e}")))?;
            let defaults = object(d, "--defaults")?;
            prefs(out, session.call(ops::AgentPreferences { defaults, namespace: None })?)
        }
        AgentCmd::Completed { data } => {
            let m: ops::AgentCompleted = serde_json::from_value(crate::open::read_data(data)?)
                .map_err(|e| usage(format!("invalid task metrics: {e}")))?;
            show_id(out, session.call(ops::AgentCompleted { namespace: None, ..m })?.id, json!({}))
        }
        AgentCmd::Error { pattern, resolution } => {
            let e =
                ops::AgentError { pattern: pattern.clone(), resolution: resolution.clone(), namespace: None };
            show_id(out, session.call(e)?.id, json!({}))
        }
        AgentCmd::Performance => {
            let p = session.call(ops::AgentPerformance::default())?;
            if out.json {
                out.json_line(&p)?;
            } else {
                out.line(format!(
                    "tasks completed {}, average iterations {:.1}, quality gate pass rate {:.0}%",
                    p.tasks_completed,
                    p.average_iterations,
                    p.quality_gate_pass_rate * 100.0
                ))?;
                let rows: Vec<Vec<String>> = p
                    .common_errors
                    .iter()
                    .map(|(e, r, n)| vec![n.to_string(), e.clone(), r.clone()])
                    .collect();
                if !rows.is_empty() {
                    out.line(table(&["SEEN", "ERROR", "RESOLUTION"], &rows))?;
                }
            }
            Ok(())
        }
        AgentCmd::Context => {
            let text = session.call(ops::AgentContext::default())?.context;
            report(out, json!({ "context": text }), text)
        }
    }
}

pub fn episode(cli: &Cli, out: &mut Out, cmd: &EpisodeCmd) -> Result<()> {
    let session = session_for(cli, !matches!(cmd, EpisodeCmd::Access { .. }))?;
    match cmd {
        EpisodeCmd::Store { content, episode_type, summary, task, files, importance } => {
            let e = ops::EpisodeStore {
                content: content.clone(),
                episode_type: Some(episode_type.clone()),
                summary: summary.clone(),
                task: task.clone(),
                files: files.clone(),
                importance: *importance,
                namespace: None,
            };
            show_id(out, session.call(e)?.id, json!({}))
        }
        EpisodeCmd::Query { query, limit } => {
            let q = ops::EpisodeQuery { query: query.clone(), limit: Some(*limit), namespace: None };
            let found = session.call(q)?.episodes;
            let at = found.first().map_or(Timestamp::MIN, |h| h.record.at);
            let rs: Vec<Record> = found.into_iter().map(|h| h.record.record).collect();
            show_all(out, &rs, at, "no episodes match")
        }
        EpisodeCmd::Context { task, query, max_tokens } => {
            let c = session.call(ops::EpisodeContext {
                task: task.clone(),
                query: query.clone(),
                max_tokens: Some(*max_tokens),
                namespace: None,
            })?;
            if out.json {
                out.json_line(&c)?;
            } else {
                out.line(if c.text.is_empty() { "no episodes fit".to_string() } else { c.text })?;
            }
            Ok(())
        }
        EpisodeCmd::Access { id } => {
            check_id_form(id)?;
            let a = session.call(ops::EpisodeAccess { id: id.clone(), namespace: None })?;
            if out.json {
                out.json_line(&a)?;
            } else {
                out.line(format!(
                    "returned {} time(s), last {}",
                    a.count,
                    a.last.map_or_else(|| "never".to_string(), Timestamp::to_human)
                ))?;
            }
            Ok(())
        }
        EpisodeCmd::Prune { days, important_factor, keep } => {
            if days.is_none() && keep.is_none() {
                return Err(usage("give --days N, --keep N, or both"));
            }
            let p = ops::EpisodePrune {
                days: *days,
                important_factor: Some(*important_factor),
                keep: *keep,
                namespace: None,
            };
            let n = session.call(p)?.retired;
            report(out, json!({ "retired": n }), format!("retired {n} episode(s)"))
        }
    }
}
