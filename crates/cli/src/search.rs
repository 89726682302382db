//! `mnemon search` (one query, or a batch file) and `mnemon reindex`.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result};
use mnemon::json::RecordView;
use mnemon::{Kind, SearchHit, TextMode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::Cli;
use crate::open::{open, open_read, usage};
use crate::output::{Out, hits_table};

pub struct Filter {
    /// Which records, as of when (the storage's listing filter).
    pub records: mnemon::ListQuery,
    /// Search these namespaces too.
    pub also: Vec<String>,
    /// Leave out results scoring below this, instead of the default relevance rule.
    pub min_score: Option<f64>,
}

fn search(
    db: &mnemon::Db,
    ns: &str,
    query: &str,
    f: &Filter,
    limit: usize,
    mode: TextMode,
) -> mnemon::Result<Vec<SearchHit>> {
    let ns = db.ns(ns)?;
    let mut s = ns.search(query).limit(limit).mode(mode).filter(f.records.clone());
    for n in &f.also {
        s = s.also_in(n.clone());
    }
    if let Some(m) = f.min_score {
        s = s.min_score(m);
    }
    s.run()
}

fn hit_json(h: &SearchHit, at: mnemon::Timestamp) -> Value {
    let view = serde_json::to_value(RecordView::new(&h.record, at)).unwrap_or(Value::Null);
    json!({
        "id": h.record.id,
        "namespace": h.record.namespace.as_str(),
        "score": h.score,
        "kind": h.record.kind().to_string(),
        "text": h.record.body.text(),
        "metadata": h.record.envelope.metadata.value(),
        "lexical_rank": h.lexical.map(|l| l.0),
        "vector_rank": h.vector.map(|v| v.0),
        "similarity": h.similarity,
        "record": view,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchLine {
    #[serde(default)]
    namespace: Option<String>,
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    min_score: Option<f64>,
}

pub fn run(
    cli: &Cli,
    out: &mut Out,
    query: Option<&str>,
    f: &Filter,
    limit: usize,
    mode: TextMode,
    batch: Option<&Path>,
) -> Result<()> {
    let db = open_read(cli)?;
    let at = f.records.as_of.valid.unwrap_or_else(|| db.now());
    if let Some(path) = batch {
        if query.is_some() {
            return Err(usage("give either a query or --batch, not both"));
        }
        let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        for line in std::io::BufReader::new(file).lines() {
            let line = line.with_context(|| format!("cannot read {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let doc = match serde_json::from_str::<BatchLine>(&line) {
                Err(e) => json!({"error": format!("invalid query line: {e}")}),
                Ok(b) => {
                    let kinds: Result<Vec<Kind>, String> =
                        b.kinds.iter().map(|k| k.parse::<Kind>().map_err(|e| e.to_string())).collect();
                    let m: Result<TextMode, String> = b.mode.as_deref().map_or(Ok(mode), str::parse);
                    match (kinds, m) {
                        (Err(e), _) | (_, Err(e)) => json!({"error": e}),
                        (Ok(kinds), Ok(m)) => {
                            let filter = Filter {
                                records: mnemon::ListQuery { kinds, ..f.records.clone() },
                                also: f.also.clone(),
                                min_score: b.min_score.or(f.min_score),
                            };
                            let ns = b.namespace.unwrap_or_else(|| cli.ns.clone());
                            match search(&db, &ns, &b.query, &filter, b.limit.unwrap_or(limit), m) {
                                Ok(hits) => {
                                    json!({"results": hits.iter().map(|h| hit_json(h, at)).collect::<Vec<_>>()})
                                }
                                Err(e) => json!({"error": e.to_string()}),
                            }
                        }
                    }
                }
            };
            out.json_line(&doc)?;
        }
        return Ok(());
    }
    let query = query.ok_or_else(|| usage("give a query, or --batch FILE"))?;
    let hits = search(&db, &cli.ns, query, f, limit, mode)?;
    if hits.is_empty()
        && let Some(note) = crate::open::empty_namespace_note(&db, &cli.ns)?
    {
        eprintln!("{note}");
    }
    if out.json {
        for h in &hits {
            out.json_line(&hit_json(h, at))?;
        }
        return Ok(());
    }
    if hits.is_empty() {
        out.line(format!("nothing matches {query:?} in namespace {}", cli.ns))?;
        return Ok(());
    }
    out.line(hits_table(&hits))?;
    Ok(())
}

pub fn reindex(cli: &Cli, out: &mut Out, only: Option<&str>, batch: usize) -> Result<()> {
    let db = if cli.embedder.is_some() {
        crate::open::with_embedder(cli, mnemon::Db::builder(&cli.db).shared(true).reembed(true))?.open()?
    } else {
        open(cli)?
    };
    let bar = indicatif::ProgressBar::hidden();
    let mut shown = false;
    let stats = db.reindex(only, batch, |done, total| {
        if !shown && total > 1_000 && !out.json {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.set_length(total as u64);
            shown = true;
        }
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let model = db.embedder().model_id().to_string();
    if out.json {
        out.json_line(&json!({"embedder": model, "embedded": stats.misses, "from_cache": stats.hits, "failed": stats.failures}))?;
    } else {
        out.line(format!(
            "reindexed with {model}: {} embedded, {} from the cache, {} failed",
            stats.misses, stats.hits, stats.failures
        ))?;
    }
    Ok(())
}
