//! `mnemon vector ...` and `mnemon index ...`.

use anyhow::Result;
use mnemon::json::RecordView;
use serde_json::json;

use crate::cli::{Cli, IndexCmd, VectorCmd};
use crate::open::{check_id_form, connect, read_json, usage};
use crate::output::{Out, cut, print_written, short, table};

/// Parse a JSON array of numbers (NaN and infinities cannot be written in JSON; the storage
/// layer refuses zero vectors and wrong dimensions).
fn parse_vector(arg: &str) -> Result<Vec<f32>> {
    let v = read_json(arg, "--vector")?;
    let arr = v.as_array().ok_or_else(|| usage("--vector must be a JSON array of numbers"))?;
    arr.iter()
        .enumerate()
        .map(|(i, x)| {
            #[allow(clippy::cast_possible_truncation)]
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| usage(format!("--vector component {i} is not a number: {x}")))
        })
        .collect()
}

pub fn run_vector(cli: &Cli, out: &mut Out, cmd: &VectorCmd) -> Result<()> {
    match cmd {
        VectorCmd::Put { id, space, vector } => {
            let v = parse_vector(vector)?;
            check_id_form(id)?;
            let session = connect(cli, true)?;
            let w = session.call(mnemon::ops::VectorPut {
                id: id.clone(),
                space: space.clone(),
                vector: v,
                namespace: None,
            })?;
            print_written(out, &w, true)
        }
        VectorCmd::Search { space, vector, k, kinds, tags, as_of, mode, ef, explain } => {
            let v = parse_vector(vector)?;
            let q = mnemon::ops::VectorSearch {
                space: space.clone(),
                vector: v,
                k: Some(*k),
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
                tags: tags.clone(),
                as_of: crate::search::rfc3339(as_of.as_of),
                known_at: crate::search::rfc3339(as_of.known_at),
                mode: Some(match mode {
                    mnemon::SearchMode::Auto => mnemon::ops::VectorMode::Auto,
                    mnemon::SearchMode::Exact => mnemon::ops::VectorMode::Exact,
                    mnemon::SearchMode::Graph => mnemon::ops::VectorMode::Graph,
                }),
                ef: *ef,
                namespace: None,
            };
            let found = connect(cli, false)?.call(q)?;
            show_nearest(cli, out, space, *k, found, *explain)
        }
    }
}

/// A vector search's answer, and with `explain` how the planner found it.
fn show_nearest(
    cli: &Cli,
    out: &mut Out,
    space: &str,
    k: usize,
    found: mnemon::ops::Nearest,
    explain: bool,
) -> Result<()> {
    let plan = found.plan.as_ref().ok_or_else(|| anyhow::anyhow!("the search gave no plan"))?;
    let plan_json = json!({
        "path": plan.path.to_string(),
        "first": plan.first.map(|p| p.to_string()),
        "candidates": plan.candidates,
        "graph_points": plan.graph_points,
        "unindexed": plan.unindexed,
        "selectivity": plan.selectivity,
        "ef": plan.ef,
        "rejected": plan.rejected,
    });
    if out.json {
        let hits: Vec<_> = found
            .hits
            .iter()
            .map(|h| json!({"score": h.score, "record": RecordView::new(&h.record.record, h.record.at)}))
            .collect();
        let mut doc = json!({ "hits": hits });
        if explain {
            doc["plan"] = plan_json;
        }
        out.json_line(&doc)?;
        return Ok(());
    }
    if found.hits.is_empty() {
        out.line(format!("no vectors in space {space:?} match in namespace {}", cli.ns))?;
    } else {
        let rows: Vec<Vec<String>> = found
            .hits
            .iter()
            .map(|h| {
                let r = &h.record.record;
                vec![
                    format!("{:.4}", h.score),
                    short(r.id),
                    r.kind().to_string(),
                    cut(&crate::output::state(r), 24),
                    cut(&r.body.title(), 60),
                ]
            })
            .collect();
        out.line(table(&["SCORE", "ID", "KIND", "STATE", "RECORD"], &rows))?;
    }
    if explain {
        let fallback = plan.first.map(|p| format!(", after {p} found fewer than {k}")).unwrap_or_default();
        out.line(format!(
            "(answered by the {} path{fallback}: {} candidate(s), graph of {} point(s), {} newer scanned exactly, selectivity {:.3}, ef {}, {} stale hit(s) dropped)",
            plan.path, plan.candidates, plan.graph_points, plan.unindexed, plan.selectivity, plan.ef, plan.rejected
        ))?;
    }
    Ok(())
}

pub fn run_index(cli: &Cli, out: &mut Out, cmd: &IndexCmd) -> Result<()> {
    match cmd {
        IndexCmd::Status => {
            let status = connect(cli, false)?.call(mnemon::ops::IndexStatus {})?.segments;
            if out.json {
                for s in &status {
                    out.json_line(&json!({
                        "space": s.space, "namespace": s.namespace, "dimension": s.dimension,
                        "vectors": s.vectors, "live": s.live, "graph_points": s.graph_points,
                        "tombstones": s.tombstones, "unindexed": s.unindexed, "generation": s.generation,
                        "covered_seq": s.covered_seq, "load_note": s.load_note,
                    }))?;
                }
                return Ok(());
            }
            if status.is_empty() {
                out.line("no vectors stored")?;
                return Ok(());
            }
            let rows: Vec<Vec<String>> = status
                .iter()
                .map(|s| {
                    vec![
                        s.space.clone(),
                        s.namespace.clone(),
                        s.dimension.to_string(),
                        s.vectors.to_string(),
                        s.live.to_string(),
                        s.graph_points.to_string(),
                        s.tombstones.to_string(),
                        s.unindexed.to_string(),
                        s.generation.to_string(),
                        s.load_note.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            out.line(table(
                &["space", "namespace", "dim", "vectors", "live", "graph", "dead", "newer", "gen", "note"],
                &rows,
            ))
            .map_err(Into::into)
        }
        IndexCmd::Build { space } => {
            let build = mnemon::ops::IndexBuild { space: space.clone(), namespace: None };
            let r = connect(cli, true)?.call(build)?;
            if out.json {
                out.json_line(&json!({"space": r.space, "namespace": r.namespace, "graph_points": r.graph_points, "generation": r.generation}))?;
            } else {
                out.line(format!(
                    "built the {} index of namespace {}: {} point(s), published as generation {}",
                    r.space,
                    r.namespace,
                    r.graph_points,
                    r.generation.map_or_else(|| "-".into(), |g| g.to_string())
                ))?;
            }
            Ok(())
        }
    }
}
