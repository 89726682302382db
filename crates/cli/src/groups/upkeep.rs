//! `mnemon prune` and `mnemon import --format crewly|assistant|mcp-jsonl|markdown`.

use anyhow::Result;

use mnemon::{Db, Ns};

use super::memory::scope_of;
use crate::cli::Cli;
use crate::open::{open, usage};
use crate::output::Out;

/// The handle of `--ns`.
fn ns_of(db: &Db, cli: &Cli) -> Result<Ns> {
    Ok(db.ns(&cli.ns)?)
}

/// `mnemon prune`.
pub fn prune(cli: &Cli, out: &mut Out, o: mnemon::ops::Prune) -> Result<()> {
    let r = crate::open::connect(cli, true)?.call(o)?;
    if out.json {
        out.json_line(&r)?;
    } else {
        let verb = if r.dry_run {
            "would prune"
        } else if r.forgotten {
            "forgot"
        } else {
            "retired"
        };
        out.line(format!(
            "{verb}: {} expired, {} episode(s) past their age, {} over the cap{}",
            r.expired,
            r.episodes_aged,
            r.episodes_capped,
            if r.forgotten || r.dry_run { "" } else { " (still visible to time travel)" }
        ))?;
    }
    Ok(())
}

/// `mnemon import --format mcp-jsonl|markdown`.
pub fn import_other(
    cli: &Cli,
    out: &mut Out,
    file: &std::path::Path,
    format: &str,
    scope: Option<&str>,
) -> Result<()> {
    // Only markdown files go to a scope; the other formats go to --ns.
    let sc = if format == "markdown" { Some(scope_of(cli, scope)?) } else { None };
    if !file.exists() {
        return Err(anyhow::anyhow!("cannot open {}: no such file or directory", file.display()));
    }
    if format == "mcp-jsonl" {
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let import = mnemon::ops::GraphImport {
            jsonl: text,
            source: Some(file.display().to_string()),
            namespace: None,
        };
        return print_summary(out, &crate::open::connect(cli, true)?.call(import)?);
    }
    crate::open::file_only(cli, &format!("import --format {format}"))?;
    let db = open(cli)?;
    let sum = if format == "crewly" {
        if !file.is_dir() {
            return Err(usage("--format crewly reads a directory (.crewly/knowledge or an agent's folder)"));
        }
        mnemon::importers::import_crewly_dir(&ns_of(&db, cli)?, file)?
    } else if format == "assistant" {
        if !file.is_dir() {
            return Err(usage(
                "--format assistant reads a directory (decisions.json, tasks.json, entities.json, conversations.json)",
            ));
        }
        mnemon::importers::import_assistant_dir(&ns_of(&db, cli)?, file)?
    } else {
        let sc = sc.ok_or_else(|| usage("--scope is for --format markdown"))?;
        mnemon::importers::import_markdown_path(&db, file, &sc)?
    };
    print_summary(out, &sum)
}

/// What an import of another format did; the refused lines on standard error.
fn print_summary(out: &mut Out, sum: &mnemon::importers::ImportSummary) -> Result<()> {
    if out.json {
        out.json_line(&sum)?;
    } else {
        out.line(format!(
            "imported {}, skipped {} already present, {} refused",
            sum.imported,
            sum.skipped,
            sum.errors.len()
        ))?;
    }
    for e in &sum.errors {
        eprintln!("{e}");
    }
    if !sum.errors.is_empty() {
        return Err(anyhow::anyhow!("{} line(s) refused (the rest was imported)", sum.errors.len()));
    }
    Ok(())
}
