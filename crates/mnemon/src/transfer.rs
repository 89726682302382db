//! Export and import in mnemon's JSON-lines format.
//!
//! `export` writes every revision (of one namespace or all), one [`RecordJson`] per line, in
//! key order: exporting, importing into an empty database and exporting again gives the same
//! bytes. `import` accepts those lines (restoring each revision as it was, including its
//! transaction time) and the loose form of [`crate::json::parse_input`] (creating new records).
//! After the revisions, an export carries the application state kept beside them (episodes'
//! access counts) as `{"aux": key, "value": ...}` lines, which an import writes back.

use std::io::{BufRead, Write};

use mnemon_storage::{Durability, Namespace, Outcome, WriteOp};
use serde_json::Value;

use crate::db::Db;
use crate::error::{Error, LineError, Result};
use crate::json::{RecordJson, parse_input};

/// The auxiliary rows an export carries: the application state of the modules above the
/// records (`app/access/<namespace>/<id>`: episodes' access counts; `app/alias/<namespace>/
/// <hash>`: names of merged entities), not the caches.
const APP_PREFIX: &str = "app/";

/// Write every revision as JSON lines, then the application state kept beside them (the
/// auxiliary rows under `app/`: episodes' access counts, names of merged entities); returns
/// how many lines were written.
pub fn export(db: &Db, ns: Option<&Namespace>, out: &mut dyn Write) -> Result<u64> {
    // A partitioned handle: the namespace's partition, or each partition in turn.
    if db.is_partitioned() {
        return match ns {
            Some(n) => export(&db.db_for(n.as_str())?, ns, out),
            None => db.partitions().iter().try_fold(0, |n, part| Ok(n + export(part, None, out)?)),
        };
    }
    let snap = db.snapshot()?;
    let mut n = 0u64;
    let mut io_err: Option<std::io::Error> = None;
    snap.for_each_revision(ns, |r| {
        let line = serde_json::to_string(&RecordJson::from_record(&r)).unwrap_or_default();
        if let Err(e) = writeln!(out, "{line}") {
            io_err = Some(e);
            return Err(mnemon_storage::Error::Input(mnemon_storage::InputError::Invalid(
                "export stopped".into(),
            )));
        }
        n += 1;
        Ok(())
    })
    .or_else(|e| if io_err.is_some() { Ok(()) } else { Err(e) })?;
    if let Some(e) = io_err {
        return Err(Error::Io { path: "<output>".into(), source: e });
    }
    // Then the application state kept beside the records (episodes' access counts, the
    // aliases of merged entities): rows `app/<what>/<namespace>/<leaf>`, of the namespace or
    // all, one `{"aux": key, "value": ...}` line each, in key order.
    let of_ns = |key: &str| match ns {
        None => true,
        Some(ns) => key
            .strip_prefix(APP_PREFIX)
            .and_then(|k| k.split_once('/'))
            .and_then(|(_, rest)| rest.strip_prefix(ns.as_str()))
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|leaf| !leaf.is_empty() && !leaf.contains('/')),
    };
    for (key, bytes) in snap.aux_prefix(APP_PREFIX)? {
        if !of_ns(&key) {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(&bytes) else { continue };
        let line = serde_json::json!({ "aux": key, "value": value });
        writeln!(out, "{line}").map_err(|e| Error::Io { path: "<output>".into(), source: e })?;
        n += 1;
    }
    out.flush().map_err(|e| Error::Io { path: "<output>".into(), source: e })?;
    Ok(n)
}

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Namespace for loose lines that name none.
    pub namespace: Namespace,
    /// Import the valid lines even if some are invalid (default: all or nothing).
    pub partial: bool,
    /// Lines per commit (each one durable).
    pub chunk: usize,
    /// The namespaces lines may write, as globs (`project:*`; empty: any): a line naming
    /// another is invalid.
    pub reach: Vec<String>,
}

impl ImportOptions {
    /// Defaults: all or nothing, 2,000 lines per commit.
    pub fn new(namespace: Namespace) -> Self {
        ImportOptions { namespace, partial: false, chunk: 2_000, reach: Vec::new() }
    }
}

/// What an import did (as a server answers it: the failed lines as `SOURCE:LINE: REASON`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImportReport {
    /// Non-empty lines read.
    pub lines: u64,
    /// New records created from loose lines.
    pub created: u64,
    /// Revisions (and rows of application state) restored from export lines.
    pub restored: u64,
    /// Export lines already present, identically.
    pub unchanged: u64,
    /// Lines that could not be imported.
    #[serde(
        serialize_with = "crate::importers::as_strings",
        deserialize_with = "crate::importers::from_strings"
    )]
    pub failed: Vec<LineError>,
    /// Imported records embedded afterwards (in batches, from the cache where it could).
    pub embedded: u64,
    /// Imported records whose embedding failed (`reindex` retries them).
    pub embed_failed: u64,
}

/// Parse one line into an operation.
pub fn parse_line(line: &str, default_ns: &Namespace) -> Result<WriteOp> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| crate::error::invalid(format!("invalid JSON: {e}")))?;
    if let Some(key) = value.get("aux") {
        let key = key.as_str().filter(|k| k.starts_with(APP_PREFIX)).ok_or_else(|| {
            crate::error::invalid(format!("an \"aux\" line names a key starting with {APP_PREFIX:?}"))
        })?;
        let bytes = serde_json::to_vec(value.get("value").unwrap_or(&Value::Null))
            .map_err(|e| crate::error::invalid(e.to_string()))?;
        return Ok(WriteOp::PutAux { key: key.to_string(), value: Some(bytes) });
    }
    let is_export = value.get("rev").is_some() && value.get("recorded_at").is_some();
    if is_export {
        let rj: RecordJson = serde_json::from_value(value)
            .map_err(|e| crate::error::invalid(format!("invalid export line: {e}")))?;
        Ok(WriteOp::Restore(Box::new(rj.into_record()?)))
    } else {
        // Checked now, so that a bad line fails the import before anything is written.
        let record = parse_input(value, None, default_ns)?.record;
        record.check()?;
        Ok(WriteOp::Insert(record))
    }
}

/// Import JSON lines from `input` (named `source` in messages). `progress(done, total)` is
/// called as lines are committed, then as the imported records are embedded (the total then
/// grows by the records to embed). Every line is validated before anything is written; with
/// `partial` the valid lines are imported and the others reported, otherwise an invalid line
/// fails the whole import with [`Error::InvalidImport`] and nothing is written.
///
/// The lines go in by [`ImportOptions::chunk`] per commit, each commit durable (an fsync per
/// 2,000 lines costs well under 1 % of the import), so when a commit fails (a full disk, a
/// file that may not grow) the import stops with [`Error::ImportStopped`]: the lines before
/// the one it names are in the database for good, none from it on (unless the cause is
/// [`mnemon_storage::Error::CommitUncertain`]: the file did not open again to tell whether
/// that line's batch got in), and importing the rest of the file from that line goes on
/// where it stopped.
pub fn import(
    db: &Db,
    input: &mut dyn BufRead,
    source: &str,
    options: &ImportOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut ops: Vec<(u64, WriteOp)> = Vec::new();
    let mut line_no = 0u64;
    let mut buf: Vec<u8> = Vec::new();
    let max_line = max_line_bytes(db.max_record_bytes());
    loop {
        let read = read_line_bounded(input, &mut buf, max_line)
            .map_err(|e| Error::Io { path: source.into(), source: e })?;
        let Some(too_long) = read else { break };
        line_no += 1;
        let failed = |reason: String| LineError { source: source.to_string(), line: line_no, reason };
        if too_long {
            report.lines += 1;
            report
                .failed
                .push(failed(format!("the line is over {max_line} bytes, more than a record may take")));
            continue;
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            report.lines += 1;
            report.failed.push(failed("the line is not UTF-8".to_string()));
            continue;
        };
        let line = text.trim();
        if line.is_empty() {
            continue;
        }
        report.lines += 1;
        let parsed = parse_line(line, &options.namespace).and_then(|op| {
            if let WriteOp::Insert(n) = &op {
                crate::rules::record_size(n, db.max_record_bytes())?;
            }
            let ns = match &op {
                WriteOp::Insert(n) => Some(n.namespace.as_str()),
                WriteOp::Restore(r) => Some(r.namespace.as_str()),
                _ => None,
            };
            match ns {
                Some(n)
                    if !options.reach.is_empty() && !options.reach.iter().any(|p| crate::ops::glob(p, n)) =>
                {
                    Err(Error::NotAllowed { namespace: n.to_string(), scope: options.reach.join(", ") })
                }
                _ => Ok(op),
            }
        });
        match parsed {
            Ok(op) => ops.push((line_no, op)),
            Err(e) => report.failed.push(LineError {
                source: source.to_string(),
                line: line_no,
                reason: e.to_string(),
            }),
        }
    }
    if !report.failed.is_empty() && !options.partial {
        return Err(Error::InvalidImport { errors: report.failed });
    }
    let total = ops.len() as u64;
    let mut done = 0u64;
    let mut touched: Vec<String> = Vec::new();
    for (_, op) in &ops {
        let ns = match op {
            WriteOp::Insert(n) => n.namespace.as_str(),
            WriteOp::Restore(r) => r.namespace.as_str(),
            _ => continue,
        };
        if !touched.iter().any(|t| t == ns) {
            touched.push(ns.to_string());
        }
    }
    progress(0, total);
    let chunk = options.chunk.max(1);
    while !ops.is_empty() {
        let rest = ops.split_off(ops.len().min(chunk));
        let batch = std::mem::replace(&mut ops, rest);
        let lines: Vec<(u64, bool)> = batch
            .iter()
            .map(|(l, op)| (*l, matches!(op, WriteOp::Restore(_) | WriteOp::PutAux { .. })))
            .collect();
        let jobs: Vec<Vec<WriteOp>> = batch.into_iter().map(|(_, op)| vec![op]).collect();
        let results = db.write_jobs(jobs, Durability::Immediate);
        let written = done;
        for ((line, restore), result) in lines.into_iter().zip(results) {
            match result {
                // The commit itself failed (every job of the batch gets this): stop, with the
                // cause, rather than fail each later batch with "previous I/O error".
                Err(Error::Storage(
                    cause @ (mnemon_storage::Error::CommitFailed { .. }
                    | mnemon_storage::Error::CommitUncertain { .. }
                    | mnemon_storage::Error::Closed { .. }),
                )) => {
                    return Err(Error::ImportStopped {
                        file: source.to_string(),
                        line,
                        written,
                        total,
                        cause,
                    });
                }
                Ok(receipt) => {
                    if receipt.outcomes.iter().any(|o| matches!(o, Outcome::Unchanged { .. })) {
                        report.unchanged += 1;
                    } else if restore {
                        report.restored += 1;
                    } else {
                        report.created += 1;
                    }
                }
                Err(e) => {
                    report.failed.push(LineError { source: source.to_string(), line, reason: e.to_string() })
                }
            }
            done += 1;
        }
        progress(done, total);
    }
    db.sync()?;
    // Embed what was imported, in batches (records already embedded are skipped); progress
    // goes on counting past the lines, one step per record embedded.
    for ns in &touched {
        let e = db.reindex(Some(ns), 64, |d, t| progress(total + d as u64, total + t as u64))?;
        report.embedded += e.hits + e.misses;
        report.embed_failed += e.failures;
    }
    Ok(report)
}

/// The longest import line read: a record as large as a record may be, its envelope and
/// escapes (a line longer than this holds a record that would be refused anyway, and is
/// skipped without being held in memory).
fn max_line_bytes(max_record: usize) -> usize {
    max_record.saturating_add(max_record / 2).saturating_add(64 << 10)
}

/// Read one line (without its `\n`) into `buf`: `None` at the end of the input, `Some(true)`
/// when it is longer than `max` bytes (then read to its end but not kept).
fn read_line_bounded(
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let (mut any, mut too_long) = (false, false);
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(too_long));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long && buf.len() + part.len() <= max {
            buf.extend_from_slice(part);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            return Ok(Some(too_long));
        }
    }
}
