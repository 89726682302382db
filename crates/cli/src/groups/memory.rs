//! `mnemon memory ...`: scoped memory (global, project and agent sections, briefs).

use anyhow::Result;
use mnemon::Record;
use mnemon::json::RecordView;
use mnemon::ops;
use serde_json::json;

use super::{report, session_for, show_id};
use crate::cli::Cli;
use crate::cli::domain::*;
use crate::open::{check_id_form, usage};
use crate::output::{Out, table};

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
