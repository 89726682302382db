//! `mnemon task|decision|entity|conversation ...`: the working state of a project.

use anyhow::Result;
use mnemon::Record;
use mnemon::json::RecordView;
use mnemon::ops;
use serde_json::{Value, json};

use super::{current, entries, one, session_for, show_id};
use crate::cli::Cli;
use crate::cli::domain::*;
use crate::open::{check_id_form, usage};
use crate::output::{Out, chain_table, record_detail, short, table};
use mnemon::body::DecisionStatus;

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
            let now = session.now();
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
