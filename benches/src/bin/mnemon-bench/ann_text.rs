//! `mnemon-bench ann-text`: a data set of real text embeddings for the vector graph.
//!
//! The texts are the paragraphs of documentation in the sources of the crates a lock file
//! names, as cargo leaves them in its registry (`~/.cargo/registry/src`): each run of `///`
//! or `//!` lines in `.rs` files and each paragraph of `.md` files, of 6 to 80 words, kept
//! once. They are ordered by the BLAKE3 hash of their text (a shuffle that depends on nothing
//! else), the first `queries` held out as queries and the next `n` kept as the base, then
//! embedded by the chosen embedder and written in the TEXMEX format with the exact cosine
//! top-`gt_k` of each query. The same lock file, registry and embedder give the same files.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use mnemon::embed::Embedder;
use mnemon::index::exact::scan_all;
use rayon::prelude::*;
use serde_json::json;

use crate::fvecs::{encode_fvecs, encode_ivecs};
use crate::report::{Out, usage};

/// Words a paragraph must have at least, and at most.
const WORDS: std::ops::RangeInclusive<usize> = 6..=80;

/// The crates `name-version` a lock file names from a registry.
fn locked_crates(lock: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(lock).with_context(|| format!("cannot read {}", lock.display()))?;
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    let mut version: Option<String> = None;
    let mut registry = false;
    let mut flush = |name: &mut Option<String>, version: &mut Option<String>, registry: &mut bool| {
        if let (Some(n), Some(v)) = (name.take(), version.take())
            && *registry
        {
            out.push(format!("{n}-{v}"));
        }
        *registry = false;
    };
    for line in text.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            flush(&mut name, &mut version, &mut registry);
        } else if let Some(v) = line.strip_prefix("name = ") {
            name = Some(v.trim_matches('"').to_string());
        } else if let Some(v) = line.strip_prefix("version = ") {
            version = Some(v.trim_matches('"').to_string());
        } else if line.starts_with("source = \"registry+") {
            registry = true;
        }
    }
    flush(&mut name, &mut version, &mut registry);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Every file under `dir` (sorted), depth first.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The documentation paragraphs of a source file: runs of `///`/`//!` lines (`.rs`) or
/// blank-line separated paragraphs outside code fences (`.md`), one line each.
fn paragraphs(path: &Path, text: &str, out: &mut Vec<String>) {
    let rust = path.extension().is_some_and(|e| e == "rs");
    let mut cur: Vec<&str> = Vec::new();
    let mut fence = false;
    let mut push = |cur: &mut Vec<&str>| {
        let joined = cur.join(" ");
        let words = joined.split_whitespace().count();
        if WORDS.contains(&words) && joined.chars().any(char::is_alphabetic) {
            out.push(joined.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        cur.clear();
    };
    for line in text.lines() {
        let t = line.trim();
        let body = if rust {
            t.strip_prefix("///").or_else(|| t.strip_prefix("//!")).map(str::trim)
        } else {
            Some(t)
        };
        match body {
            Some(b) if b.starts_with("```") => {
                push(&mut cur);
                fence = !fence;
            }
            Some(_) if fence => {}
            Some(b) if b.is_empty() || b.starts_with('#') || b.starts_with('|') => push(&mut cur),
            Some(b) => cur.push(b),
            None => {
                push(&mut cur);
                fence = false;
            }
        }
    }
    push(&mut cur);
}

/// The corpus: every distinct paragraph of the locked crates' sources, ordered by the hash
/// of its text.
fn corpus(sources: &Path, lock: &Path) -> Result<Vec<String>> {
    let crates = locked_crates(lock)?;
    let mut files = Vec::new();
    let mut found = 0;
    for registry in std::fs::read_dir(sources)
        .with_context(|| format!("cannot read {}", sources.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
    {
        for c in &crates {
            let dir = registry.join(c);
            if dir.is_dir() {
                found += 1;
                files_under(&dir, &mut files);
            }
        }
    }
    if found == 0 {
        bail!(usage(format!(
            "none of the {} crates of {} is under {} (run a cargo build first)",
            crates.len(),
            lock.display(),
            sources.display()
        )));
    }
    files.retain(|f| f.extension().is_some_and(|e| e == "rs" || e == "md"));
    let mut texts = Vec::new();
    for f in &files {
        if let Ok(text) = std::fs::read_to_string(f) {
            paragraphs(f, &text, &mut texts);
        }
    }
    let mut seen = HashSet::new();
    texts.retain(|t| seen.insert(t.clone()));
    let mut keyed: Vec<([u8; 32], String)> =
        texts.into_iter().map(|t| (*blake3::hash(t.as_bytes()).as_bytes(), t)).collect();
    keyed.sort();
    Ok(keyed.into_iter().map(|(_, t)| t).collect())
}

fn embed_all(embedder: &dyn Embedder, texts: &[String], what: &str) -> Result<Vec<Vec<f32>>> {
    let bar = indicatif::ProgressBar::new(texts.len() as u64).with_message(what.to_string());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} {per_sec} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        out.extend(embedder.embed(&refs).context("embedding failed")?);
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Build the set (see the module documentation).
#[allow(clippy::too_many_arguments)]
pub fn ann_text(
    out: &mut Out,
    embedder: &dyn Embedder,
    dir: &Path,
    sources: &Path,
    lock: &Path,
    n: usize,
    nq: usize,
    gt_k: usize,
) -> Result<()> {
    if n == 0 || nq == 0 || gt_k == 0 {
        bail!(usage("--n, --queries and --gt-k must be positive"));
    }
    let texts = corpus(sources, lock)?;
    if texts.len() < n + nq {
        bail!(usage(format!(
            "the sources hold {} distinct paragraphs, fewer than the {} asked for",
            texts.len(),
            n + nq
        )));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (queries, base) = texts.split_at(nq);
    let base = &base[..n];
    let t = Instant::now();
    let q = embed_all(embedder, queries, "queries")?;
    let b = embed_all(embedder, base, "base")?;
    let secs = t.elapsed().as_secs_f64();
    let dim = b.first().map_or(0, Vec::len);
    let flat: Vec<f32> = b.iter().flat_map(|v| mnemon::normalise(v).unwrap_or_default()).collect();
    if flat.len() != n * dim {
        bail!("the embedder returned vectors of differing dimensions or zero vectors");
    }
    let gt: Vec<Vec<i32>> = q
        .par_iter()
        .map(|v| {
            let v = mnemon::normalise(v).unwrap_or_default();
            scan_all(&flat, dim, &v, gt_k, &|_| true)
                .iter()
                .map(|s| i32::try_from(s.point).unwrap_or(-1))
                .collect()
        })
        .collect();
    let texts_out: String = queries.iter().chain(base).map(|t| format!("{t}\n")).collect();
    for (name, bytes) in [
        ("base.fvecs", encode_fvecs(&b)),
        ("queries.fvecs", encode_fvecs(&q)),
        ("gt.ivecs", encode_ivecs(&gt)),
        ("texts.txt", texts_out.into_bytes()),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if out.json {
        out.json_line(&json!({"dir": dir, "base": n, "queries": nq, "dim": dim, "gt_k": gt_k,
            "paragraphs": texts.len(), "embed_secs": secs}))?;
    } else {
        out.line(format!(
            "wrote {n} base and {nq} query embeddings of dimension {dim} (of {} distinct paragraphs; embedded in {secs:.0} s) with their exact cosine top-{gt_k} to {} (texts.txt: queries first)",
            texts.len(),
            dir.display()
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_of_rust_and_markdown() {
        let rs = "/// One two three four five six.\n/// Seven.\nfn x() {}\n//! ```\n//! code code code code code code\n//! ```\n/// short\n";
        let mut out = Vec::new();
        paragraphs(Path::new("a.rs"), rs, &mut out);
        assert_eq!(out, vec!["One two three four five six. Seven.".to_string()]);
        let md = "# Title\nalpha beta gamma delta epsilon zeta\neta\n\n```\nnot this one at all no never\n```\n| a | b | c | d | e | f |\n";
        let mut out = Vec::new();
        paragraphs(Path::new("R.md"), md, &mut out);
        assert_eq!(out, vec!["alpha beta gamma delta epsilon zeta eta".to_string()]);
    }

    #[test]
    fn lock_files_name_registry_crates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("Cargo.lock");
        std::fs::write(
            &p,
            "[[package]]\nname = \"a\"\nversion = \"1.0.0\"\nsource = \"registry+https://x\"\n\n[[package]]\nname = \"local\"\nversion = \"0.1.0\"\n",
        )
        .unwrap();
        assert_eq!(locked_crates(&p).unwrap(), vec!["a-1.0.0".to_string()]);
    }
}
