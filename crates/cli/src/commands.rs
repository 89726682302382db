//! What each command does.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use mnemon::json::RecordView;
use mnemon::{Db, Timestamp};
use serde_json::json;

use crate::cli::{AsOfArgs, Cli, Command, NewArgs};
use crate::open::{
    check_id_form, connect, default_local, file_only, namespace, open, read_data, usage, with_embedder,
};
use crate::output::{Out, chain_table, history_table, print_written, record_detail, records_table, table};

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    // Validate the namespace before touching any file.
    namespace(&cli)?;
    let mut out = Out::stdout(cli.json);
    match &cli.command {
        Command::Init => {
            file_only(&cli, "init")?;
            init(&cli, &mut out)?
        }
        Command::Tour => crate::tour::run(&mut out)?,
        Command::Add { kind, new } => add(&cli, &mut out, *kind, new)?,
        Command::Get { id, as_of } => get(&cli, &mut out, id, *as_of)?,
        Command::List { kinds, as_of, tags, agent, task, limit, explain, where_ } => {
            let q = mnemon::ops::List {
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
                tags: tags.clone(),
                agent: agent.clone(),
                task: task.clone(),
                where_: where_.as_deref().map(|w| crate::open::read_json(w, "--where")).transpose()?,
                ..Default::default()
            };
            list(&cli, &mut out, q, *as_of, limit.map(|n| n as usize), *explain)?;
        }
        Command::Revise { id, data } => {
            check_id_form(id)?;
            let serde_json::Value::Object(patch) = read_data(data)? else {
                return Err(usage("--data must be a JSON object (a merge patch)"));
            };
            let session = connect(&cli, true)?;
            let written = session.call(mnemon::ops::Revise { id: id.clone(), patch, namespace: None })?;
            print_written(&mut out, &written, true)?;
        }
        Command::Retire { id, at } | Command::Expire { id, at } => {
            check_id_form(id)?;
            let expire = matches!(cli.command, Command::Expire { .. });
            let at = at.map(|t| t.to_rfc3339());
            let session = connect(&cli, true)?;
            let written =
                session.call(mnemon::ops::Retire { id: id.clone(), at, expire, namespace: None })?;
            print_written(&mut out, &written, true)?;
        }
        Command::Supersede { old_id, data, at, tags, importance } => {
            check_id_form(old_id)?;
            let serde_json::Value::Object(mut data) = read_data(data)? else {
                return Err(usage("--data must be a JSON object"));
            };
            add_tags(&mut data, tags);
            let session = connect(&cli, true)?;
            let done = session.call(mnemon::ops::Supersede {
                id: old_id.clone(),
                data: Some(data),
                importance: *importance,
                at: at.map(|t| t.to_rfc3339()),
                ..Default::default()
            })?;
            if out.json {
                out.json_line(&done)?;
            } else {
                out.line(done.new.to_string())?;
            }
        }
        Command::Forget { id } => {
            check_id_form(id)?;
            let session = connect(&cli, true)?;
            let gone = session.call(mnemon::ops::Forget { id: id.clone(), erase: true, namespace: None })?;
            let n = gone.erased_revisions.unwrap_or(0);
            if out.json {
                out.json_line(&json!({"forgotten": gone.id, "revisions": n}))?;
            } else {
                out.line(format!("forgot {}: {n} revision(s) erased", gone.id))?;
            }
        }
        Command::Erase { confirm, kinds, tags, where_ } => {
            let where_ = where_.as_deref().map(|w| crate::open::read_json(w, "--where")).transpose()?;
            let session = connect(&cli, true)?;
            let done = session.call(mnemon::ops::Erase {
                namespace: cli.ns.clone(),
                confirm: confirm.clone(),
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
                tags: tags.clone(),
                where_,
            })?;
            if out.json {
                out.json_line(&done)?;
            } else {
                out.line(format!(
                    "erased {} record(s), {} revision(s) from {}{}",
                    done.records,
                    done.revisions,
                    cli.ns,
                    done.audit.map(|a| format!(" (audit record {a} in mnemon:erasures)")).unwrap_or_default()
                ))?;
            }
        }
        Command::History { id } => history(&cli, &mut out, id)?,
        Command::Chain { id } => chain(&cli, &mut out, id)?,
        Command::Export { all, format } if format == "mcp-jsonl" => {
            if *all {
                return Err(usage("--format mcp-jsonl exports one namespace (--ns), not --all"));
            }
            let text = connect(&cli, false)?.call(mnemon::ops::GraphExport { namespace: None })?.jsonl;
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
        Command::Export { format, .. } if format != "jsonl" => {
            return Err(usage(format!("unknown export format {format:?} (jsonl, mcp-jsonl)")));
        }
        Command::Export { all, .. } => {
            let session = connect(&cli, false)?;
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            session.export(if *all { None } else { Some(cli.ns.as_str()) }, &mut stdout)?;
        }
        Command::Import { file, partial, format, scope } => match format.as_str() {
            "jsonl" => import(&cli, &mut out, file, *partial)?,
            "mcp-jsonl" | "markdown" | "assistant" | "crewly" => {
                crate::groups::upkeep::import_other(&cli, &mut out, file, format, scope.as_deref())?
            }
            f => {
                return Err(usage(format!(
                    "unknown import format {f:?} (jsonl, mcp-jsonl, markdown, crewly, assistant)"
                )));
            }
        },
        Command::Stats { domain: false } => stats(&cli, &mut out)?,
        Command::Stats { domain: true } => crate::groups::project::domain_stats(&cli, &mut out)?,
        Command::Task(cmd) => crate::groups::work::task(&cli, &mut out, cmd)?,
        Command::Decision(cmd) => crate::groups::work::decision(&cli, &mut out, cmd)?,
        Command::Entity(cmd) => crate::groups::work::entity(&cli, &mut out, cmd)?,
        Command::Conversation(cmd) => crate::groups::work::conversation(&cli, &mut out, cmd)?,
        Command::Context { query, task, agent, budget, format, at, where_ } => {
            let req = crate::search::ContextArgs {
                query,
                task: task.as_deref(),
                agent: agent.as_deref(),
                budget: *budget,
                format,
                at: *at,
                where_: where_.as_deref().map(|w| crate::open::read_json(w, "--where")).transpose()?,
            };
            crate::search::context(&cli, &mut out, req)?
        }
        Command::Prune { dry_run, forget, episode_days, important_factor, episode_cap, namespaces } => {
            let o = mnemon::ops::Prune {
                dry_run: *dry_run,
                forget: *forget,
                episode_days: *episode_days,
                important_factor: Some(*important_factor),
                episode_cap: *episode_cap,
                namespaces: namespaces.clone(),
            };
            crate::groups::upkeep::prune(&cli, &mut out, o)?
        }
        Command::Cluster(cmd) => crate::serve::cluster(&mut out, cmd)?,
        Command::Mcp { action: Some(crate::cli::McpCmd::Install { client, name, file, print }), .. } => {
            crate::mcp_install::install(&cli, &mut out, client, name, file.as_deref(), *print)?
        }
        Command::Mcp { .. } | Command::Serve(_) | Command::Token(_) if cli.server.is_some() => {
            file_only(&cli, "this command")?
        }
        Command::Mcp { allow_ns, max_reply_bytes, .. } => mnemon_server::mcp::serve_stdio(
            with_embedder(&cli, Db::builder(&cli.db).shared(true).create(true))?.open()?,
            &cli.ns,
            allow_ns,
            usize::try_from(*max_reply_bytes).unwrap_or(usize::MAX),
        )?,
        Command::Serve(args) => crate::serve::serve(&cli, args)?,
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let shell: clap_complete::Shell =
                shell.parse().map_err(|_| usage(format!("no completions for {shell:?}")))?;
            let mut cmd = crate::cli::Cli::command();
            // Made whole first: a reader that stops early is a write error, not a panic.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "mnemon", &mut script);
            out.line(String::from_utf8_lossy(&script).trim_end())?;
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut page = Vec::new();
            clap_mangen::Man::new(crate::cli::Cli::command()).render(&mut page)?;
            out.line(String::from_utf8_lossy(&page).trim_end())?;
        }
        Command::Model(cmd) => crate::model::model(&mut out, cmd)?,
        Command::Ui { listen } => {
            file_only(&cli, "ui")?;
            crate::serve::ui(&cli, *listen)?
        }
        Command::Token(cmd) => crate::serve::token(&cli, &mut out, cmd)?,
        Command::Memory(cmd) => crate::groups::memory::memory(&cli, &mut out, cmd)?,
        Command::Project(cmd) => crate::groups::project::project(&cli, &mut out, cmd)?,
        Command::Knowledge(cmd) => crate::groups::agent::knowledge(&cli, &mut out, cmd)?,
        Command::Agent(cmd) => crate::groups::agent::agent(&cli, &mut out, cmd)?,
        Command::Episode(cmd) => crate::groups::agent::episode(&cli, &mut out, cmd)?,
        Command::Tagged { tag } => crate::groups::project::tagged(&cli, &mut out, tag)?,
        Command::Watch { kinds, tags, since, all, count, idle } => {
            let req = mnemon::ops::Changes {
                since: since.clone(),
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
                tags: tags.clone(),
                namespaces: if *all { vec!["*".into()] } else { Vec::new() },
                ..Default::default()
            };
            crate::watch::watch(&cli, &mut out, req, *count, *idle)?
        }
        Command::Consolidate { older_than } => {
            crate::groups::project::consolidate(&cli, &mut out, *older_than)?
        }
        Command::Check => {
            file_only(&cli, "check")?;
            check(&cli, &mut out)?
        }
        Command::Compact => {
            file_only(&cli, "compact")?;
            compact(&cli, &mut out)?
        }
        Command::Search {
            query,
            kinds,
            tags,
            agent,
            task,
            also,
            limit,
            mode,
            as_of: a,
            batch,
            min_score,
            where_,
        } => {
            let req = mnemon::ops::Recall {
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
                tags: tags.clone(),
                agent: agent.clone(),
                task: task.clone(),
                also: also.clone(),
                limit: Some(*limit),
                mode: Some(*mode),
                min_score: *min_score,
                as_of: crate::search::rfc3339(a.as_of),
                known_at: crate::search::rfc3339(a.known_at),
                where_: where_.as_deref().map(|w| crate::open::read_json(w, "--where")).transpose()?,
                ..Default::default()
            };
            crate::search::run(&cli, &mut out, query.clone(), req, batch.as_deref())?
        }
        Command::Reindex { only_ns, batch } => {
            crate::search::reindex(&cli, &mut out, only_ns.as_deref(), *batch)?
        }
        Command::Vector(cmd) => crate::vectors::run_vector(&cli, &mut out, cmd)?,
        Command::Index(cmd) => crate::vectors::run_index(&cli, &mut out, cmd)?,
    }
    out.flush()?;
    Ok(())
}

fn init(cli: &Cli, out: &mut Out) -> Result<()> {
    let existed = cli.db.exists();
    let builder = Db::builder(&cli.db).shared(true).create(true);
    // A new database without --embedder gets the local model when it is installed.
    let mut note = None;
    let builder = match (&cli.embedder, existed) {
        (None, false) => match default_local()? {
            Ok(e) => builder.embedder(e),
            Err(why) => {
                note = Some(why);
                builder
            }
        },
        _ => with_embedder(cli, builder)?,
    };
    let db = builder.open()?;
    if let Some(n) = note {
        eprintln!("note: {n}");
    }
    let path = db.path().display().to_string();
    let embedder = db.embedder().model_id().to_string();
    drop(db);
    if out.json {
        out.json_line(&json!({"db": path, "created": !existed, "embedder": embedder}))?;
    } else if existed {
        out.line(format!("{path} is already a mnemon database"))?;
    } else {
        out.line(format!("created {path}"))?;
    }
    Ok(())
}

fn add(cli: &Cli, out: &mut Out, kind: mnemon::Kind, new: &NewArgs) -> Result<()> {
    let serde_json::Value::Object(mut record) = read_data(&new.data)? else {
        return Err(usage("--data must be a JSON object"));
    };
    // The flags are envelope fields of the loose form; they win over the data's.
    let time = |t: Timestamp| serde_json::Value::String(t.to_rfc3339());
    if let Some(t) = new.valid_from {
        record.insert("valid_from".into(), time(t));
    }
    if let Some(t) = new.valid_until {
        record.insert("valid_until".into(), time(t));
    }
    if let Some(i) = new.importance {
        record.insert("importance".into(), json!(i));
    }
    add_tags(&mut record, &new.tags);
    let session = connect(cli, true)?;
    let written =
        session.call(mnemon::ops::Add { kind: kind.name().to_string(), record, namespace: None })?;
    print_written(out, &written, false)
}

/// Add `--tag` values to the tags a loose record's JSON gives.
fn add_tags(record: &mut serde_json::Map<String, serde_json::Value>, tags: &[String]) {
    if tags.is_empty() {
        return;
    }
    let mut all = match record.remove("tags") {
        Some(serde_json::Value::Array(t)) => t,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    all.extend(tags.iter().map(|t| json!(t)));
    record.insert("tags".into(), serde_json::Value::Array(all));
}

fn get(cli: &Cli, out: &mut Out, id: &str, a: AsOfArgs) -> Result<()> {
    check_id_form(id)?;
    let session = connect(cli, false)?;
    let time = |t: Option<Timestamp>| t.map(|t| t.to_rfc3339());
    let got = session.call(mnemon::ops::Get {
        id: id.to_string(),
        as_of: time(a.as_of),
        known_at: time(a.known_at),
        namespace: None,
    })?;
    if out.json {
        out.json_line(&got.record)?;
    } else {
        out.line(record_detail(&got.record.record, got.record.at))?;
    }
    Ok(())
}

/// List through the `list` operation, page after page (at most [`PAGE`] records each) until
/// `limit` records or the end, every page at the same valid and transaction time (the first
/// page's), so that the pages make one consistent listing.
fn list(
    cli: &Cli,
    out: &mut Out,
    mut q: mnemon::ops::List,
    a: AsOfArgs,
    limit: Option<usize>,
    explain: bool,
) -> Result<()> {
    const PAGE: usize = 1000;
    let session = connect(cli, false)?;
    let ns = namespace(cli)?;
    let at = a.as_of.unwrap_or_else(|| session.now());
    q.as_of = Some(at.to_rfc3339());
    // A server's pages keep the transaction time of the first (its cursor carries it).
    q.known_at = a.known_at.or_else(|| session.db().map(Db::now)).map(Timestamp::to_rfc3339);
    let mut records: Vec<mnemon::Record> = Vec::new();
    let mut path = None;
    let mut left = limit.unwrap_or(usize::MAX);
    while left > 0 {
        q.limit = Some(left.min(PAGE));
        let page = session.call(mnemon::ops::List { cursor: q.cursor.take(), ..q.clone() })?;
        path = path.or(page.path);
        left -= page.records.len();
        if out.json {
            for r in &page.records {
                out.json_line(&RecordView::new(&r.record, at))?;
            }
        }
        records.extend(page.records.into_iter().map(|r| r.record));
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    if records.is_empty()
        && let Some(note) = crate::open::empty_namespace_note(&session, ns.as_str())?
    {
        eprintln!("{note}");
    }
    if !out.json {
        if records.is_empty() {
            out.line(format!("no records valid at {} in namespace {ns}", at.to_human()))?;
        } else {
            out.line(records_table(&records, at))?;
        }
        if let Some(path) = path.filter(|_| explain) {
            out.line(
                format!("({} record(s), answered from the {path:?} index)", records.len()).to_lowercase(),
            )?;
        }
    }
    Ok(())
}

fn history(cli: &Cli, out: &mut Out, id: &str) -> Result<()> {
    check_id_form(id)?;
    let session = connect(cli, false)?;
    let revs = session.call(mnemon::ops::History { id: id.to_string(), namespace: None })?.revisions;
    let revs: Vec<mnemon::Record> = revs.into_iter().map(|r| r.record).collect();
    if out.json {
        for r in &revs {
            out.json_line(&mnemon::json::RecordJson::from_record(r))?;
        }
        return Ok(());
    }
    out.line(history_table(&revs))?;
    Ok(())
}

fn chain(cli: &Cli, out: &mut Out, id: &str) -> Result<()> {
    check_id_form(id)?;
    let session = connect(cli, false)?;
    let mnemon::ops::ChainOut { asked, chain: links } =
        session.call(mnemon::ops::Chain { id: id.to_string(), namespace: None })?;
    if out.json {
        for r in &links {
            out.json_line(r)?;
        }
        return Ok(());
    }
    let now = links.first().map_or_else(|| session.now(), |r| r.at);
    let links: Vec<mnemon::Record> = links.into_iter().map(|r| r.record).collect();
    out.line(chain_table(&links, now, Some(asked)))?;
    Ok(())
}

fn import(cli: &Cli, out: &mut Out, file: &Path, partial: bool) -> Result<()> {
    namespace(cli)?;
    let source = file.display().to_string();
    let mut reader: Box<dyn std::io::BufRead> = if source == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(file).with_context(|| format!("cannot open {source}"))?;
        Box::new(std::io::BufReader::new(f))
    };
    if let Some(url) = &cli.server {
        return import_remote(cli, out, url, &mut reader, &source, partial);
    }
    let db = open(cli)?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} importing [{bar:40}] {pos}/{len} lines, then records to embed ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = crate::open::session(cli, db)?.import(&mut reader, &source, partial, &mut |done, total| {
        if total >= 1_000 {
            bar.set_length(total);
            bar.set_position(done);
        }
    });
    bar.finish_and_clear();
    let report = match report {
        Ok(r) => r,
        Err(mnemon::Error::InvalidImport { errors }) => {
            for e in errors.iter().take(20) {
                eprintln!("{e}");
            }
            if errors.len() > 20 {
                eprintln!("... and {} more", errors.len() - 20);
            }
            return Err(usage(format!(
                "{} invalid line(s) in {source}; nothing was imported (use --partial to import the rest)",
                errors.len()
            )));
        }
        Err(e) => return Err(e.into()),
    };
    print_import(out, &report, &source)
}

/// Import through the server: the file is sent whole, and the server answers what it did.
fn import_remote(
    cli: &Cli,
    out: &mut Out,
    url: &str,
    reader: &mut dyn std::io::BufRead,
    source: &str,
    partial: bool,
) -> Result<()> {
    let mut lines = Vec::new();
    reader.read_to_end(&mut lines).with_context(|| format!("cannot read {source}"))?;
    let report = crate::open::client(cli, url)?.import(&cli.ns, lines, partial)?;
    print_import(out, &report, source)
}

/// What an import did, with up to 20 of the lines that failed on standard error.
fn print_import(out: &mut Out, report: &mnemon::transfer::ImportReport, source: &str) -> Result<()> {
    for e in report.failed.iter().take(20) {
        eprintln!("{e}");
    }
    if out.json {
        out.json_line(&json!({
            "lines": report.lines,
            "created": report.created,
            "restored": report.restored,
            "unchanged": report.unchanged,
            "failed": report.failed.len(),
            "embedded": report.embedded,
            "embed_failed": report.embed_failed,
        }))?;
    } else {
        out.line(format!(
            "imported {} line(s): {} created, {} revision(s) restored, {} already present, {} failed; {} record(s) embedded",
            report.lines,
            report.created,
            report.restored,
            report.unchanged,
            report.failed.len(),
            report.embedded
        ))?;
    }
    if !report.failed.is_empty() {
        out.flush()?;
        return Err(anyhow!("{} line(s) of {source} could not be imported", report.failed.len()));
    }
    Ok(())
}

fn stats(cli: &Cli, out: &mut Out) -> Result<()> {
    let s = connect(cli, false)?.call(mnemon::ops::DbStats {})?;
    if out.json {
        out.json_line(&s)?;
        return Ok(());
    }
    out.line(format!("database    {}", s.path))?;
    out.line(format!("size        {:.1} MiB", s.file_bytes as f64 / 1_048_576.0))?;
    out.line(format!("format      version {}", s.format_version))?;
    out.line(format!("embedder    {}", s.embedder))?;
    let spaces: Vec<String> = s.vector_spaces.iter().map(|(n, d)| format!("{n} ({d}-d)")).collect();
    out.line(format!(
        "vectors     {}",
        if spaces.is_empty() { "none".to_string() } else { spaces.join(", ") }
    ))?;
    out.line(format!(
        "commits     {} (last {})",
        s.commits,
        s.last_commit.map_or_else(|| "never".into(), Timestamp::to_human)
    ))?;
    out.line("")?;
    if s.namespaces.is_empty() {
        out.line("no records yet")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = s
        .namespaces
        .iter()
        .map(|n| {
            let current: Vec<String> = n.current.iter().map(|(k, c)| format!("{k} {c}")).collect();
            vec![n.namespace.to_string(), n.records.to_string(), n.revisions.to_string(), current.join(", ")]
        })
        .collect();
    out.line(table(&["NAMESPACE", "RECORDS", "REVISIONS", "CURRENT BY KIND"], &rows))?;
    Ok(())
}

fn compact(cli: &Cli, out: &mut Out) -> Result<()> {
    let (before, after) = mnemon::compact(&cli.db)?;
    if out.json {
        out.json_line(&json!({"bytes_before": before, "bytes_after": after}))?;
    } else {
        let mib = |b: u64| b as f64 / 1_048_576.0;
        out.line(format!("compacted {}: {:.1} MiB -> {:.1} MiB", cli.db.display(), mib(before), mib(after)))?;
    }
    Ok(())
}

fn check(cli: &Cli, out: &mut Out) -> Result<()> {
    // A damaged page can make redb panic while the indexes are read: that is the answer.
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<_> {
        // Not verified on opening: redb's integrity check runs next, once.
        let db =
            crate::open::with_embedder(cli, Db::builder(&cli.db).shared(true).verify_up_to(0))?.open()?;
        let problems = db.snapshot()?.verify()?;
        drop(db);
        Ok((problems, mnemon::check_integrity(&cli.db)?))
    }));
    let (problems, intact) = match checked {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            if e.downcast_ref::<mnemon::Error>().is_some_and(|e| e.code() == mnemon::Code::Damaged) {
                let _ = mnemon::mark_damaged(&cli.db, &format!("{e:#}"));
            }
            return Err(e);
        }
        Err(payload) => {
            let message = mnemon::panic_message(payload.as_ref());
            let _ =
                mnemon::mark_damaged(&cli.db, &format!("the integrity check met a damaged page: {message}"));
            if out.json {
                out.json_line(&json!({"problems": [format!("damaged: {message}")], "file_intact": false}))?;
            } else {
                out.line(format!("file integrity: damaged ({message})"))?;
            }
            out.flush()?;
            return Err(anyhow!("{} is damaged: restore it from an export or a backup", cli.db.display()));
        }
    };
    if out.json {
        out.json_line(&json!({"problems": problems, "file_intact": intact}))?;
    } else {
        for p in &problems {
            out.line(format!("problem: {p}"))?;
        }
        out.line(if intact { "file integrity: ok" } else { "file integrity: repaired by redb" })?;
        out.line(if problems.is_empty() { "indexes: ok" } else { "indexes: inconsistent" })?;
    }
    if !problems.is_empty() {
        let _ = mnemon::mark_damaged(
            &cli.db,
            &format!("`mnemon check` found {} index problem(s)", problems.len()),
        );
        out.flush()?;
        return Err(anyhow!("{} index problem(s) found", problems.len()));
    }
    // Sound: writes may go on (a mark left by damage met before the file was restored goes).
    if mnemon::clear_damage_mark(&cli.db)? && !out.json {
        out.line("damage mark: cleared (writes allowed again)")?;
    }
    Ok(())
}
