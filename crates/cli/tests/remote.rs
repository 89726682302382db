//! The CLI both ways: one session of commands run against a file (`--db`) and, on a second
//! database, through `mnemon serve` (`MNEMON_URL`, `MNEMON_TOKEN`). After ids and times are
//! blanked out, every command must print the same thing and exit with the same code; the
//! commands that own the file refuse `--server` with a usage error; the client never touches
//! a file of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Child;

use common::{Run, make_token, run_at, run_env, spawn_serve};
use regex::Regex;

/// One way of running commands.
struct Way {
    dir: tempfile::TempDir,
    db: PathBuf,
    /// The server (child) and the environment that points the CLI at it.
    server: Option<(Child, Vec<(&'static str, String)>)>,
}

impl Way {
    fn file() -> Way {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("m.redb");
        run_at(dir.path(), &db, &["init"], None).ok();
        Way { dir, db, server: None }
    }

    fn server() -> Way {
        let dir = tempfile::tempdir().unwrap();
        let served = dir.path().join("served.redb");
        run_at(dir.path(), &served, &["init"], None).ok();
        let token = make_token(dir.path(), &served, "cli", "*", "admin");
        let (child, addr, _stderr) = spawn_serve(dir.path(), &served, &[]);
        let env = vec![("MNEMON_URL", format!("http://{addr}")), ("MNEMON_TOKEN", token)];
        // The client's own --db names no file: nothing may be created there.
        let db = dir.path().join("client-side").join("none.redb");
        Way { dir, db, server: Some((child, env)) }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let env: Vec<(&str, &str)> = match &self.server {
            Some((_, env)) => env.iter().map(|(k, v)| (*k, v.as_str())).collect(),
            None => Vec::new(),
        };
        run_env(self.dir.path(), &self.db, args, stdin, &env)
    }
}

impl Drop for Way {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.server {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Output with what differs between two databases blanked: record ids (whole, or the short
/// forms tables show), times and dates, and the database's own path.
fn blank(text: &str) -> String {
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let short = Regex::new(r"\b[0-9a-f]{8,12}\b").unwrap();
    let time =
        Regex::new(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?").unwrap();
    // A time of day alone (`project learnings` heads an entry with it): the two databases are
    // written a moment apart, sometimes across a second.
    let clock = Regex::new(r"\b\d{2}:\d{2}:\d{2}\b").unwrap();
    let text = uuid.replace_all(text, "<id>");
    let text = time.replace_all(&text, "<time>");
    let text = clock.replace_all(&text, "<time>");
    short.replace_all(&text, "<id>").into_owned()
}

/// A step: the arguments (`{N}` stands for the id the N-th capturing step printed), whether
/// its output is an id to capture, and whether its output must match (some answers name the
/// file or its size).
struct Step {
    args: &'static [&'static str],
    capture: bool,
    compare: bool,
    stdin: Option<&'static str>,
}

const fn step(args: &'static [&'static str]) -> Step {
    Step { args, capture: false, compare: true, stdin: None }
}

const fn capture(args: &'static [&'static str]) -> Step {
    Step { args, capture: true, compare: true, stdin: None }
}

const fn runs(args: &'static [&'static str]) -> Step {
    Step { args, capture: false, compare: false, stdin: None }
}

const SESSION: &[Step] = &[
    capture(&["add", "decision", "--data", r#"{"title":"Use redb","rationale":"embedded, one file"}"#]),
    capture(&["add", "task", "--data", r#"{"title":"Write the client"}"#, "--tag", "client"]),
    capture(&["add", "task", "--data", r#"{"title":"Test both ways"}"#]),
    step(&["get", "{0}"]),
    step(&["--json", "get", "{0}"]),
    step(&["list"]),
    step(&["--json", "list", "--kind", "task"]),
    step(&["list", "--as-of", "2001-01-01"]),
    step(&["revise", "{0}", "--data", r#"{"rationale":"embedded and fast"}"#]),
    step(&["history", "{0}"]),
    step(&["--json", "history", "{0}"]),
    capture(&["supersede", "{0}", "--data", r#"{"title":"Use redb 4","rationale":"the new format"}"#]),
    step(&["chain", "{3}"]),
    step(&["decision", "accept", "{3}"]),
    step(&["decision", "history", "{3}"]),
    step(&["task", "start", "{1}"]),
    step(&["task", "depend", "{2}", "{1}"]),
    step(&["task", "list"]),
    step(&["task", "complete", "{1}"]),
    step(&["--json", "task", "list"]),
    step(&["entity", "ensure", "PG"]),
    step(&["entity", "find", "pg"]),
    capture(&["conversation", "start", "planning"]),
    step(&["conversation", "add", "{4}", "Should we use redb?"]),
    step(&["conversation", "end", "{4}", "--summary", "chose redb"]),
    step(&["memory", "add", "learnings", "redb wants the file to itself"]),
    step(&["memory", "show", "--section", "learnings"]),
    step(&["project", "learn", "Index files live beside the db", "--agent", "dev-2", "--type", "note"]),
    step(&["project", "learnings"]),
    step(&["project", "relate", "api", "depends_on", "storage"]),
    step(&["project", "relations", "api"]),
    step(&["project", "search", "index files"]),
    step(&["knowledge", "learn", "--category", "testing", "Run the tests before committing"]),
    step(&["knowledge", "list"]),
    step(&["agent", "prefer", "--data", r#"{"indent": 4}"#]),
    step(&["agent", "preferences"]),
    step(&["episode", "store", "Paired on the backoff", "--importance", "2"]),
    step(&["episode", "query", "backoff"]),
    step(&["tagged", "client"]),
    step(&["search", "redb"]),
    step(&["--json", "search", "redb file", "--mode", "lexical"]),
    step(&["search", "zzzqqq"]),
    step(&["context", "--query", "redb"]),
    step(&["retire", "{2}"]),
    step(&["forget", "{2}"]),
    step(&["export"]),
    step(&["export", "--format", "mcp-jsonl"]),
    Step {
        args: &["import", "-"],
        capture: false,
        compare: true,
        stdin: Some(r#"{"kind":"gotcha","text":"a loose line","namespace":"project:a"}"#),
    },
    step(&["prune", "--dry-run"]),
    step(&["vector", "put", "{3}", "--space", "toy", "--vector", "[1, 0, 0.1]"]),
    step(&["vector", "search", "--space", "toy", "--vector", "[0.9, 0.1, 0]"]),
    step(&["index", "build", "--space", "toy"]),
    step(&["index", "status"]),
    runs(&["stats"]),
    runs(&["--json", "stats", "--domain"]),
    runs(&["reindex"]),
    // Errors: the same code and message either way.
    step(&["get", "0123456789ab"]),
    step(&["task", "start", "{0}"]),
    step(&["add", "task", "--data", "[1]"]),
    step(&["--ns", "Not A Namespace!", "list"]),
];

#[test]
fn every_command_prints_the_same_against_a_file_and_through_a_server() {
    let ways = [Way::file(), Way::server()];
    let mut ids: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for step in SESSION {
        let mut runs = Vec::new();
        for (w, way) in ways.iter().enumerate() {
            let mut args: Vec<String> = vec!["--ns".into(), "project:a".into()];
            for a in step.args {
                let mut a = a.to_string();
                for (i, id) in ids[w].iter().enumerate() {
                    a = a.replace(&format!("{{{i}}}"), id);
                }
                args.push(a);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = way.run(&args, step.stdin);
            if step.capture {
                let id = run.ok().split_whitespace().last().unwrap_or_default().to_string();
                ids[w].push(id);
            }
            runs.push(run);
        }
        let [file, server] = &runs[..] else { unreachable!() };
        assert_eq!(
            file.code, server.code,
            "{:?}: exit codes differ: {} / {}",
            step.args, file.stderr, server.stderr
        );
        assert!(!file.stderr.contains("panicked") && !server.stderr.contains("panicked"));
        if step.compare {
            assert_eq!(
                blank(&file.stdout),
                blank(&server.stdout),
                "{:?}: standard output differs",
                step.args
            );
            assert_eq!(blank(&file.stderr), blank(&server.stderr), "{:?}: standard error differs", step.args);
        }
    }
    assert!(!ways[1].db.exists() && !ways[1].db.parent().unwrap().exists(), "the client made a file");
}

#[test]
fn commands_that_own_the_file_refuse_a_server_and_bad_servers_are_one_line_errors() {
    let way = Way::server();
    for args in [&["init"][..], &["check"], &["compact"], &["token", "list"], &["mcp"], &["serve"]] {
        way.run(args, None).fails(2, "works on a database file, not through a server");
    }
    way.run(&["--embedder", "hash", "list"], None).fails(2, "a server embeds with its own");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.redb");
    // Nothing listening: exit 1, where it tried; no token in the message.
    let run = run_env(
        dir.path(),
        &db,
        &["list"],
        None,
        &[("MNEMON_URL", "http://127.0.0.1:9"), ("MNEMON_TOKEN", "mnemon_secret")],
    );
    run.fails(1, "cannot reach the server at http://127.0.0.1:9/");
    assert!(!run.stderr.contains("secret"));
    run_env(dir.path(), &db, &["list"], None, &[("MNEMON_URL", "127.0.0.1:9")])
        .fails(2, "is not a server URL");
    // A wrong token: refused, exit 2 (the caller's fault), the token not echoed.
    let (_, env) = way.server.as_ref().unwrap();
    let url = env[0].1.as_str();
    let run = run_env(
        dir.path(),
        &db,
        &["list"],
        None,
        &[("MNEMON_URL", url), ("MNEMON_TOKEN", "mnemon_0000_bad")],
    );
    run.fails(2, "a valid token is required");
    assert!(!run.stderr.contains("mnemon_0000_bad"));
    // A read token cannot write, and says so.
    let served = way.dir.path().join("served.redb");
    let reader = make_token(way.dir.path(), &served, "reader", "project:*", "read");
    let as_reader = |args: &[&str]| {
        run_env(dir.path(), &db, args, None, &[("MNEMON_URL", url), ("MNEMON_TOKEN", reader.as_str())])
    };
    as_reader(&["--ns", "project:a", "list"]).ok();
    as_reader(&["--ns", "project:a", "add", "task", "--data", r#"{"title":"x"}"#]).fails(2, "needs write");
    as_reader(&["--ns", "agent:x", "list"]).fails(2, "does not reach namespace");
    assert!(!db.exists());
}

#[test]
fn over_https_with_a_certificate_of_its_own() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/tests/data");
    let (cert, key, ca) = (data.join("cert.pem"), data.join("key.pem"), data.join("ca.pem"));
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served.redb");
    let token = make_token(dir.path(), &served, "t", "*", "write");
    let (mut child, addr, _stderr) = spawn_serve(
        dir.path(),
        &served,
        &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()],
    );
    let url = format!("https://localhost:{}", addr.rsplit(':').next().unwrap());
    let db = dir.path().join("none.redb");
    let env = [("MNEMON_URL", url.as_str()), ("MNEMON_TOKEN", token.as_str())];
    // The server's certificate is not publicly trusted: refused, saying why.
    run_env(dir.path(), &db, &["list"], None, &env).fails(1, "cannot reach the server");
    let trusted = |args: &[&str]| {
        let mut all = vec!["--ca-cert", ca.to_str().unwrap()];
        all.extend_from_slice(args);
        run_env(dir.path(), &db, &all, None, &env)
    };
    trusted(&["--ns", "project:a", "add", "gotcha", "--data", r#"{"text":"over TLS"}"#]).ok();
    assert!(trusted(&["--ns", "project:a", "list"]).ok().contains("over TLS"));
    let _ = child.kill();
    let _ = child.wait();
    // A key that is not a key: a usage error before anything is served.
    run_at(
        dir.path(),
        &served,
        &["serve", "--tls-cert", cert.to_str().unwrap(), "--tls-key", cert.to_str().unwrap()],
        None,
    )
    .fails(2, "holds no private key");
    run_at(dir.path(), &served, &["serve", "--tls-cert", cert.to_str().unwrap()], None).fails(2, "--tls-key");
}
