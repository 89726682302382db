//! `mnemon-bench retrieval`: how well search finds the turns that answer a question, on long
//! multi-session conversations in the LoCoMo format (Maharana et al., ACL 2024).
//!
//! Each conversation goes into its own namespace, one `message` record per turn: the speaker
//! and the text (with the caption of a shared image, as the dataset gives it) as content, the
//! session's date as valid time, the turn's `dia_id` and speaker as metadata. Every question
//! is then asked through the same search users get (`Ns::search`), and judged by the turns its
//! `evidence` names. Recall@k is the share of a question's evidence turns in its first k
//! results, averaged over questions; MRR the reciprocal rank of the first evidence turn (0
//! past the 20th); nDCG@10 with every evidence turn of gain 1. Every question is also asked
//! of another conversation's namespace, where nothing answers it: the share of those that
//! return anything measures what the relevance floor lets through.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mnemon::body::{Message, Role};
use mnemon::embed::Embedder;
use mnemon::{Db, NewRecord, RecordId, TextMode, Timestamp, WriteOp};
use serde_json::{Value, json};

use crate::report::{Out, progress_bar, table};

/// The dataset's question categories, as numbered in its file.
const CATEGORIES: [(u64, &str); 5] =
    [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop"), (5, "adversarial")];

/// How deep results are read (recall@20, MRR).
const DEPTH: usize = 20;

/// One conversation, loaded.
struct Conversation {
    namespace: String,
    /// `dia_id` -> record.
    turns: BTreeMap<String, RecordId>,
    questions: Vec<Question>,
}

struct Question {
    text: String,
    category: u64,
    evidence: Vec<RecordId>,
}

/// What the benchmark is asked to run.
pub struct Options<'a> {
    pub dataset: &'a Path,
    pub modes: &'a [TextMode],
    pub min_score: Option<f64>,
    pub lexical_share: Option<f64>,
    pub limit_questions: Option<usize>,
    /// Write every question's candidates (both sides' scores, in its own and in another
    /// conversation's namespace) as JSON lines here, to study fusion offline.
    pub dump: Option<&'a Path>,
}

/// A session date as the dataset writes it ("1:56 pm on 8 May, 2023").
fn session_time(s: &str) -> Option<Timestamp> {
    let (time, date) = s.trim().split_once(" on ")?;
    let (hm, ampm) = time.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let (mut h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match ampm.to_ascii_lowercase().as_str() {
        "pm" if h < 12 => h += 12,
        "am" if h == 12 => h = 0,
        "am" | "pm" => {}
        _ => return None,
    }
    // The date by the search's own reading of dates, so that a question naming it means the
    // same day.
    let day = mnemon::when::named_period(date, Timestamp::from_micros(0))?;
    let within = i64::from(h * 60 + m) * 60_000_000;
    (day.until.as_micros() - day.from.as_micros() == 86_400_000_000).then(|| day.from.plus_micros(within))
}

/// Load every conversation of the file into `db`, each into namespace `locomo:<sample id>`.
/// Returns the conversations and the number of evidence ids that name no turn.
fn load(db: &Db, data: &Value, limit_questions: Option<usize>) -> Result<(Vec<Conversation>, usize)> {
    let samples = data.as_array().context("the dataset is not a JSON list of samples")?;
    let mut out = Vec::new();
    let mut dropped = 0;
    for (n, sample) in samples.iter().enumerate() {
        let name = sample["sample_id"].as_str().map_or_else(|| format!("sample-{n}"), str::to_string);
        let namespace = format!("locomo:{name}");
        let ns = db.ns(&namespace)?;
        let conv = &sample["conversation"];
        let mut turns = BTreeMap::new();
        let mut ops = Vec::new();
        for s in 1.. {
            let Some(session) = conv.get(format!("session_{s}")).and_then(Value::as_array) else { break };
            let date = conv[format!("session_{s}_date_time")].as_str().and_then(session_time);
            for turn in session {
                let (Some(id), Some(speaker), Some(text)) =
                    (turn["dia_id"].as_str(), turn["speaker"].as_str(), turn["text"].as_str())
                else {
                    bail!("{name}: session {s} has a turn without dia_id, speaker or text");
                };
                let mut content = format!("{speaker}: {text}");
                if let Some(c) = turn["blip_caption"].as_str().filter(|c| !c.is_empty()) {
                    content.push_str(&format!(" [shares an image: {c}]"));
                }
                let mut r = NewRecord::new(
                    ns.name().clone(),
                    Message { conversation: None, role: Role::User, content },
                );
                r.valid_from = date;
                r.envelope.metadata = json!({"dia_id": id, "speaker": speaker}).into();
                turns.insert(id.to_string(), r.id);
                ops.push(WriteOp::Insert(r));
            }
        }
        for chunk in ops.chunks(1000) {
            db.store().write(chunk.to_vec())?;
        }
        let mut questions = Vec::new();
        for qa in sample["qa"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let (Some(text), Some(category)) = (qa["question"].as_str(), qa["category"].as_u64()) else {
                continue;
            };
            let mut evidence = Vec::new();
            for e in qa["evidence"].as_array().map(Vec::as_slice).unwrap_or_default() {
                // Some entries hold several ids ("D8:6; D9:17").
                for id in e.as_str().unwrap_or_default().split([';', ',']).map(str::trim) {
                    match turns.get(id) {
                        Some(r) if !evidence.contains(r) => evidence.push(*r),
                        Some(_) => {}
                        None => dropped += 1,
                    }
                }
            }
            if !evidence.is_empty() {
                questions.push(Question { text: text.to_string(), category, evidence });
            }
        }
        if let Some(l) = limit_questions {
            questions.truncate(l);
        }
        out.push(Conversation { namespace, turns, questions });
    }
    Ok((out, dropped))
}

/// Quality figures of a set of questions.
#[derive(Default, Clone)]
struct Scores {
    n: usize,
    recall: [f64; 4],
    mrr: f64,
    ndcg: f64,
}

const AT: [usize; 4] = [1, 5, 10, 20];

impl Scores {
    fn add(&mut self, ranked: &[RecordId], evidence: &[RecordId]) {
        self.n += 1;
        let hit = |r: &RecordId| evidence.contains(r);
        for (slot, k) in AT.iter().enumerate() {
            let found = ranked.iter().take(*k).filter(|r| hit(r)).count();
            self.recall[slot] += found as f64 / evidence.len() as f64;
        }
        if let Some(p) = ranked.iter().take(DEPTH).position(hit) {
            self.mrr += 1.0 / (p + 1) as f64;
        }
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, r)| hit(r))
            .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
            .sum();
        let ideal: f64 = (0..evidence.len().min(10)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
        self.ndcg += dcg / ideal;
    }

    fn json(&self) -> Value {
        let n = self.n.max(1) as f64;
        json!({"questions": self.n, "recall_at_1": self.recall[0] / n, "recall_at_5": self.recall[1] / n,
            "recall_at_10": self.recall[2] / n, "recall_at_20": self.recall[3] / n,
            "mrr": self.mrr / n, "ndcg_at_10": self.ndcg / n})
    }

    fn row(&self, mode: &str, what: &str) -> Vec<String> {
        let n = self.n.max(1) as f64;
        let mut row = vec![mode.to_string(), what.to_string(), self.n.to_string()];
        row.extend(self.recall.iter().map(|r| format!("{:.3}", r / n)));
        row.push(format!("{:.3}", self.mrr / n));
        row.push(format!("{:.3}", self.ndcg / n));
        row
    }
}

/// Every question's candidates, as JSON lines: `{"category", "evidence", "own", "other"}`
/// with `[id, bm25, lexical relevance, cosine, valid from]` per candidate (null where a side
/// missed it).
fn dump(db: &Db, convs: &[Conversation], path: &Path) -> Result<()> {
    let mut lines = String::new();
    let candidates = |ns: &str, q: &str| -> Result<Value> {
        let hits =
            db.ns(ns)?.search(q).limit(100).mode(TextMode::Hybrid).min_score(f64::NEG_INFINITY).run()?;
        Ok(hits
            .iter()
            .map(|h| {
                json!([
                    h.record.id.to_string(),
                    h.lexical.map(|l| l.1),
                    h.lexical.map(|l| l.2),
                    h.similarity,
                    h.record.valid_from.to_string()
                ])
            })
            .collect())
    };
    for (ci, c) in convs.iter().enumerate() {
        let other = &convs[(ci + 1) % convs.len()].namespace;
        for q in &c.questions {
            let evidence: Vec<String> = q.evidence.iter().map(ToString::to_string).collect();
            let line = json!({"category": q.category, "question": q.text, "evidence": evidence,
                "own": candidates(&c.namespace, &q.text)?, "other": candidates(other, &q.text)?});
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
    }
    std::fs::write(path, lines).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

pub fn run(out: &mut Out, embedder: Option<Arc<dyn Embedder>>, opts: &Options<'_>) -> Result<()> {
    let raw = std::fs::read(opts.dataset).with_context(|| format!("reading {}", opts.dataset.display()))?;
    let data: Value =
        serde_json::from_slice(&raw).with_context(|| format!("{} is not JSON", opts.dataset.display()))?;
    let dir = tempfile::tempdir()?;
    let mut builder = Db::builder(dir.path().join("retrieval.redb")).create(true);
    if let Some(e) = embedder {
        builder = builder.embedder(e);
    }
    let db = builder.open()?;
    let t = Instant::now();
    let (convs, dropped) = load(&db, &data, opts.limit_questions)?;
    let turns: usize = convs.iter().map(|c| c.turns.len()).sum();
    let bar = progress_bar(turns as u64, "embedding", out.json);
    let stats = db.reindex(None, 64, |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    if stats.failures > 0 {
        bail!("{} turns could not be embedded", stats.failures);
    }
    let load_secs = t.elapsed().as_secs_f64();
    let questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    if let Some(path) = opts.dump {
        dump(&db, &convs, path)?;
    }
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut docs = Vec::new();
    for &mode in opts.modes {
        let name = format!("{mode:?}").to_lowercase();
        let mut all = Scores::default();
        let mut by_cat: BTreeMap<u64, Scores> = BTreeMap::new();
        let mut lat = Vec::with_capacity(questions);
        let (mut foreign, mut foreign_answered) = (0usize, 0usize);
        for (ci, c) in convs.iter().enumerate() {
            let ns = db.ns(&c.namespace)?;
            // Another conversation: none of its turns answers this one's questions.
            let other = (convs.len() > 1).then(|| &convs[(ci + 1) % convs.len()].namespace);
            for q in &c.questions {
                let search = |ns: &mnemon::Ns| {
                    let mut s = ns.search(&q.text).limit(DEPTH).mode(mode);
                    if let Some(m) = opts.min_score {
                        s = s.min_score(m);
                    }
                    if let Some(x) = opts.lexical_share {
                        s = s.lexical_share(x);
                    }
                    s.run()
                };
                let s = Instant::now();
                let hits = search(&ns)?;
                lat.push(s.elapsed());
                let ranked: Vec<RecordId> = hits.iter().map(|h| h.record.id).collect();
                all.add(&ranked, &q.evidence);
                by_cat.entry(q.category).or_default().add(&ranked, &q.evidence);
                if let Some(o) = other {
                    foreign += 1;
                    foreign_answered += usize::from(!search(&db.ns(o)?)?.is_empty());
                }
            }
        }
        lat.sort();
        let (p50, p99) = (percentile_us(&lat, 0.5), percentile_us(&lat, 0.99));
        let foreign_share = foreign_answered as f64 / foreign.max(1) as f64;
        rows.push(all.row(&name, "all"));
        for (cat, label) in CATEGORIES {
            if let Some(s) = by_cat.get(&cat) {
                rows.push(s.row(&name, label));
            }
        }
        let mut cats = serde_json::Map::new();
        for (cat, label) in CATEGORIES {
            if let Some(s) = by_cat.get(&cat) {
                cats.insert(label.to_string(), s.json());
            }
        }
        docs.push(json!({"mode": name, "overall": all.json(), "categories": cats, "p50_us": p50,
            "p99_us": p99, "foreign_questions": foreign, "foreign_answered_share": foreign_share}));
        notes.push(format!(
            "{name}: query p50 {p50:.0} µs, p99 {p99:.0} µs; asked of another conversation, {:.1} % of \
             questions got results",
            foreign_share * 100.0
        ));
    }
    if out.json {
        out.json_line(&json!({"dataset": opts.dataset.display().to_string(), "conversations": convs.len(),
            "turns": turns, "questions": questions, "evidence_dropped": dropped,
            "embedder": db.embedder().model_id(), "load_secs": load_secs, "min_score": opts.min_score,
            "modes": docs}))?;
        return Ok(());
    }
    out.line(format!(
        "{} conversations, {turns} turns loaded and embedded in {load_secs:.1} s ({}); {questions} questions \
         ({dropped} evidence ids name no turn and are dropped)",
        convs.len(),
        db.embedder().model_id(),
    ))?;
    out.line(table(
        &["mode", "category", "questions", "R@1", "R@5", "R@10", "R@20", "MRR", "nDCG@10"],
        &rows,
    ))?;
    for n in notes {
        out.line(n)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_dates_parse() {
        let t = session_time("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t, Timestamp::parse("2023-05-08T13:56:00Z").unwrap());
        let t = session_time("12:09 am on 13 September, 2023").unwrap();
        assert_eq!(t, Timestamp::parse("2023-09-13T00:09:00Z").unwrap());
        assert!(session_time("soon").is_none());
    }
}
