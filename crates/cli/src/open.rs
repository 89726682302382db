//! What every command shares: opening the database (with its embedder), the namespace and
//! the ids named on the command line, JSON arguments, usage errors and progress bars.

use std::io::Read;

use anyhow::{Context, Result};
use mnemon::{Db, Namespace, Ns, RecordId};
use serde_json::Value;

use crate::UsageError;
use crate::cli::Cli;

pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// Read `--data`: literal JSON, `-` for standard input, `@FILE` for a file.
pub(crate) fn read_data(data: &str) -> Result<Value> {
    read_json(data, "--data")
}

/// Read a JSON argument: literal JSON, `-` for standard input, `@FILE` for a file.
pub(crate) fn read_json(data: &str, flag: &str) -> Result<Value> {
    let text = if data == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read standard input")?;
        s
    } else if let Some(path) = data.strip_prefix('@') {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?
    } else {
        data.to_string()
    };
    serde_json::from_str(&text).map_err(|e| usage(format!("{flag} is not valid JSON: {e}")))
}

/// A full id, or a unique suffix of one (at least 6 hex digits) in the namespace.
pub(crate) fn resolve_id(db: &Db, ns: &Namespace, s: &str) -> Result<RecordId> {
    Ok(db.ns(ns.as_str())?.resolve_id(s)?)
}

/// Check the id's form, open the database for writing, and resolve the id in the namespace.
pub(crate) fn open_with_id(cli: &Cli, id: &str) -> Result<(Db, Ns, RecordId)> {
    check_id_form(id)?;
    let db = open(cli)?;
    let id = resolve_id(&db, &namespace(cli)?, id)?;
    let ns = ns_handle(&db, cli)?;
    Ok((db, ns, id))
}

/// Validate an id argument's form before opening anything (the facade's rule).
pub(crate) fn check_id_form(s: &str) -> Result<()> {
    Ok(mnemon::check_id_form(s)?)
}

pub(crate) fn open(cli: &Cli) -> Result<Db> {
    Ok(with_embedder(cli, Db::builder(&cli.db).shared(true))?.open()?)
}

/// A session in `--ns` over `db`: how commands run operations. It reaches every namespace:
/// whoever runs the command line has the file.
pub(crate) fn session(cli: &Cli, db: Db) -> Result<mnemon::ops::Session> {
    Ok(mnemon::ops::Session::new(db, &cli.ns)?.allow("*"))
}

/// Open for reading: several readers (other `mnemon` calls) may share the file.
pub(crate) fn open_read(cli: &Cli) -> Result<Db> {
    Ok(with_embedder(cli, Db::builder(&cli.db).shared(true).read_only(true))?.open()?)
}

/// The embedder asked for with `--embedder` (else the database's recorded one).
pub(crate) fn with_embedder(cli: &Cli, b: mnemon::DbBuilder) -> Result<mnemon::DbBuilder> {
    Ok(match cli.embedder.as_deref() {
        Some(name) => b.embedder(embedder_named(Some(name))?),
        None => b,
    })
}

/// A progress bar on stderr for `len` steps (hidden for `--json` runs).
pub(crate) fn progress_bar(len: u64, what: &str, hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} [{{bar:40}}] {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// The embedder `--embedder` names, built (the hashing default when none is named).
pub(crate) fn embedder_named(name: Option<&str>) -> Result<std::sync::Arc<dyn mnemon::embed::Embedder>> {
    Ok(match name {
        Some("http") => {
            std::sync::Arc::new(mnemon::embed::HttpEmbedder::new(mnemon::embed::HttpConfig::from_env())?)
        }
        Some(m) if m == "minilm" || m.starts_with("minilm:") => local_minilm(m)?,
        _ => std::sync::Arc::new(mnemon::embed::HashEmbedder::default()),
    })
}

/// `minilm[:DIR]`: the local all-MiniLM-L6-v2 from DIR (else its default directory).
#[cfg(feature = "local-minilm")]
pub(crate) fn local_minilm(spec: &str) -> Result<std::sync::Arc<dyn mnemon::embed::Embedder>> {
    use mnemon::embed::LocalMiniLm;
    let dir = spec.strip_prefix("minilm:").map_or_else(LocalMiniLm::default_dir, std::path::PathBuf::from);
    Ok(std::sync::Arc::new(LocalMiniLm::open(dir)?))
}

/// The embedder of a new database: the local model if it is installed, else (`Err`) the
/// one-line note saying that the hashing embedder is used and how to install the model.
pub(crate) type Embedder = std::sync::Arc<dyn mnemon::embed::Embedder>;

#[cfg(feature = "local-minilm")]
pub(crate) fn default_local() -> Result<std::result::Result<Embedder, String>> {
    let dir = mnemon::embed::LocalMiniLm::default_dir();
    if !dir.join("model.safetensors").is_file() {
        return Ok(Err(format!(
            "no local embedding model in {}: using the offline hashing embedder (words, not \
             meaning); install the model with scripts/fetch-minilm.sh, then run `mnemon --embedder \
             local reindex`",
            dir.display()
        )));
    }
    Ok(Ok(std::sync::Arc::new(mnemon::embed::LocalMiniLm::open(dir)?)))
}

/// Without the feature: the hashing embedder, with a note.
#[cfg(not(feature = "local-minilm"))]
pub(crate) fn default_local() -> Result<std::result::Result<Embedder, String>> {
    Ok(Err("this mnemon was built without the local embedder: using the offline hashing embedder \
            (words, not meaning)"
        .to_string()))
}

/// Without the feature: a clear error.
#[cfg(not(feature = "local-minilm"))]
pub(crate) fn local_minilm(_spec: &str) -> Result<std::sync::Arc<dyn mnemon::embed::Embedder>> {
    Err(usage(
        "this mnemon was built without the local MiniLM embedder: build it with \
         `cargo build --release -p mnemon-cli --features local-minilm` and fetch the model \
         with scripts/fetch-minilm.sh",
    ))
}

pub(crate) fn namespace(cli: &Cli) -> Result<Namespace> {
    Ok(Namespace::new(cli.ns.as_str())?)
}

pub(crate) fn ns_handle(db: &Db, cli: &Cli) -> Result<Ns> {
    Ok(db.ns(&cli.ns)?)
}

/// When `ns` was never written to, a note saying so, with the namespaces that are there and
/// the nearest ones (a mistyped name otherwise gives an empty answer and no clue). Printed on
/// standard error beside an empty result.
pub(crate) fn empty_namespace_note(db: &Db, ns: &str) -> Result<Option<String>> {
    let names: Vec<String> = db.snapshot()?.namespaces()?.iter().map(|n| n.as_str().to_string()).collect();
    if names.iter().any(|n| n == ns) {
        return Ok(None);
    }
    let mut near: Vec<(usize, &String)> = names
        .iter()
        .map(|n| (edit_distance(&n.to_lowercase(), &ns.to_lowercase()), n))
        .filter(|(d, n)| *d <= 2 + ns.chars().count() / 4 || n.contains(ns) || ns.contains(n.as_str()))
        .collect();
    near.sort();
    let mut note = format!("note: namespace {ns:?} holds no records");
    if let Some(best) = near.first() {
        note.push_str(&format!("; did you mean {:?}?", best.1));
    }
    if !names.is_empty() {
        let shown: Vec<&str> = names.iter().take(10).map(String::as_str).collect();
        let more = if names.len() > 10 { format!(" and {} more", names.len() - 10) } else { String::new() };
        note.push_str(&format!(" (namespaces here: {}{more})", shown.join(", ")));
    }
    Ok(Some(crate::output::escape(&note)))
}

/// Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (up + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn edit_distances() {
        for (a, b, d) in
            [("", "", 0), ("a", "", 1), ("kitten", "sitting", 3), ("projct", "project", 1), ("ab", "ba", 2)]
        {
            assert_eq!(super::edit_distance(a, b), d, "{a} {b}");
        }
    }
}
