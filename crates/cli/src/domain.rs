//! `mnemon task|decision|entity|conversation ...`, `mnemon tagged`, `mnemon consolidate`: the
//! project-assistant domain of the facade (`mnemon::domain`) on the command line.

use anyhow::Result;
use mnemon::body::DecisionStatus;
use mnemon::ops;
use mnemon::{Db, Ns, Record, RecordId, Timestamp};
use serde_json::{Value, json};

use crate::cli::Cli;
use crate::cli::domain::*;
use crate::open::{check_id_form, open, open_read, usage};
use crate::output::{Out, chain_table, record_detail, records_table, short, table};
use mnemon::json::RecordView;

fn ns_of(db: &Db, cli: &Cli) -> Result<Ns> {
    Ok(db.ns(&cli.ns)?)
}

fn show(out: &mut Out, r: &Record, at: Timestamp) -> Result<()> {
    if out.json {
        out.json_line(&RecordView::new(r, at))?;
    } else {
        out.line(record_detail(r, at))?;
    }
    Ok(())
}

fn show_all(out: &mut Out, rs: &[Record], at: Timestamp, empty: &str) -> Result<()> {
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
fn report(out: &mut Out, doc: Value, text: impl AsRef<str>) -> Result<()> {
    if out.json {
        out.json_line(&doc)?;
    } else {
        out.line(text)?;
    }
    Ok(())
}

fn show_id(out: &mut Out, id: RecordId, extra: Value) -> Result<()> {
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
fn one(out: &mut Out, o: &ops::One) -> Result<()> {
    show(out, &o.record.record, o.record.at)
}

/// Records an operation answered, or `empty` when there are none.
fn entries(out: &mut Out, e: ops::Entries, empty: &str) -> Result<()> {
    let at = e.entries.first().map(|r| r.at);
    let rs: Vec<Record> = e.entries.into_iter().map(|r| r.record).collect();
    show_all(out, &rs, at.unwrap_or(Timestamp::MIN), empty)
}

/// A session for a command that writes (`write`) or only reads.
fn session_for(cli: &Cli, write: bool) -> Result<ops::Session> {
    crate::open::session(cli, if write { open(cli)? } else { open_read(cli)? })
}

/// The record `id` as it is now.
fn current(session: &ops::Session, id: String) -> Result<ops::One> {
    let got = session.call(ops::Get { id, ..Default::default() })?;
    Ok(ops::One { record: got.record })
}

pub fn task(cli: &Cli, out: &mut Out, cmd: &TaskCmd) -> Result<()> {
    let read_only =
        matches!(cmd, TaskCmd::CanStart { .. } | TaskCmd::Deps | TaskCmd::Overdue | TaskCmd::List { .. });
    let session = session_for(cli, !read_only)?;
    let mut moved = |id: &String, action: ops::TaskAction, reason: Option<String>| -> Result<()> {
        check_id_form(id)?;
        let m = session.call(ops::TaskMove { id: id.clone(), action, reason, namespace: None })?;
        one(out, &current(&session, m.id.to_string())?)
    };
    match cmd {
        TaskCmd::Start { id } => moved(id, ops::TaskAction::Start, None),
        TaskCmd::Complete { id } => moved(id, ops::TaskAction::Complete, None),
        TaskCmd::Plan { id } => moved(id, ops::TaskAction::Plan, None),
        TaskCmd::Block { id, reason } => moved(id, ops::TaskAction::Block, Some(reason.clone())),
        TaskCmd::Unblock { id } => moved(id, ops::TaskAction::Unblock, None),
        TaskCmd::Cancel { id, reason } => moved(id, ops::TaskAction::Cancel, reason.clone()),
        TaskCmd::Depend { id, on } => {
            check_id_form(id)?;
            check_id_form(on)?;
            let m = session.call(ops::TaskDepend { id: id.clone(), on: on.clone(), namespace: None })?;
            one(out, &current(&session, m.id.to_string())?)
        }
        TaskCmd::CanStart { id } => {
            check_id_form(id)?;
            let c = session.call(ops::TaskCanStart { id: id.clone(), namespace: None })?;
            if out.json {
                out.json_line(&c)?;
            } else if c.ready {
                out.line("ready: every dependency is completed")?;
            } else {
                let ids: Vec<String> = c.waiting_on.iter().map(|i| short(*i)).collect();
                out.line(format!("not ready: waiting on {}", ids.join(", ")))?;
            }
            Ok(())
        }
        TaskCmd::Deps => {
            let g = session.call(ops::TaskGraph::default())?;
            if out.json {
                for t in &g.tasks {
                    out.json_line(t)?;
                }
            } else {
                let rows: Vec<Vec<String>> = g
                    .tasks
                    .iter()
                    .map(|t| {
                        let on = t.dependencies.iter().map(|x| short(*x)).collect::<Vec<_>>().join(", ");
                        vec![short(t.id), if on.is_empty() { "-".to_string() } else { on }]
                    })
                    .collect();
                out.line(table(&["TASK", "DEPENDS ON"], &rows))?;
            }
            Ok(())
        }
        TaskCmd::Overdue => entries(
            out,
            session.call(ops::TaskList { overdue: true, ..Default::default() })?,
            "no overdue tasks",
        ),
        TaskCmd::List { statuses, priorities, assignee, tag, all, limit } => {
            let q = ops::TaskList {
                statuses: statuses.clone(),
                priorities: priorities.clone(),
                assignee: assignee.clone(),
                tag: tag.clone(),
                all: *all,
                limit: *limit,
                ..Default::default()
            };
            entries(out, session.call(q)?, "no tasks")
        }
        TaskCmd::Link { id, decision } => {
            check_id_form(id)?;
            check_id_form(decision)?;
            let l =
                session.call(ops::Link { task: id.clone(), decision: decision.clone(), namespace: None })?;
            one(out, &l.task)
        }
    }
}

pub fn decision(cli: &Cli, out: &mut Out, cmd: &DecisionCmd) -> Result<()> {
    let read_only = matches!(cmd, DecisionCmd::History { .. } | DecisionCmd::Active);
    let session = session_for(cli, !read_only)?;
    let set = |out: &mut Out, id: &String, status: DecisionStatus| -> Result<()> {
        check_id_form(id)?;
        one(out, &session.call(ops::DecisionStatusSet { id: id.clone(), status, namespace: None })?)
    };
    match cmd {
        DecisionCmd::Accept { id } => set(out, id, DecisionStatus::Accepted),
        DecisionCmd::Reject { id } => set(out, id, DecisionStatus::Rejected),
        DecisionCmd::Deprecate { id } => set(out, id, DecisionStatus::Deprecated),
        DecisionCmd::Propose { id } => set(out, id, DecisionStatus::Proposed),
        DecisionCmd::Supersede { id, data, at } => {
            check_id_form(id)?;
            let Value::Object(data) = crate::open::read_data(data)? else {
                return Err(usage("--data must be a JSON object"));
            };
            let done = session.call(ops::Supersede {
                id: id.clone(),
                data: Some(data),
                at: at.map(|t| t.to_rfc3339()),
                kind: Some("decision".into()),
                ..Default::default()
            })?;
            show_id(out, done.new, json!({"supersedes": done.old}))
        }
        DecisionCmd::History { id } => {
            check_id_form(id)?;
            let c = session.call(ops::Chain { id: id.clone(), namespace: None })?;
            let now = session.db().now();
            let chain: Vec<Record> = c.chain.into_iter().map(|r| r.record).collect();
            if out.json {
                for r in &chain {
                    out.json_line(&RecordView::new(r, now))?;
                }
            } else {
                out.line(chain_table(&chain, now, Some(c.asked)))?;
            }
            Ok(())
        }
        DecisionCmd::Active => {
            entries(out, session.call(ops::DecisionActive::default())?, "no accepted decisions")
        }
        DecisionCmd::Link { id, task } => {
            check_id_form(id)?;
            check_id_form(task)?;
            let l = session.call(ops::Link { task: task.clone(), decision: id.clone(), namespace: None })?;
            one(out, &l.decision)
        }
    }
}

pub fn entity(cli: &Cli, out: &mut Out, cmd: &EntityCmd) -> Result<()> {
    let read_only = matches!(cmd, EntityCmd::Find { .. } | EntityCmd::ByType { .. });
    let session = session_for(cli, !read_only)?;
    let pair = |a: &String, b: &String| -> Result<(String, String)> {
        check_id_form(a)?;
        check_id_form(b)?;
        Ok((a.clone(), b.clone()))
    };
    match cmd {
        EntityCmd::Find { name } => {
            one(out, &session.call(ops::EntityFind { name: name.clone(), namespace: None })?)
        }
        EntityCmd::Ensure { name, entity_type, description } => {
            let e = session.call(ops::EntityEnsure {
                name: name.clone(),
                entity_type: Some(entity_type.as_str().to_string()),
                description: description.clone(),
                namespace: None,
            })?;
            show_id(out, e.id, json!({"created": e.created}))
        }
        EntityCmd::Mention { id, context, source } => {
            check_id_form(id)?;
            let m = ops::EntityMention {
                id: id.clone(),
                context: context.clone(),
                source: source.clone(),
                namespace: None,
            };
            one(out, &session.call(m)?)
        }
        EntityCmd::Set { id, key, value } => {
            check_id_form(id)?;
            let value: Value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.clone()));
            one(
                out,
                &session.call(ops::EntitySet { id: id.clone(), key: key.clone(), value, namespace: None })?,
            )
        }
        EntityCmd::Link { a, b } => {
            let (a, b) = pair(a, b)?;
            one(out, &session.call(ops::EntityLink { a, b, namespace: None })?)
        }
        EntityCmd::Merge { keep, absorb } => {
            let (keep, absorb) = pair(keep, absorb)?;
            one(out, &session.call(ops::EntityMerge { keep, absorb, namespace: None })?)
        }
        EntityCmd::ByType { entity_type } => {
            let q = ops::EntityByType { entity_type: entity_type.clone(), namespace: None };
            entries(out, session.call(q)?, "no entities of that type")
        }
    }
}

pub fn conversation(cli: &Cli, out: &mut Out, cmd: &ConversationCmd) -> Result<()> {
    let read_only = matches!(cmd, ConversationCmd::Show { .. } | ConversationCmd::Recent { .. });
    let session = session_for(cli, !read_only)?;
    match cmd {
        ConversationCmd::Start { title } => {
            let c = session.call(ops::ConversationStart { title: title.clone(), namespace: None })?;
            show_id(out, c.id, json!({}))
        }
        ConversationCmd::Add { id, role, content } => {
            check_id_form(id)?;
            let m = ops::ConversationAdd {
                id: id.clone(),
                role: *role,
                content: content.clone(),
                namespace: None,
            };
            show_id(out, session.call(m)?.id, json!({}))
        }
        ConversationCmd::End { id, summary } => {
            check_id_form(id)?;
            let e = ops::ConversationEnd { id: id.clone(), summary: summary.clone(), namespace: None };
            one(out, &session.call(e)?)
        }
        ConversationCmd::Show { id } => {
            check_id_form(id)?;
            let t = session.call(ops::ConversationShow { id: id.clone(), namespace: None })?;
            let (c, at) = (&t.conversation.record.record, t.conversation.record.at);
            if out.json {
                out.json_line(&RecordView::new(c, at))?;
                for m in &t.messages.entries {
                    out.json_line(&RecordView::new(&m.record, at))?;
                }
            } else {
                out.line(record_detail(c, at))?;
                for m in &t.messages.entries {
                    if let mnemon::Body::Message(x) = &m.record.body {
                        out.line(format!("{:>9}: {}", format!("{:?}", x.role).to_lowercase(), x.content))?;
                    }
                }
            }
            Ok(())
        }
        ConversationCmd::Recent { limit } => {
            let q = ops::ConversationRecent { limit: Some(*limit), namespace: None };
            entries(out, session.call(q)?, "no conversations")
        }
    }
}

/// Records by kind, each kind under its name and count.
fn groups(out: &mut Out, g: ops::Groups, empty: &str) -> Result<()> {
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
        out.line(if out.json { p.to_string() } else { serde_json::to_string_pretty(&p)? })?;
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

/// The scope of a memory command: `--scope` if given (it must agree with `--ns` when both
/// are), else the scope of `--ns` (`global`, `project:ID`, `agent:NAME`; the default
/// namespace means global).
pub(crate) fn scope_of(cli: &Cli, given: Option<&str>) -> Result<mnemon::scoped::Scope> {
    use mnemon::scoped::Scope;
    let from_ns = if cli.ns == "default" { Some(Scope::Global) } else { Scope::of_namespace(&cli.ns) };
    match given {
        Some(s) => {
            let sc = Scope::parse(s).map_err(|e| usage(e.to_string()))?;
            if cli.ns != "default" && sc.namespace() != cli.ns {
                return Err(usage(format!(
                    "--scope {s} is namespace {} but --ns is {}: give one of them",
                    sc.namespace(),
                    cli.ns
                )));
            }
            Ok(sc)
        }
        None => from_ns.ok_or_else(|| {
            usage(format!(
                "--ns {} is not a memory scope (global, project:ID, agent:NAME): give --scope",
                cli.ns
            ))
        }),
    }
}

pub fn memory(cli: &Cli, out: &mut Out, cmd: &MemoryCmd) -> Result<()> {
    use mnemon::scoped::Section;
    let read_only = matches!(cmd, MemoryCmd::Show { .. } | MemoryCmd::Projects | MemoryCmd::Context { .. });
    // The scope as the operations take it, checked before the file is opened.
    let scope =
        |s: &Option<String>| -> Result<Option<String>> { Ok(Some(scope_of(cli, s.as_deref())?.spec())) };
    let section = |s: &str| -> Result<Section> { Section::parse(s).map_err(|e| usage(e.to_string())) };
    let read = |file: &std::path::Path| -> Result<String> {
        std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))
    };
    match cmd {
        MemoryCmd::Add { section: s, scope: sc, .. } | MemoryCmd::Import { section: s, scope: sc, .. } => {
            section(s)?;
            scope(sc)?;
        }
        MemoryCmd::Brief { scope: sc, .. }
        | MemoryCmd::Show { scope: sc, .. }
        | MemoryCmd::Delete { scope: sc, .. }
        | MemoryCmd::Clear { scope: sc }
        | MemoryCmd::Context { scope: sc, .. } => {
            scope(sc)?;
        }
        _ => {}
    }
    let session = session_for(cli, !read_only)?;
    match cmd {
        MemoryCmd::Add { section: s, content, scope: sc, importance } => {
            let a = session.call(ops::MemoryAdd {
                content: content.clone(),
                section: Some(section(s)?.into()),
                importance: Some(*importance),
                scope: scope(sc)?,
            })?;
            // Say when the entry was already there, or replaced one of the same title.
            let (mut extra, note) = match (a.outcome.as_str(), a.supersedes) {
                ("existing", _) => (json!({ "existing": true }), Some("already there".to_string())),
                (_, Some(old)) => {
                    (json!({ "superseded": old }), Some(format!("supersedes {old}, which said otherwise")))
                }
                _ => (json!({}), None),
            };
            if let Some(e) = extra.as_object_mut() {
                e.insert("namespace".into(), json!(a.namespace));
            }
            if let (false, Some(n)) = (out.json, &note) {
                out.line(format!("{} ({n})", a.id))?;
                return Ok(());
            }
            show_id(out, a.id, extra)
        }
        MemoryCmd::Brief { scope: sc, text } => {
            let b = session.call(ops::MemoryBrief { text: text.clone(), scope: scope(sc)? })?;
            show_id(out, b.id, json!({}))
        }
        MemoryCmd::Show { scope: sc, section: s } => {
            let only = s.as_deref().map(section).transpose()?;
            let shown = session.call(ops::MemoryShow { section: only.map(Into::into), scope: scope(sc)? })?;
            if out.json {
                for e in shown.sections.iter().flat_map(|s| &s.entries) {
                    out.json_line(&RecordView::new(&e.record.record, e.record.at))?;
                }
                return Ok(());
            }
            if let Some(b) = shown.brief.filter(|_| only.is_none()) {
                out.line(format!("# Brief\n{b}\n"))?;
            }
            for sec in shown.sections {
                let rs: Vec<Record> = sec.entries.into_iter().map(|e| e.record.record).collect();
                out.line(mnemon::scoped::section_markdown(section(&sec.section)?, &rs))?;
            }
            Ok(())
        }
        MemoryCmd::Projects => {
            let ps = session.call(ops::MemoryProjects {})?.projects;
            if out.json {
                for p in &ps {
                    out.json_line(p)?;
                }
            } else {
                let rows: Vec<Vec<String>> = ps
                    .iter()
                    .map(|p| {
                        vec![
                            p.id.clone(),
                            p.entries.to_string(),
                            if p.has_brief { "yes" } else { "no" }.into(),
                        ]
                    })
                    .collect();
                out.line(table(&["PROJECT", "ENTRIES", "BRIEF"], &rows))?;
            }
            Ok(())
        }
        MemoryCmd::Delete { id, scope: sc } => {
            check_id_form(id)?;
            let d = session.call(ops::MemoryDelete { id: id.clone(), scope: scope(sc)? })?;
            show_id(out, d.id, json!({ "deleted": true }))
        }
        MemoryCmd::Prune => {
            let r = session.call(ops::MemoryPrune {})?;
            let n = r.pruned;
            report(out, json!(r), format!("closed {n} expired entr{}", if n == 1 { "y" } else { "ies" }))
        }
        MemoryCmd::Clear { scope: sc } => {
            let n = session.call(ops::MemoryClear { scope: scope(sc)? })?.cleared;
            report(out, json!({ "cleared": n }), format!("retired {n} entries"))
        }
        MemoryCmd::Import { file, section: s, scope: sc } => {
            let i =
                ops::MemoryImport { markdown: read(file)?, section: section(s)?.into(), scope: scope(sc)? };
            let r = session.call(i)?;
            report(out, json!(r), format!("imported {}, skipped {} already present", r.imported, r.skipped))
        }
        MemoryCmd::ImportGraph { file } => {
            let n = session.call(ops::MemoryImportGraph { jsonl: read(file)? })?.imported;
            report(out, json!({ "imported": n }), format!("imported {n} entries"))
        }
        MemoryCmd::Context { scope: sc, query, budget } => {
            let c =
                ops::MemoryContext { query: query.clone(), budget_tokens: Some(*budget), scope: scope(sc)? };
            let text = session.call(c)?.context;
            report(out, json!({ "context": text }), text)
        }
    }
}

/// `mnemon context`: the block for a prompt.
/// The arguments of `mnemon context`.
pub(crate) struct ContextArgs<'a> {
    pub(crate) query: &'a str,
    pub(crate) task: Option<&'a str>,
    pub(crate) agent: Option<&'a str>,
    pub(crate) budget: usize,
    pub(crate) format: &'a str,
    pub(crate) at: crate::cli::AsOfArgs,
}

pub(crate) fn context(cli: &Cli, out: &mut Out, a: ContextArgs<'_>) -> Result<()> {
    use mnemon::ops::BlockFormat;
    let format = match a.format {
        "markdown" | "md" => BlockFormat::Markdown,
        "xml" => BlockFormat::Xml,
        f => return Err(usage(format!("unknown format {f:?} (markdown, xml)"))),
    };
    let session = crate::open::session(cli, open_read(cli)?)?;
    let time = |t: Option<mnemon::Timestamp>| t.map(|t| t.to_rfc3339());
    let b = session.call(mnemon::ops::Context {
        query: a.query.to_string(),
        task: a.task.map(str::to_string),
        agent: a.agent.map(str::to_string),
        budget_tokens: Some(a.budget),
        format: Some(format),
        as_of: time(a.at.as_of),
        known_at: time(a.at.known_at),
        namespace: None,
    })?;
    if out.json {
        out.json_line(&b)?;
    } else {
        out.line(b.context.trim_end())?;
        eprintln!("{} tokens (o200k_base) of {}; {} item(s) left out", b.tokens, a.budget, b.left_out);
    }
    Ok(())
}

/// `mnemon prune`.
pub fn prune(cli: &Cli, out: &mut Out, o: &mnemon::lifecycle::PruneOptions) -> Result<()> {
    let db = open(cli)?;
    let r = db.prune(o)?;
    if out.json {
        out.json_line(&r)?;
    } else {
        let verb = if r.dry_run {
            "would prune"
        } else if r.forgotten {
            "forgot"
        } else {
            "retired"
        };
        out.line(format!(
            "{verb}: {} expired, {} episode(s) past their age, {} over the cap{}",
            r.expired,
            r.episodes_aged,
            r.episodes_capped,
            if r.forgotten || r.dry_run { "" } else { " (still visible to time travel)" }
        ))?;
    }
    Ok(())
}

/// `mnemon import --format mcp-jsonl|markdown`.
pub fn import_other(
    cli: &Cli,
    out: &mut Out,
    file: &std::path::Path,
    format: &str,
    scope: Option<&str>,
) -> Result<()> {
    // Only markdown files go to a scope; the other formats go to --ns.
    let sc = if format == "markdown" { Some(scope_of(cli, scope)?) } else { None };
    if !file.exists() {
        return Err(anyhow::anyhow!("cannot open {}: no such file or directory", file.display()));
    }
    let db = open(cli)?;
    let sum = if format == "crewly" {
        if !file.is_dir() {
            return Err(usage("--format crewly reads a directory (.crewly/knowledge or an agent's folder)"));
        }
        mnemon::importers::import_crewly_dir(&ns_of(&db, cli)?, file)?
    } else if format == "assistant" {
        if !file.is_dir() {
            return Err(usage(
                "--format assistant reads a directory (decisions.json, tasks.json, entities.json, conversations.json)",
            ));
        }
        mnemon::importers::import_assistant_dir(&ns_of(&db, cli)?, file)?
    } else if format == "mcp-jsonl" {
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        mnemon::importers::import_mcp_jsonl(&ns_of(&db, cli)?, &text, &file.display().to_string())?
    } else {
        let sc = sc.ok_or_else(|| usage("--scope is for --format markdown"))?;
        mnemon::importers::import_markdown_path(&db, file, &sc)?
    };
    if out.json {
        out.json_line(&sum)?;
    } else {
        out.line(format!(
            "imported {}, skipped {} already present, {} refused",
            sum.imported,
            sum.skipped,
            sum.errors.len()
        ))?;
    }
    for e in &sum.errors {
        eprintln!("{e}");
    }
    if !sum.errors.is_empty() {
        return Err(anyhow::anyhow!("{} line(s) refused (the rest was imported)", sum.errors.len()));
    }
    Ok(())
}
