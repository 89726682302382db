//! What every command shares: opening the database (with its embedder), the namespace and
//! the ids named on the command line, JSON arguments, usage errors and progress bars.

use std::io::Read;

use anyhow::{Context, Result};
use mnemon::{Db, Namespace};
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

/// Where a command runs its operations: a session over the file, or a server.
pub(crate) use mnemon_client::Conn;

/// How a command reaches the database: the server of `--server` (or MNEMON_URL), else the
/// file of `--db`, opened for writing when `write`, else for reading.
pub(crate) fn connect(cli: &Cli, write: bool) -> Result<Conn> {
    if let Some(url) = &cli.server {
        if cli.embedder.is_some() {
            return Err(usage("--embedder configures a file; a server embeds with its own"));
        }
        return Ok(Conn::Remote(client(cli, url)?.session(&cli.ns)));
    }
    let db = if write { open(cli)? } else { open_read(cli)? };
    Ok(Conn::local(db, &cli.ns)?)
}

/// The client of the server at `url`, with `--token` and `--ca-cert`.
pub(crate) fn client(cli: &Cli, url: &str) -> Result<mnemon_client::Client> {
    let ca = match &cli.ca_cert {
        Some(path) => Some(std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?),
        None => None,
    };
    Ok(mnemon_client::Client::with_options(url, cli.token.as_ref().map(|t| t.0.clone()), ca.as_deref())?)
}

/// Refuse `--server` for a command that works on the file itself.
pub(crate) fn file_only(cli: &Cli, what: &str) -> Result<()> {
    match cli.server {
        Some(_) => Err(usage(format!(
            "{what} works on a database file, not through a server: run it where the server's file is, with --db"
        ))),
        None => Ok(()),
    }
}

/// Open for reading: several readers (other `mnemon` calls) may share the file.
pub(crate) fn open_read(cli: &Cli) -> Result<Db> {
    Ok(with_embedder(cli, Db::builder(&cli.db).shared(true).read_only(true))?.open()?)
}

/// The embedder asked for with `--embedder` (else the database's recorded one).
pub(crate) fn with_embedder(cli: &Cli, b: mnemon::DbBuilder) -> Result<mnemon::DbBuilder> {
    Ok(match asked_embedder(cli)? {
        Some(e) => b.embedder(e),
        None => b,
    })
}

/// The embedder `--embedder` names, built (`None` without the option).
pub(crate) fn asked_embedder(cli: &Cli) -> Result<Option<Embedder>> {
    match &cli.embedder {
        // A configuration that cannot work (a model this build leaves out, no server URL) is
        // a usage error; a server or a model that fails is not.
        Some(spec) => Ok(Some(spec.build().map_err(|e| match e {
            mnemon::embed::EmbedError::Config(_) => usage(e.to_string()),
            e => e.into(),
        })?)),
        None => Ok(None),
    }
}

/// The embedder of a new database: the local model if it is installed, else (`Err`) the
/// one-line note saying that the hashing embedder is used and how to install the model.
pub(crate) type Embedder = std::sync::Arc<dyn mnemon::embed::Embedder>;

#[cfg(feature = "local-minilm")]
pub(crate) fn default_local() -> Result<std::result::Result<Embedder, String>> {
    let dir = mnemon::embed::LocalMiniLm::default_dir();
    if mnemon::embed::EmbedderSpec::default_for_new_database().is_none() {
        return Ok(Err(format!(
            "no local embedding model in {}: using the offline hashing embedder (words, not \
             meaning); install the model with `mnemon model fetch`, then run `mnemon --embedder local \
             reindex`",
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

pub(crate) fn namespace(cli: &Cli) -> Result<Namespace> {
    Ok(Namespace::new(cli.ns.as_str())?)
}

/// When `ns` was never written to, a note saying so, with the namespaces that are there and
/// the nearest ones (a mistyped name otherwise gives an empty answer and no clue). Printed on
/// standard error beside an empty result.
pub(crate) fn empty_namespace_note(conn: &Conn, ns: &str) -> Result<Option<String>> {
    let names: Vec<String> = match conn {
        Conn::Local(s) => s.db().snapshot()?.namespaces()?.iter().map(|n| n.as_str().to_string()).collect(),
        // A token may not see the others: then no note.
        Conn::Remote(s) => match s.call(mnemon::ops::DbStats {}) {
            Ok(stats) => stats.namespaces.iter().map(|n| n.namespace.to_string()).collect(),
            Err(_) => return Ok(None),
        },
    };
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
