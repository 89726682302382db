//! `mnemon search` (one query, or a batch file), `mnemon context` and `mnemon reindex`.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result};
use mnemon::ops::{Hit, Recall};
use mnemon::{TextMode, Timestamp};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::Cli;
use crate::open::{open, usage};
use crate::output::{Out, hits_table};

/// One search's JSON line: the match's identity, score and how it was found, then the whole
/// record as every listing gives it.
fn hit_json(h: &Hit) -> Value {
    let r = &h.record.record;
    let x = h.explain;
    json!({
        "id": r.id,
        "namespace": r.namespace.as_str(),
        "score": h.score,
        "kind": r.kind().to_string(),
        "text": r.body.text(),
        "metadata": r.envelope.metadata.value(),
        "lexical_rank": x.and_then(|x| x.lexical_rank),
        "vector_rank": x.and_then(|x| x.vector_rank),
        "similarity": x.and_then(|x| x.similarity),
        "record": mnemon::json::RecordView::new(r, h.record.at),
    })
}

/// A line of a `--batch` file: a query and what it changes of the command line's request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchLine {
    #[serde(default)]
    namespace: Option<String>,
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    kinds: Option<Vec<String>>,
    #[serde(default)]
    mode: Option<TextMode>,
    #[serde(default)]
    min_score: Option<f64>,
}

impl BatchLine {
    fn request(self, base: &Recall) -> Recall {
        Recall {
            query: self.query,
            namespace: self.namespace.or_else(|| base.namespace.clone()),
            limit: self.limit.or(base.limit),
            kinds: self.kinds.unwrap_or_else(|| base.kinds.clone()),
            mode: self.mode.or(base.mode),
            min_score: self.min_score.or(base.min_score),
            ..base.clone()
        }
    }
}

/// `mnemon search`: one query through the `recall` operation (`req` with `query`), or each line of a batch file, every one at the same valid and transaction
/// time.
pub fn run(
    cli: &Cli,
    out: &mut Out,
    query: Option<String>,
    mut req: Recall,
    batch: Option<&Path>,
) -> Result<()> {
    let session = crate::open::connect(cli, false)?;
    // Every query of a batch at the same valid and transaction time (a server's: its own now
    // for each query, as its clock may differ from this machine's).
    if let Some(db) = session.db() {
        let now = db.now();
        req.as_of = Some(req.as_of.take().unwrap_or_else(|| now.to_rfc3339()));
        req.known_at = Some(req.known_at.take().unwrap_or_else(|| now.to_rfc3339()));
    }
    req.explain = true;
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
                Ok(b) => match session.call(b.request(&req)) {
                    Ok(found) => json!({"results": found.hits.iter().map(hit_json).collect::<Vec<_>>()}),
                    Err(e) => json!({"error": e.to_string()}),
                },
            };
            out.json_line(&doc)?;
        }
        return Ok(());
    }
    let query = query.ok_or_else(|| usage("give a query, or --batch FILE"))?;
    req.query = query.clone();
    let hits = session.call(req)?.hits;
    if hits.is_empty()
        && let Some(note) = crate::open::empty_namespace_note(&session, &cli.ns)?
    {
        eprintln!("{note}");
    }
    if out.json {
        for h in &hits {
            out.json_line(&hit_json(h))?;
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

/// A time as requests carry it.
pub(crate) fn rfc3339(t: Option<Timestamp>) -> Option<String> {
    t.map(|t| t.to_rfc3339())
}

pub fn reindex(cli: &Cli, out: &mut Out, only: Option<&str>, batch: usize) -> Result<()> {
    if cli.server.is_some() {
        let conn = crate::open::connect(cli, true)?;
        let r =
            conn.call(mnemon::ops::Reindex { namespace: only.map(str::to_string), batch: Some(batch) })?;
        return print_reindexed(out, &r.embedder, &r.stats);
    }
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
    print_reindexed(out, &model, &stats)
}

fn print_reindexed(out: &mut Out, model: &str, stats: &mnemon::EmbedStats) -> Result<()> {
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

/// `mnemon context`: the block for a prompt.
/// The arguments of `mnemon context`.
pub(crate) struct ContextArgs<'a> {
    pub(crate) query: &'a str,
    pub(crate) task: Option<&'a str>,
    pub(crate) agent: Option<&'a str>,
    pub(crate) budget: usize,
    pub(crate) format: &'a str,
    pub(crate) at: crate::cli::AsOfArgs,
    pub(crate) where_: Option<serde_json::Value>,
}

pub(crate) fn context(cli: &Cli, out: &mut Out, a: ContextArgs<'_>) -> Result<()> {
    use mnemon::ops::BlockFormat;
    let format = match a.format {
        "markdown" | "md" => BlockFormat::Markdown,
        "xml" => BlockFormat::Xml,
        f => return Err(usage(format!("unknown format {f:?} (markdown, xml)"))),
    };
    let session = crate::open::connect(cli, false)?;
    let time = |t: Option<mnemon::Timestamp>| t.map(|t| t.to_rfc3339());
    let b = session.call(mnemon::ops::Context {
        query: a.query.to_string(),
        task: a.task.map(str::to_string),
        agent: a.agent.map(str::to_string),
        budget_tokens: Some(a.budget),
        format: Some(format),
        as_of: time(a.at.as_of),
        known_at: time(a.at.known_at),
        where_: a.where_,
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
