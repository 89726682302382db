//! `mnemon tour`: a guided demo on a temporary database.

use anyhow::Result;
use mnemon::body::{Decision, Task, TaskStatus};
use mnemon::{AsOf, Db, ListQuery, Timestamp};

use crate::output::{Out, chain_table, history_table, records_table, short};

fn date(s: &str) -> Result<Timestamp> {
    Ok(Timestamp::parse(s)?)
}

/// Run the tour, printing as it goes.
pub fn run(out: &mut Out) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("tour.redb");
    let db = Db::create(&path)?;
    let ns = db.ns("project:tour")?;
    let say = |out: &mut Out, s: &str| out.line(s);

    say(out, "mnemon tour: a bitemporal memory for agents, in one file.")?;
    say(out, &format!("A fresh database at {} (deleted afterwards).\n", path.display()))?;

    say(
        out,
        "1. In January the team records two decisions and two tasks, each valid from the day it was made:",
    )?;
    let sqlite = ns
        .record(Decision {
            title: "Store agent memory in SQLite".into(),
            rationale: "everyone knows it".into(),
            ..Default::default()
        })
        .valid_from(date("2024-01-10")?)
        .tag("storage")
        .insert()?;
    ns.record(Decision { title: "One memory file per project".into(), ..Default::default() })
        .valid_from(date("2024-01-12")?)
        .insert()?;
    let schema = ns
        .record(Task {
            title: "Design the schema".into(),
            status: TaskStatus::InProgress,
            ..Default::default()
        })
        .valid_from(date("2024-01-15")?)
        .insert()?;
    let bench = ns
        .record(Task { title: "Benchmark inserts".into(), ..Default::default() })
        .valid_from(date("2024-01-16")?)
        .insert()?;
    let knew_then = db.now();
    say(
        out,
        "   mnemon add decision --data '{\"title\":\"Store agent memory in SQLite\"}' --valid-from 2024-01-10 ...\n",
    )?;

    say(out, "2. On 1 March they switch to redb: the SQLite decision is superseded, not deleted.")?;
    let redb = ns.supersede_with(
        sqlite,
        ns.record(Decision {
            title: "Store agent memory in redb".into(),
            rationale: "embedded, typed, MVCC, fast".into(),
            ..Default::default()
        })
        .valid_from(date("2024-03-01")?)
        .build(),
    )?;
    say(
        out,
        &format!(
            "   mnemon supersede {} --data '{{\"title\":\"Store agent memory in redb\"}}' --at 2024-03-01",
            short(sqlite)
        ),
    )?;
    say(out, "   The schema task was finished on 20 February, so it is retired as of that date.\n")?;
    ns.retire(schema, Some(date("2024-02-20")?))?;

    say(
        out,
        "3. Someone notices a typo and corrects the benchmark task (a new revision; the old one stays):",
    )?;
    ns.update(bench, |r| {
        if let mnemon::Body::Task(t) = &mut r.body {
            t.title = "Benchmark inserts and as-of queries".into();
        }
        Ok(())
    })?;
    say(
        out,
        &format!(
            "   mnemon revise {} --data '{{\"title\":\"Benchmark inserts and as-of queries\"}}'\n",
            short(bench)
        ),
    )?;

    let feb = date("2024-02-01")?;
    say(out, "4. What was true on 1 February 2024?   mnemon list --as-of 2024-02-01")?;
    let then = ns.list(&ListQuery::new().as_of(AsOf::valid_at(feb)))?;
    say(out, &indent(&records_table(&then, feb)))?;
    say(out, "")?;

    let now = db.now();
    say(out, "5. And what is true now?   mnemon list")?;
    let current = ns.list(&ListQuery::new())?;
    say(out, &indent(&records_table(&current, now)))?;
    say(out, "")?;

    say(out, "6. What did we believe about 1 February before the correction? (transaction time)")?;
    say(out, "   mnemon list --as-of 2024-02-01 --known-at <time of step 1>")?;
    let before = ns.list(&ListQuery::new().as_of(AsOf::valid_at(feb).known_at(knew_then)))?;
    say(out, &indent(&records_table(&before, feb)))?;
    say(out, "")?;

    say(out, &format!("7. How did the storage decision come to be?   mnemon chain {}", short(redb)))?;
    let links = ns.chain(redb)?;
    say(out, &indent(&chain_table(&links, now, Some(redb))))?;
    say(out, "")?;

    say(out, &format!("8. Every revision of the SQLite decision:   mnemon history {}", short(sqlite)))?;
    say(out, &indent(&history_table(&ns.history(sqlite)?)))?;
    say(out, "")?;

    say(out, "9. Search by words and by similarity (offline embedder, BM25 + vectors):")?;
    say(out, "   mnemon search \"which database stores the memory\"")?;
    let ask = mnemon::ops::Recall {
        query: "which database stores the memory".into(),
        limit: Some(3),
        explain: true,
        ..Default::default()
    };
    let hits = mnemon::ops::Session::new(db.clone(), ns.name().as_str())?.call(ask)?.hits;
    say(out, &indent(&crate::output::hits_table(&hits)))?;
    say(out, "")?;
    say(out, "Your turn:")?;
    say(out, "   mnemon init")?;
    say(
        out,
        "   mnemon add decision --data '{\"title\":\"Use redb\",\"rationale\":\"fast\"}' --tag storage --valid-from 2024-05-01",
    )?;
    say(out, "   mnemon list decision --as-of 2024-05-07      # valid then: Use redb")?;
    say(out, "   mnemon list decision --as-of 2024-04-01      # not yet decided: nothing")?;
    say(out, "   mnemon search \"redb\"")?;
    say(out, "   mnemon --help")?;
    drop(db);
    Ok(())
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("   {l}")).collect::<Vec<_>>().join("\n")
}
